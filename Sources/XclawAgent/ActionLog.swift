import Foundation
import XclawBase
import XclawMessages

/// The action log of a run: one JSON line per action, appended and flushed as it happens so a crash loses nothing.
/// Safe because the file handle and the warning flag are touched only under `lock`; `path` is immutable.
public final class ActionLog: @unchecked Sendable {
    /// The file.
    public let path: String
    private let lock = NSLock()
    private var handle: FileHandle?
    private var warned = false

    /// Opens (creating directories) the file for appending; a missing one is made private (0600).
    public init(path: String) throws {
        self.path = path
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true)
            // Appended through a device, a FIFO or the command's own stdout rather than replacing or seeking it.
            handle = FileHandle(fileDescriptor: try OutputFile.openForAppending(path), closeOnDealloc: true)
        } catch let error as OutputFileError {
            throw ActionLogError.cannotOpen(path: path, reason: error.reason)
        } catch {
            throw ActionLogError.cannotOpen(path: path, reason: error.localizedDescription)
        }
    }

    /// `$XDG_STATE_HOME/xclaw/runs/<UTC time>-<pid>.jsonl` (default `~/.local/state/...`).
    public static func defaultPath(
        environment: [String: String] = Invocation.current.environment,
        now: Date = Date()
    ) -> String {
        let base = XclawPaths.userStateDirectory(environment)
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return "\(base)/runs/\(f.string(from: now))-\(getpid()).jsonl"
    }

    /// Appends one record.
    public func append(_ record: ActionRecord) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, enc in
            var c = enc.singleValueContainer()
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            try c.encode(f.string(from: date))
        }
        guard let data = try? encoder.encode(record) else { return }
        lock.withLock {
            do { try handle?.write(contentsOf: data + Data("\n".utf8)) } catch {
                // A full disk must not stop a run between an action and the next; say so once.
                if !warned {
                    warned = true
                    Invocation.current.write(
                        .stderr,
                        Data("xclaw: cannot write the action log \(path): \(error.localizedDescription)\n".utf8))
                }
            }
        }
    }

    /// Closes the file.
    public func close() {
        lock.withLock {
            try? handle?.close()
            handle = nil
        }
    }

    deinit { try? handle?.close() }
}

/// Why the action log could not be opened.
public enum ActionLogError: ClassifiedError, Equatable {
    /// The file or its directory cannot be created or written.
    case cannotOpen(path: String, reason: String)

    /// A bad `--log` path is the user's to fix.
    public var exitStatus: ExitStatus { .usage }

    /// The message, with what to do.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason):
            return "cannot open the action log \(path): \(reason); choose a writable file with --log"
        }
    }
}

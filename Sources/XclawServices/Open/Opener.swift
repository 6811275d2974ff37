import Foundation
import Glibc
import XclawBase
import XclawScreen

/// How `open` handed a target over.
public struct OpenResult: Encodable, Sendable, Hashable {
    /// The target as given.
    public var target: String
    /// What was opened: the URI, or the file's absolute path.
    public var opened: String
    /// `portal` (the XDG desktop portal's OpenURI) or `xdg-open`.
    public var via: String
    /// True when xdg-open had not finished at the end of the wait: with no desktop environment it runs the handler
    /// itself and waits for it, so the handler is running; it is left to run.
    public var stillRunning: Bool

    enum CodingKeys: String, CodingKey {
        case target, opened, via
        case stillRunning = "still_running"
    }
}

/// Why a target could not be opened.
public enum OpenError: ClassifiedError, Equatable {
    /// A path (or `file://` URI) names no file.
    case missingFile(String)
    /// xdg-open is not installed.
    case noOpener
    /// xdg-open found nothing to open it with, or the handler failed; its exit status and message.
    case notOpened(String, status: Int32, message: String)
    /// The portal answered that the request was cancelled (1) or failed (2).
    case portalRefused(String, response: Int)
    /// The portal did not answer in time.
    case portalTimedOut(String, seconds: Double)

    /// A missing file, nothing to open with and a refusal are conditions (1); xdg-open's usage error is bad input (2);
    /// no xdg-open at all is the machine's (5). xdg-open's status 3 ("a required tool could not be found") is also
    /// what it says with no handler for a scheme or type, so it stays a condition (1).
    public var exitStatus: ExitStatus {
        switch self {
        case .noOpener: return .internal
        case .notOpened(_, let status, _) where status == 1: return .usage
        default: return .notFound
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .missingFile(let path): return "no file at \(path); check the path"
        case .noOpener:
            return "xdg-open is not installed and no desktop portal runs on the session bus: install xdg-utils"
        case .notOpened(let target, let status, let message):
            let said = message.trimmingCharacters(in: .whitespacesAndNewlines)
            return "xdg-open could not open \(target) (exit status \(status)"
                + (said.isEmpty ? ")" : ": \(said))")
                + "; make an application its default (`xdg-mime default APP.desktop TYPE`); without a desktop "
                + "session, xdg-open opens URIs only when DISPLAY is set"
        case .portalRefused(let target, let response):
            return "the desktop portal did not open \(target): "
                + (response == 1 ? "the request was cancelled (a person closed its dialog)" : "it failed")
        case .portalTimedOut(let target, let seconds):
            return "the desktop portal did not answer within \(seconds.formatted()) s for \(target); it may be "
                + "asking which application to use: answer it, or give it longer"
        }
    }
}

/// Opens URIs and files with the user's default handler: through the XDG desktop portal
/// (`org.freedesktop.portal.OpenURI`) when one runs on the caller's bus (URIs; a file would need its descriptor
/// passed, which this bus client does not do), else `xdg-open` with the caller's environment, in a session of its
/// own, waited for at most the timeout.
public struct Opener: Sendable {
    /// The portal, named for messages.
    public static let portal = BusService(
        name: "org.freedesktop.portal.Desktop", what: "desktop portal",
        hint: "start xdg-desktop-portal with a backend, or let xclaw use xdg-open")
    /// The caller's environment (its DISPLAY, XDG directories, session bus).
    public var environment: [String: String]
    /// The caller's directory, for relative paths.
    public var directory: String

    /// An opener for a caller.
    public init(environment: [String: String], directory: String) {
        (self.environment, self.directory) = (environment, directory)
    }

    /// What `target` is: a URI (`https:`, `mailto:`…), or a file (a path, or a `file://` URI) that must exist,
    /// as its absolute path.
    public func resolve(_ target: String) throws -> (uri: String, file: String?) {
        if target.lowercased().hasPrefix("file:") {
            guard let url = URL(string: target), url.isFileURL else { throw OpenError.missingFile(target) }
            guard FileManager.default.fileExists(atPath: url.path) else { throw OpenError.missingFile(url.path) }
            return (url.absoluteString, url.path)
        }
        let path = target.hasPrefix("/") ? target : (directory as NSString).appendingPathComponent(target)
        // A scheme makes a URI, unless a file of that name is there (`notes:2024.txt`).
        if Self.hasScheme(target), !FileManager.default.fileExists(atPath: path) { return (target, nil) }
        guard FileManager.default.fileExists(atPath: path) else { throw OpenError.missingFile(path) }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL
        return (absolute.absoluteString, absolute.path)
    }

    /// Whether `text` starts with a URI scheme (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`, then `:`).
    static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), let first = text.first, colon != text.startIndex else {
            return false
        }
        let scheme = text[..<colon]
        return first.isASCII && first.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// Opens `target`, waiting at most `timeout` for the portal's answer or xdg-open's end.
    public func open(_ target: String, timeout: Duration) throws -> OpenResult {
        let (uri, file) = try resolve(target)
        if file == nil, let bus = try? BusConnection.session(environment: environment, timeout: timeout),
            (try? bus.hasOwner(Self.portal.name)) == true
        {
            try viaPortal(bus, uri: uri, timeout: timeout)
            return OpenResult(target: target, opened: uri, via: "portal", stillRunning: false)
        }
        let running = try viaXDGOpen(file ?? uri, timeout: timeout)
        return OpenResult(target: target, opened: file ?? uri, via: "xdg-open", stillRunning: running)
    }

    /// `OpenURI` on the portal, and its `Response` on the request object (subscribed to before the call, at the path
    /// the request's handle token makes, so it cannot be missed).
    private func viaPortal(_ bus: BusConnection, uri: String, timeout: Duration) throws {
        let token = "xclaw\(UInt32.random(in: 0...UInt32.max))"
        let sender = bus.uniqueName.dropFirst().replacingOccurrences(of: ".", with: "_")
        let request = "/org/freedesktop/portal/desktop/request/\(sender)/\(token)"
        try bus.subscribe(
            "type='signal',sender='\(Self.portal.name)',interface='org.freedesktop.portal.Request',"
                + "member='Response',path='\(request)'")
        _ = try bus.call(
            Self.portal, path: "/org/freedesktop/portal/desktop", interface: "org.freedesktop.portal.OpenURI",
            method: "OpenURI", [.string(""), .string(uri), .vardict([("handle_token", .string(token))])],
            timeout: timeout)
        guard let response = try bus.next(within: timeout, where: { $0.member == "Response" && $0.path == request })
        else { throw OpenError.portalTimedOut(uri, seconds: timeout / .seconds(1)) }
        let answer = response.body.first?.int ?? 2
        guard answer == 0 else { throw OpenError.portalRefused(uri, response: answer) }
    }

    /// Runs xdg-open on `what` in a session of its own, its output in a private file; true when it still ran at the
    /// timeout (it is then left running, and reaped by a thread when it ends).
    private func viaXDGOpen(_ what: String, timeout: Duration) throws -> Bool {
        guard let program = try? AppLauncher.resolve("xdg-open", path: environment["PATH"]) else {
            throw OpenError.noOpener
        }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-open-\(UUID()).log").path
        defer { unlink(log) }
        let child = try Subprocess.spawn(
            [program, what], stdin: .null, stdout: .appending(toFile: log), stderr: .sameAsStdout,
            environment: SecretEnvironment.stripped(environment), group: .newSession)
        let deadline = ContinuousClock.now + timeout
        while Subprocess.endingUnreaped(child.pid) == nil {
            guard ContinuousClock.now < deadline else {
                let pid = child.pid
                Thread.detachNewThread {
                    var status: Int32 = 0
                    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                }
                return true
            }
            usleep(5000)
        }
        let ending = child.wait()
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        switch ending {
        case .exited(0), .unknown: return false
        case .exited(let status): throw OpenError.notOpened(what, status: status, message: said)
        case .signalled(let signal): throw OpenError.notOpened(what, status: 128 + signal, message: said)
        case .timedOut: throw OpenError.notOpened(what, status: 128 + SIGKILL, message: said)
        }
    }
}

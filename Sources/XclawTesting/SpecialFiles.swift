import Foundation
import Glibc

/// Oracles for output written to special files: `/dev/null` must come out of every test a character device (1, 3)
/// of mode 0666 — as root a rename over it would make it a regular file and break the machine —, and a FIFO must
/// get the bytes and stay a FIFO.
public enum SpecialFiles {
    /// What is wrong with `/dev/null` now, or nil while it is the null device.
    public static func nullDeviceProblem() -> String? {
        var info = stat()
        guard lstat("/dev/null", &info) == 0 else { return "/dev/null: \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFCHR else {
            return "/dev/null is no longer a character device (mode \(String(info.st_mode, radix: 8)))"
        }
        // Linux's dev_t of major 1, minor 3 (makedev is a C macro Swift does not import).
        guard info.st_rdev == 0x103 else { return "/dev/null is another device (\(info.st_rdev))" }
        guard info.st_mode & 0o7777 == 0o666 else {
            return "/dev/null has mode \(String(info.st_mode & 0o7777, radix: 8)), not 666"
        }
        return nil
    }

    /// Whether `path` is a FIFO.
    public static func isFIFO(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO
    }

    /// A FIFO at `path` with a reader on a thread of its own, which keeps everything written until the writer
    /// closes it.
    public final class FIFOReader: @unchecked Sendable {
        // Safe because `data` is written once by the reading thread before `done` is signalled, and read after.
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)
        /// The FIFO's path.
        public let path: String

        /// Makes the FIFO (mode 0600) and starts reading it.
        public init(path: String) throws {
            self.path = path
            guard mkfifo(path, 0o600) == 0 else {
                throw NSError(domain: "mkfifo", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: path])
            }
            Thread { [self] in
                if let handle = FileHandle(forReadingAtPath: path) { data = handle.readDataToEndOfFile() }
                done.signal()
            }.start()
        }

        /// Everything read once the writer closed, or nil when nothing closed it within `timeout` seconds (the
        /// reader is then released by a writer of its own, so no thread stays blocked).
        public func contents(timeout: TimeInterval = 30) -> Data? {
            if done.wait(timeout: .now() + timeout) == .success { return data }
            let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { close(fd) }
            _ = done.wait(timeout: .now() + 5)
            return nil
        }
    }
}

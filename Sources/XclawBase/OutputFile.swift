import Foundation
import Glibc

/// Files a user names for output (`-o`, `--output`, `--log`): written *through* an existing device, FIFO or standard
/// stream, as scrot, cp and every Unix tool do, and atomically (a temporary file, then a rename) only onto a regular
/// file or a new path. A rename over `/dev/null` replaces the device node itself, which, as root, breaks the machine.
public enum OutputFile {
    /// How a path is written.
    public enum Kind: Equatable, Sendable {
        /// The command's own stdout or stderr (`/dev/stdout`, `/dev/fd/2`…), which in the daemon is the asking CLI's.
        case stream(Int32)
        /// An existing device or FIFO: opened and written through, never replaced.
        case special
        /// A regular file or a new path: a temporary file beside it, then a rename.
        case regular
    }

    /// What writing `path` (absolute, or relative to the command's directory) would do, or why it cannot be written.
    public static func kind(of path: String, invocation: Invocation = .current) throws -> Kind {
        if let descriptor = standardStream(path, invocation: invocation) { return .stream(descriptor) }
        var info = stat()
        guard stat(invocation.resolve(path), &info) == 0 else {
            // Missing (or a dangling symlink, which the rename replaces rather than follows).
            if errno == ENOENT { return .regular }
            throw OutputFileError(path: path, reason: "\(Errno.current)")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFCHR, S_IFBLK, S_IFIFO: return .special
        case S_IFDIR: throw OutputFileError(path: path, reason: "it is a directory; name a file in it")
        case S_IFSOCK: throw OutputFileError(path: path, reason: "it is a socket; name a file, a FIFO or a device")
        default: throw OutputFileError(path: path, reason: "it is not a file xclaw can write")
        }
    }

    /// Writes `data` to `path` (relative paths against the command's directory). A new file gets `permissions`
    /// (less the umask unless `exactPermissions`); `privateData` also refuses a FIFO another user owns, which would
    /// hand them what is written.
    public static func write(
        _ data: Data, to path: String, permissions: mode_t = 0o666, exactPermissions: Bool = false,
        privateData: Bool = false, invocation: Invocation = .current
    ) throws {
        switch try kind(of: path, invocation: invocation) {
        case .stream(let descriptor):
            guard writeAll(descriptor, data) else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
        case .special:
            try writeThrough(data, to: path, privateData: privateData, invocation: invocation)
        case .regular:
            try replace(
                invocation.resolve(path), with: data, permissions: permissions, exact: exactPermissions, shownAs: path,
                privateData: privateData, invocation: invocation)
        }
    }

    /// A descriptor opened for appending to `path`: the command's own stream (duplicated) for `/dev/stdout` and
    /// kin, a device or FIFO written through, or a regular file created with `permissions` when missing.
    public static func openForAppending(
        _ path: String, permissions: mode_t = 0o600, invocation: Invocation = .current
    ) throws -> Int32 {
        if case .stream(let descriptor) = try kind(of: path, invocation: invocation) {
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
            return copy
        }
        return try openWaiting(
            invocation.resolve(path), flags: O_APPEND | O_CREAT, permissions: permissions, shownAs: path,
            invocation: invocation)
    }

    /// Whether `path` names the command's own stdout, which then carries the output and nothing else.
    public static func isStandardOutput(_ path: String, invocation: Invocation = .current) -> Bool {
        standardStream(path, invocation: invocation) == invocation.descriptors.output
    }

    /// The command's stdout or stderr when `path` names it: in the daemon the process's own would be the daemon's.
    static func standardStream(_ path: String, invocation: Invocation) -> Int32? {
        switch path {
        case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1": return invocation.descriptors.output
        case "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2": return invocation.descriptors.error
        default: return nil
        }
    }

    /// Opens an existing device or FIFO and writes through it; a regular file that took its place meanwhile is
    /// replaced atomically instead (it is never written into untruncated).
    private static func writeThrough(_ data: Data, to path: String, privateData: Bool, invocation: Invocation) throws {
        let fd = try openWaiting(
            invocation.resolve(path), flags: 0, permissions: 0, shownAs: path, invocation: invocation)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
        let type = info.st_mode & S_IFMT
        if type == S_IFREG || type == S_IFDIR {
            throw OutputFileError(path: path, reason: "it changed while it was opened; try again")
        }
        if privateData && type == S_IFIFO && info.st_uid != getuid() {
            throw OutputFileError(
                path: path, reason: "it is a FIFO of uid \(info.st_uid), who would read what is written; name your own")
        }
        guard writeAll(fd, data) else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
    }

    /// `open` for writing without blocking on a FIFO that has no reader yet: it waits for one in short steps, so an
    /// interrupt of the command (Ctrl-C, even through the daemon) still ends the wait.
    private static func openWaiting(
        _ full: String, flags: Int32, permissions: mode_t, shownAs path: String, invocation: Invocation
    ) throws -> Int32 {
        while true {
            let fd = open(full, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | flags, permissions)
            if fd >= 0 {
                // Writes block as usual from here on (a full pipe is waited for, not an error).
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
                return fd
            }
            if errno == EINTR { continue }
            guard errno == ENXIO else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
            // ENXIO: a FIFO with no reader (or a socket, refused above). Wait for the reader.
            // In-process a signal ends the process; served, the asker's forwarded interrupt ends the wait.
            if invocation.cancelled() {
                throw OutputFileError(path: path, reason: "interrupted while waiting for a reader of the FIFO")
            }
            usleep(20_000)
        }
    }

    /// A new file beside `full`, written and renamed over it; a special file that appeared at `full` meanwhile is
    /// written through instead of replaced.
    private static func replace(
        _ full: String, with data: Data, permissions: mode_t, exact: Bool, shownAs path: String, privateData: Bool,
        invocation: Invocation
    ) throws {
        let directory = (full as NSString).deletingLastPathComponent
        let temporary =
            (directory.isEmpty ? "." : directory) + "/.xclaw-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        // O_EXCL: nothing planted is reused; O_NOFOLLOW: nor followed.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw OutputFileError(path: path, reason: "cannot create it: \(Errno.current)") }
        if exact { fchmod(fd, permissions) }
        let ok = writeAll(fd, data)
        let error = Errno.current
        close(fd)
        guard ok else {
            unlink(temporary)
            throw OutputFileError(path: path, reason: "cannot write it: \(error)")
        }
        var info = stat()
        if lstat(full, &info) == 0, [S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK].contains(info.st_mode & S_IFMT) {
            unlink(temporary)
            return try write(data, to: path, privateData: privateData, invocation: invocation)
        }
        guard rename(temporary, full) == 0 else {
            let why = Errno.current
            unlink(temporary)
            throw OutputFileError(path: path, reason: "cannot write it: \(why)")
        }
    }
}

/// An output file that cannot be written; exit 2: the user names another.
public struct OutputFileError: ClassifiedError, Hashable {
    /// The path as the user gave it.
    public var path: String
    /// What is wrong.
    public var reason: String
    /// Bad input: the user names another output.
    public var exitStatus: ExitStatus { .usage }
    /// The message, saying what to do.
    public var description: String { "cannot write \(path): \(reason)" }
}

import Foundation
import Glibc

/// Files a user names for output (`-o`, `--output`, `--log`): written *through* an existing device, FIFO or standard
/// stream, as scrot, cp and every Unix tool do, and atomically (a temporary file, then a rename) only onto a regular
/// file or a new path. A rename over `/dev/null` replaces the device node itself, which, as root, breaks the machine;
/// so nothing is ever renamed into `/dev` or `/proc`, however the path is spelled.
public enum OutputFile {
    /// How a path is written.
    public enum Kind: Equatable, Sendable {
        /// The command's own stdout, stderr or terminal (`/dev/stdout`, `/dev/fd/2`, `/dev/tty`…), which in the
        /// daemon are the asking CLI's.
        case stream(Int32)
        /// An existing device or FIFO: opened and written through, never replaced.
        case special(fifo: Bool)
        /// A regular file or a new path (`at`, symlinks in /dev and /proc followed): a temporary file beside it,
        /// then a rename.
        case regular(at: String)
    }

    /// `path` made absolute against the command's directory, with `.`, `..` and repeated slashes taken out (no
    /// symlink followed), so `/dev/./stdout` and `//dev/stdout` are known for what they are.
    public static func normalized(_ path: String, invocation: Invocation = .current) -> String {
        var parts: [Substring] = []
        for part in invocation.resolve(path).split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                _ = parts.popLast()
                continue
            }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// What writing `path` (absolute, or relative to the command's directory) would do, or why it cannot be written.
    public static func kind(of path: String, invocation: Invocation = .current) throws -> Kind {
        let full = normalized(path, invocation: invocation)
        if let descriptor = try standardStream(full, shownAs: path, invocation: invocation) {
            return .stream(descriptor)
        }
        let system = full.hasPrefix("/dev/") || full.hasPrefix("/proc/")
        var info = stat()
        guard stat(full, &info) == 0 else {
            // Missing (or a dangling symlink, which the rename replaces rather than follows).
            guard errno == ENOENT else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
            if system {
                throw OutputFileError(path: path, reason: "xclaw makes no new file in /dev or /proc; name another")
            }
            return .regular(at: full)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            guard system else { return .regular(at: full) }
            // A link in /dev or /proc (`/dev/stdout` when stdout is a file) is followed to the file it names; a
            // regular file that *is* in /dev (a /dev/null an earlier rename broke) is never replaced.
            var link = stat()
            guard lstat(full, &link) == 0, link.st_mode & S_IFMT == S_IFLNK, let target = realpath(full, nil) else {
                throw OutputFileError(
                    path: path,
                    reason: "it is a regular file in /dev or /proc, where a device belongs (if it is /dev/null, this "
                        + "machine's /dev is damaged: `rm /dev/null; mknod -m 666 /dev/null c 1 3` as root restores it)"
                )
            }
            defer { free(target) }
            let resolved = String(cString: target)
            guard !resolved.hasPrefix("/dev/"), !resolved.hasPrefix("/proc/") else {
                throw OutputFileError(path: path, reason: "it leads to \(resolved), which xclaw does not replace")
            }
            return .regular(at: resolved)
        case S_IFCHR, S_IFBLK: return .special(fifo: false)
        case S_IFIFO: return .special(fifo: true)
        case S_IFDIR: throw OutputFileError(path: path, reason: "it is a directory; name a file in it")
        case S_IFSOCK: throw OutputFileError(path: path, reason: "it is a socket; name a file, a FIFO or a device")
        default: throw OutputFileError(path: path, reason: "it is not a file xclaw can write")
        }
    }

    /// Writes `data` to `path` (relative paths against the command's directory). A new file gets `permissions`
    /// (less the umask unless `exactPermissions`); `privateData` also refuses a special file that is neither this
    /// user's nor open to everyone (`/dev/null` is): a FIFO or terminal of another user would hand them the data.
    public static func write(
        _ data: Data, to path: String, permissions: mode_t = 0o666, exactPermissions: Bool = false,
        privateData: Bool = false, invocation: Invocation = .current
    ) throws {
        switch try kind(of: path, invocation: invocation) {
        case .stream(let descriptor):
            guard writeAll(descriptor, data) else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
        case .special(let fifo):
            try writeThrough(data, to: path, fifo: fifo, privateData: privateData, invocation: invocation)
        case .regular(let full):
            try replace(
                full, with: data, permissions: permissions, exact: exactPermissions, shownAs: path,
                privateData: privateData, invocation: invocation)
        }
    }

    /// A descriptor opened for appending to `path`: the command's own stream (duplicated) for `/dev/stdout` and
    /// kin, a device or FIFO written through, or a regular file created with `permissions` when missing.
    public static func openForAppending(
        _ path: String, permissions: mode_t = 0o600, invocation: Invocation = .current
    ) throws -> Int32 {
        switch try kind(of: path, invocation: invocation) {
        case .stream(let descriptor):
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
            return copy
        case .special(let fifo):
            return try openWaiting(
                normalized(path, invocation: invocation), flags: O_APPEND, permissions: 0, fifo: fifo, shownAs: path,
                invocation: invocation)
        case .regular(let full):
            return try openWaiting(
                full, flags: O_APPEND | O_CREAT, permissions: permissions, fifo: false, shownAs: path,
                invocation: invocation)
        }
    }

    /// Whether `path` names the command's own stdout, which then carries the output and nothing else.
    public static func isStandardOutput(_ path: String, invocation: Invocation = .current) -> Bool {
        let full = normalized(path, invocation: invocation)
        return (try? standardStream(full, shownAs: path, invocation: invocation)) == invocation.descriptors.output
    }

    /// The command's stdout, stderr or terminal when `full` names one: in the daemon the process's own would be the
    /// daemon's. Served, another descriptor of "this process" (`/dev/fd/5`, `/proc/self/…`) would be the daemon's
    /// too, and is refused.
    static func standardStream(_ full: String, shownAs path: String, invocation: Invocation) throws -> Int32? {
        switch full {
        case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1": return invocation.descriptors.output
        case "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2": return invocation.descriptors.error
        case "/dev/tty":
            guard Invocation.isServed else { return nil }
            guard let terminal = invocation.terminal else {
                throw OutputFileError(path: path, reason: "this command has no terminal")
            }
            return terminal
        default:
            if Invocation.isServed && (full.hasPrefix("/dev/fd/") || full.hasPrefix("/proc/")) {
                throw OutputFileError(
                    path: path,
                    reason: "it names a descriptor of the process that runs the command (the daemon); name a file, "
                        + "or run the command with XCLAW_NO_DAEMON=1")
            }
            return nil
        }
    }

    /// Opens an existing device or FIFO and writes through it; a regular file that took its place meanwhile is
    /// refused (it is never written into untruncated).
    private static func writeThrough(
        _ data: Data, to path: String, fifo: Bool, privateData: Bool, invocation: Invocation
    ) throws {
        let fd = try openWaiting(
            normalized(path, invocation: invocation), flags: 0, permissions: 0, fifo: fifo, shownAs: path,
            invocation: invocation)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
        let type = info.st_mode & S_IFMT
        if type == S_IFREG || type == S_IFDIR {
            throw OutputFileError(path: path, reason: "it changed while it was opened; try again")
        }
        if privateData && info.st_uid != getuid() && info.st_mode & 0o002 == 0 {
            throw OutputFileError(
                path: path,
                reason: "it belongs to uid \(info.st_uid), who would read what is written; name a file of your own")
        }
        guard writeAll(fd, data) else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
    }

    /// `open` for writing without blocking on a FIFO that has no reader yet: it waits for one in short steps, so an
    /// interrupt of the command (Ctrl-C, even through the daemon) still ends the wait. Anything else that has no
    /// one at the other end (`/dev/tty` without a terminal) is an error at once.
    private static func openWaiting(
        _ full: String, flags: Int32, permissions: mode_t, fifo: Bool, shownAs path: String, invocation: Invocation
    ) throws -> Int32 {
        while true {
            let fd = open(full, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | flags, permissions)
            if fd >= 0 {
                // Writes block as usual from here on (a full pipe is waited for, not an error).
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
                return fd
            }
            if errno == EINTR { continue }
            guard fifo, errno == ENXIO else { throw OutputFileError(path: path, reason: "\(Errno.current)") }
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

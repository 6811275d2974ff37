import CXclawSystem
import Foundation
import Glibc

/// Why this process could not hand itself over to a fresh image of its own executable.
public enum ProcessImageError: ClassifiedError, Equatable {
    /// The in-memory file for the state could not be made or written (`memfd_create`, `write`).
    case stateFile(Errno)
    /// `execve` of `/proc/self/exe` failed; this image goes on.
    case exec(Errno)
    /// The state an earlier image handed over could not be read.
    case inherited(String)

    /// The machine refused a resource.
    public var exitStatus: ExitStatus { .internal }

    /// The message, with the system's reason.
    public var description: String {
        switch self {
        case .stateFile(let errno): return "cannot make the in-memory file for the handover (memfd_create): \(errno)"
        case .exec(let errno): return "cannot re-execute /proc/self/exe: \(errno)"
        case .inherited(let why): return "the state the previous image handed over is unreadable: \(why)"
        }
    }
}

/// Replacing this process's image with a fresh one of the same executable, in place: the pid, the parent, the
/// session and the descriptors it is told to keep stay; everything else (memory, threads, other descriptors) goes.
/// The daemon recycles itself so (what a lost X connection leaves in Xlib can only be freed by a new image).
public enum ProcessImage {
    /// Execs `/proc/self/exe` (this very binary, even when the file was replaced since) with `arguments` (the
    /// program name first) and `environment`; only 0–2 and `keeping` are inherited (whatever this image opened
    /// without close-on-exec is not), and the signal mask is `holding` alone: one of those that arrives during the
    /// exec stays pending for the new image (`takePendingSignals`). Returns only by throwing: the exec failed and
    /// this image goes on, `keeping` close-on-exec again.
    public static func reexecute(
        arguments: [String], environment: [String: String], keeping: [Int32], holding signals: [Int32] = []
    ) throws {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        let failed = keeping.withUnsafeBufferPointer { keep in
            signals.withUnsafeBufferPointer { hold in
                xclaw_reexec(
                    "/proc/self/exe", argv, envp, keep.baseAddress, Int32(keep.count), hold.baseAddress,
                    Int32(hold.count))
            }
        }
        if failed != 0 { throw ProcessImageError.exec(.current) }
    }

    /// In an image `reexecute` started: whether one of `signals` (those it held) arrived during the exec; such a
    /// signal is discarded (ignored from here: the caller acts on it, and sets up its own handling), and all of them
    /// are unblocked.
    public static func takePendingSignals(_ signals: [Int32]) -> Bool {
        signals.withUnsafeBufferPointer { xclaw_take_pending_signals($0.baseAddress, Int32($0.count)) } == 1
    }

    /// An anonymous in-memory file holding `data`, positioned at its start, close-on-exec (the caller clears that
    /// for the exec that hands it over): state for the next image that no other process can open by a path.
    public static func memoryFile(named name: String, holding data: Data) throws -> Int32 {
        let fd = xclaw_memfd(name)
        guard fd >= 0 else { throw ProcessImageError.stateFile(.current) }
        guard writeAll(fd, data), lseek(fd, 0, SEEK_SET) == 0 else {
            let error = Errno.current
            close(fd)
            throw ProcessImageError.stateFile(error)
        }
        return fd
    }

    /// Everything `fd` holds from its current offset, then closes it (the in-memory file an earlier image handed
    /// over); at most `limit` bytes.
    public static func readAndClose(_ fd: Int32, limit: Int = 1 << 28) throws -> Data {
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw ProcessImageError.inherited("read: \(Errno.current)") }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            if data.count > limit { throw ProcessImageError.inherited("more than \(limit) bytes") }
        }
    }

    /// The descriptors from 3 up that an exec would pass on (open, not close-on-exec): read when a process starts,
    /// those it inherited from its parent (a test harness's lifeline, systemd's sockets), which an image that
    /// re-executes itself passes on again as they came.
    public static func descriptorsPassedOnExec() -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { Int32($0) }.filter { fd in
            guard fd > 2 else { return false }
            let flags = fcntl(fd, F_GETFD)
            return flags >= 0 && flags & FD_CLOEXEC == 0
        }.sorted()
    }

    /// Whether `fd` is a listening Unix stream socket: what an image checks before accepting on a descriptor an
    /// environment variable names.
    public static func isListeningUnixSocket(_ fd: Int32) -> Bool { fd > 2 && xclaw_is_listening_unix_stream(fd) == 1 }

    /// The pids of this process's children (an earlier image's: after an exec they are this one's, and nothing of
    /// this image knows them), found by their parent in `/proc/PID/stat`.
    public static func children() -> [pid_t] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { name -> pid_t? in
            guard let pid = pid_t(name), pid != me,
                let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After the command's closing parenthesis: state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == me ? pid : nil
        }
    }

    /// Reaps `pids` (children an earlier image started) as each ends, on a thread of its own that ends with the
    /// last: nothing of this image waits for them, and unreaped they would stay zombies for the process's life.
    public static func reapWhenTheyEnd(_ pids: [pid_t]) {
        guard !pids.isEmpty else { return }
        let thread = Thread {
            var left = pids
            while !left.isEmpty {
                left.removeAll { pid in
                    var status: Int32 = 0
                    let rc = waitpid(pid, &status, WNOHANG)
                    return rc == pid || (rc < 0 && errno == ECHILD)
                }
                if !left.isEmpty { Thread.sleep(forTimeInterval: 1) }
            }
        }
        thread.name = "xclaw inherited children"
        thread.start()
    }
}

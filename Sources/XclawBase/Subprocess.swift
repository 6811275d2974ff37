import CXclawSystem
import Foundation
import Glibc

/// Why a child process could not be started.
public enum SubprocessError: ClassifiedError, Equatable {
    /// An empty argument list.
    case noCommand
    /// `pipe2` failed (usually: no descriptors left).
    case pipe(Errno)
    /// `posix_spawn` failed: no such program, not executable, no memory.
    case spawn(String, Errno)

    /// The machine refused a resource; a wrong program path is the caller's to word as bad usage.
    public var exitStatus: ExitStatus { .internal }

    /// The message, with the system's reason.
    public var description: String {
        switch self {
        case .noCommand: return "no command to start"
        case .pipe(let errno): return "pipe() failed: \(errno)"
        case .spawn(let program, let errno): return "could not start \(program): \(errno)"
        }
    }
}

/// One child process on posix_spawn, with the care every spawn in xclaw needs: stdin from /dev/null unless asked,
/// close-on-exec pipes and no other descriptor of ours in the child (a test's pipe would never see EOF), default
/// signal dispositions and an empty mask (what we ignore must not reach the child), optional new session or process
/// group, and reading, waiting, killing and reaping under deadlines.
public final class Subprocess {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable, Equatable {
        /// /dev/null.
        case null
        /// A pipe this object reads (`read(until:)`).
        case pipe
        /// This file, created (mode 600) or appended to.
        case appending(toFile: String)
        /// A descriptor of ours, duplicated into the child (e.g. a pipe's write end someone else reads).
        case descriptor(Int32)
        /// For stderr: wherever stdout goes.
        case sameAsStdout
    }

    /// Which session and process group the child lives in.
    public enum Group: Sendable, Equatable {
        /// Ours: it dies with our terminal's Ctrl-C.
        case inherited
        /// A process group of its own, so what it spawns can be found (and signalled) by group.
        case own
        /// A session of its own: it outlives this process and the terminal (a display `xclaw display start` leaves).
        case newSession
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal killed it.
        case signalled(Int32)
        /// The deadline passed: it was killed (SIGKILL) and reaped.
        case timedOut
        /// Its status was lost (SIGCHLD ignored by whoever started us, so the kernel reaped it).
        case unknown
    }

    /// What a finished child printed and how it ended.
    public struct Outcome: Sendable, Equatable {
        /// How it ended.
        public var ending: Termination
        /// Everything it wrote to stdout (up to the deadline).
        public var stdout: Data
        /// Everything it wrote to stderr (up to the deadline).
        public var stderr: Data
    }

    /// The child's process id.
    public let pid: pid_t
    /// Our read end of its stdout, when stdout is `.pipe`.
    private var stdoutPipe: Int32?
    /// Our read end of its stderr, when stderr is `.pipe`.
    private var stderrPipe: Int32?
    private var reaped: Termination?

    private init(pid: pid_t, stdout: Int32?, stderr: Int32?) {
        self.pid = pid
        stdoutPipe = stdout
        stderrPipe = stderr
    }

    deinit { closePipes() }

    /// Starts `arguments` (an absolute path first).
    /// - Parameters:
    ///   - stdin: `.null` or a descriptor; a pipe for stdin is not needed by any caller.
    ///   - environment: the child's whole environment (nil: this process's).
    ///   - descriptors: more descriptors to give the child, child fd → our fd (e.g. 3 → a pipe for Xvfb's `-displayfd`).
    public static func spawn(
        _ arguments: [String], stdin: Stream = .null, stdout: Stream = .pipe,
        stderr: Stream = .pipe, environment: [String: String]? = nil,
        descriptors: [Int32: Int32] = [:], group: Group = .inherited
    ) throws -> Subprocess {
        guard let executable = arguments.first else { throw SubprocessError.noCommand }
        var ours: [Int32] = []  // the pipe ends that stay with us
        var theirs: [Int32] = []  // the pipe ends given to the child, closed here once it runs
        func pipeEnds() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [0, 0]
            guard xclaw_pipe_cloexec(&fds) == 0 else { throw SubprocessError.pipe(.current) }
            ours.append(fds[0])
            theirs.append(fds[1])
            return (fds[0], fds[1])
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var stdoutRead: Int32?, stderrRead: Int32?
        do {
            func connect(_ stream: Stream, to fd: Int32, read: inout Int32?) throws {
                switch stream {
                case .null:
                    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
                case .pipe:
                    let ends = try pipeEnds()
                    read = ends.read
                    posix_spawn_file_actions_adddup2(&actions, ends.write, fd)
                case .appending(let path):
                    posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
                case .descriptor(let source):
                    posix_spawn_file_actions_adddup2(&actions, source, fd)
                case .sameAsStdout:
                    posix_spawn_file_actions_adddup2(&actions, 1, fd)
                }
            }
            var none: Int32?
            try connect(stdin == .pipe ? .null : stdin, to: 0, read: &none)
            try connect(stdout == .sameAsStdout ? .null : stdout, to: 1, read: &stdoutRead)
            try connect(stderr, to: 2, read: &stderrRead)
        } catch {
            (ours + theirs).forEach { close($0) }
            throw error
        }
        for (child, source) in descriptors.sorted(by: { $0.key < $1.key }) {
            posix_spawn_file_actions_adddup2(&actions, source, child)
        }
        // Nothing else of ours may leak into the child.
        xclaw_spawn_closefrom(&actions, 3 + Int32(descriptors.keys.filter { $0 >= 3 }.count))

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        switch group {
        case .inherited: break
        case .own:
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        case .newSession: flags |= xclaw_spawn_setsid_flag()
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var envp: [UnsafeMutablePointer<CChar>?] = (environment ?? [:]).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let rc =
            environment == nil
            ? posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
            : posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp)
        theirs.forEach { close($0) }
        guard rc == 0 else {
            ours.forEach { close($0) }
            throw SubprocessError.spawn(executable, Errno(rawValue: rc))
        }
        return Subprocess(pid: pid, stdout: stdoutRead, stderr: stderrRead)
    }

    /// Runs `arguments` to its end, reading both pipes until they close, under `timeout`: at the deadline the child
    /// is killed (SIGKILL) and reaped, and what it printed so far is kept.
    public static func run(
        _ arguments: [String], timeout: Duration, environment: [String: String]? = nil,
        stderr: Stream = .pipe
    ) throws -> Outcome {
        let child = try spawn(arguments, stderr: stderr, environment: environment)
        let deadline = ContinuousClock.now + timeout
        let (out, err, complete) = child.read(until: deadline)
        child.closePipes()
        let ending = complete ? child.wait(deadline: deadline) : child.kill()
        return Outcome(ending: ending, stdout: out, stderr: err)
    }

    /// Reads the pipes until both close (EOF), `done` holds for the stdout read so far, or `deadline` passes; the
    /// flag is false only when the deadline ended it.
    public func read(
        until deadline: ContinuousClock.Instant,
        done: (Data) -> Bool = { _ in false }
    ) -> (stdout: Data, stderr: Data, complete: Bool) {
        var stdout = Data(), stderr = Data()
        var open = [stdoutPipe, stderrPipe].compactMap { $0 }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !open.isEmpty && !done(stdout) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return (stdout, stderr, false) }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(max(1, min(60_000, left.milliseconds.rounded(.up)))))
            if ready < 0 && Errno.current == .interrupted { continue }
            guard ready > 0 else { continue }
            for fd in fds where fd.revents != 0 {
                let n = Glibc.read(fd.fd, &buffer, buffer.count)
                if n > 0 {
                    if fd.fd == stdoutPipe {
                        stdout.append(contentsOf: buffer[0..<n])
                    } else {
                        stderr.append(contentsOf: buffer[0..<n])
                    }
                } else if n == 0 || (Errno.current != .interrupted && Errno.current != .wouldBlock) {
                    open.removeAll { $0 == fd.fd }
                }
            }
        }
        return (stdout, stderr, true)
    }

    /// Closes our ends of the pipes (a child that still writes then gets SIGPIPE).
    public func closePipes() {
        for fd in [stdoutPipe, stderrPipe].compactMap({ $0 }) { close(fd) }
        stdoutPipe = nil
        stderrPipe = nil
    }

    /// A pipe whose two ends are closed on exec (hand one to a child as a `.descriptor` stream).
    public static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard xclaw_pipe_cloexec(&fds) == 0 else { throw SubprocessError.pipe(.current) }
        return (fds[0], fds[1])
    }

    /// Waits for the child to end and reaps it; at `deadline` (nil: never) it is killed and reaped instead.
    @discardableResult
    public func wait(deadline: ContinuousClock.Instant? = nil) -> Termination {
        if let reaped { return reaped }
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, deadline == nil ? 0 : WNOHANG)
            if rc == pid { break }
            if rc < 0 && Errno.current != .interrupted { return remember(.unknown) }
            if let deadline, ContinuousClock.now >= deadline { return kill() }
            if deadline != nil { usleep(500) }
        }
        return remember(Self.termination(status))
    }

    /// Kills the child (SIGKILL) and reaps it.
    @discardableResult
    public func kill() -> Termination {
        if let reaped { return reaped }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && Errno.current == .interrupted {}
        return remember(.timedOut)
    }

    /// Whether the child still runs. One that has exited is reaped here and its ending kept, so a `wait()` after it
    /// still says how it ended (`Subprocess.isRunning(pid)` reaps too, and the status was lost: `.unknown`).
    public var isRunning: Bool {
        if reaped != nil { return false }
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        if rc == pid {
            _ = remember(Self.termination(status))
            return false
        }
        return rc == 0
    }

    private func remember(_ ending: Termination) -> Termination {
        reaped = ending
        return ending
    }

    /// The ending a `waitpid` status describes.
    public static func termination(_ status: Int32) -> Termination {
        var value: Int32 = 0
        switch xclaw_wait_status(status, &value) {
        case 1: return .exited(value)
        case 2: return .signalled(value)
        default: return .unknown
        }
    }

    /// True while `pid` runs. A zombie counts as gone (init reaps orphans only every few seconds), and our own child
    /// that has exited is reaped here.
    public static func isRunning(_ pid: pid_t) -> Bool {
        guard pid > 0 else { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { return false }
        guard let state = processState(pid) else { return false }
        guard state != "Z" && state != "X" else {
            // It exited between the two looks: if it is our child, reap it now, or nobody will (a caller that polls
            // until it is gone stops asking).
            _ = waitpid(pid, &status, WNOHANG)
            return false
        }
        return true
    }

    /// Waits for our child `pid` to exit and reaps it: its exit status, or nil when it died of a signal or had to be
    /// killed at `deadline`.
    public static func waitForExit(_ pid: pid_t, deadline: ContinuousClock.Instant) -> Int32? {
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid { break }
            if rc < 0 && Errno.current != .interrupted { return nil }
            if ContinuousClock.now >= deadline {
                Glibc.kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && Errno.current == .interrupted {}
                return nil
            }
            usleep(2000)
        }
        if case .exited(let code) = termination(status) { return code }
        return nil
    }

    /// How our child `pid` ended, without reaping it: nil while it runs, `.unknown` when it is no child of ours (any
    /// more). Its pid stays taken until it is reaped, so a group it leads can still be signalled safely
    /// (`ProcessGuard.watch(group:)`).
    public static func endingUnreaped(_ pid: pid_t) -> Termination? {
        var value: Int32 = 0
        while true {
            switch xclaw_exit_unreaped(pid, &value) {
            case 0: return nil
            case 1: return .exited(value)
            case 2: return .signalled(value)
            default: if Errno.current != .interrupted { return .unknown }
            }
        }
    }

    /// The state letter of `/proc/PID/stat` (R, S, Z…), nil when the process is gone.
    public static func processState(_ pid: pid_t) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: close)...].first { $0 != " " }
    }
}

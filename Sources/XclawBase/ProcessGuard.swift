import CXclawSystem
import Foundation
import Glibc
import Synchronization

/// A watcher process that ends what this process started (by pid or process group) and runs the clean-up commands it
/// was given when this process dies without doing so itself, e.g. killed with SIGKILL: then nothing of ours runs.
///
/// Why not `PR_SET_PDEATHSIG`: it cannot be set through posix_spawn, it fires when the spawning *thread* ends (a
/// pool thread may retire mid-run), and a daemon that forks (`dbus-daemon --fork`) loses it. Instead the watcher, a
/// forked child that runs only system calls (`xclaw_guard_start`), in a session of its own, reads a socket whose other
/// end only this process holds (close on exec, and `Subprocess` gives children no descriptor of ours): the kernel
/// closes it when this process dies, however it dies.
///
/// Why pidfds: a pid is only a number, and once its process is reaped the kernel hands it to the next process that
/// starts (pids wrap at 32,768). So each target goes to the watcher as a pidfd, which names that one process for as
/// long as it is held and refuses signals once it was reaped. A group goes as its leader's pidfd: the watcher signals
/// the group only while the leader is unreaped (until then no one else can have its id), and then each member through
/// a pidfd of its own.
public final class ProcessGuard: Sendable {
    /// The watcher's pid.
    public let pid: pid_t
    /// Our end of the socket (-1 once dismissed) and the next id to hand out.
    private let state: Mutex<(socket: Int32, next: UInt32)>

    /// Starts the watcher, with nothing to watch yet.
    public init() throws {
        var fds: [Int32] = [0, 0]
        guard xclaw_seqpacket_pair(&fds) == 0 else { throw SubprocessError.pipe(.current) }
        defer { close(fds[1]) }
        let child = xclaw_guard_start(fds[1])
        guard child > 0 else {
            let error = Errno.current
            close(fds[0])
            throw SubprocessError.spawn("the process guard (fork)", error)
        }
        pid = child
        state = Mutex((fds[0], 1))
    }

    deinit { dismiss() }

    /// Ends process `pid` if this process dies. Call it before the process can have been reaped (for a child of ours:
    /// before waiting for it), so the pid still names it; a process already gone is not watched.
    public func watch(pid target: pid_t) {
        guard target > 0 else { return }
        send("P", pgid: 0, leader: target)
    }

    /// Ends every process of group `group` (a session or group leader's pid) if this process dies, as long as its
    /// leader is still unreaped then: keep the leader unreaped (`Subprocess.endingUnreaped` reads its ending without
    /// reaping) while the group must be ended.
    public func watch(group: pid_t) {
        guard group > 0 else { return }
        send("G", pgid: group, leader: group)
    }

    /// Runs `arguments` (an absolute path first; output discarded, at most 10 s) if this process dies, before the
    /// targets are signalled; returns an id for `forget`.
    @discardableResult
    public func onDeath(run arguments: [String]) -> UInt32 {
        var bytes: [UInt8] = []
        for argument in arguments { bytes += Array(argument.utf8) + [0] }
        return state.withLock { state in
            let id = state.next
            state.next &+= 1
            guard state.socket >= 0 else { return id }
            _ = bytes.withUnsafeBytes {
                xclaw_guard_send(state.socket, CChar(UInt8(ascii: "C")), id, 0, $0.baseAddress, UInt($0.count), -1)
            }
            return id
        }
    }

    /// Drops a command `onDeath` registered: what it would clean up was cleaned up.
    public func forget(_ id: UInt32) {
        state.withLock { state in
            guard state.socket >= 0 else { return }
            _ = xclaw_guard_send(state.socket, CChar(UInt8(ascii: "F")), id, 0, nil, 0, -1)
        }
    }

    /// Everything watched was ended by its owner: the watcher exits without signalling anyone, and is reaped.
    public func dismiss() {
        let fd = state.withLock { state in
            defer { state.socket = -1 }
            return state.socket
        }
        guard fd >= 0 else { return }
        _ = xclaw_guard_send(fd, CChar(UInt8(ascii: "D")), 0, 0, nil, 0, -1)
        close(fd)
        _ = Subprocess.waitForExit(pid, deadline: .now + .seconds(2))
    }

    /// Sends one target with its pidfd (a process gone already has none: nothing to watch; a failed send means the
    /// watcher is gone, and nothing more can be done about it).
    private func send(_ op: Character, pgid: pid_t, leader: pid_t) {
        let pidfd = xclaw_pidfd_open(leader)
        guard pidfd >= 0 else { return }
        defer { close(pidfd) }
        state.withLock { state in
            let id = state.next
            state.next &+= 1
            guard state.socket >= 0, let byte = op.asciiValue else { return }
            _ = xclaw_guard_send(state.socket, CChar(byte), id, pgid, nil, 0, pidfd)
        }
    }
}

import Foundation
import Glibc
import Synchronization

/// A watcher process that ends what this process started (by pid or process group) when this process dies
/// without ending them itself, e.g. killed with SIGKILL: then nothing of ours runs to clean up.
///
/// Why not `PR_SET_PDEATHSIG`: it cannot be set through posix_spawn, it fires when the spawning *thread* ends (a
/// pool thread may retire mid-run), and a daemon that forks (`dbus-daemon --fork`) loses it. Instead the watcher,
/// a small `/bin/sh` script in a session of its own, reads a socket whose other end only this process holds (close
/// on exec, and `Subprocess` gives children no descriptor of ours): the kernel closes it when this process dies,
/// however it dies. What to end is sent as lines while things start; `dismiss` tells it everything was ended.
public final class ProcessGuard: Sendable {
    /// The watcher's pid.
    public let pid: pid_t
    /// Our end of the socket; -1 once dismissed.
    private let socket: Mutex<Int32>

    /// What the watcher runs: collect targets (`PID` or `-PGID`) until `done` (exit) or EOF (we died): then SIGTERM
    /// them, and SIGKILL what still runs after 2 s. dash's `kill` takes `-SIG -PGID`, not `--`.
    static let script = """
        targets=
        while IFS= read -r line; do
          [ "$line" = done ] && exit 0
          targets="$targets $line"
        done
        for t in $targets; do kill -TERM $t 2>/dev/null; done
        i=0
        while [ $i -lt 20 ]; do
          alive=
          for t in $targets; do kill -0 $t 2>/dev/null && alive=1; done
          [ -z "$alive" ] && exit 0
          sleep 0.1
          i=$((i + 1))
        done
        for t in $targets; do kill -KILL $t 2>/dev/null; done
        """

    /// Starts the watcher, with nothing to watch yet.
    public init() throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw SubprocessError.pipe(.current)
        }
        defer { close(fds[1]) }
        do {
            // A session of its own: a Ctrl-C meant for xclaw must not end the watcher before xclaw's clean-up.
            pid = try Subprocess.spawn(
                ["/bin/sh", "-c", Self.script], stdin: .descriptor(fds[1]), stdout: .null, stderr: .null,
                group: .newSession
            ).pid
        } catch {
            close(fds[0])
            throw error
        }
        socket = Mutex(fds[0])
    }

    deinit { dismiss() }

    /// Ends process `pid` if this process dies.
    public func watch(pid target: pid_t) { send(target > 0 ? "\(target)" : nil) }

    /// Ends every process of group `group` (a session leader's pid) if this process dies.
    public func watch(group: pid_t) { send(group > 0 ? "-\(group)" : nil) }

    /// Everything watched was ended by its owner: the watcher exits without signalling anyone, and is reaped.
    public func dismiss() {
        let fd = socket.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        guard fd >= 0 else { return }
        let line = Array("done\n".utf8)
        _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
        _ = Subprocess.waitForExit(pid, deadline: .now + .seconds(2))
    }

    /// Sends one target line (a failed send means the watcher is gone: nothing more can be done about it).
    private func send(_ target: String?) {
        guard let target else { return }
        socket.withLock { fd in
            guard fd >= 0 else { return }
            let line = Array("\(target)\n".utf8)
            _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }
}

import CXclawSystem
import Glibc
import XclawWire

/// The socket of the running command, for the signal handler: each signal is forwarded there as a byte (its number).
nonisolated(unsafe) private var cancelSocket: Int32 = -1

/// Hands a command to the daemon: the request line (arguments, environment, directory) goes with the front's stdin,
/// stdout, stderr and terminal attached, so the daemon writes the command's output where the front would have; the
/// reply is the exit status. Speaks `DaemonWire`, the wire format the daemon shares, without Foundation: the front
/// links this module, and the front links no Foundation.
public struct DaemonHandoff {
    /// What became of a command handed over.
    public enum Outcome: Equatable {
        /// The daemon ran it and it ended with this status.
        case exited(Int32)
        /// A daemon is there but did not take it: it runs in-process (a notice said why: another protocol version, a
        /// socket of another user, a request too long, a refusal).
        case notTaken
        /// No daemon runs (no socket; or a stale one, now removed, when `stale`): the front may start one.
        case noDaemon(stale: Bool)
        /// The daemon died while it ran: its effect is unknown, and it must not run again. The message says what to
        /// do; the front fails with it (exit 5).
        case daemonDied(String)
    }

    /// The command line, without the program's name.
    let arguments: [String]
    /// The front's environment: sent with the request, and where the state directory is found.
    let environment: [String: String]
    /// Says a line on stderr (`xclaw: ` and the text), the front's way.
    let notice: (String) -> Void

    /// A handoff of `arguments` with `environment`, its notices said through `notice`.
    public init(arguments: [String], environment: [String: String], notice: @escaping (String) -> Void) {
        (self.arguments, self.environment, self.notice) = (arguments, environment, notice)
    }

    /// Hands the command over and waits for its end.
    public func run() -> Outcome {
        guard let directory = Self.stateDirectory(environment) else {
            // None yet (the first command of a login): `daemon start` makes it. One that is there but not
            // private is the full binary's to explain.
            var info = stat()
            return lstat(Self.statePath(environment), &info) != 0 && errno == ENOENT
                ? .noDaemon(stale: false) : .notTaken
        }
        let path = directory + "/daemon.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .notTaken }
        guard connect(fd, path: path) else {
            let why = errno
            close(fd)
            if why == ENOENT {
                unlink(directory + "/web.on")
                return .noDaemon(stale: false)
            }
            // A stale socket is left to `daemon start --auto`, which replaces it under the start lock: removed here, a
            // socket a daemon just bound at the path could be taken for it.
            if why == ECONNREFUSED {
                unlink(directory + "/web.on")
                return .noDaemon(stale: true)
            }
            return .notTaken
        }
        // Only a daemon of this user gets our descriptors and environment.
        var uid: UInt32 = 0
        guard xclaw_peer_uid(fd, &uid) == 0, uid == getuid() else {
            close(fd)
            notice("the daemon socket \(path) belongs to another user; running in-process")
            return .notTaken
        }
        let line = request()
        guard line.utf8.count <= DaemonWire.maximumRequest else {
            close(fd)
            notice(
                "the command's environment and arguments (\(line.utf8.count) bytes) are more than the daemon takes "
                    + "(\(DaemonWire.maximumRequest)); running in-process")
            return .notTaken
        }
        var descriptors: [Int32] = [0, 1, 2]
        let terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        if terminal >= 0 { descriptors.append(terminal) }
        // Signals are held from before the request goes until their forwarding is in place: one that came between
        // would end this process while the daemon runs the command.
        var held = sigset_t(), previous = sigset_t()
        sigemptyset(&held)
        for sig in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&held, sig) }
        sigprocmask(SIG_BLOCK, &held, &previous)
        let sent = line.withCString {
            xclaw_send_with_fds(fd, $0, UInt(strlen($0)), descriptors, Int32(descriptors.count))
        }
        if terminal >= 0 { close(terminal) }
        guard sent == line.utf8.count else {
            sigprocmask(SIG_SETMASK, &previous, nil)
            close(fd)
            return .notTaken
        }
        cancelSocket = fd
        signal(SIGPIPE, SIG_IGN)
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = send(cancelSocket, &byte, 1, Int32(MSG_NOSIGNAL))
            }
        }
        sigprocmask(SIG_SETMASK, &previous, nil)
        let reply = readReply(fd)
        close(fd)
        return outcome(reply)
    }

    /// What the reply means: the exit status, the daemon's death, or in-process (after a notice).
    private func outcome(_ reply: String?) -> Outcome {
        guard let reply else {
            return .daemonDied(
                "the daemon died during the command; its effect is unknown (exit 5). It was not run again. Its guard "
                    + "releases the keys and buttons it held and unbinds the keycodes it bound for typing; should a "
                    + "key or button still be down, run `xclaw release-all --everything` (with --display)")
        }
        let answer = DaemonWire.Reply(line: reply)
        if let exit = answer?.exit { return .exited(exit) }
        let theirs = answer?.version ?? 0
        if theirs != DaemonWire.version {
            notice(
                "the daemon speaks protocol \(theirs), this xclaw \(DaemonWire.version): running in-process "
                    + "(`xclaw daemon stop` and start it again to use it)")
        } else {
            notice("the daemon refused the command; running in-process")
        }
        return .notTaken
    }

    /// Whether a daemon with its web view runs (its `web.on` marker): then even plain input goes to it, so the web
    /// view's action log shows it.
    public var webViewRuns: Bool {
        guard let directory = Self.stateDirectory(environment) else { return false }
        let path = directory + "/web.on"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = read(fd, &buffer, buffer.count)
        close(fd)
        // The daemon's pid: a marker whose daemon is gone (killed) is removed, and input is done here again.
        var pid: Int32 = 0
        for byte in buffer.prefix(max(0, count)) where byte >= 48 && byte <= 57 { pid = pid &* 10 &+ Int32(byte - 48) }
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else {
            unlink(path)
            return false
        }
        return true
    }

    /// Removes a socket no daemon answers on (when no daemon is to be started, which would replace it itself).
    public func removeStaleSocket() {
        guard let directory = Self.stateDirectory(environment) else { return }
        unlink(directory + "/daemon.sock")
    }

    /// The state directory of `environment` — `$XCLAW_STATE_DIR`, else `$XDG_RUNTIME_DIR/xclaw`, else
    /// `/tmp/xclaw-UID` (the rule of `XclawPaths`) — when it is a directory of ours that others cannot write; nil
    /// otherwise (the full binary then explains).
    public static func stateDirectory(_ environment: [String: String]) -> String? {
        let directory = statePath(environment)
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(),
            info.st_mode & 0o022 == 0
        else { return nil }
        return directory
    }

    /// The state directory's path by that rule, whatever is there.
    private static func statePath(_ environment: [String: String]) -> String {
        if let dir = environment["XCLAW_STATE_DIR"], !dir.isEmpty { return dir }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/xclaw" }
        return "/tmp/xclaw-\(getuid())"
    }

    private func connect(_ fd: Int32, path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            errno = ENAMETOOLONG  // not "no daemon": that would start one on every command
            return false
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// The `run` request as one JSON line.
    private func request() -> String {
        var cwd = [Int8](repeating: 0, count: 4096)
        let directory = getcwd(&cwd, cwd.count) != nil ? String(cString: cwd) : "/"
        return DaemonWire.runRequest(
            arguments: arguments, environment: environment, directory: directory, pid: getpid())
    }

    /// The reply line; nil when the daemon hung up without one.
    private func readReply(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return nil }
            bytes += chunk[0..<count]
            if bytes.contains(0x0a) { return String(decoding: bytes, as: UTF8.self) }
        }
    }
}

import Foundation
import Glibc
import Synchronization
import XclawBase
import XclawCommandLine
import XclawTesting

/// The hosts of `xclaw bench fleet`: a network namespace for each party (the database, the model, the clients, each
/// worker), each with one end of a veth pair as `eth0` on 10.231.0.0/24, the other ends on a bridge in one more
/// namespace. Nothing is added to the machine's own namespace and there is no route off the subnet: the parties reach
/// each other only. Every name carries the pid of the bench that made it (`xclaw-bench-db-1234`), so a run that
/// crashed is found and removed by the next.
struct BenchNetwork {
    /// The pid of the bench that owns the namespaces.
    let owner: pid_t
    /// The workers of the fleet (`w0`, `w1`, …), besides the single worker of the comparison.
    let workers: Int

    /// The subnet of the hosts.
    static let subnet = "10.231.0.0/24"
    /// Every namespace's name starts so.
    static let prefix = "xclaw-bench-"
    /// The namespace that holds the bridge.
    static let switchRole = "net"
    /// The most hosts the /24 holds (.2 to .254).
    static let maxHosts = 253

    /// The hosts, in address order: the database, the model, the clients (the bench itself), the fleet's workers and
    /// the single worker of the comparison.
    var roles: [String] { ["db", "model", "clients"] + (0..<workers).map { "w\($0)" } + ["single"] }

    /// The namespace of `role`.
    func namespace(_ role: String) -> String { "\(Self.prefix)\(role)-\(owner)" }

    /// The IPv4 address of `role`'s `eth0`.
    func address(_ role: String) -> String { "10.231.0.\((roles.firstIndex(of: role) ?? 0) + 2)" }

    /// The command that runs the rest of a command line in `role`'s namespace (nsenter execs it in place: the pid
    /// stays the one the caller started).
    func launcher(_ role: String) -> [String] {
        [Self.program("nsenter") ?? "/usr/bin/nsenter", "--net=/run/netns/\(namespace(role))", "--"]
    }

    /// Why the namespaces cannot be made here, or nil when they can.
    static func unavailable() -> String? {
        if geteuid() != 0 { return "not root (making network namespaces needs it)" }
        if program("ip") == nil { return "no `ip` (iproute2)" }
        if program("nsenter") == nil { return "no `nsenter` (util-linux)" }
        return nil
    }

    /// `name`'s path in PATH or the system's program directories (root's PATH may lack sbin).
    static func program(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return dirs.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// Makes the namespaces, the bridge and the links; on a failure removes whatever was made and throws.
    func create() throws {
        guard roles.count <= Self.maxHosts else {
            throw BenchNetworkError.command("\(workers) workers", "more hosts than \(Self.subnet) holds")
        }
        do {
            let hub = namespace(Self.switchRole)
            for name in [hub] + roles.map(namespace) { try ip(["netns", "add", name]) }
            try ip(["-n", hub, "link", "add", "name", "br0", "type", "bridge"])
            try ip(["-n", hub, "link", "set", "dev", "br0", "up"])
            for role in roles {
                let host = namespace(role), port = "p-\(role)"
                try ip(["-n", hub, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0", "netns", host])
                try ip(["-n", hub, "link", "set", "dev", port, "master", "br0", "up"])
                try ip(["-n", host, "addr", "add", "\(address(role))/24", "dev", "eth0"])
                try ip(["-n", host, "link", "set", "dev", "eth0", "up"])
                try ip(["-n", host, "link", "set", "dev", "lo", "up"])
            }
        } catch {
            Self.tearDown(owner: owner)
            throw error
        }
    }

    /// Runs `ip ARGUMENTS`; throws with its message when it fails.
    private func ip(_ arguments: [String]) throws {
        let outcome = try Subprocess.run([Self.program("ip") ?? "/usr/sbin/ip"] + arguments, timeout: .seconds(30))
        guard outcome.ending == .exited(0) else {
            throw BenchNetworkError.command(
                "ip " + arguments.joined(separator: " "),
                String(decoding: outcome.stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Runs `body` on a thread of its own that has entered `role`'s namespace: a socket it opens (a listener) stays
    /// in that namespace after the thread has ended, while the rest of the process stays where it is.
    func inside<T: Sendable>(_ role: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let path = "/run/netns/\(namespace(role))"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchNetworkError.command("open \(path)", Errno.current.description) }
        defer { close(fd) }
        // Glibc's module leaves setns out (it is a _GNU_SOURCE function): looked up by name.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else {
            throw BenchNetworkError.command("setns", "the C library has no setns")
        }
        let setns = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let result: Result<T, any Error> =
                setns(fd, Self.newNetworkNamespace) == 0
                ? Result { try body() }
                : .failure(BenchNetworkError.command("setns \(path)", Errno.current.description))
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.start()
        done.wait()
        return try outcome.withLock { $0 }!.get()
    }

    /// CLONE_NEWNET, which Glibc's module does not carry either.
    private static let newNetworkNamespace: Int32 = 0x4000_0000

    /// The namespaces whose names carry `owner`'s pid.
    static func namespaces(owner: pid_t) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix("-\(owner)") }.sorted()
    }

    /// The temporary directories a run owned by `owner` keeps its state and its PostgreSQL in.
    static func directories(owner: pid_t) -> (state: URL, database: URL) {
        let tmp = FileManager.default.temporaryDirectory
        return (
            tmp.appendingPathComponent("xclaw-bench-fleet-\(owner)"),
            tmp.appendingPathComponent("xclaw-bench-pg-\(owner)")
        )
    }

    /// Ends every process in `owner`'s namespaces but this one (SIGTERM, SIGKILL after 5 s), deletes the namespaces
    /// (their veths and the bridge go with them) and the run's temporary directories.
    static func tearDown(owner: pid_t) {
        let names = namespaces(owner: owner)
        let ip = program("ip") ?? "/usr/sbin/ip"
        /// The processes in the namespaces now.
        func processes() -> [pid_t] {
            names.flatMap { name in
                let listed =
                    (try? Subprocess.run([ip, "netns", "pids", name], timeout: .seconds(10)))?.stdout ?? Data()
                return String(decoding: listed, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap {
                    pid_t($0)
                }.filter { $0 != getpid() }
            }
        }
        var left = processes()
        if !left.isEmpty {
            left.forEach { kill($0, SIGTERM) }
            let deadline = ContinuousClock.now + .seconds(5)
            while !left.isEmpty, ContinuousClock.now < deadline {
                usleep(100_000)
                left = processes()
            }
            left.forEach { kill($0, SIGKILL) }
        }
        for name in names { _ = try? Subprocess.run([ip, "netns", "del", name], timeout: .seconds(10)) }
        let dirs = directories(owner: owner)
        for dir in [dirs.state, dirs.database] { try? FileManager.default.removeItem(at: dir) }
    }

    /// For the bench inside the namespaces: when the bench that made them dies (a SIGKILL it could not pass on), this
    /// one is handed to init; it then removes the namespaces and leaves too.
    func leaveWithOwner() {
        let owner = self.owner
        Thread.detachNewThread {
            while getppid() == owner { sleep(1) }
            printError("xclaw bench fleet: the bench that made the namespaces (pid \(owner)) is gone; removing them")
            Self.tearDown(owner: owner)
            _exit(ExitStatus.internal.rawValue)
        }
    }

    /// Removes the namespaces (and directories) of fleet benches that are no longer running; returns their pids.
    static func removeLeftovers() -> [pid_t] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? []
        let owners = Set(
            names.filter { $0.hasPrefix(prefix) }.compactMap { $0.split(separator: "-").last.flatMap { pid_t($0) } })
        let gone = owners.filter { pid in
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) != "xclaw-bench"
        }.sorted()
        gone.forEach { tearDown(owner: $0) }
        return gone
    }

    /// Runs this binary with `arguments` in the clients' namespace, forwarding SIGINT, SIGTERM and SIGHUP to it,
    /// and removes the namespaces whatever way it ended (also when a signal came before it started).
    func host(_ arguments: [String]) throws -> Subprocess.Termination {
        let relay = SignalRelay()
        let watch = Interrupt.watch([SIGINT, SIGTERM, SIGHUP]) { relay.forward($0) }
        defer {
            watch.stop()
            Self.tearDown(owner: owner)
        }
        try create()
        let early = relay.signalled.load(ordering: .sequentiallyConsistent)
        if early != 0 { return .signalled(early) }
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let inner = try Subprocess.spawn(
            launcher("clients") + [executable] + arguments, stdout: .descriptor(1), stderr: .descriptor(2))
        relay.child.store(inner.pid, ordering: .sequentiallyConsistent)
        // A signal between the spawn and the store above was not forwarded.
        let late = relay.signalled.load(ordering: .sequentiallyConsistent)
        if late != 0 { kill(inner.pid, late) }
        return inner.wait()
    }

    /// The signal last received and the child it goes on to, shared with the signal watch.
    private final class SignalRelay: Sendable {
        /// The child's pid, 0 before it runs.
        let child = Atomic<Int32>(0)
        /// The last signal, 0 for none.
        let signalled = Atomic<Int32>(0)

        /// Notes `signal` and sends it on to the child, if there is one yet.
        func forward(_ signal: Int32) {
            signalled.store(signal, ordering: .sequentiallyConsistent)
            let pid = child.load(ordering: .sequentiallyConsistent)
            if pid > 0 { kill(pid, signal) }
        }
    }
}

/// Why the bench's network could not be made.
enum BenchNetworkError: ClassifiedError, Equatable {
    /// A command (or call) failed: what, and its message.
    case command(String, String)

    var exitStatus: ExitStatus { .internal }

    var description: String {
        switch self {
        case .command(let what, let message): return "\(what): \(message)"
        }
    }
}

/// Where the fleet bench's parties run: each in a namespace of `network`, or all in this process's network namespace
/// with PostgreSQL on its Unix socket (`network` nil, for `reason`).
struct FleetHosts {
    /// The namespaces, or nil.
    let network: BenchNetwork?
    /// Why there are no namespaces (empty with them).
    let reason: String

    /// The line the report carries first.
    var note: String {
        guard let network else {
            return "namespaces: no — \(reason); every party in the bench's network namespace, PostgreSQL on its Unix "
                + "socket"
        }
        return "namespaces: \(network.roles.count + 1) (db, model, clients, \(network.workers) workers, the single "
            + "worker; the bridge's) on \(BenchNetwork.subnet): PostgreSQL over TCP at \(network.address("db")):5432, "
            + "the model at \(network.address("model")), clients at \(network.address("clients"))"
    }

    /// The bench's state directory: named by the namespaces' owner, so a leftover is removed with them.
    var directory: URL {
        guard let network else {
            return FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-fleet-\(getpid())")
        }
        return BenchNetwork.directories(owner: network.owner).state
    }

    /// The PostgreSQL server: the database host's own, or the process's shared one.
    func database() throws -> PostgresTestServer {
        guard let network else { return try PostgresTestServer.shared() }
        return try PostgresTestServer.start(
            in: BenchNetwork.directories(owner: network.owner).database.path,
            network: .init(
                launcher: network.launcher("db"), address: network.address("db"), port: 5432,
                clients: BenchNetwork.subnet))
    }

    /// The loopback model, listening on the model host's address.
    func model() throws -> TokenModel {
        guard let network else { return try TokenModel() }
        let host = network.address("model")
        return try network.inside("model") { try TokenModel(host: host) }
    }

    /// What a worker for `role` (`w0`, `single`) is started through.
    func launcher(_ role: String) -> [String] { network?.launcher(role) ?? [] }
}

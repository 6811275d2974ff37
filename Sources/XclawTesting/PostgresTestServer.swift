import Foundation
import Synchronization
import XclawBase

/// A real PostgreSQL server of the tests' own: `initdb` in a temporary directory, listening only on a Unix socket in
/// that directory (no TCP port, nothing system-wide), stopped and removed when the test process exits. One per test
/// process, started on first use; each test takes a fresh database of it (`newDatabase()`). Run as root (as the
/// tests are here), the server runs as the `postgres` user the Debian package creates, because PostgreSQL refuses
/// root; the directory is made over to that user. A benchmark may start one of its own that also listens on TCP in
/// a network namespace it made (`start(in:network:)`), to look like a database host.
public final class PostgresTestServer: Sendable {
    /// The data directory, which also holds the socket and the log.
    public let directory: String
    /// The directory of PostgreSQL's programs (`pg_config --bindir`).
    private let binaries: String
    /// The prefix that runs a program as the server's user (`setpriv …`), empty when not root.
    private let asServerUser: [String]
    /// Databases handed out so far, for unique names.
    private let count = Mutex(0)
    /// Where it also listens on TCP, if anywhere.
    private let network: Network?

    /// A TCP listener of a server of a benchmark's own: `address:port` in the network namespace `launcher` enters
    /// (`nsenter --net=…`, a command that execs the rest in place), trusted from the `clients` subnet (CIDR).
    public struct Network: Sendable {
        /// The command the server's programs run through, so the server lives in that network namespace.
        public var launcher: [String]
        /// The IPv4 address it listens on (its namespace's).
        public var address: String
        /// The TCP port.
        public var port: Int
        /// The subnet its clients connect from (`10.231.0.0/24`).
        public var clients: String

        /// A listener on `address:port` entered through `launcher`, for `clients`.
        public init(launcher: [String], address: String, port: Int, clients: String) {
            (self.launcher, self.address, self.port, self.clients) = (launcher, address, port, clients)
        }
    }

    /// Why the server could not start.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, with the program's output.
        public let description: String

        /// A failure saying `description`.
        public init(description: String) { self.description = description }
    }

    /// The process's server, started on first use.
    public static func shared() throws -> PostgresTestServer {
        try started.withLock { server in
            if let server { return server }
            let made = try PostgresTestServer()
            server = made
            atexit { PostgresTestServer.stopShared() }
            return made
        }
    }

    /// The started server, if any.
    private static let started = Mutex<PostgresTestServer?>(nil)

    /// Stops the shared server and deletes its directory: at exit, and by an owner that leaves with `_exit` (the
    /// xclaw binaries do, so their atexit handlers never run).
    public static func stopShared() {
        started.withLock({ $0 })?.stop()
    }

    /// A server of the caller's own (not the shared one) in `directory` (created here, removed by `stop()`), on its
    /// socket there and on TCP as `network` says; its URLs are TCP ones.
    public static func start(in directory: String, network: Network) throws -> PostgresTestServer {
        try PostgresTestServer(directory: directory, network: network)
    }

    /// Stops the server at once and deletes its directory.
    public func stop() {
        _ = try? Subprocess.run(
            (network?.launcher ?? []) + asServerUser + [
                binaries + "/pg_ctl", "stop", "-m", "immediate", "-D", directory + "/data",
            ],
            timeout: .seconds(10))
        try? FileManager.default.removeItem(atPath: directory)
    }

    private init(directory chosen: String? = nil, network: Network? = nil) throws {
        self.network = network
        let config = try Subprocess.run(["/usr/bin/pg_config", "--bindir"], timeout: .seconds(10))
        binaries = String(decoding: config.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard FileManager.default.isExecutableFile(atPath: binaries + "/initdb") else {
            throw Failure(
                description: "no PostgreSQL server programs in \(binaries); run scripts/install-deps.sh (postgresql)")
        }
        directory =
            chosen
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("xclaw-pg-\(getpid())-\(UUID().uuidString.prefix(8))").path
        guard mkdir(directory, 0o700) == 0 else { throw Failure(description: "cannot create \(directory)") }
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw Failure(description: "no postgres user; run scripts/install-deps.sh (postgresql)")
            }
            guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw Failure(description: "cannot give \(directory) to the postgres user")
            }
            asServerUser = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
        } else {
            asServerUser = []
        }
        try run(
            [
                binaries + "/initdb", "-D", directory + "/data", "-A", "trust", "-U", "xclaw", "--no-sync", "-E",
                "UTF8",
                "--locale=C",
            ], what: "initdb")
        if let network {
            // initdb's trust lines name loopback only; the benchmark's hosts connect from their subnet.
            guard let hba = FileHandle(forWritingAtPath: directory + "/data/pg_hba.conf") else {
                throw Failure(description: "cannot open \(directory)/data/pg_hba.conf")
            }
            defer { try? hba.close() }
            try hba.seekToEnd()
            try hba.write(contentsOf: Data("host all xclaw \(network.clients) trust\n".utf8))
        }
        try start()
    }

    /// Starts the server on its socket (and its TCP listener, if any), with fsync off and a small footprint (a test
    /// server's data is thrown away), and waits until it accepts connections.
    private func start() throws {
        let listen = network.map { "-c listen_addresses='\($0.address)' -p \($0.port)" } ?? "-c listen_addresses=''"
        let options = "-k \(directory) \(listen) -F -c max_connections=200 -c shared_buffers=16MB"
        try run(
            [
                binaries + "/pg_ctl", "start", "-w", "-t", "30", "-D", directory + "/data", "-l", directory + "/log",
                "-o", options,
            ], what: "pg_ctl start")
    }

    /// Runs one of the server's programs as its user; throws with its output when it fails.
    private func run(_ arguments: [String], what: String) throws {
        let outcome = try Subprocess.run((network?.launcher ?? []) + asServerUser + arguments, timeout: .seconds(60))
        guard outcome.ending == .exited(0) else {
            let log = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
            throw Failure(
                description: "\(what) failed (\(outcome.ending)): "
                    + String(decoding: outcome.stdout + outcome.stderr, as: UTF8.self) + log)
        }
    }

    /// The URL of the server's `postgres` database (as the superuser `xclaw`).
    public var adminURL: String { url(database: "postgres") }

    /// The URL of `database` on this server: through its socket, or over TCP when it has a listener.
    public func url(database: String) -> String {
        guard let network else { return "postgresql:///\(database)?host=\(directory)&user=xclaw" }
        return "postgresql://xclaw@\(network.address):\(network.port)/\(database)"
    }

    /// Creates an empty database and returns its URL.
    public func newDatabase() throws -> String {
        let number = count.withLock { value in
            value += 1
            return value
        }
        let name = "t\(number)"
        try sql("CREATE DATABASE \(name) TEMPLATE template0 STRATEGY file_copy")
        return url(database: name)
    }

    /// Runs SQL as the superuser through psql, in the database `url` names (the `postgres` database by default).
    public func sql(_ statement: String, url: String? = nil) throws { _ = try query(statement, url: url) }

    /// Runs a query through psql and returns its rows as psql's unaligned output (`|` between columns), trimmed.
    public func query(_ statement: String, url: String? = nil) throws -> String {
        let outcome = try Subprocess.run(
            [binaries + "/psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-d", url ?? adminURL, "-c", statement],
            timeout: .seconds(60))
        guard outcome.ending == .exited(0) else {
            throw Failure(
                description: "psql \(statement) failed: " + String(decoding: outcome.stderr, as: UTF8.self))
        }
        return String(decoding: outcome.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server as a crash would (`immediate`) and starts it again: the fleet's "database restarted" fault.
    public func restart(downFor pause: Duration = .zero) throws {
        try run([binaries + "/pg_ctl", "stop", "-m", "immediate", "-D", directory + "/data"], what: "pg_ctl stop")
        if pause > .zero { Thread.sleep(forTimeInterval: pause / .seconds(1)) }
        try start()
    }
}

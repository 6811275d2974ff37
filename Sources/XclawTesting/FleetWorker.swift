import Foundation
import XclawBase
import XclawPolling
import XclawScreen

/// A fleet worker for the tests and the fleet benchmark: `xclaw-core daemon run --worker` in a state directory of its
/// own (its own socket, data and config, as on another host), on the database `XCLAW_DATABASE_URL` names in its
/// environment. It stops with the process that started it (`--parent`).
public final class FleetWorker: @unchecked Sendable {
    // Safe because: every property is set once in init; `Process` is only asked whether it runs, signalled and
    // waited for.
    /// Its name in the fleet.
    public let name: String
    /// Its state directory.
    public let state: URL
    /// What it logged.
    public let log: URL
    private let process = Process()

    /// Starts a worker named `name` with `arguments` after `daemon run --worker --name NAME` (labels, slots) and
    /// `environment` over this process's (the database URL, the model's address).
    public init(name: String, state: URL, arguments: [String] = [], environment: [String: String]) throws {
        self.name = name
        self.state = state
        try FileManager.default.createDirectory(
            at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        log = state.appendingPathComponent("worker.log")
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        env["XCLAW_STATE_DIR"] = state.path
        env["XDG_DATA_HOME"] = state.appendingPathComponent("data").path
        env["XDG_STATE_HOME"] = state.appendingPathComponent("state").path
        env["XDG_CONFIG_HOME"] = state.appendingPathComponent("config").path
        env["HOME"] = state.path
        env.removeValue(forKey: "XCLAW_TEST_DAEMON")
        env.removeValue(forKey: "XCLAW_DB")
        let core = productsDirectory.appendingPathComponent("xclaw-core")
        process.executableURL = core
        process.arguments =
            ["daemon", "run", "--worker", "--name", name] + arguments + ["--parent", String(getpid())]
        process.environment = env
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    /// Its process id.
    public var pid: Int32 { process.processIdentifier }

    /// Whether it still runs.
    public var isRunning: Bool { process.isRunning }

    /// What it logged so far.
    public var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Stops it as systemd or Kubernetes would (SIGTERM), and waits until it has left.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// Kills it outright (SIGKILL), as a crashed host would: it leaves nothing behind.
    public func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

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
    /// `environment` over this process's (the database URL, the model's address), through `launcher` when given (a
    /// command that execs the rest in place, such as `nsenter --net=…`: the fleet bench's worker on a host of its own).
    public init(
        name: String, state: URL, arguments: [String] = [], environment: [String: String], launcher: [String] = []
    ) throws {
        self.name = name
        self.state = state
        log = state.appendingPathComponent("worker.log")
        // Its own home too, and no SQLite file: the database is the fleet's.
        var env = DaemonLaunch.environment(state: state, over: environment)
        env["HOME"] = state.path
        env.removeValue(forKey: "XCLAW_DB")
        let core = productsDirectory.appendingPathComponent("xclaw-core").path
        try DaemonLaunch.start(
            process,
            command: launcher + [core, "daemon", "run", "--worker", "--name", name] + arguments
                + ["--parent", String(getpid())],
            environment: env, state: state, log: log)
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

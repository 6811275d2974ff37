import Foundation
import Synchronization
import XclawBase
import XclawPolling

/// The CLI suite runs twice: in-process, and with `XCLAW_TEST_DAEMON=1` through a daemon (`scripts/test.sh`). In
/// the second run every `xclaw` the tests start finds a daemon on its state directory, started here once per
/// directory (again after a test killed it) and stopped when the test process ends (`daemon run --parent`).
public enum DaemonMode {
    /// Whether this test process runs the suite through the daemon.
    public static let isOn = ProcessInfo.processInfo.environment["XCLAW_TEST_DAEMON"] == "1"

    /// The daemon started for each state directory.
    private static let started = Mutex<[String: pid_t]>([:])

    /// Makes sure a daemon serves the state directory of `environment` (the test process's, merged with the
    /// command's), unless the command is about the daemon itself or runs in-process by choice; does nothing
    /// in-process.
    public static func prepare(_ arguments: [String], environment: [String: String]) throws {
        // `XCLAW_TEST_DAEMON=0` in a command's environment: the test manages the daemon itself.
        guard isOn, environment["XCLAW_TEST_DAEMON"] != "0", arguments.first != "daemon",
            !arguments.contains("--no-daemon")
        else { return }
        let directory = XclawPaths.stateDirectory(environment)
        let socket = directory.appendingPathComponent("daemon.sock").path
        // One answers already: ours, or one the test started itself.
        if answers(socket) { return }
        // A planted directory: no daemon can use it, and the CLI runs in-process and refuses it (exit 2).
        guard (try? PrivateFiles.directory(directory)) != nil else { return }
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("xclaw-core")
        process.arguments = ["daemon", "run", "--parent", String(getpid())]
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        started.withLock { $0[directory.path] = process.processIdentifier }
        poll(within: .seconds(10), every: .milliseconds(10)) { answers(socket) }
    }

    /// Kills, without a chance to clean up, the process that runs a command `cli` started: the `xclaw` process
    /// itself in-process; the daemon that serves `environment`'s state directory in daemon mode (the CLI then
    /// reports the daemon's death, and the next command gets a new daemon). Tests of crash safety use it, so they
    /// kill what really runs the agent in either mode.
    public static func killRunner(of cli: Process, environment: [String: String]) {
        let directory = XclawPaths.stateDirectory(ProcessInfo.processInfo.environment.merging(environment) { $1 })
        if isOn, let daemon = started.withLock({ $0[directory.path] }) {
            kill(daemon, SIGKILL)
            _ = Subprocess.waitForExit(daemon, deadline: .now + .seconds(5))
        } else {
            kill(cli.processIdentifier, SIGKILL)
        }
        cli.exits(within: .seconds(30))
    }

    /// Whether a daemon listens on `socket`.
    public static func answers(_ socket: String) -> Bool { (try? UnixSocket.connect(path: socket)) != nil }
}

import Foundation
import Synchronization
import XclawBase

/// The CLI suite runs twice: in-process, and with `XCLAW_TEST_DAEMON=1` through a daemon (`scripts/test.sh`). In
/// the second run every `xclaw` the tests start finds a daemon on its state directory, started here once per
/// directory and stopped when the test process ends (`daemon run --parent`).
public enum DaemonMode {
    /// Whether this test process runs the suite through the daemon.
    public static let isOn = ProcessInfo.processInfo.environment["XCLAW_TEST_DAEMON"] == "1"

    private static let started = Mutex<Set<String>>([])

    /// Makes sure a daemon serves the state directory of `environment` (the test process's, merged with the
    /// command's), unless the command is about the daemon itself; does nothing in-process.
    public static func prepare(_ arguments: [String], environment: [String: String]) throws {
        guard isOn, arguments.first != "daemon" else { return }
        let directory = XclawPaths.stateDirectory(environment)
        let socket = directory.appendingPathComponent("daemon.sock").path
        let fresh = started.withLock { $0.insert(directory.path).inserted }
        guard fresh || !answers(socket) else { return }
        try PrivateFiles.directory(directory)
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("xclaw-core")
        process.arguments = ["daemon", "run", "--parent", String(getpid())]
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !answers(socket) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }

    /// Whether a daemon listens on `socket`.
    public static func answers(_ socket: String) -> Bool { (try? UnixSocket.connect(path: socket)) != nil }
}

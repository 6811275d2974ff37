import Foundation

/// How the tests start a daemon of their own (the web view's, a fleet worker): in a state directory of its own (0700),
/// with its data, state and config homes below it, as on another machine, its output in a log file there.
enum DaemonLaunch {
    /// This process's environment with `environment` over it, and the daemon's homes in `state` (a config home given
    /// in `environment` is kept). The daemon pass's switch is dropped: this daemon is the test's own.
    static func environment(state: URL, over environment: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        env["XCLAW_STATE_DIR"] = state.path
        env["XDG_DATA_HOME"] = state.appendingPathComponent("data").path
        env["XDG_STATE_HOME"] = state.appendingPathComponent("state").path
        env["XDG_CONFIG_HOME"] = environment["XDG_CONFIG_HOME"] ?? state.appendingPathComponent("config").path
        env.removeValue(forKey: "XCLAW_TEST_DAEMON")
        return env
    }

    /// Creates `state` and starts `command` (an absolute path first) in `environment`, its stdout and stderr in
    /// `log`.
    static func start(_ process: Process, command: [String], environment: [String: String], state: URL, log: URL)
        throws
    {
        try FileManager.default.createDirectory(
            at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = environment
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }
}

import Foundation
import XclawBase
import XclawPolling
import XclawScreen

/// A daemon with its web view on a free loopback port (`xclaw-core daemon run --web 127.0.0.1:0`), in a state
/// directory of its own, for the tests and benchmarks that go through it (the web view, MCP over HTTP). It stops
/// with the process that started it (`--parent`).
public final class WebViewDaemon: @unchecked Sendable {
    // Safe because: every property is set once in init; `Process` is only asked whether it runs and told to stop.
    /// Its state directory (0700); data, state and config homes below it.
    public let state: URL
    /// The server's address (`http://127.0.0.1:PORT/`, no token in it).
    public let url: String
    /// The address a person opens: `url` with the token in its fragment (`web.url` of the status).
    public let pageURL: String
    /// The web view's token.
    public let token: String
    /// Its environment: commands run with it are handed to it (its state directory, its database).
    public let environment: [String: String]
    /// What it logged.
    public let log: URL
    private let process = Process()

    /// Starts one on `state` with `environment` over this process's, run through `launcher` when given (e.g.
    /// `prlimit --nofile=N:N`, which execs it); waits until `daemon status --json` shows its web view (30 s), and
    /// throws what its log says otherwise.
    public init(state: URL, environment: [String: String] = [:], launcher: [String] = []) throws {
        self.state = state
        log = state.appendingPathComponent("daemon.log")
        let env = DaemonLaunch.environment(state: state, over: environment)
        self.environment = env
        let core = productsDirectory.appendingPathComponent("xclaw-core")
        let command = launcher + [core.path, "daemon", "run", "--web", "127.0.0.1:0", "--parent", String(getpid())]
        try DaemonLaunch.start(process, command: command, environment: env, state: state, log: log)
        let (process, log) = (process, log)  // not self, which is not initialized yet
        let web = try poll(within: .seconds(30), every: .milliseconds(50)) { () -> (url: String, token: String)? in
            guard process.isRunning else {
                throw ScreenError.invalidArgument(
                    "the daemon exited before its web view came up: "
                        + ((try? String(contentsOf: log, encoding: .utf8)) ?? "no log"))
            }
            let status = try Subprocess.run(
                [core.path, "daemon", "status", "--json"], timeout: .seconds(10), environment: env)
            guard status.ending == .exited(0),
                let object = try? JSONSerialization.jsonObject(with: status.stdout) as? [String: Any],
                let web = object["web"] as? [String: Any], let url = web["url"] as? String,
                let token = web["token"] as? String
            else { return nil }
            return (url, token)
        }
        if let web {
            let base = web.url.split(separator: "#", maxSplits: 1).first.map(String.init) ?? web.url
            (self.url, self.pageURL, self.token) = (base, web.url, web.token)
            return
        }
        process.terminate()
        throw ScreenError.invalidArgument(
            "the daemon's web view did not come up in 30 s: "
                + ((try? String(contentsOf: log, encoding: .utf8)) ?? "no log"))
    }

    /// Its process id, for its memory.
    public var pid: Int32 { process.processIdentifier }

    /// What it logged so far.
    public var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Stops it (and waits until it has).
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

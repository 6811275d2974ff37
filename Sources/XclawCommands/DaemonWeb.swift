import Foundation
import Logging
import XclawAgent
import XclawBase
import XclawDaemon
import XclawMCP
import XclawScreen
import XclawStore
import XclawWeb

/// The daemon's web view, wired: the pages run xclaw's commands inside the daemon (on its kept displays), MCP over
/// HTTP serves the same tools as `xclaw mcp`, and the action log hears every input the daemon sends
/// (`InputObserver`) and every step another process's agent run records (the store, every 100 ms).
enum DaemonWeb {
    private static let logger = Logger(label: "xclaw.web")

    /// Stops it and takes its marker away.
    static func stop(_ web: WebServer) {
        web.stop()
        if let marker = try? DaemonPaths.webMarker() { unlink(marker) }
    }

    /// Starts the web view on `address` (`--web [ADDR]`) and records it in the daemon's status.
    static func start(on server: DaemonServer, address: String?) throws -> WebServer {
        let (host, port) = try WebConfiguration.address(address)
        let token = try WebToken.load(at: DaemonPaths.webToken())
        let runner = MCPCommandRunner(defaultDisplay: nil, displays: server.displays) { server.displays.names }
        let mcp = MCPServer(
            name: "xclaw", version: Xclaw.configuration.version, instructions: MCPTools.instructions,
            tools: MCPTools.all(runner))
        let feed = ActionFeed()
        let daemon = getpid()
        InputObserver.listen { event in
            // A served command runs inside its Invocation: a CLI's (its own pid) or the daemon's own (MCP, the web
            // view, the scheduler); input from no Invocation is an agent's tool on the daemon's threads.
            let source = Invocation.served.map { $0.pid == daemon ? "daemon" : "cli (pid \($0.pid))" } ?? "agent"
            feed.publish(
                WebAction(
                    display: event.display, source: source, action: event.action, x: event.point?.x,
                    y: event.point?.y, detail: event.action == "type" ? event.detail.map(WebAction.typed) : event.detail
                ))
        }
        AgentStepFollower(feed: feed, daemon: daemon).start { server.isStopping }
        let environment = ProcessInfo.processInfo.environment
        let web = WebServer(
            WebConfiguration(
                host: host, port: port, token: token, backend: DaemonWebBackend(runner: runner), mcp: mcp, feed: feed,
                displays: {
                    var names = server.displays.names
                    if let own = environment["DISPLAY"], !own.isEmpty, !names.contains(own) { names.append(own) }
                    return names
                }, assetsDirectory: environment["XCLAW_WEB_ASSETS"].flatMap { $0.isEmpty ? nil : $0 },
                limits: try limits(environment)))
        try web.start()
        server.web.withLock { $0 = DaemonWebStatus(base: web.url, token: token) }
        // The daemon's pid: the front trusts the marker only while that process lives.
        try PrivateFiles.write(Data("\(getpid())\n".utf8), to: DaemonPaths.webMarker())
        return web
    }
}

extension DaemonWeb {
    /// The connections' deadlines and caps, each overridable for tests and odd setups: `XCLAW_WEB_HEAD_SECONDS`
    /// (the first request's head, 10), `XCLAW_WEB_IDLE_SECONDS` (quiet between requests, 60),
    /// `XCLAW_WEB_MAX_PER_PEER` (32 per other user), `XCLAW_WEB_MAX_CONNECTIONS` (a quarter of the descriptors, at
    /// most 256).
    static func limits(_ environment: [String: String]) throws -> WebLimits {
        func number(_ name: String) throws -> Double? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = Double(text), value > 0, value < 1e6 else {
                throw WebError.badLimit("\(name)=\(text)")
            }
            return value
        }
        var limits = WebLimits(total: try number("XCLAW_WEB_MAX_CONNECTIONS").map { Int($0) })
        if let head = try number("XCLAW_WEB_HEAD_SECONDS") { limits.headSeconds = head }
        if let idle = try number("XCLAW_WEB_IDLE_SECONDS") { limits.idleSeconds = idle }
        if let peer = try number("XCLAW_WEB_MAX_PER_PEER") { limits.perPeer = max(1, Int(peer)) }
        return limits
    }
}

/// The web view's commands, run like the MCP server's: inside the daemon, captured.
struct DaemonWebBackend: WebBackend {
    let runner: MCPCommandRunner

    func run(_ arguments: [String]) async -> WebCommandResult {
        let outcome = await runner.run(arguments, display: nil, exclusive: false, cancellation: MCPCancellation())
        return WebCommandResult(status: outcome.status, stdout: outcome.stdout, stderr: outcome.stderr)
    }

    func stream(
        _ arguments: [String], needsKeys: Bool, cancellation: MCPCancellation,
        output: @escaping @Sendable (Data) -> Void
    ) async -> WebCommandResult {
        let outcome = await runner.stream(
            arguments, keepSecrets: needsKeys, cancellation: cancellation, output: output)
        return WebCommandResult(status: outcome.status, stdout: outcome.stdout, stderr: outcome.stderr)
    }
}

/// Follows the steps agent runs record in the store (`action_steps`) and publishes those of other processes: the
/// daemon's own runs are heard as they send input.
struct AgentStepFollower: Sendable {
    let feed: ActionFeed
    let daemon: Int32
    /// How often the store is asked.
    static let interval = 0.1

    func start(until stopping: @escaping @Sendable () -> Bool) {
        let path = AgentStore.defaultPath()
        Thread {
            var store: AgentStore?
            var after: Int64 = -1
            while !stopping() {
                if store == nil, FileManager.default.fileExists(atPath: path) { store = try? AgentStore(path: path) }
                if let store {
                    // Only what is recorded from now on: the log is live, the history is in the runs' reports.
                    // (Asked again next time when it fails: starting from 0 would replay every step ever recorded.)
                    if after < 0, let last = try? store.lastActionStepID() { after = last }
                    if after < 0 {
                        Thread.sleep(forTimeInterval: Self.interval)
                        continue
                    }
                    for row in (try? store.actionSteps(after: after)) ?? [] {
                        after = row.id
                        guard row.pid != daemon,
                            let step = try? JSONDecoder.xclawRecords.decode(
                                RecordedStep.self, from: Data(row.step.utf8))
                        else { continue }
                        feed.publish(
                            WebAction(
                                display: row.display, source: "agent \(row.agent) (run \(row.session))",
                                action: step.action, x: step.x, y: step.y,
                                detail: step.action == "type" ? step.text.map(WebAction.typed) : step.text,
                                time: row.createdAt))
                    }
                }
                Thread.sleep(forTimeInterval: Self.interval)
            }
        }.start()
    }
}

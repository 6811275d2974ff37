import Foundation
import Logging
import Synchronization
import XclawAgent
import XclawBase
import XclawDaemon
import XclawMCP
import XclawScreen
import XclawStore
import XclawWeb

/// The daemon's web view, wired: the pages run xclaw's commands inside the daemon (on its kept displays), MCP over
/// HTTP serves the same tools as `xclaw mcp`, and the action log hears every input the daemon sends
/// (`InputObserver`) and every step another process's agent run records (the store, every 100 ms). The commands and
/// the MCP tools are the commands library's: `xclaw daemon run` hands them in (`mcp`, `backend`).
public enum DaemonWeb {
    private static let logger = Logger(label: "xclaw.web")

    /// Stops it and takes its marker away.
    public static func stop(_ web: DaemonWebView) {
        web.stop()
        if let marker = try? DaemonPaths.webMarker() { unlink(marker) }
    }

    /// Starts the web view on `address` (`--web [ADDR]`) and records it in the daemon's status; `inherited`: what
    /// the daemon's previous image handed over when it recycled itself (the same token, host and port); `mcp` and
    /// `backend`: xclaw's tools and commands, run inside the daemon on its kept displays.
    public static func start(
        on server: DaemonServer, address: String?, inherited: WebHandover? = nil, mcp: MCPServer,
        backend: any WebBackend
    ) throws -> DaemonWebView {
        let (host, port) = try inherited.map { ($0.host, $0.port) } ?? WebConfiguration.address(address)
        let token = try inherited?.token ?? WebToken.load(at: DaemonPaths.webToken())
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
        let view = DaemonWebView(
            WebConfiguration(
                host: host, port: port, token: token, backend: backend, mcp: mcp, feed: feed,
                displays: {
                    var names = server.displays.names
                    if let own = environment["DISPLAY"], !own.isEmpty, !names.contains(own) { names.append(own) }
                    return names
                }, assetsDirectory: environment["XCLAW_WEB_ASSETS"].flatMap { $0.isEmpty ? nil : $0 },
                limits: try limits(environment)), on: server)
        // After a recycle the previous image's port was closed just before the exec: a moment's patience.
        try view.listen(patience: inherited == nil ? .zero : .seconds(5))
        return view
    }

    /// The web view could not listen again after a recycle: the daemon serves on without it, and says so.
    public static func lost(_ error: any Error) {
        logger.error("the web view could not listen again after the recycle", metadata: ["error": "\(error)"])
        if let marker = try? DaemonPaths.webMarker() { unlink(marker) }
    }
}

/// What the web view hands the daemon's next image when it recycles itself (in the daemon's in-memory handover
/// file, never argv, the environment or a log): the token, so open pages and MCP clients keep working, and the
/// address it listened on (the port it got, for `--web HOST:0`).
public struct WebHandover: Codable, Sendable {
    var token: String
    var host: String
    var port: Int
}

/// The daemon's web server, which a recycle stops and, when the exec failed, starts again on the same address.
public final class DaemonWebView: Sendable {
    private let configuration: Mutex<WebConfiguration>
    private let server: DaemonServer
    private let current = Mutex<WebServer?>(nil)
    private static let logger = Logger(label: "xclaw.web")

    init(_ configuration: WebConfiguration, on server: DaemonServer) {
        self.configuration = Mutex(configuration)
        self.server = server
    }

    /// Listens (retrying a taken port until `patience` ran out), records it in the daemon's status and leaves the
    /// marker; the port it got is kept, so listening again takes the same one.
    func listen(patience: Duration) throws {
        let deadline = ContinuousClock.now + patience
        while true {
            let web = WebServer(configuration.withLock { $0 })
            do {
                try web.start()
                configuration.withLock { $0.port = web.port }
                current.withLock { $0 = web }
                let token = configuration.withLock { $0.token }
                server.web.withLock { $0 = DaemonWebStatus(base: web.url, token: token) }
                // The daemon's pid: the front trusts the marker only while that process lives.
                try PrivateFiles.write(Data("\(getpid())\n".utf8), to: DaemonPaths.webMarker())
                return
            } catch WebError.cannotListen(let why) where ContinuousClock.now < deadline {
                Self.logger.debug("the web view's port is not free yet", metadata: ["why": "\(why)"])
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// Stops serving.
    func stop() { current.withLock { $0 }?.stop() }

    /// Before the daemon re-executes itself: stops serving (waiting until the port is closed, so the next image can
    /// listen on it) and returns what the next image's web view starts from. The marker stays: the same process
    /// serves the web view again in a moment.
    public func handover() -> Data? {
        if let web = current.withLock({ $0 }), !web.stop(waitingUpTo: .seconds(5)) {
            Self.logger.warning("the web view had not stopped after 5 s; re-executing anyway (its port closes then)")
        }
        let configuration = configuration.withLock { $0 }
        return try? JSONEncoder().encode(
            WebHandover(token: configuration.token, host: configuration.host, port: configuration.port))
    }

    /// The exec failed: serves again, on the same address.
    public func resume() {
        do { try listen(patience: .seconds(5)) } catch {
            server.web.withLock { $0 = nil }
            DaemonWeb.lost(error)
        }
    }
}

extension DaemonWeb {
    /// The connections' deadlines and caps, each overridable for tests and odd setups: `XCLAW_WEB_HEAD_SECONDS`
    /// (the first request's head, 10), `XCLAW_WEB_IDLE_SECONDS` (quiet between requests, 60),
    /// `XCLAW_WEB_MAX_PER_PEER` (32 per other user), `XCLAW_WEB_MAX_CONNECTIONS` (a quarter of the descriptors, at
    /// most 256).
    public static func limits(_ environment: [String: String]) throws -> WebLimits {
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
                if store == nil, PostgresURL.isPostgres(path) || FileManager.default.fileExists(atPath: path) {
                    store = try? AgentStore.at(path)
                }
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
                                action: step.action.rawValue, x: step.x, y: step.y,
                                detail: step.action == .type ? step.text.map(WebAction.typed) : step.text,
                                time: row.createdAt))
                    }
                }
                Thread.sleep(forTimeInterval: Self.interval)
            }
        }.start()
    }
}

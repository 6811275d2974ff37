import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization
import XclawBase
import XclawMCP

/// What the web view needs from the surface that starts it.
public struct WebConfiguration: Sendable {
    /// Where to listen (`127.0.0.1` by default).
    public var host: String
    /// The port (0: any free one, for tests).
    public var port: Int
    /// The token every request must carry.
    public var token: String
    /// Runs xclaw's commands for the pages.
    public var backend: any WebBackend
    /// MCP over streamable HTTP at `/mcp`, when given.
    public var mcp: MCPServer?
    /// The actions done on the screens, for the log and overlay.
    public var feed: ActionFeed
    /// The displays a page may watch (the daemon's, `$DISPLAY`, xclaw's own).
    public var displays: @Sendable () -> [String]
    /// Serve the pages from this folder instead of the compiled-in copies (`XCLAW_WEB_ASSETS`, for working on
    /// them without a rebuild).
    public var assetsDirectory: String?
    /// The connections' deadlines and caps.
    public var limits: WebLimits

    /// A configuration.
    public init(
        host: String, port: Int, token: String, backend: any WebBackend, mcp: MCPServer?, feed: ActionFeed,
        displays: @escaping @Sendable () -> [String], assetsDirectory: String? = nil, limits: WebLimits = WebLimits()
    ) {
        (self.host, self.port, self.token, self.backend, self.mcp) = (host, port, token, backend, mcp)
        (self.feed, self.displays, self.assetsDirectory, self.limits) = (feed, displays, assetsDirectory, limits)
    }

    /// Parses `ADDR` of `--web [ADDR]`: `HOST:PORT`, `:PORT`, `PORT` or `HOST` (port 7878), `[::1]:PORT`.
    public static func address(_ text: String?) throws -> (host: String, port: Int) {
        let defaultHost = "127.0.0.1"
        let defaultPort = 7878
        guard let text, !text.isEmpty else { return (defaultHost, defaultPort) }
        func port(_ digits: Substring) throws -> Int {
            guard let port = Int(digits), (0...65535).contains(port) else {
                throw WebError.badAddress("\(text): the port is 0 to 65535")
            }
            return port
        }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw WebError.badAddress("\(text): no closing ]") }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, defaultPort) }
            guard rest.hasPrefix(":") else { throw WebError.badAddress("\(text): expected [HOST]:PORT") }
            return (host, try port(rest.dropFirst()))
        }
        if text.allSatisfy(\.isNumber) { return (defaultHost, try port(Substring(text))) }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw WebError.badAddress("\(text): write an IPv6 host as [HOST]:PORT") }
        let host = parts[0].isEmpty ? defaultHost : String(parts[0])
        return (host, parts.count == 2 ? try port(parts[1]) : defaultPort)
    }
}

/// Why the web view could not start.
public enum WebError: ClassifiedError, Hashable {
    /// `--web ADDR` is not an address.
    case badAddress(String)
    /// The address could not be listened on.
    case cannotListen(String)
    /// A limit in the environment (`XCLAW_WEB_IDLE_SECONDS`, …) is not a positive number.
    case badLimit(String)

    /// A bad address is usage (2); a port taken is the machine's refusal (5).
    public var exitStatus: ExitStatus {
        switch self {
        case .badAddress, .badLimit: return .usage
        case .cannotListen: return .internal
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .badAddress(let why): return "--web: \(why) (e.g. 127.0.0.1:7878)"
        case .badLimit(let setting): return "\(setting): give a positive number, or unset it"
        case .cannotListen(let why):
            return "the web view cannot listen: \(why); pick another port with --web HOST:PORT"
        }
    }
}

/// The daemon's web server: the pages (compiled in, no CDN), their JSON, the chat and screen websockets, and MCP over
/// streamable HTTP, on one Hummingbird application behind one token.
public final class WebServer: Sendable {
    private let configuration: WebConfiguration
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let logger = Logger(label: "xclaw.web")
    private let bound = BoundPort()
    /// Signalled once the server's task has ended (its port closed).
    private let finished = DispatchSemaphore(value: 0)
    /// Set by `stop`: what Hummingbird says after it was cancelled (the cancellation itself, as errors) is not logged.
    private let stopping = StopFlag()

    /// The port it listens on, once started (0 before).
    public var port: Int { bound.port.load(ordering: .relaxed) }

    /// A server that is not started yet.
    public init(_ configuration: WebConfiguration) { self.configuration = configuration }

    /// The page address (no token in it: the daemon's status adds it as the fragment).
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let shown = host == "0.0.0.0" || host == "[::]" ? "127.0.0.1" : host
        return "http://\(shown):\(port)/"
    }

    /// Starts listening; returns once it does, or throws why it cannot.
    public func start() throws {
        let configuration = configuration
        let started = DispatchSemaphore(value: 0)
        let bound = bound
        let stopping = stopping
        let logger = logger
        let quiet = Logger(label: logger.label) { _ in QuietAfterStop(inner: logger, stopping: stopping) }
        let finished = finished
        task.withLock {
            $0 = Task.detached {
                let app = Self.application(configuration, logger: quiet) { port in
                    bound.port.store(port, ordering: .relaxed)
                    started.signal()
                }
                do { try await app.runService(gracefulShutdownSignals: []) } catch {
                    quiet.error("the web view stopped", metadata: ["error": "\(error)"])
                    bound.failure.withLock { $0 = "\(error)" }
                }
                started.signal()
                finished.signal()
            }
        }
        started.wait()
        if port == 0 {
            throw WebError.cannotListen(
                "\(configuration.host):\(configuration.port): \(bound.failure.withLock { $0 } ?? "unknown error")")
        }
        logger.info("web view", metadata: ["url": "\(url)"])
    }

    /// The routes, behind the token, on one HTTP/1 server that upgrades the websockets.
    private static func application(
        _ configuration: WebConfiguration, logger: Logger, running: @escaping @Sendable (Int) -> Void
    ) -> some ApplicationProtocol {
        let router = Router(context: BasicWebSocketRequestContext.self)
        let access = WebAccess(token: configuration.token, tickets: WebTickets())
        let limits = configuration.limits
        let connections = WebConnections(limits: limits)
        router.add(middleware: WebAuthMiddleware(access: access))
        WebPages.add(to: router, assetsDirectory: configuration.assetsDirectory)
        access.tickets.add(to: router)
        WebAPI(backend: configuration.backend, displays: configuration.displays, mcp: configuration.mcp).add(to: router)
        ChatSocket(backend: configuration.backend).add(to: router)
        ScreenSocket(feed: configuration.feed).add(to: router)
        if let mcp = configuration.mcp { MCPHTTPRoute(server: mcp).add(to: router) }
        let webSocketResponder = router.buildResponder()
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                GatedChannel(
                    inner: HTTP1WebSocketUpgradeChannel(
                        responder: responder, webSocketResponder: webSocketResponder,
                        configuration: .init(
                            // A kept-alive connection quiet for `idleSeconds` is closed (the gate bounds the first
                            // request's head); a websocket is pinged every 30 s.
                            http1: .init(idleTimeout: .milliseconds(Int64(limits.idleSeconds * 1000))),
                            ws: .init(maxFrameSize: 1 << 22))),
                    access: access, limits: limits, connections: connections)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { channel in running(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Stops serving (open websockets are closed).
    public func stop() {
        stopping.set()
        task.withLock { $0?.cancel() }
    }

    /// Stops serving and waits, at most `timeout`, until the server has ended and its port is closed (another
    /// server, the daemon's next image, may then listen on it); false when it had not ended in time.
    @discardableResult
    public func stop(waitingUpTo timeout: Duration) -> Bool {
        guard task.withLock({ $0 }) != nil else { return true }
        stop()
        guard finished.wait(timeout: .now() + timeout.seconds) == .success else { return false }
        finished.signal()  // for a later call
        return true
    }
}

/// The bound port and why the server stopped, shared with the server's task.
private final class BoundPort: Sendable {
    let port = Atomic<Int>(0)
    let failure = Mutex<String?>(nil)
}

/// The web server's log while it runs; silent once `stop` cancelled it (Hummingbird reports the cancellation of its
/// accept loop and of its own shutdown as errors).
private struct QuietAfterStop: LogHandler {
    let inner: Logger
    let stopping: StopFlag
    var metadata: Logger.Metadata = [:]

    /// The inner logger's level.
    var logLevel: Logger.Level {
        get { inner.logLevel }
        set {}
    }

    /// Metadata set on the logger.
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Hands the event on, unless the server was stopped.
    func log(event: LogEvent) {
        guard !stopping.isSet else { return }
        inner.log(
            level: event.level, event.message, metadata: metadata.merging(event.metadata ?? [:]) { $1 },
            source: event.source, file: event.file, function: event.function, line: event.line)
    }
}

/// Whether `WebServer.stop` was called, shared with the server's log.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    /// Whether it was set.
    var isSet: Bool { value.load(ordering: .acquiring) }
    /// Sets it, for good.
    func set() { value.store(true, ordering: .releasing) }
}

import Dispatch
import Foundation
import Glibc
import Synchronization
import XclawBase

/// Why the server could not start (it binds at init, so a failure surfaces there and not in the first test).
public struct MockServerError: Error, CustomStringConvertible {
    /// What failed, with errno text.
    public let description: String
}

/// A loopback server speaking the Messages API wire format, so the real client is tested without knowing it.
public final class MockMessagesServer: Sendable {
    /// A scripted "model": sees each request (and its index in `requests`) and decides the reply.
    public typealias Handler = @Sendable (RecordedRequest, _ index: Int) -> MockReply

    private let core: ServerCore

    /// The bound port, fixed at init so tests can build the URL before any request.
    public let port: Int

    /// The IPv4 address it listens on.
    public let host: String

    /// What to put in ANTHROPIC_BASE_URL.
    public var baseURL: String { "http://\(host):\(port)" }

    /// Binds `host` (127.0.0.1 unless a benchmark puts the model on another network namespace's address; port 0
    /// means ephemeral) and starts accepting; replies are served FIFO unless a handler is set.
    public init(replies: [MockReply] = [], port: Int = 0, host: String = "127.0.0.1", handler: Handler? = nil) throws {
        core = try ServerCore(port: port, host: host, replies: replies, handler: handler)
        self.port = core.port
        self.host = host
        core.start()
    }

    /// Convenience for a purely scripted model.
    public convenience init(handler: @escaping Handler) throws {
        try self.init(replies: [], port: 0, handler: handler)
    }

    /// What `GET /v1/models` lists (each a model object's JSON text, newest first), paged as the API pages: `limit` (default
    /// 20, here at most `modelsPageSize`) and `after_id`, with `has_more`, `first_id` and `last_id`.
    public var models: [String] {
        get { core.state.withLock { $0.models } }
        set { core.state.withLock { $0.models = newValue } }
    }

    /// The most models one page holds, so tests can see paging.
    public var modelsPageSize: Int {
        get { core.state.withLock { $0.modelsPageSize } }
        set { core.state.withLock { $0.modelsPageSize = newValue } }
    }

    /// The API rules the server enforces (thinking forms, compaction, counted tokens); none by default.
    public var rules: MockRules {
        get { core.state.withLock { $0.rules } }
        set { core.state.withLock { $0.rules = newValue } }
    }

    /// Adds a reply at the end of the queue, for tests that script as they go.
    public func enqueue(_ reply: MockReply) { core.state.withLock { $0.queue.append(reply) } }

    /// Adds several replies at once, in order.
    public func enqueue(contentsOf replies: [MockReply]) {
        core.state.withLock { $0.queue.append(contentsOf: replies) }
    }

    /// When set, decides every reply instead of the queue.
    public var handler: Handler? {
        get { core.state.withLock { $0.handler } }
        set { core.state.withLock { $0.handler = newValue } }
    }

    /// Called on the connection's thread for every recorded request before it is answered (logging, recording).
    public var onRequest: (@Sendable (RecordedRequest) -> Void)? {
        get { core.state.withLock { $0.observer } }
        set { core.state.withLock { $0.observer = newValue } }
    }

    /// A snapshot of every request received so far, in arrival order.
    public var requests: [RecordedRequest] { core.state.withLock { $0.requests } }

    /// When clients went away before a reply ended (a `.hang`/`.stall` read EOF, or a write failed): cancel tests.
    public var disconnects: [Date] { core.state.withLock { $0.disconnects } }

    /// Scripted replies not yet consumed, so a test can assert the client made every expected call.
    public var pendingReplies: Int { core.state.withLock { $0.queue.count } }

    /// Blocks until at least n requests arrived; false on timeout (clients run on other threads or processes).
    public func waitForRequests(_ n: Int, timeout: Duration) -> Bool {
        core.wait(until: timeout) { $0.requests.count >= n }
    }

    /// Blocks until at least n client disconnects were seen; false on timeout.
    public func waitForDisconnects(_ n: Int, timeout: Duration) -> Bool {
        core.wait(until: timeout) { $0.disconnects.count >= n }
    }

    /// Closes the listener and every connection and waits briefly for their threads; safe to call twice.
    public func stop() { core.stop() }

    deinit { core.stop() }
}

/// The part the threads hold, so they do not keep the public object (and its deinit) alive.
final class ServerCore: Sendable {
    struct State {
        var queue: [MockReply] = []
        var handler: MockMessagesServer.Handler?
        var observer: (@Sendable (RecordedRequest) -> Void)?
        var requests: [RecordedRequest] = []
        var disconnects: [Date] = []
        var stopped = false
        var models: [String] = []
        var modelsPageSize = 20
        var rules = MockRules()
        /// When set, answers every request whatever its method and path: the core serves a plain web site
        /// (`MockWebServer`) instead of the Messages API.
        var router: MockMessagesServer.Handler?
    }

    /// What to do with an admitted request.
    enum Decision {
        case reply(MockReply)
        case ask(MockMessagesServer.Handler)
    }

    /// Close-on-exec so processes spawned by tests do not inherit (and hold open) the server's sockets.
    static let socketFlags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)

    static let connectionThreadName = "xclaw-mock-api-connection"

    let listenFD: Int32
    /// Written once at stop and never drained, so every poller sees it readable from then on.
    let wakeRead: Int32
    let wakeWrite: Int32
    let port: Int
    let state: Mutex<State>
    let threads = DispatchGroup()

    init(
        port: Int, host: String = "127.0.0.1", replies: [MockReply], handler: MockMessagesServer.Handler?,
        router: MockMessagesServer.Handler? = nil
    ) throws {
        guard (0...65535).contains(port) else { throw MockServerError(description: "port \(port) is out of range") }
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else {
            throw MockServerError(description: "\(host) is not an IPv4 address (such as 127.0.0.1)")
        }
        var pipeFDs: [Int32] = [0, 0]
        // A socket pair rather than pipe2 (not imported): it is the only way to get close-on-exec atomically.
        guard socketpair(AF_UNIX, Self.socketFlags, 0, &pipeFDs) == 0 else {
            throw MockServerError(description: "socketpair: \(errnoText())")
        }
        let fd = socket(AF_INET, Self.socketFlags, 0)
        guard fd >= 0 else {
            close(pipeFDs[0]); close(pipeFDs[1])
            throw MockServerError(description: "socket: \(errnoText())")
        }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr = address
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, listen(fd, 128) == 0, named == 0 else {
            let text = errnoText()
            close(fd); close(pipeFDs[0]); close(pipeFDs[1])
            throw MockServerError(description: "cannot listen on \(host):\(port): \(text)")
        }
        listenFD = fd
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        state = Mutex(State(queue: replies, handler: handler, router: router))
    }

    func start() {
        threads.enter()
        let thread = Thread { [self] in
            acceptLoop()
            threads.leave()
        }
        thread.name = "xclaw-mock-api-accept"
        thread.start()
    }

    private func acceptLoop() {
        defer { close(listenFD) }
        while true {
            var fds = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            // accept4 is not imported; the window before FD_CLOEXEC is set is a few instructions.
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno != EAGAIN && errno != EINTR && errno != ECONNABORTED { usleep(10_000) }
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            threads.enter()
            let thread = Thread { [self] in
                Connection(fd: client, core: self).run()
                threads.leave()
            }
            thread.name = Self.connectionThreadName
            thread.start()
        }
    }

    /// Records the request and decides its reply under one lock, so indices and queue order always agree.
    func admit(method: String, target: String, headers: [String: String], body: Data)
        -> (RecordedRequest, Decision, (@Sendable (RecordedRequest) -> Void)?)
    {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? String(parts[1]) : nil
        return state.withLock { s in
            let index = s.requests.count
            let request = RecordedRequest(
                index: index, method: method, path: path, query: query, headers: headers,
                body: body, requestID: "req_mock_\(index + 1)")
            s.requests.append(request)
            let decision: Decision
            if let router = s.router {
                decision = .ask(router)
            } else if method == "GET" && path == "/v1/models" {
                decision = .reply(Self.modelsPage(s.models, query: query, pageSize: s.modelsPageSize))
            } else if method != "POST" || path != "/v1/messages" {
                decision = .reply(
                    .error(
                        status: 404, type: "not_found_error",
                        message: "mock: only POST /v1/messages and GET /v1/models are served, not \(method) \(path)"))
            } else if (try? JSONSerialization.jsonObject(with: body)) == nil {
                decision = .reply(
                    .error(
                        status: 400, type: "invalid_request_error",
                        message: "mock: the request body is not a valid JSON object"))
            } else if let handler = s.handler {
                decision = .ask(handler)
            } else if !s.queue.isEmpty {
                decision = .reply(s.queue.removeFirst())
            } else {
                decision = .reply(.error(status: 500, type: "api_error", message: "mock: no scripted reply left"))
            }
            return (request, decision, s.observer)
        }
    }

    /// One page of the models list, in the API's shape.
    static func modelsPage(_ models: [String], query: String?, pageSize: Int) -> MockReply {
        var limit = 20, after: String?
        for pair in (query ?? "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { continue }
            if kv[0] == "limit" { limit = Int(kv[1]) ?? 20 }
            if kv[0] == "after_id" { after = kv[1].removingPercentEncoding }
        }
        let ids = models.map { text -> String in
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            return object?["id"] as? String ?? ""
        }
        let start = after.flatMap { a in ids.firstIndex(of: a).map { $0 + 1 } } ?? 0
        let end = min(models.count, start + max(1, min(limit, pageSize)))
        let page = start < end ? Array(models[start..<end]) : []
        let body =
            "{\"data\": [" + page.joined(separator: ", ") + "], \"has_more\": \(end < models.count), "
            + "\"first_id\": " + (start < end ? "\"\(ids[start])\"" : "null") + ", \"last_id\": "
            + (start < end ? "\"\(ids[end - 1])\"" : "null") + "}"
        return .raw(status: 200, headers: ["content-type": "application/json"], body: body)
    }

    func recordDisconnect() { state.withLock { $0.disconnects.append(Date()) } }

    var isStopped: Bool { state.withLock { $0.stopped } }

    func wait(until timeout: Duration, _ condition: (State) -> Bool) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if state.withLock({ condition($0) }) { return true }
            if ContinuousClock.now >= deadline { return false }
            usleep(2_000)
        }
    }

    func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        // A handler calling stop() runs on a connection thread, which cannot wait for itself.
        if Thread.current.name == Self.connectionThreadName { return }
        if threads.wait(timeout: .now() + .seconds(3)) == .success {
            close(wakeRead)
            close(wakeWrite)
        }
        // Otherwise a thread is stuck somewhere; leak the pipe rather than risk it polling a reused descriptor.
    }
}

func errnoText() -> String { Errno.current.description }

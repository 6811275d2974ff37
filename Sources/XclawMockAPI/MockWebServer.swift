import Foundation

/// A loopback web server on the Messages server's plumbing: every request, whatever its method and path, goes to a
/// handler that picks the reply (a page, a redirect, an error, a hang). The web tools are tested against it without
/// knowing it, and `MockBraveSearch` makes it speak Brave Search's API.
public final class MockWebServer: Sendable {
    private let core: ServerCore

    /// The bound port.
    public let port: Int

    /// `http://127.0.0.1:PORT`, for URLs and XCLAW_BRAVE_BASE_URL.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Binds 127.0.0.1 on an ephemeral port and answers every request with `handler`.
    public init(handler: @escaping MockMessagesServer.Handler) throws {
        core = try ServerCore(port: 0, replies: [], handler: nil, router: handler)
        port = core.port
        core.start()
    }

    /// Every request received so far, in arrival order.
    public var requests: [RecordedRequest] { core.state.withLock { $0.requests } }

    /// Closes the listener and every connection; safe to call twice.
    public func stop() { core.stop() }

    deinit { core.stop() }
}

/// Brave Search's web-search API as the loopback server speaks it: `GET /res/v1/web/search?q=…&count=…` with the
/// key in `X-Subscription-Token`, answered in Brave's response shape (`{"type": "search", "query": {…}, "web":
/// {"type": "search", "results": [{"title", "url", "description", "page_age", …}]}}`). It checks what the client
/// sent, as the real API does: another path is 404, a missing or wrong token 401, a missing query 422.
public struct MockBraveSearch: Sendable {
    /// One web result.
    public struct Result: Sendable {
        /// The title.
        public var title: String
        /// The URL.
        public var url: String
        /// The snippet, with `<strong>` around matched words as Brave sends it.
        public var description: String
        /// The page's date, as Brave's `page_age`.
        public var pageAge: String?

        /// A result.
        public init(title: String, url: String, description: String, pageAge: String? = nil) {
            (self.title, self.url, self.description, self.pageAge) = (title, url, description, pageAge)
        }
    }

    /// The token the client must send.
    public var token: String
    /// The results of every query (cut to the asked `count`).
    public var results: [Result]

    /// A search API expecting `token` and answering `results`.
    public init(token: String, results: [Result]) {
        self.token = token
        self.results = results
    }

    /// The reply to one request.
    public func reply(_ request: RecordedRequest) -> MockReply {
        guard request.method == "GET", request.path == "/res/v1/web/search" else {
            return Self.error(404, "NOT_FOUND", "mock: only GET /res/v1/web/search is served")
        }
        guard request.header("x-subscription-token") == token else {
            return Self.error(401, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")
        }
        let query = Self.parameters(request.query)
        guard let q = query["q"], !q.isEmpty else {
            return Self.error(422, "VALIDATION", "Unable to validate request parameter(s): q is required")
        }
        let count = query["count"].flatMap(Int.init) ?? 20
        let items = results.prefix(max(0, count)).map { r -> JSONText in
            var fields: [(String, JSONText)] = [
                ("title", .string(r.title)), ("url", .string(r.url)), ("is_source_local", .bool(false)),
                ("description", .string(r.description)), ("type", .string("search_result")),
                ("subtype", .string("generic")), ("language", .string("en")), ("family_friendly", .bool(true)),
            ]
            if let age = r.pageAge { fields.append(("page_age", .string(age))) }
            return .object(fields)
        }
        let body = JSONText.object([
            ("type", .string("search")),
            (
                "query",
                .object([
                    ("original", .string(q)), ("show_strict_warning", .bool(false)), ("is_navigational", .bool(false)),
                    ("spellcheck_off", .bool(true)), ("country", .string("us")),
                    ("more_results_available", .bool(true)),
                ])
            ),
            ("mixed", .object([("type", .string("mixed"))])),
            (
                "web",
                .object([("type", .string("search")), ("results", .array(items)), ("family_friendly", .bool(true))])
            ),
        ])
        return .raw(status: 200, headers: ["content-type": "application/json"], body: body.serialized)
    }

    /// Brave's error body (`{"type": "ErrorResponse", "error": {"status", "code", "detail"}}`).
    public static func error(_ status: Int, _ code: String, _ detail: String, headers: [String: String] = [:])
        -> MockReply
    {
        let body = JSONText.object([
            ("type", .string("ErrorResponse")),
            (
                "error",
                .object([
                    ("id", .string("mock-\(status)")), ("status", .int(status)), ("code", .string(code)),
                    ("detail", .string(detail)),
                ])
            ),
        ])
        return .raw(
            status: status, headers: headers.merging(["content-type": "application/json"]) { a, _ in a },
            body: body.serialized)
    }

    /// The query string's parameters, percent-decoded (`+` is a space, as forms send it).
    public static func parameters(_ query: String?) -> [String: String] {
        var out: [String: String] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            let value = kv.count == 2 ? kv[1].replacingOccurrences(of: "+", with: " ") : ""
            out[kv[0].removingPercentEncoding ?? kv[0]] = value.removingPercentEncoding ?? value
        }
        return out
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Synchronization

/// What `WebAccess` looks at in a request (an HTTP request or a websocket handshake).
struct WebRequestParts: Sendable {
    var path: String
    var method: String
    var origin: String?
    var host: String?
    /// `Sec-Fetch-Site`, which browsers send: "same-origin", "same-site", "cross-site" or "none".
    var fetchSite: String?
    var authorization: String?
    /// `Sec-WebSocket-Protocol`: a page's websocket carries the token there (a browser cannot set its headers).
    var protocols: String?
    /// `?ticket=`: a single-use pass the page fetched for one navigation (a report, an export).
    var ticket: String?
}

/// The web view's one rule for who may ask. The token is the only credential, and nothing a browser sends on its own
/// carries it: no cookie (a browser sends a host's cookies to every port of it, so any local user's server on
/// another port would get them). The page gets the token in its address's fragment (never sent to a server), keeps
/// it in its own origin's `sessionStorage`, and sends `Authorization: Bearer` on every request; its websockets offer
/// it as a subprotocol (`xclaw.token.TOKEN`); a navigation (a run's report, an export) takes a single-use ticket the
/// page asked for with the header. MCP takes only the Bearer token. The pages themselves (the document, its script
/// and style) hold no secret and need none. No page from elsewhere: a request whose Origin is not exactly this
/// server (a loopback host and this port, as the Host header names it) is refused, and so is one a browser marks as
/// coming from another site or port (`Sec-Fetch-Site`). The middleware applies it to every request; `WebSocketGate`
/// to a websocket's handshake, so it is refused with 401 too.
struct WebAccess: Sendable {
    let token: String
    /// The passes handed out for navigations.
    let tickets: WebTickets

    /// The subprotocol a page's websocket is answered with (it offers it next to the one carrying the token).
    static let webSocketProtocol = "xclaw"
    /// The prefix of the subprotocol that carries the token.
    static let tokenProtocolPrefix = "xclaw.token."

    /// What a refused request is told to do.
    static let howToGetIn =
        "no token: open web.url from `xclaw daemon status --json` (its #token= part stays in the browser, never in a "
        + "cookie), or send Authorization: Bearer TOKEN"

    /// Why a request with these parts is refused; nil when it may go on. A ticket it accepts is used up.
    func refusal(_ parts: WebRequestParts) -> String? {
        if let origin = parts.origin {
            guard WebOrigin.isLocal(origin), let host = parts.host, WebOrigin.isLocal("http://" + host),
                origin.lowercased() == "http://" + host.lowercased()
            else {
                return "a page from \(origin) may not use the xclaw web view: open it from its own address"
            }
        }
        if let site = parts.fetchSite?.lowercased(), site != "same-origin", site != "none" {
            return "a request from another site or port (\(site)) may not use the xclaw web view"
        }
        let bearer = parts.authorization.flatMap { header -> String? in
            guard header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
            return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        if parts.path == "/mcp" {
            return WebToken.matches(bearer, token) ? nil : "MCP needs Authorization: Bearer TOKEN (web.token)"
        }
        if let bearer { return WebToken.matches(bearer, token) ? nil : "wrong token" }
        if parts.path.hasPrefix("/ws/"), let offered = Self.offeredToken(parts.protocols) {
            return WebToken.matches(offered, token) ? nil : "wrong token"
        }
        let reads = parts.method == "GET" || parts.method == "HEAD"
        if reads, WebPages.isPublic(parts.path) { return nil }
        if reads, let ticket = parts.ticket {
            return tickets.redeem(ticket, path: parts.path)
                ? nil : "this link was for one visit and is used up or expired: open it again from the page"
        }
        return Self.howToGetIn
    }

    /// The token a websocket handshake offers in `Sec-WebSocket-Protocol`, if it does.
    static func offeredToken(_ header: String?) -> String? {
        guard let header else { return nil }
        for item in header.split(separator: ",") {
            let name = item.trimmingCharacters(in: .whitespaces)
            if name.hasPrefix(tokenProtocolPrefix) { return String(name.dropFirst(tokenProtocolPrefix.count)) }
        }
        return nil
    }

    /// The headers of a websocket's 101: the `xclaw` subprotocol when the page offered it (a browser that offered
    /// subprotocols drops a connection whose answer names none).
    static func upgradeHeaders(_ request: Request) -> HTTPFields {
        let offered = request.headers[values: .secWebSocketProtocol].flatMap { $0.split(separator: ",") }
        guard offered.contains(where: { $0.trimmingCharacters(in: .whitespaces) == webSocketProtocol }) else {
            return [:]
        }
        return [.secWebSocketProtocol: webSocketProtocol]
    }
}

/// Single-use passes for the navigations a page cannot put a header on (a run's report in a new tab, an export's
/// download): each is good for one GET of one path, for a minute. The page asks for one with its Bearer header.
final class WebTickets: Sendable {
    /// How long a ticket is good for.
    static let lifetime: Duration = .seconds(60)
    /// The most tickets outstanding; the oldest go first.
    static let maximum = 64
    /// The paths a ticket may be for: the navigations the pages make.
    static let paths = ["/api/reports/", "/api/export/"]
    private let issued = Mutex<[(ticket: String, path: String, expires: ContinuousClock.Instant)]>([])

    /// An empty set.
    init() {}

    /// A ticket for one GET of `path`, or nil when `path` is not one a ticket may be for.
    func issue(for path: String) -> String? {
        guard Self.paths.contains(where: { path.hasPrefix($0) && path.count > $0.count }) else { return nil }
        let ticket = WebToken.random()
        let now = ContinuousClock.now
        issued.withLock { list in
            list.removeAll { $0.expires < now }
            if list.count >= Self.maximum { list.removeFirst(list.count - Self.maximum + 1) }
            list.append((ticket, path, now + Self.lifetime))
        }
        return ticket
    }

    /// Whether `ticket` is good for `path` now; it is used up either way when it names one.
    func redeem(_ ticket: String, path: String) -> Bool {
        let now = ContinuousClock.now
        return issued.withLock { list in
            guard let index = list.firstIndex(where: { WebToken.matches(ticket, $0.ticket) }) else { return false }
            let found = list.remove(at: index)
            return found.path == path && found.expires >= now
        }
    }
}

/// `WebAccess` for every request. A POST with a body says it is JSON (exactly `application/json`, parameters
/// allowed): a form or `text/plain` POST (which a page elsewhere can send without asking) is refused. An old link
/// with `?token=` is sent to the fragment form (`/#token=`), never given a cookie.
struct WebAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let access: WebAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let path = request.uri.path
        if let query = request.uri.queryParameters.get("token").map({ String($0) }), request.method == .get,
            !WebResponses.isMachinePath(path), request.headers[.upgrade] == nil
        {
            // The address always names this server's own page: never a path from the request, which a browser
            // could read as another host (`//host`, `/\host`).
            guard WebToken.matches(query, access.token) else {
                return WebResponses.unauthorized(request, "wrong token")
            }
            var headers = HTTPFields()
            headers[.location] = "/#token=" + query
            headers[.cacheControl] = "no-store"
            headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
            return Response(status: .seeOther, headers: headers)
        }
        let parts = WebRequestParts(
            path: path, method: request.method.rawValue, origin: request.headers[.origin],
            host: request.head.authority,
            fetchSite: request.headers[HTTPField.Name("Sec-Fetch-Site")!],
            authorization: request.headers[.authorization],
            protocols: request.headers[values: .secWebSocketProtocol].joined(separator: ", "),
            ticket: request.uri.queryParameters.get("ticket").map { String($0) })
        if let why = access.refusal(parts) {
            return WebResponses.unauthorized(request, why)
        }
        if request.method == .post, !WebResponses.isJSON(request.headers[.contentType]),
            request.headers[.contentType] != nil || Self.hasBody(request)
        {
            return WebResponses.json(
                ["error": "send JSON (Content-Type: application/json)"], status: .unsupportedMediaType)
        }
        return try await next(request, context)
    }

    /// Whether a request says it carries a body.
    private static func hasBody(_ request: Request) -> Bool {
        if request.headers[.transferEncoding] != nil { return true }
        return request.headers[.contentLength].flatMap { Int($0) }.map { $0 > 0 } ?? false
    }
}

extension WebTickets {
    /// `POST /api/tickets {"path": PATH}` → `{"ticket": T}`: a pass for one GET of PATH (`PATH?ticket=T`), asked
    /// for with the Bearer header, for a navigation that cannot carry one.
    func add<Context: RequestContext>(to router: Router<Context>) {
        router.post("/api/tickets") { request, _ in
            let body = try await WebAPI.body(request)
            guard let path = body["path"] as? String, let ticket = self.issue(for: path) else {
                throw HTTPError(
                    .badRequest, message: "say which report or export: {\"path\": \"/api/reports/ID\"}")
            }
            return WebResponses.json(["ticket": ticket])
        }
    }
}

/// Which Origins are this machine's: loopback hosts only.
enum WebOrigin {
    /// Whether `origin` (scheme://host[:port]) names a loopback host.
    static func isLocal(_ origin: String) -> Bool {
        guard let url = URL(string: origin), let host = url.host?.lowercased() else { return false }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        let loopbackIPv4 =
            octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
        return bare == "localhost" || bare == "::1" || loopbackIPv4 || bare.hasSuffix(".localhost")
    }
}

/// Responses every route shares.
enum WebResponses {
    /// Paths machines ask (JSON, websockets, MCP): no redirect and no HTML for them.
    static func isMachinePath(_ path: String) -> Bool {
        path.hasPrefix("/api/") || path.hasPrefix("/ws/") || path == "/mcp"
    }

    /// 401 with what to do: JSON for machines, a short page for a person.
    static func unauthorized(_ request: Request, _ why: String) -> Response {
        if isMachinePath(request.uri.path) {
            return json(["error": why], status: .unauthorized)
        }
        let page = """
            <!doctype html><meta charset="utf-8"><title>xclaw: 401</title>
            <body style="font:16px system-ui;margin:3em"><h1>xclaw web view: not authorized</h1>
            <p>\(WebEscape.html(why)).</p><p>Run <code>xclaw daemon status --json</code> and open its \
            <code>web.url</code> (the <code>#token=</code> part stays in your browser).</p></body>
            """
        return Response(
            status: .unauthorized, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// A websocket's JSON message, as text.
    static func text(_ object: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map {
            String(decoding: $0, as: UTF8.self)
        } ?? "{}"
    }

    /// A JSON body.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONEncoder().encode(value)) ?? Data("{}".utf8)
        return raw(data, type: "application/json", status: status)
    }

    /// Bytes of a type.
    static func raw(_ data: Data, type: String, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:])
        -> Response
    {
        var headers: HTTPFields = [.contentType: type, .cacheControl: "no-store"]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Whether a Content-Type is JSON: exactly `application/json`, parameters (`; charset=utf-8`) allowed.
    static func isJSON(_ type: String?) -> Bool {
        guard let type else { return false }
        let media = type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return media.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }
}

/// Escaping for the few strings the server writes into HTML itself.
enum WebEscape {
    /// Text safe inside HTML.
    static func html(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

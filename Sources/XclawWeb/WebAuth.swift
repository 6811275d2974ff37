import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore

/// What `WebAccess` looks at in a request (an HTTP request or a websocket handshake).
struct WebRequestParts: Sendable {
    var path: String
    var method: String
    var origin: String?
    var host: String?
    /// `Sec-Fetch-Site`, which browsers send: "same-origin", "same-site", "cross-site" or "none".
    var fetchSite: String?
    var queryToken: String?
    var authorization: String?
    var cookies: String?
}

/// The web view's one rule for who may ask. The token comes once, in `?token=` or `Authorization: Bearer`; a page
/// opened with it gets a cookie holding a session secret of this daemon's run (never the token itself: cookies are
/// sent to every port of a host); MCP takes only the Bearer token. No page from elsewhere: a request whose Origin is
/// not exactly this server (a loopback host and this port, as the Host header names it) is refused, and so is one a
/// browser marks as coming from another site or another port of this one (`Sec-Fetch-Site`), so another site, or
/// another local server on another port, cannot drive the daemon through a browser that holds the cookie. The
/// middleware applies it to every request; `WebSocketGate` to a websocket's handshake, so it is refused with 401 too.
struct WebAccess: Sendable {
    let token: String
    let cookieName: String
    /// The cookie's value: random for each start of the server.
    let session: String

    /// Why a request with these parts is refused; nil when it may go on.
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
            // An MCP client sends its Bearer token on every request; a browser's cookie is no MCP client.
            return WebToken.matches(bearer, token) ? nil : "MCP needs Authorization: Bearer TOKEN (web.token)"
        }
        if let query = parts.queryToken { return WebToken.matches(query, token) ? nil : "wrong token" }
        if let bearer { return WebToken.matches(bearer, token) ? nil : "wrong token" }
        if WebToken.matches(Self.cookie(cookieName, in: parts.cookies), session) { return nil }
        return "no token, or a session of an earlier run of the daemon: open the web view's address with ?token= "
            + "from `xclaw daemon status --json`"
    }

    /// The value of cookie `name` in a `Cookie` header.
    static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// The cookie a page opened with the token gets.
    var setCookie: String { "\(cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict" }
}

/// `WebAccess` for every request; a page opened with the token is sent on without it, the cookie set. A POST with a
/// body says it is JSON: a form or `text/plain` POST (which a page elsewhere can send without asking) is refused.
struct WebAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let access: WebAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let query = request.uri.queryParameters.get("token").map { String($0) }
        let parts = WebRequestParts(
            path: request.uri.path, method: request.method.rawValue, origin: request.headers[.origin],
            host: request.head.authority,
            fetchSite: request.headers[HTTPField.Name("Sec-Fetch-Site")!], queryToken: query,
            authorization: request.headers[.authorization],
            cookies: request.headers[values: .cookie].joined(separator: "; "))
        if let why = access.refusal(parts) {
            return WebResponses.unauthorized(request, why)
        }
        if request.method == .post, let type = request.headers[.contentType],
            !type.lowercased().hasPrefix("application/json")
        {
            return WebResponses.json(
                ["error": "send JSON (Content-Type: application/json)"], status: .unsupportedMediaType)
        }
        // A page opened with the token: the cookie carries the session from now on, and the address bar loses it.
        if query != nil, request.method == .get, !WebResponses.isMachinePath(request.uri.path),
            request.headers[.upgrade] == nil
        {
            var headers = HTTPFields()
            headers[.location] = WebResponses.withoutToken(request.uri)
            headers[.setCookie] = access.setCookie
            headers[.cacheControl] = "no-store"
            return Response(status: .seeOther, headers: headers)
        }
        return try await next(request, context)
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
            <p>\(WebEscape.html(why)).</p><p>Run <code>xclaw daemon status --json</code> and open <code>web.url</code> \
            with <code>?token=</code> and <code>web.token</code> appended.</p></body>
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

    /// The request's address without its `token` parameter.
    static func withoutToken(_ uri: URI) -> String {
        let kept = uri.queryParameters.filter { $0.key != "token" }.map {
            "\(WebEscape.query(String($0.key)))=\(WebEscape.query(String($0.value)))"
        }
        // One leading slash: `//host/…` would send the browser to another host.
        let path = "/" + uri.path.drop { $0 == "/" }
        return kept.isEmpty ? path : path + "?" + kept.joined(separator: "&")
    }
}

/// Escaping for the few strings the server writes into HTML and URLs itself.
enum WebEscape {
    /// Text safe inside HTML.
    static func html(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// A query component.
    static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~:")))
            ?? ""
    }
}

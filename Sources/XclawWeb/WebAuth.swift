import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore

/// The web view's one rule for who may ask: the token, from `Authorization: Bearer`, the cookie a first visit with
/// `?token=` set (as Jupyter does), or that query; and no page from elsewhere: a browser request whose Origin is not
/// this machine is refused, so another site cannot drive the daemon through a browser that holds the cookie.
struct WebAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    let cookieName: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if let origin = request.headers[.origin], !WebOrigin.isLocal(origin) {
            return WebResponses.unauthorized(
                request, "a page from \(origin) may not use the xclaw web view: open it from this machine")
        }
        let path = request.uri.path
        if let query = request.uri.queryParameters.get("token") {
            guard WebToken.matches(query, token) else {
                return WebResponses.unauthorized(request, "wrong token")
            }
            // A page opened with the token: the cookie carries it from now on, and the address bar loses it.
            if request.method == .get, !WebResponses.isMachinePath(path),
                request.headers[.upgrade] == nil
            {
                var headers = HTTPFields()
                headers[.location] = WebResponses.withoutToken(request.uri)
                headers[.setCookie] = cookie
                headers[.cacheControl] = "no-store"
                return Response(status: .seeOther, headers: headers)
            }
            return try await next(request, context)
        }
        if let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") {
            guard WebToken.matches(String(authorization.dropFirst("Bearer ".count)), token) else {
                return WebResponses.unauthorized(request, "wrong token")
            }
            return try await next(request, context)
        }
        if WebToken.matches(request.cookies[cookieName]?.value, token) { return try await next(request, context) }
        return WebResponses.unauthorized(
            request, "no token: open the web view's address with ?token= from `xclaw daemon status --json`")
    }

    private var cookie: String { "\(cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict" }
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
        let path = uri.path.isEmpty ? "/" : uri.path
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

import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import XclawMCP

/// MCP over streamable HTTP at `/mcp` (spec revision 2025-03-26 on): each POST carries one JSON-RPC message and is
/// answered with its reply as `application/json` (202 for a notification). `initialize` opens a session
/// (`Mcp-Session-Id`), which every later request names; DELETE ends it. The server starts no stream of its own, so
/// GET is 405. The token guards it like every other route (`Authorization: Bearer`).
final class MCPHTTPRoute: Sendable {
    let server: MCPServer
    /// Sessions opened and not ended, oldest first; bounded, so clients that never say goodbye cost nothing.
    private let sessions = Mutex<[String]>([])
    static let maximumSessions = 256
    /// The largest request body taken.
    static let maximumBody = 16 << 20

    init(server: MCPServer) { self.server = server }

    func add<Context: RequestContext>(to router: Router<Context>) {
        let sessionHeader = HTTPField.Name("Mcp-Session-Id")!
        router.post("/mcp") { request, _ in
            let body = try await request.body.collect(upTo: Self.maximumBody)
            let message = Data(buffer: body)
            let isInitialize = Self.method(of: message) == "initialize"
            var headers = HTTPFields()
            if isInitialize {
                let id = UUID().uuidString.lowercased()
                self.sessions.withLock { sessions in
                    sessions.append(id)
                    if sessions.count > Self.maximumSessions { sessions.removeFirst() }
                }
                headers[sessionHeader] = id
            } else if let named = request.headers[sessionHeader] {
                guard self.sessions.withLock({ $0.contains(named) }) else {
                    return WebResponses.json(
                        ["error": "no such MCP session (ended, or the daemon restarted): initialize again"],
                        status: .notFound)
                }
            } else {
                return WebResponses.json(
                    ["error": "name the session: send the Mcp-Session-Id header that initialize returned"],
                    status: .badRequest)
            }
            guard let reply = await self.server.handle(message) else {
                return Response(status: .accepted, headers: headers)
            }
            return WebResponses.raw(reply, type: "application/json", headers: headers)
        }
        router.get("/mcp") { _, _ in
            Response(status: .methodNotAllowed, headers: [.allow: "POST, DELETE"])
        }
        router.delete("/mcp") { request, _ in
            guard let named = request.headers[sessionHeader] else { return Response(status: .badRequest) }
            let removed = self.sessions.withLock { sessions in
                guard let index = sessions.firstIndex(of: named) else { return false }
                sessions.remove(at: index)
                return true
            }
            return Response(status: removed ? .ok : .notFound)
        }
    }

    /// The method of a JSON-RPC message, if it has one.
    static func method(of message: Data) -> String? {
        (try? JSONSerialization.jsonObject(with: message) as? [String: Any])?["method"] as? String
    }
}

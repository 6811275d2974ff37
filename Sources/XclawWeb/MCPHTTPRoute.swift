import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import XclawMCP
import XclawMessages

/// MCP over streamable HTTP at `/mcp` (spec revision 2025-03-26 on): each POST carries one JSON-RPC message and is
/// answered with its reply as `application/json` (202 for a notification). `initialize` opens a session
/// (`Mcp-Session-Id`), which every later request names; DELETE ends it. The server starts no stream of its own, so
/// GET is 405. The token guards it like every other route (`Authorization: Bearer`).
final class MCPHTTPRoute: Sendable {
    let server: MCPServer
    /// Sessions opened and not ended, oldest first; bounded, so clients that never say goodbye cost nothing.
    private let sessions = Mutex<[String]>([])
    static let maximumSessions = 256
    /// The largest request body taken: the same limit as a line of `xclaw mcp` on stdio.
    static let maximumBody = MCPServer.maximumMessage

    init(server: MCPServer) { self.server = server }

    func add<Context: RequestContext>(to router: Router<Context>) {
        let sessionHeader = HTTPField.Name("Mcp-Session-Id")!
        router.post("/mcp") { request, _ in
            let body = try await request.body.collect(upTo: Self.maximumBody)
            let message = Data(buffer: body)
            if let version = request.headers[HTTPField.Name("MCP-Protocol-Version")!],
                !MCPServer.protocolVersions.contains(version)
            {
                return WebResponses.json(
                    [
                        "error": "MCP protocol version \(version) is not one this server speaks: "
                            + MCPServer.protocolVersions.joined(separator: ", ")
                    ], status: .badRequest)
            }
            let request_ = Self.parse(message)
            var headers = HTTPFields()
            let session: String
            if request_.method == "initialize" {
                session = UUID().uuidString.lowercased()
                self.sessions.withLock { sessions in
                    sessions.append(session)
                    if sessions.count > Self.maximumSessions { sessions.removeFirst() }
                }
                headers[sessionHeader] = session
            } else if let named = request.headers[sessionHeader] {
                guard self.sessions.withLock({ $0.contains(named) }) else {
                    return WebResponses.json(
                        ["error": "no such MCP session (ended, or the daemon restarted): initialize again"],
                        status: .notFound)
                }
                session = named
            } else {
                return WebResponses.json(
                    ["error": "name the session: send the Mcp-Session-Id header that initialize returned"],
                    status: .badRequest)
            }
            guard let reply = await self.server.handle(message, session: session) else {
                guard let id = request_.id else { return Response(status: .accepted, headers: headers) }
                // A request cancelled by its client: nothing to answer, but an HTTP request waits for an answer.
                let cancelled: JSONValue = [
                    "jsonrpc": "2.0", "id": id, "error": ["code": -32800, "message": "the call was cancelled"],
                ]
                return WebResponses.raw(
                    (try? JSONEncoder().encode(cancelled)) ?? Data(), type: "application/json", headers: headers)
            }
            // A message that was not JSON-RPC is the HTTP request's fault too.
            let status: HTTPResponse.Status = request_.valid ? .ok : .badRequest
            return WebResponses.raw(reply, type: "application/json", status: status, headers: headers)
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
            if removed { self.server.cancelAll(session: named) }
            return Response(status: removed ? .ok : .notFound)
        }
    }

    /// What the route needs of a message: its method, its id (a request's), and whether it is a JSON-RPC object.
    static func parse(_ message: Data) -> (method: String?, id: JSONValue?, valid: Bool) {
        guard case .object(let fields)? = try? JSONValue.parse(message), fields["jsonrpc"] == "2.0" else {
            return (nil, nil, false)
        }
        let id = fields["id"].flatMap { $0 == .null ? nil : $0 }
        return (fields["method"]?.string, fields["method"] == nil ? nil : id, true)
    }
}

import Foundation
import Logging
import Synchronization
import XclawMessages

/// The Model Context Protocol's server side over any transport: JSON-RPC 2.0 messages in, replies out. It answers
/// `initialize` (negotiating the protocol version), `ping`, `tools/list` and `tools/call`, and takes the
/// `notifications/initialized` and `notifications/cancelled` notifications. It knows no transport: stdio
/// (`MCPStdioTransport`) hands it lines, and an HTTP transport can hand it request bodies the same way. Calls may
/// be handled concurrently; each reply is returned whole, for the transport to write as one message.
public final class MCPServer: Sendable {
    /// The protocol revisions this server speaks, newest first.
    public static let protocolVersions = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    /// The longest message taken, on every transport (a line on stdio, a request body over HTTP): a longer one is
    /// refused (`overlongReply`) before it is buffered whole.
    public static let maximumMessage = 16 << 20
    /// How much of a caller's word an error quotes.
    public static let quoteLimit = 200

    /// The answer to a message longer than `limit` (`maximumMessage` unless a transport was given another): an
    /// invalid request, id null (its id was never read).
    public static func overlongReply(limit: Int = maximumMessage) -> Data {
        error(
            id: .null, .invalidRequest,
            "the message is longer than \(limit) bytes, the most this server takes: send less (a smaller argument) "
                + "in one message"
        ).message
    }

    /// `text` for an error message: cut at `quoteLimit` Unicode scalars with "…", so an error never echoes a huge
    /// argument (counted in scalars, not characters: one letter with megabytes of combining marks is one character).
    public static func quoted(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > quoteLimit else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(quoteLimit))) + "…"
    }

    private let name: String
    private let version: String
    private let instructions: String?
    private let tools: [MCPTool]
    private let byName: [String: MCPTool]
    /// A call's key: its session (several HTTP clients share one server, each numbering its requests from 1) and id.
    private struct CallKey: Hashable, Sendable {
        var session: String
        var id: JSONValue
    }
    /// The calls running, by session and request id, for `notifications/cancelled`.
    private let running = Mutex<[CallKey: MCPCancellation]>([:])
    private let logger = Logger(label: "xclaw.mcp")

    /// A server named `name` (its `serverInfo`) offering `tools`; `instructions` tell the client's model how to use
    /// them.
    public init(name: String, version: String, instructions: String? = nil, tools: [MCPTool]) {
        (self.name, self.version, self.instructions, self.tools) = (name, version, instructions, tools)
        byName = Dictionary(tools.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// JSON-RPC's error codes that MCP uses.
    public enum ErrorCode: Int, Sendable {
        case parseError = -32700
        case invalidRequest = -32600
        case methodNotFound = -32601
        case invalidParams = -32602
        case internalError = -32603
    }

    /// Handles one message of `session` (stdio has one; each HTTP session is its own); returns the reply to send (one
    /// JSON text, no newline), or nil: a notification, a response, or a cancelled call, which are not answered.
    public func handle(_ message: Data, session: String = "") async -> Data? {
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(message) } catch {
            return Self.error(id: .null, .parseError, "not JSON: send one JSON-RPC 2.0 object per line").message
        }
        guard case .object(let fields) = parsed else {
            return Self.error(id: .null, .invalidRequest, "send one JSON-RPC 2.0 object per message (no batches)")
                .message
        }
        let id = fields["id"]
        guard fields["jsonrpc"] == "2.0", let method = fields["method"]?.string else {
            // A response to a request of ours: this server sends none, so there is nothing to match it with.
            if fields["result"] != nil || fields["error"] != nil { return nil }
            return Self.error(id: id ?? .null, .invalidRequest, "expected jsonrpc \"2.0\" and a method").message
        }
        let params = fields["params"]?.object ?? [:]
        guard let id, id != .null else {
            notify(method, params, session: session)
            return nil
        }
        switch id {
        case .string, .number: break
        default: return Self.error(id: .null, .invalidRequest, "a request id is a string or an integer").message
        }
        let reply: JSONValue?
        switch method {
        case "initialize": reply = Self.result(id: id, initialize(params))
        case "ping": reply = Self.result(id: id, [:])
        case "tools/list": reply = Self.result(id: id, ["tools": .array(tools.map(\.listing))])
        case "tools/call": reply = await call(id: id, params, session: session)
        default: reply = Self.error(id: id, .methodNotFound, "no method \(Self.quoted(method))")
        }
        return reply?.message
    }

    /// Cancels every call still running (of `session` only, when given): the connection is closing, the session
    /// ended, or a person pressed the web view's emergency stop.
    public func cancelAll(session: String? = nil) {
        let calls = running.withLock { running in
            running.filter { session == nil || $0.key.session == session }.map(\.value)
        }
        for cancellation in calls { cancellation.cancel() }
    }

    /// The version to speak: the client's when this server speaks it, else this server's newest (the client then
    /// decides whether it can go on).
    public static func negotiate(_ requested: String?) -> String {
        requested.flatMap { protocolVersions.contains($0) ? $0 : nil } ?? protocolVersions[0]
    }

    private func initialize(_ params: [String: JSONValue]) -> JSONValue {
        let client = params["clientInfo"]?["name"]?.string ?? "?"
        let version = Self.negotiate(params["protocolVersion"]?.string)
        logger.info("client connected", metadata: ["client": "\(client)", "protocol": "\(version)"])
        var result: [String: JSONValue] = [
            "protocolVersion": .string(version),
            "capabilities": ["tools": ["listChanged": false]],
            "serverInfo": ["name": .string(name), "version": .string(self.version)],
        ]
        if let instructions { result["instructions"] = .string(instructions) }
        return .object(result)
    }

    private func notify(_ method: String, _ params: [String: JSONValue], session: String) {
        guard method == "notifications/cancelled", let id = params["requestId"] else { return }
        running.withLock { $0[CallKey(session: session, id: id)] }?.cancel()
    }

    /// `tools/call`: an unknown tool or malformed params are protocol errors; everything the tool itself refuses or
    /// fails at (arguments of the wrong type included) is an `isError` result.
    private func call(id: JSONValue, _ params: [String: JSONValue], session: String) async -> JSONValue? {
        guard let name = params["name"]?.string else {
            return Self.error(id: id, .invalidParams, "tools/call needs the tool's name")
        }
        guard let tool = byName[name] else {
            return Self.error(
                id: id, .invalidParams, "Unknown tool: \(Self.quoted(name)); tools/list names them")
        }
        let arguments: [String: JSONValue]
        switch params["arguments"] {
        case nil, .null?: arguments = [:]
        case .object(let object)?: arguments = object
        default: return Self.error(id: id, .invalidParams, "arguments must be an object")
        }
        if let problem = tool.problem(with: arguments) {
            return Self.result(id: id, MCPToolResult.failure(problem).json)
        }
        let cancellation = MCPCancellation()
        let key = CallKey(session: session, id: id)
        // A second call with a running call's id (a client's bug) must not take the first one's cancellation away.
        let registered = running.withLock { running -> Bool in
            guard running[key] == nil else { return false }
            running[key] = cancellation
            return true
        }
        defer { if registered { _ = running.withLock { $0.removeValue(forKey: key) } } }
        let started = ContinuousClock.now
        let result = await tool.run(MCPCall(arguments: arguments, cancellation: cancellation))
        logger.debug(
            "tool call",
            metadata: ["tool": "\(name)", "error": "\(result.isError)", "ms": "\(Self.ms(since: started))"])
        // A cancelled request is not answered (the client has stopped waiting for it).
        if cancellation.isCancelled { return nil }
        return Self.result(id: id, result.json)
    }

    private static func ms(since start: ContinuousClock.Instant) -> Int {
        Int((ContinuousClock.now - start) / .milliseconds(1))
    }

    private static func result(id: JSONValue, _ result: JSONValue) -> JSONValue {
        ["jsonrpc": "2.0", "id": id, "result": result]
    }

    private static func error(id: JSONValue, _ code: ErrorCode, _ message: String) -> JSONValue {
        ["jsonrpc": "2.0", "id": id, "error": ["code": .int(code.rawValue), "message": .string(message)]]
    }
}

extension JSONValue {
    /// The value as one message: compact JSON on one line (stdio frames messages by newlines; JSON escapes a
    /// string's), slashes unescaped (a base64 image would grow by a sixth), keys in any order.
    var message: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data("null".utf8)
    }
}

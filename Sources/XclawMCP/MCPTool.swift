import Foundation
import Synchronization
import XclawMessages

/// What a tool tells a client about its effects (MCP's `ToolAnnotations`): hints for deciding what to confirm with a
/// person, never a guarantee.
public struct MCPToolAnnotations: Sendable, Equatable {
    /// It changes nothing.
    public var readOnly: Bool
    /// It may change things in ways that cannot be taken back (meaningful only when not read-only).
    public var destructive: Bool
    /// Calling it again with the same arguments has no further effect.
    public var idempotent: Bool
    /// It reaches an open world of outside entities, rather than a closed domain.
    public var openWorld: Bool

    /// The hints as given.
    public init(readOnly: Bool, destructive: Bool, idempotent: Bool, openWorld: Bool) {
        (self.readOnly, self.destructive, self.idempotent, self.openWorld) = (
            readOnly, destructive, idempotent, openWorld
        )
    }

    /// The wire form, with the tool's `title`.
    func json(title: String) -> JSONValue {
        [
            "title": .string(title), "readOnlyHint": .bool(readOnly), "destructiveHint": .bool(destructive),
            "idempotentHint": .bool(idempotent), "openWorldHint": .bool(openWorld),
        ]
    }
}

/// The JSON type of a tool argument: the subset of JSON Schema the server checks before a tool runs.
public enum MCPParameterType: Sendable, Equatable {
    case string
    case integer
    case number
    case boolean
    /// An array of strings.
    case strings
    /// One of these strings.
    case choice([String])

    var schema: JSONValue {
        switch self {
        case .string: ["type": "string"]
        case .integer: ["type": "integer"]
        case .number: ["type": "number"]
        case .boolean: ["type": "boolean"]
        case .strings: ["type": "array", "items": ["type": "string"]]
        case .choice(let values): ["type": "string", "enum": .array(values.map(JSONValue.string))]
        }
    }

    /// Whether `value` is of this type; an integral number counts as an integer.
    func accepts(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.string, .string), (.boolean, .bool), (.number, .number): true
        case (.integer, .number(let d)): d == d.rounded() && abs(d) < 1e15
        case (.strings, .array(let items)): items.allSatisfy { $0.string != nil }
        case (.choice(let values), .string(let s)): values.contains(s)
        default: false
        }
    }

    var name: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .number: "a number"
        case .boolean: "true or false"
        case .strings: "an array of strings"
        case .choice(let values): "one of " + values.joined(separator: ", ")
        }
    }
}

/// One argument a tool takes.
public struct MCPParameter: Sendable {
    /// Its name in `arguments`.
    public var name: String
    /// Its type.
    public var type: MCPParameterType
    /// What it means, for the model.
    public var description: String
    /// Whether the call must give it.
    public var required: Bool

    /// An argument.
    public init(_ name: String, _ type: MCPParameterType, _ description: String, required: Bool = false) {
        (self.name, self.type, self.description, self.required) = (name, type, description, required)
    }
}

/// A piece of a tool's result.
public enum MCPContent: Sendable, Equatable {
    /// Text.
    case text(String)
    /// An image: its bytes and their MIME type (`image/png`).
    case image(Data, mimeType: String)

    var json: JSONValue {
        switch self {
        case .text(let text): ["type": "text", "text": .string(text)]
        case .image(let data, let mimeType):
            ["type": "image", "data": .string(data.base64EncodedString()), "mimeType": .string(mimeType)]
        }
    }
}

/// What a tool call answers: content, and whether the tool failed (`isError`: the model sees why and can try
/// again; a protocol error would only tell the client the call was malformed).
public struct MCPToolResult: Sendable, Equatable {
    /// The content.
    public var content: [MCPContent]
    /// The tool failed.
    public var isError: Bool

    /// A result.
    public init(_ content: [MCPContent], isError: Bool = false) { (self.content, self.isError) = (content, isError) }

    /// A failure saying `message`.
    public static func failure(_ message: String) -> MCPToolResult { MCPToolResult([.text(message)], isError: true) }

    var json: JSONValue { ["content": .array(content.map(\.json)), "isError": .bool(isError)] }
}

/// A call's cancellation: the client sent `notifications/cancelled` for it, or the connection closed.
public final class MCPCancellation: Sendable {
    private struct State {
        var cancelled = false
        var handlers: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    /// Not cancelled yet.
    public init() {}

    /// Whether the call was cancelled.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Calls `handler` once the call is cancelled (at once when it already is).
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.handlers.append(handler)
            return false
        }
        if now { handler() }
    }

    /// Cancels the call; its handlers run once.
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.handlers = [] }
            return state.handlers
        }
        handlers.forEach { $0() }
    }
}

/// One call of a tool: its checked arguments and its cancellation.
public struct MCPCall: Sendable {
    /// The arguments, checked against the tool's parameters.
    public var arguments: [String: JSONValue]
    /// Cancelled when the client gives up on the call.
    public var cancellation: MCPCancellation

    /// A call.
    public init(arguments: [String: JSONValue], cancellation: MCPCancellation = MCPCancellation()) {
        (self.arguments, self.cancellation) = (arguments, cancellation)
    }

    /// A string argument.
    public func string(_ name: String) -> String? { arguments[name]?.string }
}

/// A tool the server offers: its name, description and parameters for the client, its hints, and what it does.
public struct MCPTool: Sendable {
    /// The name clients call it by.
    public var name: String
    /// A short human title.
    public var title: String
    /// What it does, for the model.
    public var description: String
    /// Its arguments.
    public var parameters: [MCPParameter]
    /// Its hints.
    public var annotations: MCPToolAnnotations
    /// Runs a call whose arguments were checked; failures are `isError` results.
    public var run: @Sendable (MCPCall) async -> MCPToolResult

    /// A tool.
    public init(
        name: String, title: String, description: String, parameters: [MCPParameter], annotations: MCPToolAnnotations,
        run: @escaping @Sendable (MCPCall) async -> MCPToolResult
    ) {
        (self.name, self.title, self.description, self.parameters) = (name, title, description, parameters)
        (self.annotations, self.run) = (annotations, run)
    }

    /// Its `inputSchema`: an object of its parameters, nothing else allowed.
    public var inputSchema: JSONValue {
        var properties: [String: JSONValue] = [:]
        for parameter in parameters {
            var schema = parameter.type.schema.object ?? [:]
            schema["description"] = .string(parameter.description)
            properties[parameter.name] = .object(schema)
        }
        return [
            "type": "object", "properties": .object(properties),
            "required": .array(parameters.filter(\.required).map { .string($0.name) }),
            "additionalProperties": false,
        ]
    }

    /// The entry of `tools/list`.
    var listing: JSONValue {
        [
            "name": .string(name), "title": .string(title), "description": .string(description),
            "inputSchema": inputSchema, "annotations": annotations.json(title: title),
        ]
    }

    /// Why `arguments` do not fit the parameters, in words a model can act on; nil when they do.
    func problem(with arguments: [String: JSONValue]) -> String? {
        let known = Dictionary(parameters.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for name in arguments.keys.sorted() where known[name] == nil {
            return "\(MCPServer.quoted(name)) is not an argument of \(self.name); it takes "
                + parameters.map(\.name).joined(separator: ", ")
        }
        for parameter in parameters {
            guard let value = arguments[parameter.name], value != .null else {
                if parameter.required { return "\(self.name) needs \(parameter.name) (\(parameter.type.name))" }
                continue
            }
            if !parameter.type.accepts(value) {
                return
                    "\(parameter.name) must be \(parameter.type.name), not \(String(String.UnicodeScalarView(value.jsonText.unicodeScalars.prefix(80))))"
            }
        }
        return nil
    }
}

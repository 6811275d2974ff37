import Foundation
import XclawBase
import XclawMessages

/// Resolves tool names and runs tools so that every tool_use gets exactly one tool_result: an unknown name, an input
/// that does not fit the schema, a thrown error or a cancellation all become `is_error` results the model can act
/// on, never a crash and never a dangling tool_use.
public struct ToolRegistry: Sendable {
    /// The tools, in the order they are offered to the model.
    public let tools: [any AgentTool]

    /// Creates a registry; a later tool with a name already taken is dropped (names must be unique for the API).
    public init(_ tools: [any AgentTool]) {
        var seen = Set<String>()
        self.tools = tools.filter { seen.insert($0.name).inserted }
    }

    /// The tool called `name`, if enabled.
    public func tool(named name: String) -> (any AgentTool)? { tools.first { $0.name == name } }

    /// The `tools` array of the request.
    public var definitions: [JSONValue] { tools.map(\.definition) }

    /// Runs one tool_use and returns its result; never throws.
    public func run(id: String, name: String, input: JSONValue, context: ToolContext) async -> ToolResultBlock {
        await execute(id: id, name: name, input: input, context: context).result
    }

    /// Runs one tool_use: its result, and the stop when the failure ends the whole run (`ClassifiedError.endsRun`,
    /// or a `ToolError` that says so); never throws.
    public func execute(id: String, name: String, input: JSONValue, context: ToolContext) async
        -> (result: ToolResultBlock, stop: RunStopped?)
    {
        guard let tool = tool(named: name) else {
            let names = tools.map(\.name).joined(separator: ", ")
            let block = ToolResultBlock(
                toolUseID: id, content: [.text("Unknown tool \"\(name)\". Available tools: \(names).")],
                isError: true)
            return (block, nil)
        }
        if context.isCancelled() { return (Self.interrupted(id), nil) }
        if let problem = SchemaCheck.problems(input, against: tool.inputSchema).first {
            let block = ToolResultBlock(
                toolUseID: id, content: [.text("Invalid input for \(name): \(problem)")], isError: true)
            return (block, nil)
        }
        // Tools poll `isCancelled` from the dispatch threads their X work runs on; Task.isCancelled is false there.
        let flag = CancelFlag()
        var toolContext = context
        toolContext.callID = id
        let outer = context.isCancelled
        toolContext.isCancelled = { flag.isSet || outer() }
        do {
            let output = try await withTaskCancellationHandler {
                try await tool.execute(input, context: toolContext)
            } onCancel: {
                flag.set()
            }
            return (ToolResultBlock(toolUseID: id, content: output.content), nil)
        } catch is CancellationError {
            return (Self.interrupted(id), nil)
        } catch let error as ToolError {
            let block = ToolResultBlock(toolUseID: id, content: [.text(error.message)], isError: true)
            return (block, error.endsRun.map { RunStopped(error.message, exitStatus: $0) })
        } catch {
            let block = ToolResultBlock(toolUseID: id, content: [.text("\(name) failed: \(error)")], isError: true)
            let stop = (error as? ClassifiedError).flatMap {
                $0.endsRun ? RunStopped("\($0)", exitStatus: $0.exitStatus) : nil
            }
            return (block, stop)
        }
    }

    /// The result for a tool_use that was not run because the user interrupted the run.
    public static func interrupted(_ id: String) -> ToolResultBlock {
        ToolResultBlock(toolUseID: id, content: [.text("interrupted by the user")], isError: true)
    }
}

/// A small JSON-schema check covering what tool schemas here use (type, required, properties, enum, minimum,
/// maximum, items), so a malformed input is refused with a precise message before a tool sees it.
public enum SchemaCheck {
    /// Every way `value` breaks `schema`; empty when it fits.
    public static func problems(_ value: JSONValue, against schema: JSONValue, path: String = "input") -> [String] {
        var out: [String] = []
        if let type = schema["type"]?.string, !matches(value, type: type) {
            return ["\(path) must be \(article(type)) \(type), got \(describe(value))"]
        }
        if let options = schema["enum"]?.array, !options.contains(value) {
            let list = options.map { $0.string.map { "\"\($0)\"" } ?? $0.jsonText }.joined(separator: ", ")
            out.append("\(path) must be one of \(list), got \(value.jsonText)")
        }
        if let n = value.double {
            if let min = schema["minimum"]?.double, n < min {
                out.append("\(path) must be ≥ \(fmt(min)), got \(fmt(n))")
            }
            if let max = schema["maximum"]?.double, n > max {
                out.append("\(path) must be ≤ \(fmt(max)), got \(fmt(n))")
            }
        }
        if case .object(let members) = value {
            for key in schema["required"]?.array?.compactMap(\.string) ?? [] where members[key] == nil {
                out.append("\(path).\(key) is required")
            }
            for (key, sub) in schema["properties"]?.object ?? [:] {
                if let v = members[key] { out += problems(v, against: sub, path: "\(path).\(key)") }
            }
        }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            if let min = schema["minItems"]?.int, items.count < min {
                out.append("\(path) must have at least \(min) items, got \(items.count)")
            }
            if let max = schema["maxItems"]?.int, items.count > max {
                out.append("\(path) must have at most \(max) items, got \(items.count)")
            }
            for (i, item) in items.enumerated() { out += problems(item, against: itemSchema, path: "\(path)[\(i)]") }
        }
        return out
    }

    private static func matches(_ v: JSONValue, type: String) -> Bool {
        switch (type, v) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
            ("number", .number):
            return true
        case ("integer", .number(let n)): return n.rounded() == n
        default: return false
        }
    }

    private static func describe(_ v: JSONValue) -> String {
        switch v {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number(let n): return "the number \(fmt(n))"
        case .string(let s): return "the string \"\(s.prefix(40))\""
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    private static func article(_ type: String) -> String { "aeiou".contains(type.first ?? "x") ? "an" : "a" }
    private static func fmt(_ n: Double) -> String { n.rounded() == n && abs(n) < 1e15 ? String(Int64(n)) : String(n) }
}

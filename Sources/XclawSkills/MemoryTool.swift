import Foundation
import XclawAgent
import XclawMessages

/// `memory`: a small key-value notebook the model keeps across steps (and, once persisted, across runs): facts it
/// found, where things are, what is left to do. It is not an input action: no confirmation, nothing on screen.
public struct MemoryTool: AgentTool {
    /// Where entries live.
    public let backend: any MemoryBackend
    /// Longest key accepted.
    public static let maxKey = 200
    /// Longest value accepted.
    public static let maxValue = 20_000
    /// Most entries kept.
    public static let maxEntries = 1_000

    /// Creates the tool over a backend.
    public init(backend: any MemoryBackend) { self.backend = backend }

    /// The tool's name.
    public var name: String { "memory" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "A key-value notebook: set (key, value) to remember something, get (key) to read it, list to see all "
            + "entries, delete (key) to forget. Use it for facts worth keeping during the task."
    }

    /// action, key, value.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["action"],
            "properties": [
                "action": ["type": "string", "enum": ["set", "get", "list", "delete"]],
                "key": ["type": "string", "description": "The entry's name (set, get, delete)."],
                "value": ["type": "string", "description": "The text to store (set)."],
            ],
        ]
    }

    /// Runs one memory action.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let action = input["action"]?.string ?? ""
        func key() throws -> String {
            guard let key = input["key"]?.string?.trimmingCharacters(in: .whitespacesAndNewlines), !key.isEmpty else {
                throw ToolError("key is required for \(action): the entry's name")
            }
            guard key.count <= Self.maxKey else {
                throw ToolError("key is too long: at most \(Self.maxKey) characters")
            }
            return key
        }
        do {
            switch action {
            case "set":
                let k = try key()
                guard let value = input["value"]?.string else {
                    throw ToolError("value is required for set: the text to store")
                }
                guard value.count <= Self.maxValue else {
                    throw ToolError("value is too long: at most \(Self.maxValue) characters; store a summary")
                }
                if try backend.get(k) == nil, try backend.list().count >= Self.maxEntries {
                    throw ToolError("memory is full (\(Self.maxEntries) entries): delete entries you no longer need")
                }
                try backend.set(k, value: value)
                return .text("stored \(quoted(k, limit: 80))")
            case "get":
                let k = try key()
                guard let value = try backend.get(k) else {
                    let keys = try backend.list().keys.sorted()
                    throw ToolError(
                        "no entry \(quoted(k, limit: 80)); "
                            + (keys.isEmpty ? "memory is empty" : "keys: " + keys.prefix(50).joined(separator: ", ")))
                }
                return .text(value)
            case "list":
                let entries = try backend.list()
                guard !entries.isEmpty else { return .text("memory is empty") }
                let lines = entries.keys.sorted().map { k in "\(k): \(quoted(entries[k] ?? "", limit: 200))" }
                return .text("\(entries.count) entries:\n" + lines.joined(separator: "\n"))
            case "delete":
                let k = try key()
                return .text(
                    try backend.delete(k)
                        ? "deleted \(quoted(k, limit: 80))" : "no entry \(quoted(k, limit: 80)) (nothing deleted)")
            default:
                throw ToolError("action must be \"set\", \"get\", \"list\" or \"delete\"")
            }
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("memory failed: \(error)")
        }
    }
}

import Foundation

/// Who wrote a message.
public enum MessageRole: String, Sendable, Codable, Hashable {
    /// The user's turn (task text and tool results).
    case user
    /// The model's turn.
    case assistant
}

/// One content block of a message, as the Messages API defines it. Blocks xclaw does not model are kept whole in
/// `.other` and sent back unchanged.
public enum ContentBlock: Sendable, Hashable {
    /// Plain text.
    case text(String)
    /// A base64 image (`media_type` e.g. `image/png`).
    case image(mediaType: String, base64: String)
    /// The model asks for a tool call; `input` is the parsed JSON object.
    case toolUse(id: String, name: String, input: JSONValue)
    /// The answer to a tool call, in the user turn that follows.
    case toolResult(ToolResultBlock)
    /// Extended thinking; must be returned unchanged, signature included.
    case thinking(thinking: String, signature: String)
    /// Redacted thinking; returned unchanged.
    case redactedThinking(data: String)
    /// Anything else the API sent (server tool blocks, future types): kept verbatim.
    case other(JSONValue)

    /// The API's JSON for this block.
    public var json: JSONValue {
        switch self {
        case .text(let t): return ["type": "text", "text": .string(t)]
        case .image(let media, let data):
            return [
                "type": "image", "source": ["type": "base64", "media_type": .string(media), "data": .string(data)],
            ]
        case .toolUse(let id, let name, let input):
            return ["type": "tool_use", "id": .string(id), "name": .string(name), "input": input]
        case .toolResult(let r): return r.json
        case .thinking(let t, let s): return ["type": "thinking", "thinking": .string(t), "signature": .string(s)]
        case .redactedThinking(let d): return ["type": "redacted_thinking", "data": .string(d)]
        case .other(let v): return v
        }
    }

    /// Reads a block from the API's JSON; unknown types become `.other`.
    public init(json: JSONValue) {
        switch json["type"]?.string {
        case "text" where json["text"]?.string != nil && json["citations"] == nil:
            self = .text(json["text"]?.string ?? "")
        case "image" where json["source"]?["type"]?.string == "base64":
            self = .image(
                mediaType: json["source"]?["media_type"]?.string ?? "image/png",
                base64: json["source"]?["data"]?.string ?? "")
        case "tool_use" where json["id"]?.string != nil && json["name"]?.string != nil:
            self = .toolUse(
                id: json["id"]?.string ?? "", name: json["name"]?.string ?? "",
                input: json["input"] ?? .object([:]))
        case "tool_result" where json["tool_use_id"]?.string != nil:
            self = .toolResult(ToolResultBlock(json: json))
        case "thinking" where json["signature"]?.string != nil:
            self = .thinking(thinking: json["thinking"]?.string ?? "", signature: json["signature"]?.string ?? "")
        case "redacted_thinking" where json["data"]?.string != nil:
            self = .redactedThinking(data: json["data"]?.string ?? "")
        default:
            self = .other(json)
        }
    }

    /// True for image blocks (what screenshot pruning counts).
    public var isImage: Bool { if case .image = self { return true }; return false }

    /// True for a text block with nothing but whitespace, which the API refuses in a request.
    public var isEmptyText: Bool {
        if case .text(let t) = self { return t.allSatisfy(\.isWhitespace) }
        return false
    }
}

/// The answer to one tool_use: text and image blocks, or an error message.
public struct ToolResultBlock: Sendable, Hashable {
    /// The id of the tool_use this answers.
    public var toolUseID: String
    /// Text and image blocks. Never images when `isError` (the API rejects them there).
    public var content: [ContentBlock]
    /// True when the tool failed; the content says why, in words the model can act on.
    public var isError: Bool

    /// Creates a result. Images are dropped from error results and empty text blocks from all results, because
    /// the API rejects both; a result left with nothing says "(no output)".
    public init(toolUseID: String, content: [ContentBlock], isError: Bool = false) {
        self.toolUseID = toolUseID
        let kept = content.filter { !(isError && $0.isImage) && !$0.isEmptyText }
        self.content = kept.isEmpty ? [.text("(no output)")] : kept
        self.isError = isError
    }

    /// The API's JSON.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "type": "tool_result", "tool_use_id": .string(toolUseID), "content": .array(content.map(\.json)),
        ]
        if isError { o["is_error"] = true }
        return .object(o)
    }

    /// Reads the API's JSON (content may be a string or a list of blocks).
    public init(json: JSONValue) {
        toolUseID = json["tool_use_id"]?.string ?? ""
        isError = json["is_error"]?.bool ?? false
        if let s = json["content"]?.string {
            content = [.text(s)]
        } else {
            content = (json["content"]?.array ?? []).map(ContentBlock.init(json:))
        }
    }
}

/// One message of the conversation.
public struct Message: Sendable, Hashable {
    /// Who wrote it.
    public var role: MessageRole
    /// Its blocks, in order.
    public var content: [ContentBlock]

    /// Creates a message.
    public init(role: MessageRole, content: [ContentBlock]) {
        self.role = role
        self.content = content
    }

    /// A user message with one text block.
    public static func user(_ text: String) -> Message { Message(role: .user, content: [.text(text)]) }

    /// The API's JSON.
    public var json: JSONValue { ["role": .string(role.rawValue), "content": .array(content.map(\.json))] }

    /// Reads the API's JSON (content may be a string).
    public init(json: JSONValue) {
        role = json["role"]?.string == "assistant" ? .assistant : .user
        if let s = json["content"]?.string {
            content = [.text(s)]
        } else {
            content = (json["content"]?.array ?? []).map(ContentBlock.init(json:))
        }
    }

    /// The tool calls in this message, in order.
    public var toolUses: [(id: String, name: String, input: JSONValue)] {
        content.compactMap {
            if case .toolUse(let id, let name, let input) = $0 { return (id, name, input) }; return nil
        }
    }

    /// The text blocks joined.
    public var text: String {
        content.compactMap {
            if case .text(let t) = $0 { return t }; return nil
        }.joined()
    }
}

/// Why the model stopped.
public enum StopReason: Sendable, Hashable, CustomStringConvertible {
    /// The model finished its turn.
    case endTurn
    /// The model called tools and waits for their results.
    case toolUse
    /// The output limit cut the reply.
    case maxTokens
    /// A stop sequence ended the reply.
    case stopSequence
    /// A long server-side turn paused; sending the conversation back resumes it.
    case pauseTurn
    /// The model declined.
    case refusal
    /// A reason this version does not know; treated like `endTurn`.
    case other(String)

    /// Reads the API's string.
    public init(_ raw: String) {
        switch raw {
        case "end_turn": self = .endTurn
        case "tool_use": self = .toolUse
        case "max_tokens": self = .maxTokens
        case "stop_sequence": self = .stopSequence
        case "pause_turn": self = .pauseTurn
        case "refusal": self = .refusal
        default: self = .other(raw)
        }
    }

    /// The API's string.
    public var description: String {
        switch self {
        case .endTurn: return "end_turn"
        case .toolUse: return "tool_use"
        case .maxTokens: return "max_tokens"
        case .stopSequence: return "stop_sequence"
        case .pauseTurn: return "pause_turn"
        case .refusal: return "refusal"
        case .other(let s): return s
        }
    }
}

/// Token counts of one request, as the API reports them (`usage`).
public struct Usage: Sendable, Hashable, Codable {
    /// Uncached input tokens.
    public var inputTokens: Int
    /// Output tokens.
    public var outputTokens: Int
    /// Input tokens written to the prompt cache.
    public var cacheCreationInputTokens: Int
    /// Input tokens read from the prompt cache.
    public var cacheReadInputTokens: Int

    /// The API's own names for the counts.
    enum CodingKeys: String, CodingKey {
        case inputTokens = "input_tokens"
        case outputTokens = "output_tokens"
        case cacheCreationInputTokens = "cache_creation_input_tokens"
        case cacheReadInputTokens = "cache_read_input_tokens"
    }

    /// Creates a count.
    public init(
        inputTokens: Int = 0, outputTokens: Int = 0, cacheCreationInputTokens: Int = 0,
        cacheReadInputTokens: Int = 0
    ) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.cacheCreationInputTokens = cacheCreationInputTokens
        self.cacheReadInputTokens = cacheReadInputTokens
    }

    /// Reads the API's `usage` object; absent fields are zero.
    public init(json: JSONValue?) {
        self.init(
            inputTokens: json?["input_tokens"]?.int ?? 0, outputTokens: json?["output_tokens"]?.int ?? 0,
            cacheCreationInputTokens: json?["cache_creation_input_tokens"]?.int ?? 0,
            cacheReadInputTokens: json?["cache_read_input_tokens"]?.int ?? 0)
    }

    /// Overwrites the fields `json` carries (a `message_delta`'s usage is cumulative and may omit some).
    public mutating func update(from json: JSONValue?) {
        if let v = json?["input_tokens"]?.int { inputTokens = v }
        if let v = json?["output_tokens"]?.int { outputTokens = v }
        if let v = json?["cache_creation_input_tokens"]?.int { cacheCreationInputTokens = v }
        if let v = json?["cache_read_input_tokens"]?.int { cacheReadInputTokens = v }
    }

    /// Sums two counts.
    public static func + (a: Usage, b: Usage) -> Usage {
        Usage(
            inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens,
            cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
            cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens)
    }
}

/// A complete model reply, assembled from the stream.
public struct ModelResponse: Sendable, Hashable {
    /// The message id (`msg_...`).
    public var id: String
    /// The model that answered.
    public var model: String
    /// The assistant message.
    public var message: Message
    /// Why it stopped; nil if the stream ended without saying.
    public var stopReason: StopReason?
    /// Token counts.
    public var usage: Usage
    /// The `request-id` response header, for error reports and logs.
    public var requestID: String?

    /// Creates a response.
    public init(
        id: String, model: String, message: Message, stopReason: StopReason?, usage: Usage,
        requestID: String?
    ) {
        self.id = id
        self.model = model
        self.message = message
        self.stopReason = stopReason
        self.usage = usage
        self.requestID = requestID
    }
}

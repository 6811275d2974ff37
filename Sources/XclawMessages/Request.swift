import Foundation

/// One `POST /v1/messages` request. The body is built deterministically (sorted keys) so that the same prefix gives
/// the same bytes and the prompt cache hits.
public struct MessagesRequest: Sendable, Hashable {
    /// The model id.
    public var model: String
    /// Output limit.
    public var maxTokens: Int
    /// The system prompt (nil: none).
    public var system: String?
    /// The conversation so far.
    public var messages: [Message]
    /// Tool definitions, exactly as sent (the computer tool has its own shape).
    public var tools: [JSONValue]
    /// The `thinking` parameter, when extended thinking is on.
    public var thinking: JSONValue?
    /// `output_config.effort` (`low` … `max`), or nil for the model's default.
    public var effort: String? = nil
    /// `context_management` (server-side compaction), or nil.
    public var contextManagement: JSONValue? = nil
    /// `tool_choice`, or nil for the API's default (`auto`).
    public var toolChoice: JSONValue? = nil
    /// Values for the `anthropic-beta` header.
    public var betas: [String]
    /// Where `cache_control` goes: the last tool, the system prompt, and the last block of these messages.
    public var cache: CachePlan

    /// Prompt-caching breakpoints (the API allows at most 4).
    public struct CachePlan: Sendable, Hashable {
        /// Mark the last tool definition (caches all tools).
        public var tools: Bool
        /// Mark the system prompt (caches tools + system).
        public var system: Bool
        /// Indices into `messages` whose last block is marked.
        public var messages: [Int]

        /// Creates a plan.
        public init(tools: Bool = false, system: Bool = false, messages: [Int] = []) {
            self.tools = tools
            self.system = system
            self.messages = messages
        }

        /// No caching.
        public static let none = CachePlan()
    }

    /// Creates a request.
    public init(
        model: String, maxTokens: Int, system: String? = nil, messages: [Message], tools: [JSONValue] = [],
        thinking: JSONValue? = nil, betas: [String] = [], cache: CachePlan = .none
    ) {
        self.model = model
        self.maxTokens = maxTokens
        self.system = system
        self.messages = messages
        self.tools = tools
        self.thinking = thinking
        self.betas = betas
        self.cache = cache
    }

    /// The JSON body, with `stream: true` and the cache breakpoints in place.
    public var body: JSONValue {
        let ephemeral: JSONValue = ["type": "ephemeral"]
        var o: [String: JSONValue] = ["model": .string(model), "max_tokens": .int(maxTokens), "stream": true]
        if let system {
            var block: [String: JSONValue] = ["type": "text", "text": .string(system)]
            if cache.system { block["cache_control"] = ephemeral }
            o["system"] = [.object(block)]
        }
        var messagesJSON = messages.map(\.json)
        for i in cache.messages where messagesJSON.indices.contains(i) {
            guard case .object(var m) = messagesJSON[i], case .array(var blocks)? = m["content"],
                case .object(var last)? = blocks.last
            else { continue }
            last["cache_control"] = ephemeral
            blocks[blocks.count - 1] = .object(last)
            m["content"] = .array(blocks)
            messagesJSON[i] = .object(m)
        }
        o["messages"] = .array(messagesJSON)
        if !tools.isEmpty {
            var toolsJSON = tools
            if cache.tools, case .object(var last)? = toolsJSON.last {
                last["cache_control"] = ephemeral
                toolsJSON[toolsJSON.count - 1] = .object(last)
            }
            o["tools"] = .array(toolsJSON)
        }
        if let thinking { o["thinking"] = thinking }
        if let effort { o["output_config"] = ["effort": .string(effort)] }
        if let contextManagement { o["context_management"] = contextManagement }
        if let toolChoice { o["tool_choice"] = toolChoice }
        return .object(o)
    }

    /// The body as bytes.
    public var bodyData: Data { Data(body.jsonText.utf8) }
}

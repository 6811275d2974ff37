import Foundation

/// One request as the server received it, so tests can assert on exactly what the client sent.
public struct RecordedRequest: Sendable {
    /// Position in the server's `requests` (0-based); the request id is `req_mock_<index + 1>`.
    public let index: Int
    /// The HTTP method, as sent.
    public let method: String
    /// The request target without its query string, so `?beta=true` does not break path checks.
    public let path: String
    /// The query string after `?`, if any.
    public let query: String?
    /// Header names lower-cased (HTTP names are case-insensitive); repeated headers joined with ", ".
    public let headers: [String: String]
    /// The body bytes after Content-Length or chunked decoding.
    public let body: Data
    /// The `request-id` the server answered with, to match client logs against the server's record.
    public let requestID: String
    /// When the request was fully read, for timing assertions (retry backoff, for instance).
    public let receivedAt: Date

    /// Memberwise, so tests can build requests to feed a handler directly.
    public init(
        index: Int, method: String, path: String, query: String? = nil, headers: [String: String],
        body: Data, requestID: String, receivedAt: Date = Date()
    ) {
        self.index = index
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
        self.receivedAt = receivedAt
    }

    /// Case-insensitive header lookup, because clients differ in how they spell names.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The body parsed by JSONSerialization; parsed on demand because `Any` is not Sendable.
    public func json() -> Any? { try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }

    /// The body as a JSON object, the shape every Messages request has.
    public var object: [String: Any]? { json() as? [String: Any] }

    /// The `model` field.
    public var model: String? { object?["model"] as? String }

    /// The `max_tokens` field.
    public var maxTokens: Int? { (object?["max_tokens"] as? NSNumber)?.intValue }

    /// The `stream` field; nil when absent (the API then answers with JSON, which the mock does not).
    public var stream: Bool? { (object?["stream"] as? NSNumber)?.boolValue }

    /// The `messages` array.
    public var messages: [[String: Any]] { object?["messages"] as? [[String: Any]] ?? [] }

    /// How many messages the conversation has, to check history growth and pruning.
    public var messageCount: Int { messages.count }

    /// The `name` of every tool definition, in order.
    public var toolNames: [String] { (object?["tools"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } }

    /// The `system` prompt as text: the string itself, or the text blocks joined with "\n".
    public var system: String? {
        guard let value = object?["system"] else { return nil }
        if let text = value as? String { return text }
        if let blocks = value as? [[String: Any]] {
            return blocks.compactMap { $0["text"] as? String }.joined(separator: "\n")
        }
        return nil
    }

    /// The `tool_result` blocks of the last message, so a scripted model can react to what its tools returned.
    public var toolResults: [ToolResult] {
        guard let last = messages.last, let blocks = last["content"] as? [[String: Any]] else { return [] }
        return blocks.filter { $0["type"] as? String == "tool_result" }.map { block in
            var texts: [String] = []
            var images = 0
            if let text = block["content"] as? String {
                texts.append(text)
            } else if let parts = block["content"] as? [[String: Any]] {
                for part in parts {
                    if part["type"] as? String == "image" { images += 1 }
                    if let text = part["text"] as? String { texts.append(text) }
                }
            }
            return ToolResult(
                toolUseID: block["tool_use_id"] as? String ?? "",
                isError: (block["is_error"] as? NSNumber)?.boolValue ?? false,
                texts: texts, imageCount: images)
        }
    }

    /// A summary of one `tool_result` block, Sendable so handlers can pass it around.
    public struct ToolResult: Sendable, Equatable {
        /// The `tool_use_id` it answers.
        public let toolUseID: String
        /// `is_error`, false when absent.
        public let isError: Bool
        /// The text content (a string content counts as one text).
        public let texts: [String]
        /// How many image blocks it carries (screenshots).
        public let imageCount: Int

        /// Memberwise, so tests can compare against an expected summary.
        public init(toolUseID: String, isError: Bool, texts: [String], imageCount: Int) {
            self.toolUseID = toolUseID
            self.isError = isError
            self.texts = texts
            self.imageCount = imageCount
        }
    }
}

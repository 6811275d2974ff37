import XclawMessages

//// A mid-stream `error` event the API may not repeat (overloaded, internal, rate limit): the request is retried.
struct RetryableStreamError: Error, Sendable, Hashable {
    var type: String
    var message: String
}

/// SSE events → live `StreamEvent`s and one `ModelResponse`; apart from the transport so it is testable offline.
public struct StreamAssembler: Sendable {
    private enum Block: Sendable {
        case text(String)
        case toolUse(id: String, name: String, json: String)
        case thinking(text: String, signature: String)
        case redactedThinking(String)
        /// Any other block (server tools, future types), with the partial JSON of its `input` if it streams one.
        case other(JSONValue, json: String?)
    }

    private var id: String?
    private var model = ""
    private var usage = Usage()
    private var stopReason: StopReason?
    private var blocks: [Int: Block] = [:]
    private var finished: [Int: ContentBlock] = [:]

    /// True once `message_stop` arrived: anything less is a truncated reply.
    public private(set) var isComplete = false

    /// Creates an assembler for one reply.
    public init() {}

    /// Applies one event and returns what to show now; a mid-stream `error` event throws (retryable or `.api`).
    public mutating func apply(_ event: SSEEvent) throws -> [StreamEvent] {
        let known: Set<String> = [
            "message", "message_start", "content_block_start", "content_block_delta", "content_block_stop",
            "message_delta", "message_stop", "error",
        ]
        guard known.contains(event.event) else { return [] }  // ping, and types newer than this code
        let json: JSONValue
        do { json = try JSONValue.parse(event.data) } catch {
            throw ClientError.badResponse("invalid JSON in a \(event.event) event: \(event.data.prefix(200))")
        }
        let type = event.event == "message" ? (json["type"]?.string ?? "") : event.event
        switch type {
        case "message_start":
            let message = json["message"]
            id = message?["id"]?.string ?? ""
            model = message?["model"]?.string ?? ""
            usage = Usage(json: message?["usage"])
            if let reason = message?["stop_reason"]?.string { stopReason = StopReason(reason) }
            blocks = [:]
            finished = [:]
            return [.messageStart(id: id ?? "", model: model)]

        case "content_block_start":
            guard let index = json["index"]?.int, let block = json["content_block"] else {
                throw ClientError.badResponse("content_block_start without index or content_block")
            }
            switch block["type"]?.string {
            case "text":
                let text = block["text"]?.string ?? ""
                blocks[index] = .text(text)
                return text.isEmpty ? [] : [.textDelta(text)]
            case "tool_use":
                let toolID = block["id"]?.string ?? ""
                let name = block["name"]?.string ?? ""
                blocks[index] = .toolUse(id: toolID, name: name, json: "")
                return [.toolUseStart(id: toolID, name: name)]
            case "thinking":
                let text = block["thinking"]?.string ?? ""
                blocks[index] = .thinking(text: text, signature: block["signature"]?.string ?? "")
                return text.isEmpty ? [] : [.thinkingDelta(text)]
            case "redacted_thinking":
                blocks[index] = .redactedThinking(block["data"]?.string ?? "")
                return []
            default:
                blocks[index] = .other(block, json: nil)
                return []
            }

        case "content_block_delta":
            guard let index = json["index"]?.int, let delta = json["delta"], let block = blocks[index] else {
                throw ClientError.badResponse("content_block_delta for a block that was not started")
            }
            switch (delta["type"]?.string, block) {
            case ("text_delta", .text(let text)):
                let more = delta["text"]?.string ?? ""
                blocks[index] = .text(text + more)
                return more.isEmpty ? [] : [.textDelta(more)]
            case ("input_json_delta", .toolUse(let toolID, let name, let partial)):
                blocks[index] = .toolUse(id: toolID, name: name, json: partial + (delta["partial_json"]?.string ?? ""))
            case ("input_json_delta", .other(let start, let partial)):
                blocks[index] = .other(start, json: (partial ?? "") + (delta["partial_json"]?.string ?? ""))
            case ("thinking_delta", .thinking(let text, let signature)):
                let more = delta["thinking"]?.string ?? ""
                blocks[index] = .thinking(text: text + more, signature: signature)
                return more.isEmpty ? [] : [.thinkingDelta(more)]
            case ("compaction_delta", .other(var start, let partial)):
                // A compaction block's summary streams in pieces; its opaque part comes whole, the newest wins.
                let more = delta["content"]?.string ?? ""
                if case .object(var o) = start {
                    o["content"] = .string((o["content"]?.string ?? "") + more)
                    if let opaque = delta["encrypted_content"], opaque != .null { o["encrypted_content"] = opaque }
                    start = .object(o)
                }
                blocks[index] = .other(start, json: partial)
            case ("signature_delta", .thinking(let text, let signature)):
                blocks[index] = .thinking(text: text, signature: signature + (delta["signature"]?.string ?? ""))
            default:
                break  // citations_delta and deltas newer than this code
            }
            return []

        case "content_block_stop":
            guard let index = json["index"]?.int else {
                throw ClientError.badResponse("content_block_stop without index")
            }
            if let block = blocks.removeValue(forKey: index) { finished[index] = Self.finish(block) }
            return []

        case "message_delta":
            if let reason = json["delta"]?["stop_reason"]?.string { stopReason = StopReason(reason) }
            usage.update(from: json["usage"])
            return []

        case "message_stop":
            isComplete = true
            return []

        case "error":
            let errorType = json["error"]?["type"]?.string ?? "api_error"
            let message = json["error"]?["message"]?.string ?? event.data.prefix(200).description
            if ["overloaded_error", "api_error", "rate_limit_error"].contains(errorType) {
                throw RetryableStreamError(type: errorType, message: message)
            }
            throw ClientError.api(
                status: 200, type: errorType, message: message,
                requestID: json["request_id"]?.string)

        default:
            return []
        }
    }

    /// The assembled reply; throws `ClientError.badResponse` when the stream has not reached `message_stop`.
    public func response(requestID: String?) throws -> ModelResponse {
        guard let id else {
            throw ClientError.badResponse("stream ended without message_start" + Self.rid(requestID))
        }
        guard isComplete else {
            throw ClientError.badResponse("stream ended without message_stop" + Self.rid(requestID))
        }
        var all = finished
        for (index, block) in blocks { all[index] = Self.finish(block) }
        let content = all.keys.sorted().compactMap { all[$0] }
        return ModelResponse(
            id: id, model: model, message: Message(role: .assistant, content: content),
            stopReason: stopReason, usage: usage, requestID: requestID)
    }

    private static func rid(_ requestID: String?) -> String { requestID.map { " (request-id \($0))" } ?? "" }

    /// Tool input is parsed only once complete; invalid JSON is kept under `_invalid_json` so the agent loop can
    /// answer the call with an is_error result instead of dropping it (a dangling tool_use breaks the next turn).
    static func parseInput(_ raw: String) -> JSONValue {
        if raw.allSatisfy(\.isWhitespace) { return .object([:]) }
        if let value = try? JSONValue.parse(raw), case .object = value { return value }
        return .object(["_invalid_json": .string(raw)])
    }

    private static func finish(_ block: Block) -> ContentBlock {
        switch block {
        case .text(let text): return .text(text)
        case .toolUse(let id, let name, let json): return .toolUse(id: id, name: name, input: parseInput(json))
        case .thinking(let text, let signature): return .thinking(thinking: text, signature: signature)
        case .redactedThinking(let data): return .redactedThinking(data: data)
        case .other(let start, let json):
            guard let json, case .object(var o) = start else { return .other(start) }
            o["input"] = parseInput(json)
            return .other(.object(o))
        }
    }
}

import Foundation
import XclawBase

/// Rules of the real API that the loopback server can enforce, so the client meets them as it would in production:
/// the thinking forms each model takes (a wrong one is the API's 400), server-side compaction (a `compaction` block
/// opens the reply once the prompt is over the trigger), and input tokens counted from the request itself.
public struct MockRules: Sendable {
    /// Model id → the `thinking.type` values it takes (`adaptive`, `enabled`, `disabled`); a model not listed takes
    /// any. A request with another type is refused with the API's 400.
    public var thinking: [String: Set<String>] = [:]
    /// Compact when a request asks for it (`context_management` with `compact_20260112`, beta `compact-2026-01-12`)
    /// and its prompt is over the trigger.
    public var compaction = false
    /// Report `input_tokens` as counted from the request (text at 4 characters a token, images at pixels / 750),
    /// instead of the scripted figure.
    public var countTokens = false

    /// Creates rules; none are enforced by default.
    public init(thinking: [String: Set<String>] = [:], compaction: Bool = false, countTokens: Bool = false) {
        (self.thinking, self.compaction, self.countTokens) = (thinking, compaction, countTokens)
    }

    /// The API's refusal of a request these rules forbid, or nil.
    func refusal(_ request: RecordedRequest) -> MockReply? {
        guard let body = request.object else { return nil }
        if let model = body["model"] as? String, let taken = thinking[model],
            let type = (body["thinking"] as? [String: Any])?["type"] as? String, !taken.contains(type)
        {
            let hint = taken.contains("adaptive") ? " Use thinking.type.adaptive and output_config.effort instead." : ""
            return .error(
                status: 400, type: "invalid_request_error",
                message: "thinking.type.\(type) is not supported for this model.\(hint)")
        }
        if let edit = Self.compactionEdit(body) {
            guard (request.header("anthropic-beta") ?? "").contains("compact-2026-01-12") else {
                return .error(
                    status: 400, type: "invalid_request_error",
                    message: "context_management.edits.0: compact_20260112 requires the beta compact-2026-01-12")
            }
            if let trigger = Self.trigger(edit), trigger < 50_000 {
                return .error(
                    status: 400, type: "invalid_request_error",
                    message: "context_management.edits.0.trigger.value: must be at least 50000")
            }
        }
        return nil
    }

    /// The reply as the API would send it for this request: with its counted input tokens, and a compaction block
    /// first when the prompt is over the trigger.
    func apply(_ reply: MockReply, to request: RecordedRequest) -> MockReply {
        guard case .stream(var stream) = reply, let body = request.object else { return reply }
        let tokens = Self.inputTokens(body)
        let compact =
            compaction && Self.compactionEdit(body).map { tokens >= (Self.trigger($0) ?? 150_000) } == true
        guard countTokens || compact else { return reply }
        var frames: [SSEFrame] = []
        for frame in stream.frames {
            guard case .event(let name, let data) = frame,
                var object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any]
            else {
                frames.append(frame)
                continue
            }
            switch name {
            case "message_start":
                if countTokens || compact, var message = object["message"] as? [String: Any],
                    var usage = message["usage"] as? [String: Any]
                {
                    // After a compaction the prompt is the summary and what follows it.
                    usage["input_tokens"] = compact ? 2_000 : tokens
                    usage["cache_read_input_tokens"] = 0
                    usage["cache_creation_input_tokens"] = 0
                    message["usage"] = usage
                    object["message"] = message
                }
                frames.append(Self.frame(name, object))
                if compact {
                    let summary = "Summary of \(Self.messages(body).count) earlier messages (\(tokens) tokens)."
                    frames.append(
                        Self.frame(
                            "content_block_start",
                            [
                                "type": "content_block_start", "index": 0,
                                "content_block": ["type": "compaction", "content": NSNull()],
                            ]))
                    frames.append(
                        Self.frame(
                            "content_block_delta",
                            [
                                "type": "content_block_delta", "index": 0,
                                "delta": [
                                    "type": "compaction_delta", "content": summary, "encrypted_content": "opaque-mock",
                                ],
                            ]))
                    frames.append(Self.frame("content_block_stop", ["type": "content_block_stop", "index": 0]))
                }
            case "content_block_start", "content_block_delta", "content_block_stop":
                if compact, let index = object["index"] as? Int { object["index"] = index + 1 }
                frames.append(Self.frame(name, object))
            case "message_delta":
                if compact {
                    object["context_management"] = [
                        "applied_edits": [["type": "compact_20260112", "cleared_input_tokens": tokens - 2_000]]
                    ]
                }
                frames.append(Self.frame(name, object))
            default:
                frames.append(frame)
            }
        }
        stream.frames = frames
        return .stream(stream)
    }

    private static func frame(_ name: String, _ object: [String: Any]) -> SSEFrame {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return .event(name: name, data: String(decoding: data, as: UTF8.self))
    }

    private static func compactionEdit(_ body: [String: Any]) -> [String: Any]? {
        let edits = (body["context_management"] as? [String: Any])?["edits"] as? [[String: Any]] ?? []
        return edits.first { $0["type"] as? String == "compact_20260112" }
    }

    private static func trigger(_ edit: [String: Any]) -> Int? {
        ((edit["trigger"] as? [String: Any])?["value"] as? NSNumber)?.intValue
    }

    private static func messages(_ body: [String: Any]) -> [[String: Any]] {
        body["messages"] as? [[String: Any]] ?? []
    }

    /// The prompt's tokens, from the newest compaction block on (the API ignores what precedes it): the system
    /// prompt, tools and text at 4 characters a token, each image at its pixels / 750.
    public static func inputTokens(_ body: [String: Any]) -> Int {
        var blocks: [Any] = []
        for message in messages(body) {
            if let text = message["content"] as? String { blocks.append(["type": "text", "text": text]) }
            blocks += message["content"] as? [Any] ?? []
        }
        if let last = blocks.lastIndex(where: { ($0 as? [String: Any])?["type"] as? String == "compaction" }) {
            blocks = Array(blocks[last...])
        }
        var total = 0
        if let system = body["system"] {
            total += ((try? JSONSerialization.data(withJSONObject: ["s": system]))?.count ?? 0) / 4
        }
        if let tools = body["tools"] { total += ((try? JSONSerialization.data(withJSONObject: tools))?.count ?? 0) / 4 }
        func count(_ block: Any) {
            guard let b = block as? [String: Any] else { return }
            if b["type"] as? String == "image" {
                let data = (b["source"] as? [String: Any])?["data"] as? String ?? ""
                total += imageTokens(data)
            } else if b["type"] as? String == "tool_result", let inner = b["content"] as? [Any] {
                inner.forEach(count)
            } else {
                total += ((try? JSONSerialization.data(withJSONObject: b))?.count ?? 0) / 4
            }
        }
        blocks.forEach(count)
        return max(1, total)
    }

    /// An image's tokens from its PNG header (width × height / 750), else a 1568-px screenshot's.
    static func imageTokens(_ base64: String) -> Int {
        PNGHeader.size(base64: base64).map { PNGHeader.tokens(width: $0.width, height: $0.height) } ?? 1_600
    }
}

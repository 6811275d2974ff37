import Foundation

/// A script file is invalid; the message names the reply and field so demo authors can fix it.
public struct MockScriptError: Error, CustomStringConvertible {
    /// What is wrong, and where.
    public let description: String
}

/// Scripted replies from JSON, so demos and benchmarks can drive the real client without writing Swift.
///
/// Format: `{"replies": [REPLY...], "repeat": false}`; each REPLY is one of
/// - a turn: `{"text", "thinking", "signature", "tool_uses": [{"id", "name", "input": {...}}], "stop_reason",
///   "usage": {"input", "output", "cache_read", "cache_write"}, "model", "chunk_every": N,
///   "chunk_random": {"seed", "max"}, "delay_ms": N (alone: one event per chunk, paced), "error_after_blocks": N}` (all optional; tool ids default to
///   `toolu_mock_N`, the stop reason to `tool_use` when there are tool uses, else `end_turn`);
/// - an error: `{"status": 529, "error_type": "overloaded_error", "message": "Overloaded", "headers": {...}}`;
/// - `{"hang": true}` or `{"disconnect": true}`.
public struct MockScript: Sendable {
    /// The replies, in order.
    public var replies: [MockReply]
    /// Cycle through the replies forever instead of answering 500 when they run out (for benchmarks).
    public var repeats: Bool

    /// Parses a script document.
    public init(data: Data) throws {
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw MockScriptError(description: "the script is not a JSON object")
        }
        guard let list = root["replies"] as? [Any] else {
            throw MockScriptError(description: "the script has no \"replies\" array")
        }
        replies = try list.enumerated().map { i, item in
            guard let object = item as? [String: Any] else {
                throw MockScriptError(description: "reply \(i) is not a JSON object")
            }
            return try Self.reply(object, at: i)
        }
        repeats = (root["repeat"] as? Bool) ?? false
    }

    /// Reads and parses a script file.
    public init(contentsOfFile path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MockScriptError(description: "cannot read \(path)")
        }
        try self.init(data: data)
    }

    /// The error type the real API uses for a status, so scripts may give only the status.
    public static func defaultErrorType(status: Int) -> String {
        switch status {
        case 400: "invalid_request_error"
        case 401: "authentication_error"
        case 403: "permission_error"
        case 404: "not_found_error"
        case 413: "request_too_large"
        case 429: "rate_limit_error"
        case 529: "overloaded_error"
        default: "api_error"
        }
    }

    private static func reply(_ o: [String: Any], at i: Int) throws -> MockReply {
        func int(_ key: String, in dict: [String: Any]? = nil) throws -> Int? {
            guard let value = (dict ?? o)[key] else { return nil }
            guard let number = value as? NSNumber, number.doubleValue == number.doubleValue.rounded() else {
                throw MockScriptError(description: "reply \(i): \"\(key)\" must be an integer")
            }
            return number.intValue
        }
        func string(_ key: String) throws -> String? {
            guard let value = o[key] else { return nil }
            guard let text = value as? String else {
                throw MockScriptError(description: "reply \(i): \"\(key)\" must be a string")
            }
            return text
        }
        if o["hang"] as? Bool == true { return .hang }
        if o["disconnect"] as? Bool == true { return .disconnect }
        if let status = try int("status"), status != 200 {
            var headers: [String: String] = [:]
            if let raw = o["headers"] {
                guard let dict = raw as? [String: Any] else {
                    throw MockScriptError(description: "reply \(i): \"headers\" must be an object")
                }
                for (name, value) in dict { headers[name] = (value as? String) ?? "\(value)" }
            }
            return .error(
                status: status, type: try string("error_type") ?? defaultErrorType(status: status),
                message: try string("message") ?? "mock error", headers: headers)
        }

        var blocks: [MockBlock] = []
        if let thinking = try string("thinking") {
            blocks.append(.thinking(thinking, signature: try string("signature") ?? "mock-signature"))
        }
        if let text = try string("text") { blocks.append(.text(text)) }
        if let raw = o["tool_uses"] {
            guard let uses = raw as? [[String: Any]] else {
                throw MockScriptError(description: "reply \(i): \"tool_uses\" must be an array of objects")
            }
            for (n, use) in uses.enumerated() {
                guard let name = use["name"] as? String else {
                    throw MockScriptError(description: "reply \(i): tool use \(n) has no \"name\"")
                }
                let input: String
                if let text = use["input"] as? String {
                    input = text
                } else if let value = use["input"] {
                    guard JSONSerialization.isValidJSONObject(value),
                        let data = try? JSONSerialization.data(
                            withJSONObject: value,
                            options: [.sortedKeys, .withoutEscapingSlashes])
                    else {
                        throw MockScriptError(description: "reply \(i): tool use \(n) has an invalid \"input\"")
                    }
                    input = String(decoding: data, as: UTF8.self)
                } else {
                    input = ""
                }
                blocks.append(.toolUse(id: use["id"] as? String ?? "toolu_mock_\(n + 1)", name: name, input: input))
            }
        }
        let hasTools = blocks.contains { if case .toolUse = $0 { true } else { false } }
        let usageDict = o["usage"] as? [String: Any]
        let usage = MockUsage(
            input: try int("input", in: usageDict) ?? 100, output: try int("output", in: usageDict) ?? 20,
            cacheRead: try int("cache_read", in: usageDict) ?? 0,
            cacheWrite: try int("cache_write", in: usageDict) ?? 0)
        var chunking = Chunking.whole
        if let every = try int("chunk_every") {
            guard every > 0 else { throw MockScriptError(description: "reply \(i): \"chunk_every\" must be positive") }
            chunking = .every(every)
        } else if let random = o["chunk_random"] as? [String: Any] {
            let maxSize = try int("max", in: random) ?? 16
            guard maxSize > 0 else {
                throw MockScriptError(description: "reply \(i): chunk_random max must be positive")
            }
            chunking = .random(seed: UInt64(max(0, try int("seed", in: random) ?? 1)), max: maxSize)
        }
        let midStreamError: (type: String, message: String, afterBlocks: Int)? =
            try int("error_after_blocks").map { ("overloaded_error", "Overloaded", $0) }
        var stream = MockStream.turn(
            blocks: blocks, stopReason: try string("stop_reason") ?? (hasTools ? "tool_use" : "end_turn"),
            usage: usage, model: try string("model") ?? "claude-sonnet-4-6",
            midStreamError: midStreamError, chunking: chunking)
        if let delay = try int("delay_ms") {
            // A pace without a chunking means "one event at a time".
            if chunking == .whole { stream.chunking = .perFrame }
            stream.interChunkDelay = .milliseconds(max(0, delay))
        }
        return .stream(stream)
    }
}

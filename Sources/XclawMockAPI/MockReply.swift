import Foundation
import Synchronization
import XclawBase

/// What the server answers to one `POST /v1/messages`: a scripted turn, an API error, or a network failure.
public enum MockReply: Sendable {
    /// HTTP 200 with an SSE body, as the real API streams a turn.
    case stream(MockStream)
    /// An API error: the status plus the exact error body (`{"type":"error","error":{...},"request_id":...}`).
    case error(status: Int, type: String, message: String, headers: [String: String] = [:])
    /// Anything else (a proxy's HTML page, a malformed body): sent verbatim with a Content-Length.
    case raw(status: Int, headers: [String: String], body: String)
    /// 200 + SSE headers + `message_start`, then silence until the client gives up: for cancel and timeout tests.
    case hang
    /// Sends the stream's frames but never ends the body: a stream that stalls mid-turn.
    case stall(MockStream)
    /// Closes the connection right after reading the request, sending nothing: a network failure.
    case disconnect

    /// Shorthand for the most common reply, a text-only turn that ends with `end_turn`.
    public static func text(_ text: String, usage: MockUsage = .init(input: 100, output: 20)) -> MockReply {
        .stream(.turn(blocks: [.text(text)], usage: usage))
    }

    /// Shorthand for a turn that asks for one tool call (stop reason `tool_use`), optionally after some text.
    public static func toolUse(
        name: String, input: String, id: String = "toolu_mock_1", text: String? = nil,
        usage: MockUsage = .init(input: 100, output: 20)
    ) -> MockReply {
        var blocks: [MockBlock] = []
        if let text { blocks.append(.text(text)) }
        blocks.append(.toolUse(id: id, name: name, input: input))
        return .stream(.turn(blocks: blocks, stopReason: "tool_use", usage: usage))
    }

    /// Shorthand for a turn that asks the computer tool for a left click at (`x`, `y`) in the model's coordinates.
    public static func leftClick(x: Int, y: Int, id: String = "toolu_click") -> MockReply {
        toolUse(name: "computer", input: #"{"action": "left_click", "coordinate": [\#(x), \#(y)]}"#, id: id)
    }
}

/// How the SSE bytes are cut into HTTP chunks: clients must reassemble events split at any byte.
public enum Chunking: Sendable, Equatable {
    /// The whole body in one write.
    case whole
    /// Pieces of n bytes, each its own chunk and write (splits lines and UTF-8 sequences).
    case every(Int)
    /// Deterministic pseudo-random piece sizes 1...max, reproducible from the seed.
    case random(seed: UInt64, max: Int)
    /// One chunk per SSE frame, for tests about timing between events.
    case perFrame
}

/// One unit of the SSE byte stream, including deliberately odd framing.
public enum SSEFrame: Sendable, Equatable {
    /// `event: NAME\ndata: DATA\n\n` (a multi-line DATA becomes several `data:` lines).
    case event(name: String, data: String)
    /// `: TEXT\n\n`, which clients must ignore.
    case comment(String)
    /// Verbatim bytes, for framing the builder never produces (CRLF, split `data:` lines, junk).
    case raw(String)

    /// The frame's bytes on the wire.
    public var wireText: String {
        switch self {
        case .event(let name, let data):
            let lines = data.split(separator: "\n", omittingEmptySubsequences: false).map { "data: \($0)\n" }
            return "event: \(name)\n" + lines.joined() + "\n"
        case .comment(let text): return ": \(text)\n\n"
        case .raw(let text): return text
        }
    }
}

/// A content block of a scripted assistant turn.
public enum MockBlock: Sendable, Equatable {
    /// A text block, streamed as `text_delta` pieces.
    case text(String)
    /// A tool call; `input` is JSON text, streamed as `input_json_delta` pieces ("" means `{}`).
    case toolUse(id: String, name: String, input: String)
    /// Extended thinking, streamed as `thinking_delta` pieces then one `signature_delta`.
    case thinking(String, signature: String)
    /// Redacted thinking: everything arrives in `content_block_start`, no deltas.
    case redactedThinking(data: String)
}

/// Token counts reported by a scripted turn, so clients' usage accounting can be checked.
public struct MockUsage: Sendable, Equatable {
    /// `input_tokens` in `message_start`.
    public var input: Int
    /// `output_tokens` in `message_delta` (message_start always says 1, as the real API does).
    public var output: Int
    /// `cache_read_input_tokens` in `message_start`.
    public var cacheRead: Int
    /// `cache_creation_input_tokens` in `message_start`.
    public var cacheWrite: Int

    /// Cache counts default to zero because most tests do not care about caching.
    public init(input: Int, output: Int, cacheRead: Int = 0, cacheWrite: Int = 0) {
        self.input = input
        self.output = output
        self.cacheRead = cacheRead
        self.cacheWrite = cacheWrite
    }
}

/// A streamed 200 reply: SSE frames plus how to deliver them, so tests control both content and framing.
public struct MockStream: Sendable {
    /// The frames, in order.
    public var frames: [SSEFrame]
    /// How the bytes are cut into HTTP chunks.
    public var chunking: Chunking
    /// Pause between chunks; nil means 1 ms for split deliveries (so reads really are separate) and none for `.whole`.
    public var interChunkDelay: Duration?
    /// Extra response headers; they override the defaults of the same name.
    public var headers: [String: String]

    /// Frames are given as-is; use `turn` for the exact sequence the real API sends.
    public init(
        frames: [SSEFrame], chunking: Chunking = .whole, interChunkDelay: Duration? = nil,
        headers: [String: String] = [:]
    ) {
        self.frames = frames
        self.chunking = chunking
        self.interChunkDelay = interChunkDelay
        self.headers = headers
    }

    /// The whole SSE body, for comparing against what a client decoded.
    public var body: Data { Data(frames.map(\.wireText).joined().utf8) }

    /// The byte pieces to write, one HTTP chunk each.
    func pieces() -> [[UInt8]] {
        if chunking == .perFrame { return frames.map { Array($0.wireText.utf8) }.filter { !$0.isEmpty } }
        let bytes = Array(body)
        guard !bytes.isEmpty else { return [] }
        switch chunking {
        case .whole, .perFrame:
            return [bytes]
        case .every(let n):
            let size = max(1, n)
            return stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
        case .random(let seed, let maxSize):
            var rng = SplitMix64(seed: seed)
            var out: [[UInt8]] = []
            var at = 0
            while at < bytes.count {
                let size = 1 + Int(rng.next() % UInt64(max(1, maxSize)))
                out.append(Array(bytes[at..<min(at + size, bytes.count)]))
                at += size
            }
            return out
        }
    }

    /// Numbers generated message ids, so every turn has a distinct `msg_mock_N`.
    private static let messageCounter = Atomic<Int>(0)

    /// The exact event sequence of a real streamed turn, so clients are tested against the true wire format.
    public static func turn(
        blocks: [MockBlock], stopReason: String = "end_turn",
        usage: MockUsage = .init(input: 100, output: 20), model: String = "claude-sonnet-4-6",
        id: String? = nil, pings: Bool = true, jsonFragments: Int = 4, textFragments: Int = 3,
        midStreamError: (type: String, message: String, afterBlocks: Int)? = nil,
        chunking: Chunking = .whole
    ) -> MockStream {
        let messageID = id ?? "msg_mock_\(messageCounter.add(1, ordering: .relaxed).newValue)"
        var frames: [SSEFrame] = []
        func emit(_ name: String, _ fields: [(String, JSONText)]) {
            frames.append(.event(name: name, data: JSONText.object([("type", .string(name))] + fields).serialized))
        }
        func delta(_ index: Int, _ fields: [(String, JSONText)]) {
            emit("content_block_delta", [("index", .int(index)), ("delta", .object(fields))])
        }
        func midStreamErrorFrame(_ e: (type: String, message: String, afterBlocks: Int)) -> SSEFrame {
            let error = JSONText.object([
                ("type", .string("error")),
                (
                    "error",
                    .object([
                        ("type", .string(e.type)), ("message", .string(e.message)),
                    ])
                ),
            ])
            return .event(name: "error", data: error.serialized)
        }

        emit(
            "message_start",
            [
                (
                    "message",
                    .object([
                        ("id", .string(messageID)), ("type", .string("message")), ("role", .string("assistant")),
                        ("model", .string(model)), ("content", .array([])), ("stop_reason", .null),
                        ("stop_sequence", .null),
                        (
                            "usage",
                            .object([
                                ("input_tokens", .int(usage.input)),
                                ("cache_creation_input_tokens", .int(usage.cacheWrite)),
                                ("cache_read_input_tokens", .int(usage.cacheRead)),
                                ("output_tokens", .int(1)),
                            ])
                        ),
                    ])
                )
            ])
        if pings { emit("ping", []) }

        for (index, block) in blocks.enumerated() {
            if let e = midStreamError, e.afterBlocks == index {
                frames.append(midStreamErrorFrame(e))
                return MockStream(frames: frames, chunking: chunking)
            }
            let start: JSONText
            switch block {
            case .text: start = .object([("type", .string("text")), ("text", .string(""))])
            case .toolUse(let toolID, let name, _):
                start = .object([
                    ("type", .string("tool_use")), ("id", .string(toolID)), ("name", .string(name)),
                    ("input", .object([])),
                ])
            case .thinking: start = .object([("type", .string("thinking")), ("thinking", .string(""))])
            case .redactedThinking(let data):
                start = .object([("type", .string("redacted_thinking")), ("data", .string(data))])
            }
            emit("content_block_start", [("index", .int(index)), ("content_block", start)])
            switch block {
            case .text(let text):
                for piece in split(text, into: textFragments) where !piece.isEmpty {
                    delta(index, [("type", .string("text_delta")), ("text", .string(piece))])
                }
            case .toolUse(_, _, let input):
                for piece in split(input, into: jsonFragments) {
                    delta(index, [("type", .string("input_json_delta")), ("partial_json", .string(piece))])
                }
            case .thinking(let thinking, let signature):
                for piece in split(thinking, into: textFragments) where !piece.isEmpty {
                    delta(index, [("type", .string("thinking_delta")), ("thinking", .string(piece))])
                }
                delta(index, [("type", .string("signature_delta")), ("signature", .string(signature))])
            case .redactedThinking:
                break
            }
            emit("content_block_stop", [("index", .int(index))])
            if pings && index % 2 == 0 && index + 1 < blocks.count { emit("ping", []) }
        }
        if let e = midStreamError, e.afterBlocks >= blocks.count {
            frames.append(midStreamErrorFrame(e))
            return MockStream(frames: frames, chunking: chunking)
        }
        emit(
            "message_delta",
            [
                ("delta", .object([("stop_reason", .string(stopReason)), ("stop_sequence", .null)])),
                ("usage", .object([("output_tokens", .int(usage.output))])),
            ])
        emit("message_stop", [])
        return MockStream(frames: frames, chunking: chunking)
    }

    /// Splits at Character boundaries into at most n near-equal pieces; "" gives one empty piece.
    static func split(_ text: String, into n: Int) -> [String] {
        let chars = Array(text)
        guard !chars.isEmpty else { return [""] }
        let count = max(1, min(n, chars.count))
        let base = chars.count / count, extra = chars.count % count
        var out: [String] = []
        var at = 0
        for i in 0..<count {
            let size = base + (i < extra ? 1 : 0)
            out.append(String(chars[at..<at + size]))
            at += size
        }
        return out
    }
}

import Foundation
import XclawBase

/// How a long-lived conversation stays within the model's context: the rules the loop applies while it runs and the
/// store's rebuild applies afterwards, kept in one place so that both send exactly the same messages.
///
/// Two mechanisms. A model that compacts on the server (`compact_20260112`) returns a `compaction` block that
/// replaces everything before it; xclaw then stops sending what came before. Any other model gets xclaw's own
/// summary: the turns before the newest reply are summarised by the model in a side request and replaced by one
/// user message that carries the summary.
public enum ContextWindow {
    /// The user turn that stands before a compaction block: the API ignores what precedes the block, and a
    /// conversation must still begin with the user.
    public static let compactedMark = "[earlier turns were compacted into the summary that follows]"
    /// The beta header server-side compaction needs.
    public static let compactionBeta = "compact-2026-01-12"
    /// The edit type that asks for it.
    public static let compactionEdit = "compact_20260112"
    /// The API's smallest trigger (input tokens).
    public static let minimumServerTrigger = 50_000
    /// The API's default trigger, also xclaw's for both mechanisms.
    public static let defaultTrigger = 150_000

    /// Whether a block is a server compaction block.
    public static func isCompaction(_ block: ContentBlock) -> Bool {
        if case .other(let json) = block { return json["type"]?.string == "compaction" }
        return false
    }

    /// The `context_management` value that asks the server to compact above `trigger` input tokens.
    public static func compactionRequest(trigger: Int) -> JSONValue {
        [
            "edits": [
                [
                    "type": .string(compactionEdit),
                    "trigger": ["type": "input_tokens", "value": .int(max(minimumServerTrigger, trigger))],
                ]
            ]
        ]
    }

    /// The conversation from its newest compaction block on: the compacted reply keeps only the block and what
    /// follows it, behind `compactedMark`. Unchanged when there is no compaction; applying it twice changes nothing.
    public static func trimToCompaction(_ messages: [Message]) -> [Message] {
        guard
            let c = messages.lastIndex(where: { m in m.role == .assistant && m.content.contains(where: isCompaction) }),
            let b = messages[c].content.lastIndex(where: isCompaction)
        else { return messages }
        if c == 1, b == 0, messages[0] == .user(compactedMark) { return messages }
        let kept = Message(role: .assistant, content: Array(messages[c].content[b...]))
        return [.user(compactedMark), kept] + messages[(c + 1)...]
    }

    /// The instruction of the side request that summarises old turns.
    public static let summaryInstruction = """
        Summarise the conversation so far for yourself, to replace it: the task and every instruction the user gave, \
        what has been done and what is left, the state of the screen and of each window you worked in, names, \
        values and identifiers you will need again, and anything that failed and why. Write it as notes, without \
        preamble; reply with text only, no tool calls.
        """

    /// Where a summary cuts: the newest assistant message and what follows it stay; everything before is
    /// summarised. Nil when nothing can be summarised (no reply yet, or nothing before it but the first prompt).
    public static func summaryCut(_ messages: [Message]) -> Int? {
        guard let a = messages.lastIndex(where: { $0.role == .assistant }), a >= 2 else { return nil }
        return a
    }

    /// The side request's messages: what is summarised, with the instruction appended to its last user turn.
    public static func summaryRequestMessages(_ messages: [Message], cut: Int) -> [Message] {
        var prefix = Array(messages[..<cut])
        if prefix.last?.role == .user {
            prefix[prefix.count - 1].content.append(.text(summaryInstruction))
        } else {
            prefix.append(.user(summaryInstruction))
        }
        return prefix
    }

    /// The user turn that replaces the summarised ones.
    public static func summaryMessage(_ summary: String) -> Message {
        .user(
            "<conversation-summary>\n\(summary)\n</conversation-summary>\n"
                + "xclaw replaced the earlier turns of this conversation with the summary above to keep it within "
                + "the context window; continue from it.")
    }

    /// The conversation after a summary: the summary, then the newest reply and what follows it.
    public static func applySummary(_ summary: String, to messages: [Message], cut: Int) -> [Message] {
        [summaryMessage(summary)] + messages[cut...]
    }

    /// A rough count of the input tokens a conversation costs (text at 4 characters a token, an image at its
    /// pixels / 750), for deciding when to summarise before the API has reported a count.
    public static func estimatedTokens(_ messages: [Message]) -> Int {
        func blocks(_ content: [ContentBlock]) -> Int {
            content.reduce(0) { n, block in
                switch block {
                case .text(let t): return n + t.utf8.count / 4
                case .image(_, let data): return n + imageTokens(base64: data)
                case .toolUse(_, _, let input): return n + input.jsonText.utf8.count / 4
                case .toolResult(let r): return n + blocks(r.content)
                case .thinking(let t, _): return n + t.utf8.count / 4
                case .redactedThinking(let d): return n + d.utf8.count / 4
                case .other(let j): return n + j.jsonText.utf8.count / 4
                }
            }
        }
        return messages.reduce(0) { $0 + blocks($1.content) }
    }

    /// Tokens of a base64 image: width × height / 750 from a PNG's header, else a 1568-px screenshot's cost.
    static func imageTokens(base64: String) -> Int {
        PNGHeader.size(base64: base64).map { PNGHeader.tokens(width: $0.width, height: $0.height) } ?? 1_600
    }
}

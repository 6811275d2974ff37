import Foundation
import XclawAgent
import XclawMessages
import XclawStore

/// Rebuilds the conversation a run sends from the stored history. A run stores the batch prompt it sent (the
/// queued chat messages in nanoclaw's XML format) as a message of its own, so the rebuild is exactly what the model
/// saw, whatever arrived while a run was going; the same history always gives the same messages, so the prompt
/// cache keeps hitting. Whatever a crash left behind is made valid: interrupted replies keep their text but lose
/// tool calls that were never answered.
public enum Conversation {
    /// The text a reply that did not complete ends with.
    public static let interruptedMark = "[interrupted]"
    /// The sender of stored batch prompts (what a run sent), as opposed to the chat messages they contain.
    public static let batchSender = "xclaw:batch"
    /// The sender of a stored summary that replaced the turns before the newest reply (`ContextPolicy.summary`).
    public static let summarySender = "xclaw:summary"

    /// Whether a stored user message is a tool-results turn (written by a run).
    public static func isToolResults(_ m: StoredMessage) -> Bool {
        m.role == .user
            && m.content.contains {
                if case .toolResult = $0 { return true }; return false
            }
    }

    /// Whether a stored message is a batch prompt a run sent.
    public static func isBatch(_ m: StoredMessage) -> Bool { m.role == .user && m.sender == batchSender }

    /// Whether a stored message is a summary a run made of older turns.
    public static func isSummary(_ m: StoredMessage) -> Bool { m.role == .user && m.sender == summarySender }

    /// Whether a stored message is chat from a user (input still to deliver, or delivered through a batch).
    public static func isChat(_ m: StoredMessage) -> Bool {
        m.role == .user && !isToolResults(m) && !isBatch(m) && !isSummary(m)
    }

    /// The batch prompt for queued chat messages.
    public static func batch(_ messages: [StoredMessage], timeZone: TimeZone = .current, scheduled: Bool = false)
        -> String
    {
        BatchPrompt.format(
            messages.map {
                BatchPrompt.Entry(
                    sender: $0.sender ?? "user", time: $0.createdAt,
                    text: Message(role: .user, content: $0.content).text)
            }, timeZone: timeZone, scheduled: scheduled)
    }

    /// The messages to send: batch prompts, replies and tool results in stored order (chat rows are skipped: they
    /// reached the model inside their batch), from the newest summary or compaction on, exactly as the run that
    /// made it went on sending (`ContextWindow`).
    public static func build(_ stored: [StoredMessage]) -> [Message] {
        // A summary replaced everything before the newest reply that preceded it.
        guard let s = stored.lastIndex(where: isSummary) else { return ContextWindow.trimToCompaction(rows(stored)) }
        let before = stored[..<s].filter(isSent)
        guard let a = before.lastIndex(where: { $0.role == .assistant }) else {
            return ContextWindow.trimToCompaction(rows(Array(stored[(s + 1)...])))
        }
        let summary = ContextWindow.summaryMessage(
            stored[s].content.compactMap {
                if case .text(let t) = $0 { return t }; return nil
            }.joined())
        let tail = rows(Array(before[a...]) + stored[(s + 1)...], start: [summary])
        return ContextWindow.trimToCompaction(tail)
    }

    /// Whether a row reaches the model as a row of its own: not chat (it went inside its batch), not xclaw's own
    /// failure notes (status error, no session), which are for the user, not the model's words.
    private static func isSent(_ m: StoredMessage) -> Bool {
        !isChat(m) && !(m.role == .assistant && m.status == .error && m.sessionID == nil)
    }

    /// Stored rows as messages, after `start` (a summary that stands for what came before them).
    private static func rows(_ stored: [StoredMessage], start: [Message] = []) -> [Message] {
        var out: [Message] = start
        /// Tool calls of the last emitted assistant message still waiting for their results.
        var open: Set<String> = []

        func append(_ m: Message) {
            if let last = out.last, last.role == m.role {
                out[out.count - 1].content += m.content  // the API joins same-role turns the same way
            } else {
                out.append(m)
            }
        }
        /// Drops the open tool calls of the last assistant message (their results never came).
        func closeOpen() {
            guard !open.isEmpty, let i = out.lastIndex(where: { $0.role == .assistant }) else { return }
            out[i].content.removeAll {
                if case .toolUse(let id, _, _) = $0 { return open.contains(id) }; return false
            }
            out[i].content.append(.text(interruptedMark))
            open.removeAll()
        }

        for m in stored where isSent(m) && !isSummary(m) {
            if isToolResults(m) {
                // Keep only results for calls that are open; a stray result would be a 400.
                let results = m.content.filter {
                    if case .toolResult(let r) = $0 { return open.contains(r.toolUseID) }; return false
                }
                guard !results.isEmpty else { continue }
                for case .toolResult(let r) in results { open.remove(r.toolUseID) }
                closeOpen()  // calls of that turn left unanswered
                append(Message(role: .user, content: results))
                continue
            }
            closeOpen()
            if m.role == .user {
                append(Message(role: .user, content: m.content.filter { !$0.isEmptyText }))
                continue
            }
            if out.isEmpty { continue }  // a reply with no prompt before it cannot be sent
            var content = m.content.filter { !$0.isEmptyText }
            if m.status != .complete {
                content = content.filter {
                    if case .text = $0 { return true }; return false
                }
                content.append(.text(interruptedMark))
            }
            append(Message(role: .assistant, content: content))
            if m.status == .complete {
                open = Set(
                    content.compactMap {
                        if case .toolUse(let id, _, _) = $0 { return id }; return nil
                    })
            }
        }
        closeOpen()
        return out
    }
}

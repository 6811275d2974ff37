import Foundation
import XclawAgent
import XclawStore

/// Rebuilds the conversation a run sends from the stored history. The same history always gives the same
/// messages, so the prompt cache keeps hitting, and whatever a crash left behind is made valid: interrupted replies
/// keep their text but lose unanswered tool calls, and chat messages that arrived during a run are placed after it,
/// where the next run delivered them.
public enum Conversation {
    /// The text a reply that did not complete ends with.
    public static let interruptedMark = "[interrupted]"

    /// Whether a stored user message is a tool-results turn (written by a run) rather than chat.
    public static func isToolResults(_ m: StoredMessage) -> Bool {
        m.role == .user && m.content.contains { if case .toolResult = $0 { return true }; return false }
    }

    /// The messages for a run whose batch ends at `cursor`: chat messages after it belong to a later run.
    public static func build(_ stored: [StoredMessage], cursor: Int64, timeZone: TimeZone = .current) -> [Message] {
        var out: [Message] = []
        var deferred: [StoredMessage] = []
        /// Tool calls of the last emitted assistant message still waiting for their results.
        var open: Set<String> = []

        func flush() {
            guard !deferred.isEmpty else { return }
            let entries = deferred.map {
                BatchPrompt.Entry(sender: $0.sender ?? "user", time: $0.createdAt, text: Message(role: .user, content: $0.content).text)
            }
            append(Message(role: .user, content: [.text(BatchPrompt.format(entries, timeZone: timeZone))]))
            deferred.removeAll()
        }
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
            out[i].content.removeAll { if case .toolUse(let id, _, _) = $0 { return open.contains(id) }; return false }
            out[i].content.append(.text(interruptedMark))
            open.removeAll()
        }

        for m in stored {
            if m.role == .user && !isToolResults(m) {
                if m.id <= cursor { deferred.append(m) }
                continue
            }
            if isToolResults(m) {
                // Keep only results for calls that are open; a stray result would be a 400.
                let results = m.content.filter { if case .toolResult(let r) = $0 { return open.contains(r.toolUseID) }; return false }
                guard !results.isEmpty else { continue }
                for case .toolResult(let r) in results { open.remove(r.toolUseID) }
                closeOpen()  // calls of that turn left unanswered
                append(Message(role: .user, content: results))
                continue
            }
            // An assistant message. A new reply after a finished one needs the user turn that prompted it.
            closeOpen()
            if out.last?.role != .user { flush() }
            if out.isEmpty { continue }  // a reply with no prompt before it cannot be sent
            var content = m.content.filter { !$0.isEmptyText }
            if m.status != .complete {
                content = content.filter { if case .text = $0 { return true }; return false }
                content.append(.text(interruptedMark))
            }
            append(Message(role: .assistant, content: content))
            if m.status == .complete {
                open = Set(content.compactMap { if case .toolUse(let id, _, _) = $0 { return id }; return nil })
            }
        }
        closeOpen()
        flush()
        return out
    }
}

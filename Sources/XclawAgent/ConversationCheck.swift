import Foundation
import XclawBase
import XclawMessages

/// Checks a conversation the way the API will: every tool_use must be answered in the next message.
public enum ConversationCheck {
    /// The ids of tool_uses without a tool_result in the following user message.
    public static func unansweredToolUses(_ messages: [Message]) -> [String] {
        var missing: [String] = []
        for (i, m) in messages.enumerated() where m.role == .assistant {
            let ids = m.toolUses.map(\.id)
            guard !ids.isEmpty else { continue }
            let answered: Set<String> =
                i + 1 < messages.count
                ? Set(
                    messages[i + 1].content.compactMap {
                        if case .toolResult(let r) = $0 { return r.toolUseID }; return nil
                    })
                : []
            missing += ids.filter { !answered.contains($0) }
        }
        return missing
    }
}

import Foundation
import XclawBase
import XclawMessages

/// Drops old screenshots from tool results so a long run's requests stay bounded.
public enum ImagePruner {
    /// The text left where a screenshot was removed, so the model knows one was there.
    public static let placeholder = "[older screenshot removed to save tokens]"

    /// Images inside tool results.
    public static func count(_ messages: [Message]) -> Int {
        messages.reduce(0) { total, m in
            total
                + m.content.reduce(0) { n, block in
                    if case .toolResult(let r) = block { return n + r.content.filter(\.isImage).count }
                    return n
                }
        }
    }

    /// Keeps the `keep` newest images when at least `chunk` are over the limit, removing the rest oldest first;
    /// otherwise changes nothing (the cached prefix stays valid between prunes).
    public static func prune(_ messages: inout [Message], keep: Int, chunk: Int) {
        let total = count(messages)
        let over = total - max(0, keep)
        guard over >= max(1, chunk) else { return }
        var remaining = over
        for m in messages.indices where remaining > 0 {
            for b in messages[m].content.indices where remaining > 0 {
                guard case .toolResult(var r) = messages[m].content[b] else { continue }
                var changed = false
                r.content = r.content.map { block in
                    guard block.isImage, remaining > 0 else { return block }
                    remaining -= 1
                    changed = true
                    return .text(placeholder)
                }
                if changed { messages[m].content[b] = .toolResult(r) }
            }
        }
    }
}

import Foundation
import XclawAgent
import XclawMessages

/// The prompt a batch of queued user messages becomes: nanoclaw's XML format, every attribute and content escaped so
/// a message cannot close its own tag and pose as another sender.
public enum BatchPrompt {
    /// One queued message.
    public struct Entry: Sendable, Hashable {
        /// Who sent it.
        public var sender: String
        /// When it was stored.
        public var time: Date
        /// Its text.
        public var text: String

        /// Creates an entry.
        public init(sender: String, time: Date, text: String) {
            self.sender = sender
            self.time = time
            self.text = text
        }
    }

    /// The XML text; `scheduled` adds the line saying a schedule sent it, not the user.
    public static func format(_ entries: [Entry], timeZone: TimeZone = .current, scheduled: Bool = false) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = timeZone
        f.dateFormat = "MMM d, yyyy, h:mm a"
        var lines: [String] = []
        if scheduled { lines.append("This message was sent automatically by a schedule, not by the user.") }
        lines.append("<context timezone=\"\(escape(timeZone.identifier))\" />")
        lines.append("<messages>")
        for e in entries {
            lines.append(
                "<message sender=\"\(escape(e.sender))\" time=\"\(escape(f.string(from: e.time)))\">"
                    + escape(e.text) + "</message>")
        }
        lines.append("</messages>")
        return lines.joined(separator: "\n")
    }

    /// XML-escapes `& < > "`.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}

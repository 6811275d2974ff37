import XclawMessages

/// Text typed into a password field: the keyboard sends it, nothing shows or keeps it as typed. The typing tools
/// say so in their result ("typed 8 characters into a password field"), which the model reads and the store keeps
/// with the call, so every later view of the run (reports, exports, history) finds the calls to mask from the
/// conversation alone; the action records (the `--log` file, the store's steps, the web view's log) are masked
/// before they are written.
public enum SecretText {
    /// What a typing tool's result says after its count when the text went into a password field.
    public static let resultNote = " into a password field (hidden in logs, reports and exports)"

    /// What is shown instead of `count` typed characters.
    public static func masked(_ count: Int) -> String { "•••••••• (\(count) characters, hidden)" }

    /// Whether a tool's result says its text went into a password field.
    public static func marks(_ result: ToolResultBlock) -> Bool {
        result.content.contains { block in
            if case .text(let text) = block { return text.contains("characters" + resultNote) }
            return false
        }
    }

    /// A tool call's input with its typed text (`text`) masked.
    public static func masking(_ input: JSONValue) -> JSONValue {
        guard var object = input.object, let text = object["text"]?.string else { return input }
        object["text"] = .string(masked(text.count))
        return .object(object)
    }

    /// `messages`' contents with the input of every call whose result marks a password masked: what a report,
    /// an export or the history shows.
    public static func masking(_ messages: [[ContentBlock]]) -> [[ContentBlock]] {
        var secret: Set<String> = []
        for content in messages {
            for case .toolResult(let result) in content where marks(result) { secret.insert(result.toolUseID) }
        }
        guard !secret.isEmpty else { return messages }
        return messages.map { content in
            content.map { block in
                if case .toolUse(let id, let name, let input) = block, secret.contains(id) {
                    return .toolUse(id: id, name: name, input: masking(input))
                }
                return block
            }
        }
    }
}

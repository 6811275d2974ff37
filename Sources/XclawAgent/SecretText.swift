import XclawMessages

/// Text typed into a password field: the keyboard sends it, nothing shows or keeps it as typed. The typing tools
/// say so in their result ("typed 8 characters into a password field"), which the model reads and the store keeps
/// with the call, so every later view of the run (reports, exports, history) finds the calls to mask from the
/// conversation alone; the action records (the `--log` file, the store's steps, the web view's log) are masked
/// before they are written.
public enum SecretText {
    /// What a typing tool's result says after its count when the text went into a password field.
    public static let resultNote = " into a password field (hidden in logs, reports and exports)"

    /// The end of every masked text: a result that quotes one (a declined or denied action's description) marks its
    /// call as secret too.
    static let hiddenMark = " characters, hidden)"

    /// What is shown instead of `count` typed characters.
    public static func masked(_ count: Int) -> String { "•••••••• (\(count)\(hiddenMark)" }

    /// Whether a tool's result says its text went into a password field.
    public static func marks(_ result: ToolResultBlock) -> Bool {
        result.content.contains { block in
            if case .text(let text) = block { return text.contains(resultNote) || text.contains(hiddenMark) }
            return false
        }
    }

    /// `line` with `text` (as typed, and as `spellings` quote it) masked: a description of the action that names it.
    public static func hiding(_ text: String, in line: String, spellings: [String] = []) -> String {
        guard !text.isEmpty else { return line }
        var line = line
        for spelling in spellings + [text] where !spelling.isEmpty {
            line = line.replacingOccurrences(of: spelling, with: masked(text.count))
        }
        return line
    }

    /// A tool call's input with what it types masked: `text` of a typing call (`type`, `type_text`), and of every
    /// `type` item of a batch; keys and other fields stay.
    public static func maskingTyped(tool: String, _ input: JSONValue) -> JSONValue {
        guard var object = input.object else { return input }
        if tool == "type_text" || object["action"]?.string == "type" || object["action"]?.string == "type_submit",
            let text = object["text"]?.string
        {
            object["text"] = .string(masked(text.count))
        }
        if let items = object["actions"]?.array {
            object["actions"] = .array(items.map { maskingTyped(tool: "", $0) })
        }
        return .object(object)
    }

    /// `messages`' contents with what every call whose result marks a password typed masked: what a report, an
    /// export or the history shows.
    public static func masking(_ messages: [[ContentBlock]]) -> [[ContentBlock]] {
        var secret: Set<String> = []
        for content in messages {
            for case .toolResult(let result) in content where marks(result) { secret.insert(result.toolUseID) }
        }
        guard !secret.isEmpty else { return messages }
        return messages.map { content in
            content.map { block in
                if case .toolUse(let id, let name, let input) = block, secret.contains(id) {
                    return .toolUse(id: id, name: name, input: maskingTyped(tool: name, input))
                }
                return block
            }
        }
    }
}

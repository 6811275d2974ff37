import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen

/// `clipboard`: reads or sets the clipboard's text, so the model can move text between apps without retyping it.
/// Not in the default set: what another app copied may be private, and a set clipboard outlives the run's process
/// only while something owns it (an agent run in the daemon; a one-shot `xclaw run` gives it up when it exits).
public struct ClipboardTool: AgentTool {
    /// The session whose display's clipboard is used.
    public let session: ScreenSession

    /// Creates the tool on a session.
    public init(session: ScreenSession) { self.session = session }

    /// The tool's name.
    public var name: String { "clipboard" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Read the clipboard's text (action get), or set it (action set, with text) so that ctrl+v pastes it into the "
            + "focused field. Pasting long text is faster and more exact than typing it."
    }

    /// `action` and, for set, `text`.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "action": ["type": "string", "enum": ["get", "set"], "description": "get or set."],
                "text": ["type": "string", "description": "For set: the text to put on the clipboard."],
            ],
            "required": ["action"],
        ]
    }

    /// Gets or sets; a set respects a dry run and the user's confirmation like input does.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let display = session.connection.name
        switch input["action"]?.string {
        case "get":
            let text = try await session.perform { _ -> String? in
                do {
                    return String(
                        decoding: try SelectionReader.read(.clipboard, type: .text, display: display), as: UTF8.self)
                } catch ScreenError.selectionEmpty {
                    return nil
                }
            }
            guard let text else { return .text("the clipboard holds no text") }
            // Another app's words: data for the model, never instructions.
            return .text(UntrustedText.screenData(text, source: "clipboard"))
        case "set":
            guard let text = input["text"]?.string else {
                throw ToolError("set needs text: the text to put on the clipboard")
            }
            let describe = "set the clipboard to \(UntrustedText.quoted(text, limit: 200))"
            if context.dryRun { return .text("dry run: would \(describe)") }
            guard await context.confirm(describe) else { return .text("the user declined to \(describe)") }
            try await session.perform { _ in
                _ = try SelectionOwner.start(
                    display: display, selection: .clipboard, type: .text, data: Data(text.utf8))
            }
            return .text("the clipboard holds \(text.count) characters; ctrl+v pastes them")
        default:
            throw ToolError("action must be get or set")
        }
    }
}

import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `press_button`: keyboard keys and shortcuts in xdotool syntax ("ctrl+s", "alt+Tab", "Return").
public struct PressButtonTool: AgentTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// The tool's name.
    public var name: String { "press_button" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Press keyboard keys or shortcuts in the focused window, in xdotool syntax: \"Return\", \"Escape\", "
            + "\"Tab\", \"ctrl+s\", \"alt+Tab\", \"ctrl+shift+t\", \"F5\", \"Up\". Several, separated by spaces, are "
            + "pressed in order (\"ctrl+a Delete\"). To type text use type_text."
    }

    /// The key names.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["name"],
            "properties": [
                "name": [
                    "type": "string", "description": "Key or combination(s), e.g. \"ctrl+s\" or \"ctrl+a Delete\".",
                ]
            ],
        ]
    }

    /// Parses every combination first (a typo sends nothing), gates, presses, settles.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let text = input["name"]?.string ?? ""
        do {
            let combos = try keyCombos(text)
            let record = ActionRecord(tool: name, action: "key", text: text, result: "pending")
            let outcome = try await session.runInput(record, describe: "press \(quoted(text))", context: context) {
                try $0.input.keyboard.press(combos)
            }
            switch outcome {
            case .skipped(let message): return .text(message)
            case .done(_, let settle, _, _): return .text("pressed \(text)" + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }
}

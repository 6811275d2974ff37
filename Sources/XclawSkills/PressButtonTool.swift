import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `press_button`: keyboard keys and shortcuts in xdotool syntax ("ctrl+s", "alt+Tab", "Return").
public struct PressButtonTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

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
            let record = ActionRecord(tool: name, action: .key, text: text, result: "pending")
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

extension PressButtonTool {
    /// The tool's name.
    public static var toolName: String { "press_button" }

    /// Its keys; `press_button`, the name of its calls in the runner's records, is done again as keys too.
    public static var playbacks: [RecordedAction: any ActionPlayback] {
        [.key: KeysPlayback(), .pressButton: KeysPlayback()]
    }

    /// The button's name.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        OverlayAction(marks: [], caption: "press " + call.text("name"))
    }
}

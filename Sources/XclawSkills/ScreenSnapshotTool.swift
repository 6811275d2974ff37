import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawPerception
import XclawScreen

/// `screen_snapshot`: the screen as a compact list of windows, controls and text with refs, a fraction of a
/// screenshot's tokens; refs stay stable for the run, so the model can tap `e7` without re-reading the screen.
public struct ScreenSnapshotTool: AgentTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// The tool's name.
    public var name: String { "screen_snapshot" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "List what is on screen: windows, controls and text lines, one per line as: ref role \"label\" "
            + "[= value] @centre_x,centre_y WxH [states] in window (screen pixels). A window marked [atspi] lists "
            + "its app's accessibility tree: exact roles (button, field, checkbox, radio, combobox, slider, "
            + "spinbutton, tab, item, link, menuitem, image, text), names, values and states such as focused, "
            + "checked, disabled or covered (hidden behind another window). A window marked [ocr] was read from "
            + "pixels: button, field, checkbox, menuitem and text only. A leading + marks elements new or moved "
            + "since the previous snapshot. Refs (e12, w3) stay the same while the element stays; pass them to "
            + "tap_element or type_text's into. Much cheaper than a screenshot."
    }

    /// `interactive_only` drops plain text lines.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "interactive_only": [
                    "type": "boolean",
                    "description": "Only windows and controls, no text lines (default false).",
                ]
            ],
        ]
    }

    /// Settles, snapshots with the run's refs and renders the text form.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let interactive = input["interactive_only"]?.bool ?? false
        do {
            let snapshot = try await session.perform { session -> Snapshot in
                _ = try session.settle()
                return try session.snapshot()
            }
            // The model should know when a window was read by OCR because its tree failed.
            let notes = (snapshot.warnings ?? []).map { "\nnote: \($0)" }.joined()
            // The listing is what the screen shows: wrapped, so the model tells it apart from xclaw's own words.
            return .text(
                UntrustedText.screenData(snapshot.render(interactiveOnly: interactive), source: "snapshot") + notes)
        } catch {
            throw modelError(error)
        }
    }
}

import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `tap_xy`: a click at a position given as fractions of the screen, for things OCR cannot name (icons, images).
public struct TapXYTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Click at a position given as fractions of the screen: x from 0 (left edge) to 1 (right edge), y from 0 "
            + "(top) to 1 (bottom). From a capture_screen image of width W and height H: x = pixel_x / W, "
            + "y = pixel_y / H. Prefer tap_element when the target has a readable label."
    }

    /// x, y in 0–1 and an optional button.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["x", "y"],
            "properties": [
                "x": fractionSchema("Horizontal position, 0 = left edge, 1 = right edge."),
                "y": fractionSchema("Vertical position, 0 = top edge, 1 = bottom edge."),
                "button": ["type": "string", "enum": ["left", "right", "middle"], "description": "Default left."],
            ],
        ]
    }

    /// Maps to `round(x·(W−1)), round(y·(H−1))`, gates, clicks, settles.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let x = try fraction(input, "x"), let y = try fraction(input, "y") else {
            throw ToolError("x and y are required: fractions of the screen from 0 to 1")
        }
        let button = try mouseButton(input)
        let screen = session.geometry.screen
        let point = screenPoint(x: x, y: y, screen: screen)
        let record = ActionRecord(
            tool: name, action: .tap, x: point.x, y: point.y,
            text: button == .left ? nil : button.rawValue, result: "pending")
        let describe =
            "\(button == .left ? "" : "\(button.rawValue) ")click at (\(point.x), \(point.y)) "
            + "[x=\(x) y=\(y)]"
        do {
            let outcome = try await session.runInput(record, describe: describe, context: context) { session in
                try session.input.click(at: point, button: button)
            }
            switch outcome {
            case .skipped(let text): return .text(text)
            case .done(_, let settle, _, _):
                return .text("tapped at x=\(x) y=\(y) (screen \(point.x),\(point.y))" + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }
}

extension TapXYTool {
    /// The tool's name.
    public static var toolName: String { "tap_xy" }

    /// Its taps, and the right and middle clicks its steps become.
    public static var playbacks: [RecordedAction: any ActionPlayback] {
        [
            .tap: ClickPlayback(), .rightClick: ClickPlayback(button: .right),
            .middleClick: ClickPlayback(button: .middle),
        ]
    }

    /// A tap's text is its button when not the left one: the step is that button's click.
    public static func recorded(_ step: inout RecordedStep, from record: ActionRecord) {
        guard let button = record.text, ["right", "middle"].contains(button) else { return }
        (step.action, step.text) = (button == "right" ? .rightClick : .middleClick, nil)
    }

    /// A click at its fractions of the screen.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        guard let x = call.fraction("x"), let y = call.fraction("y") else {
            return OverlayAction(marks: [], caption: toolName)
        }
        let point = call.fromFractions(x, y)
        call.move(point)
        return OverlayAction(marks: [.click(point)], caption: "tap")
    }
}

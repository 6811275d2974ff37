import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `swipe`: a left-button drag between two positions given as fractions of the screen (sliders, selections,
/// moving windows or items).
public struct SwipeTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Drag with the left mouse button held from one position to another (select text, move a slider or a "
            + "window, drag an item). Positions are fractions of the screen, 0–1 (0,0 = top-left corner)."
    }

    /// Both end points and the duration.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["from_x", "from_y", "to_x", "to_y"],
            "properties": [
                "from_x": fractionSchema("Start, horizontal, 0–1."), "from_y": fractionSchema("Start, vertical, 0–1."),
                "to_x": fractionSchema("End, horizontal, 0–1."), "to_y": fractionSchema("End, vertical, 0–1."),
                "duration_ms": [
                    "type": "integer", "minimum": 0, "maximum": 10000,
                    "description": "How long the movement takes (default 300 ms; some apps need time to start a drag).",
                ],
            ],
        ]
    }

    /// Maps both points, gates, drags through intermediate points, settles.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let fx = try fraction(input, "from_x"), let fy = try fraction(input, "from_y"),
            let tx = try fraction(input, "to_x"), let ty = try fraction(input, "to_y")
        else {
            throw ToolError("from_x, from_y, to_x and to_y are required: fractions of the screen from 0 to 1")
        }
        let ms = input["duration_ms"]?.int ?? 300
        guard (0...10_000).contains(ms) else { throw ToolError("duration_ms must be a whole number from 0 to 10000") }
        let screen = session.geometry.screen
        let from = screenPoint(x: fx, y: fy, screen: screen), to = screenPoint(x: tx, y: ty, screen: screen)
        let record = ActionRecord(
            tool: name, action: .swipe, x: from.x, y: from.y, text: "to \(to.x),\(to.y)",
            result: "pending")
        let describe = "drag from (\(from.x), \(from.y)) to (\(to.x), \(to.y))"
        let cancelled = context.isCancelled
        do {
            let outcome = try await session.runInput(record, describe: describe, context: context) { session in
                try session.input.drag(
                    from: from, to: to, steps: max(8, min(60, ms / 10)),
                    duration: .milliseconds(ms), interrupted: cancelled)
            }
            switch outcome {
            case .skipped(let text): return .text(text)
            case .done(_, let settle, _, _):
                return .text(
                    "dragged from x=\(fx) y=\(fy) to x=\(tx) y=\(ty) (screen \(from.x),\(from.y) → "
                        + "\(to.x),\(to.y))" + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }
}

extension SwipeTool {
    /// The tool's name.
    public static var toolName: String { "swipe" }

    /// Its swipes, drags a script does again.
    public static var playbacks: [RecordedAction: any ActionPlayback] { [.swipe: DragPlayback()] }

    /// A drag between its fractions of the screen.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        guard let fx = call.fraction("from_x"), let fy = call.fraction("from_y"), let tx = call.fraction("to_x"),
            let ty = call.fraction("to_y")
        else { return OverlayAction(marks: [], caption: "swipe") }
        let to = call.fromFractions(tx, ty)
        call.move(to)
        return OverlayAction(marks: [.drag(from: call.fromFractions(fx, fy), to: to)], caption: "swipe")
    }
}

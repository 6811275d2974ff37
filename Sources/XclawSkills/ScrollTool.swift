import Foundation
import XclawAgent
import XclawMessages
import XclawScreen

/// `scroll`: mouse-wheel clicks at a position (the content under the pointer scrolls, not the focused window).
public struct ScrollTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Scroll with the mouse wheel. The content under the position scrolls, so give x and y (fractions of the "
            + "screen, 0–1) over the list or page to scroll; without them it scrolls where the pointer is. One "
            + "wheel click moves about three lines."
    }

    /// direction, amount, optional position.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["direction"],
            "properties": [
                "direction": ["type": "string", "enum": ["up", "down", "left", "right"]],
                "amount": [
                    "type": "integer", "minimum": 1, "maximum": 50,
                    "description": "Wheel clicks (default 3).",
                ],
                "x": fractionSchema("Where to scroll, horizontal 0–1 (give with y)."),
                "y": fractionSchema("Where to scroll, vertical 0–1 (give with x)."),
            ],
        ]
    }

    /// Gates, scrolls, settles.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let name = input["direction"]?.string, let direction = ScrollDirection(rawValue: name) else {
            throw ToolError("direction must be \"up\", \"down\", \"left\" or \"right\"")
        }
        let amount = input["amount"]?.int ?? 3
        guard (1...50).contains(amount) else { throw ToolError("amount must be a whole number of wheel clicks, 1–50") }
        let x = try fraction(input, "x"), y = try fraction(input, "y")
        guard (x == nil) == (y == nil) else { throw ToolError("give both x and y, or neither (scroll at the pointer)") }
        let screen = session.geometry.screen
        let point = x.flatMap { x in y.map { screenPoint(x: x, y: $0, screen: screen) } }
        let record = ActionRecord(
            tool: self.name, action: .scroll, x: point?.x, y: point?.y,
            text: "\(name) \(amount)", result: "pending")
        let describe = "scroll \(name) \(amount) at " + (point.map { "(\($0.x), \($0.y))" } ?? "the pointer")
        do {
            let outcome = try await session.runInput(record, describe: describe, context: context) { session in
                try session.input.scroll(direction, amount: amount, at: point)
            }
            switch outcome {
            case .skipped(let text): return .text(text)
            case .done(_, let settle, _, _):
                let changed =
                    settle?.changed ?? true
                    ? ""
                    : "; nothing on screen changed (the end of the content, or "
                        + "the pointer is not over a scrollable area)"
                return .text(
                    "scrolled \(name) \(amount)" + (point.map { " at screen \($0.x),\($0.y)" } ?? "")
                        + changed + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }
}

extension ScrollTool {
    /// The tool's name.
    public static var toolName: String { "scroll" }

    /// Its scrolls.
    public static var playbacks: [RecordedAction: any ActionPlayback] { [.scroll: ScrollPlayback()] }

    /// Wheel clicks at its fractions of the screen, else at the pointer.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        let at = call.fraction("x").flatMap { x in call.fraction("y").map { (x, $0) } }.map {
            call.fromFractions($0, $1)
        }
        let direction = call.text("direction"), amount = call.input["amount"]?.int ?? 3
        return call.scrollOverlay(at: at, direction: direction, amount: amount)
    }
}

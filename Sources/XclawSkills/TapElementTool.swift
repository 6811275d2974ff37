import Foundation
import XclawAgent
import XclawMessages
import XclawPerception
import XclawScreen

/// `tap_element`: clicks what a label or a ref names on a fresh snapshot (the accessibility tree where the app exposes
/// one, OCR and pixel evidence elsewhere), or presses it through its toolkit. It refuses to guess: when several
/// elements match equally, or nothing does, the model gets the candidates instead of a wrong click.
public struct TapElementTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Click an element by its visible label (matched exactly, case-insensitively, then tolerating OCR slips) or "
            + "by a ref from screen_snapshot. Give exactly one of label or ref. When several elements match "
            + "equally, nothing is clicked and the candidates are listed: pick one with nth, role or its ref. "
            + "Elements from the accessibility tree can be pressed without the mouse (action: true); an element "
            + "covered by another window is always pressed that way, never clicked."
    }

    /// label | ref, plus how to choose and how to click.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "label": ["type": "string", "description": "The visible text of the element, e.g. \"Save\"."],
                "ref": ["type": "string", "description": "A ref from screen_snapshot, e.g. \"e12\"."],
                "role": [
                    "type": "string",
                    "enum": .array(Role.allCases.filter { $0 != .window }.map { .string($0.rawValue) }),
                    "description": "Only elements of this kind.",
                ],
                "action": [
                    "type": "boolean",
                    "description": .string(
                        "Press through the toolkit's own action (click/Press/Toggle) instead of a "
                            + "mouse click; only for elements a snapshot lists in an [atspi] window (default false)."),
                ],
                "nth": [
                    "type": "integer", "minimum": 1,
                    "description": "Take the Nth of equally good matches in reading order (1 = first).",
                ],
                "button": ["type": "string", "enum": ["left", "right", "middle"], "description": "Default left."],
                "double": ["type": "boolean", "description": "Double-click (default false)."],
            ],
        ]
    }

    /// Resolves on a fresh snapshot, gates, clicks the centre, settles, and says what was tapped.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let label = input["label"]?.string.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        let ref = input["ref"]?.string.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        guard (label == nil) != (ref == nil) else {
            throw ToolError(
                "give exactly one of label (the visible text, e.g. \"Save\") or ref (from "
                    + "screen_snapshot, e.g. \"e12\")")
        }
        if let ref, ref.range(of: #"^[ew][0-9]+$"#, options: .regularExpression) == nil {
            throw ToolError(
                "ref \(quoted(ref)) is not a ref: refs look like e12 (elements) or w3 (windows), as "
                    + "screen_snapshot lists them; to tap by visible text pass label instead")
        }
        let role = try input["role"]?.string.map { name -> Role in
            guard let role = Role(rawValue: name), role != .window else {
                throw ToolError(
                    "role must be one of: "
                        + Role.allCases.filter { $0 != .window }.map(\.rawValue).joined(separator: ", "))
            }
            return role
        }
        let button = try mouseButton(input)
        let double = input["double"]?.bool ?? false
        let pressAction = input["action"]?.bool ?? false
        let selection = Selection(nth: input["nth"]?.int, role: role)
        let wanted = ref ?? label ?? ""
        do {
            let match = try await session.perform { session -> Match in
                _ = try session.settle()
                let snapshot = try session.snapshot()
                // A label that happens to look like a ref ("e2") is still a label when no element has that ref.
                if ref == nil, wanted.range(of: #"^[ew][0-9]+$"#, options: .regularExpression) != nil,
                    !snapshot.elements.contains(where: { $0.ref == wanted })
                {
                    throw PerceptionError.notFound(label: wanted, closest: Finder.closest(wanted, in: snapshot))
                }
                return try selection.resolve(wanted, in: snapshot)
            }
            let point = match.point
            let what = "\(match.ref) \(match.role.rawValue) \(quoted(match.text))"
            // The approval gate classifies the element the model named, not whatever is under its centre; a generic
            // answer ("OK") is classified by the dialog around it, found under its point.
            let subject =
                isGenericAnswer(match.text) ? nil : ActionSubject(label: match.text, role: match.role.rawValue)
            // A covered element cannot be clicked (the window above would get it), but its toolkit can press a
            // button-like one; a right/double click or a field (whose first action may submit) is refused instead.
            if pressAction || match.covered == true {
                let pressable = match.node != nil && button == .left && !double && match.role != .field
                guard pressAction || pressable else {
                    throw ToolError(
                        "\(what) is covered by another window, so a click would land there: bring its "
                            + "window to the front first"
                            + (match.node != nil && match.role != .field
                                ? ", or press it with action: true" : ""))
                }
                guard let node = match.node else {
                    throw ToolError("\(what) was read by OCR, so it has no toolkit action: tap it without action")
                }
                let record = ActionRecord(
                    tool: name, action: .press, x: point.x, y: point.y, text: wanted,
                    result: "pending")
                let outcome = try await session.runInput(
                    record, describe: "press \(what) through its toolkit",
                    context: context, subject: subject
                ) { session in
                    _ = try session.perceiver.press(node)
                }
                switch outcome {
                case .skipped(let text): return .text(text)
                case .done(_, let settle, _, _):
                    return .text(
                        "pressed \(what) through its toolkit"
                            + (match.covered == true && !pressAction
                                ? " (it is covered by another window, so it was not clicked)" : "") + settleNote(settle)
                    )
                }
            }
            let record = ActionRecord(
                tool: name,
                action: double ? .doubleTap : button == .left ? .tap : button == .right ? .rightClick : .middleClick,
                x: point.x,
                y: point.y,
                text: wanted, result: "pending")
            let describe =
                "\(double ? "double-click" : "click") \(button == .left ? "" : "\(button.rawValue) ")"
                + "\(what) at (\(point.x), \(point.y))"
            let outcome = try await session.runInput(
                record, describe: describe, context: context, subject: subject
            ) { session in
                try session.input.click(at: point, button: button, count: double ? 2 : 1)
            }
            switch outcome {
            case .skipped(let text): return .text(text)
            case .done(_, let settle, _, _):
                return .text(
                    "tapped \(what) at \(normalizedText(point, screen: session.geometry.screen)) "
                        + tapPlacement(point, box: match.box, screen: session.geometry.screen) + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }
}

extension TapElementTool {
    /// The tool's name.
    public static var toolName: String { "tap_element" }

    /// Its taps, double taps, other buttons' clicks and toolkit presses, all clicks on the element found again.
    public static var playbacks: [RecordedAction: any ActionPlayback] {
        [
            .tap: ClickPlayback(), .doubleTap: ClickPlayback(count: 2), .rightClick: ClickPlayback(button: .right),
            .middleClick: ClickPlayback(button: .middle), .press: ClickPlayback(),
        ]
    }

    /// The element's box and the point tapped, from the result.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction { call.tapOverlay() }
}

import Foundation
import XclawAgent
import XclawMessages
import XclawPerception
import XclawScreen

/// `type_text`: types any Unicode text exactly into the focused window or a field it focuses first (through the
/// accessibility tree when it can), optionally pressing Return after.
public struct TypeTextTool: RecordingTool {
    /// The screen.
    public let session: ScreenSession

    /// Creates the tool.
    public init(session: ScreenSession) { self.session = session }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Type text into the focused window, exactly as given (any language and symbols; a newline "
            + "presses Return, a tab presses Tab). Click the field first if it may not have the focus. "
            + "submit: true presses Return after the text."
    }

    /// text and submit.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["text"],
            "properties": [
                "text": ["type": "string", "description": "The text to type."],
                "submit": ["type": "boolean", "description": "Press Return after typing (default false)."],
                "into": [
                    "type": "string",
                    "description": .string(
                        "A field to focus first: its label or a ref from screen_snapshot. Focused "
                            + "through the accessibility tree when its app exposes one, else clicked. Without it, typing "
                            + "goes to whatever has the focus."),
                ],
            ],
        ]
    }

    /// Checks the text is typeable before sending anything, gates, types, settles.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let text = input["text"]?.string ?? ""
        let submit = input["submit"]?.bool ?? false
        guard !text.isEmpty || submit else {
            throw ToolError("text is empty: give the text to type (or submit: true to press Return only)")
        }
        do {
            _ = try Keyboard.keysyms(for: text)
            let enter = try KeyCombo.parse("Return")
            var record = ActionRecord(
                tool: name, action: submit ? .typeSubmit : .type, text: text,
                result: "pending")
            let into = input["into"]?.string.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
            let target = try await into.asyncMap { wanted in
                try await session.perform { session -> Match in
                    _ = try session.settle()
                    return try Selection().resolve(wanted, in: try session.snapshot())
                }
            }
            // The field's point: the recording anchors the step on it, and a replay focuses it first.
            (record.x, record.y) = (target?.point.x, target?.point.y)
            let describe =
                "type \(quoted(text, limit: .max))\(submit ? " and press Return" : "")"
                + (target.map { " into \($0.ref) \($0.role.rawValue) \(quoted($0.text))" } ?? "")
            let cancelled = context.isCancelled
            // With `into`, the gate classifies the field the text goes to, not what has the focus before it moves.
            let subject = target.map { t in
                ActionSubject(
                    label: t.text, role: t.role.rawValue, typed: text + (submit ? "\n" : ""),
                    intoPassword: ApprovalPolicy.words(t.text).contains {
                        ["password", "passphrase", "pin"].contains($0)
                    })
            }
            let outcome = try await session.runInput(
                record, describe: describe, context: context, subject: subject
            ) { session in
                if let target {
                    // The toolkit's own focus call moves no pointer; a click is the fallback.
                    switch session.perceiver.focusForTyping(target) {
                    case .focused: break
                    case .raised: try session.input.click(at: target.point)
                    case .none:
                        if target.covered == true { throw PerceptionError.covered(target.summary) }
                        try session.input.click(at: target.point)
                    }
                }
                let keyboard = try session.input.keyboard
                if !text.isEmpty { try keyboard.type(text, interrupted: cancelled) }
                if submit && !cancelled() { try keyboard.press([enter]) }
            }
            switch outcome {
            case .skipped(let message): return .text(message)
            case .done(_, let settle, _, let secret):
                return .text(
                    "typed \(text.count) characters" + (secret ? SecretText.resultNote : "")
                        + (target.map { " into \($0.ref) \(quoted($0.text))" } ?? "")
                        + "\(submit ? " and pressed Return" : "")"
                        + settleNote(settle))
            }
        } catch {
            throw modelError(error)
        }
    }
}

extension Optional {
    /// Maps the wrapped value with an async throwing function.
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

extension TypeTextTool {
    /// The tool's name.
    public static var toolName: String { "type_text" }

    /// Its typing, submitted or not.
    public static var playbacks: [RecordedAction: any ActionPlayback] {
        [.type: TypePlayback(), .typeSubmit: TypePlayback(submit: true)]
    }

    /// What it typed, where, and whether Return followed.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        let into = call.input["into"]?.string.map { " into " + OverlayCall.shown($0) } ?? ""
        let submit = call.input["submit"]?.bool == true ? " and Return" : ""
        return OverlayAction(marks: [], caption: "type " + OverlayCall.shown(call.text("text")) + into + submit)
    }
}

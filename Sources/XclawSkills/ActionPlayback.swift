import Foundation
import XclawAgent
import XclawScreen

// How a recorded action is done again: by a replay, which finds the step's target anew and checks it before any
// input (`StepReplayer`, runtime), and as lines of a shell script of xclaw commands (`xclaw script export --format
// sh`). Each `RecordingTool` names the playback of every action it records (`playbacks`); `RecordingTools.playback`
// finds it for a step.

/// What a replay gives a playback: the step's target found again, its window checked, the approval gate, the input.
public protocol StepReplaying {
    /// The text to type: the task parameter's value when the step has one, else the recorded text.
    var text: String? { get }
    /// The display's input.
    var input: InputController { get }
    /// True once the replay must stop (a stop request, Ctrl-C).
    func stopped() -> Bool
    /// Where the step's target is now (found by label, image or place, healed by the model when allowed).
    func located() throws -> Point
    /// Waits until the window that was active when the step was recorded is active again, so keys go there.
    func activeWindowHolds() throws
    /// The modifier keys `text` names (`shift`, `ctrl+shift`).
    func modifiers(_ text: String?) throws -> [UInt]
    /// Asks the approval gate about the action at `point` typing `text`, then counts the step as acted: called just
    /// before its input is sent.
    func approve(at point: Point?, text: String?) throws
    /// Counts the step as acted without asking the gate (a scroll presses and types nothing).
    func acting()
    /// The replay's refusal of the step, for `reason`.
    func divergence(_ reason: String) -> any Error
}

/// A recorded step as a shell script writes it: its text as a shell word (a parameter as its variable), its point,
/// and its target's label with the `tap` options that find it again.
public struct ShellStep {
    /// The step.
    public let step: RecordedStep
    /// Its text, quoted, or `"$NAME"` for a parameter.
    public let text: String?
    /// Its point as `X Y`, or "".
    public let point: String
    /// Its target's label, quoted, when it has one.
    public let label: String?
    /// ` --role …`, ` --window …` and ` --nth …` for `tap`, as the target needs them.
    public let selector: String

    /// The step as the export writes it.
    public init(_ step: RecordedStep) {
        self.step = step
        text = step.parameter.map { "\"$\($0.uppercased())\"" } ?? step.text.map(Self.quoted)
        let labelled = step.target.flatMap { $0.label.isEmpty ? nil : $0 }
        let window = labelled?.windowTitle.map { " --window \(Self.quoted($0))" } ?? ""
        let nth = (labelled?.nth ?? 1) > 1 ? " --nth \(labelled?.nth ?? 1)" : ""
        let role =
            labelled.map { ["text", "image", ""].contains($0.role) ? "" : " --role \(Self.quoted($0.role))" } ?? ""
        point = step.x.flatMap { x in step.y.map { "\(x) \($0)" } } ?? ""
        label = labelled.map { Self.quoted($0.label) }
        selector = role + window + nth
    }

    /// `s` as one single-quoted shell word.
    public static func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

/// How one recorded action is done again.
public protocol ActionPlayback: Sendable {
    /// Sends the step again through `replay`; throws its divergence when it cannot be done safely.
    func replay(_ step: RecordedStep, on replay: any StepReplaying) throws
    /// The step as lines of a shell script of xclaw commands.
    func shell(_ step: ShellStep) -> [String]
}

extension ActionPlayback {
    /// By default a replay refuses the step: nothing says how to find and do it without the model.
    public func replay(_ step: RecordedStep, on replay: any StepReplaying) throws {
        throw replay.divergence("\(step.tool) \(step.action) cannot be replayed without the model yet")
    }

    /// By default the script says the step was left out.
    public func shell(_ step: ShellStep) -> [String] {
        ["# not replayable by a command: \(step.step.tool) \(step.step.action)"]
    }
}

/// An action nothing can do again without the model (a held key, a launch, an unknown name).
public struct NoPlayback: ActionPlayback {
    /// The refusal.
    public init() {}
}

/// A click on the step's target, found again (a script: `tap` by label, else `click` at the point).
public struct ClickPlayback: ActionPlayback {
    /// The button.
    public var button: MouseButton
    /// 1, 2 (double) or 3 (triple).
    public var count: Int

    /// A click of `button`, `count` times.
    public init(button: MouseButton = .left, count: Int = 1) { (self.button, self.count) = (button, count) }

    /// Finds the target, holds the recorded modifiers, asks the gate, clicks.
    public func replay(_ step: RecordedStep, on replay: any StepReplaying) throws {
        let point = try replay.located()
        let held = try replay.modifiers(step.modifiers)
        try replay.approve(at: point, text: nil)
        try replay.input.click(at: point, button: button, count: count, modifiers: held)
    }

    /// `tap` by label when the target has one, else `click` at the recorded point.
    public func shell(_ s: ShellStep) -> [String] {
        let button = button == .right ? " --button right" : button == .middle ? " --button middle" : ""
        let with = s.step.modifiers.map { " --with \(ShellStep.quoted($0))" } ?? ""
        if let label = s.label {
            return ["$xclaw tap\(s.selector)\(button)\(count == 2 ? " --double" : "")\(with) --timeout 10 -- \(label)"]
        }
        let times = count == 2 ? " --count 2" : count == 3 ? " --count 3" : ""
        return ["$xclaw click \(s.point)\(button)\(times)\(with)"]
    }
}

/// Text typed into the active window, or into the field the run named (clicked first), and Return after it when
/// `submit`.
public struct TypePlayback: ActionPlayback {
    /// Whether Return follows the text.
    public var submit: Bool
    /// Whether a script writes it (`type_text`, a name only older records carry, never was).
    public var exported: Bool

    /// Typing, submitted or not.
    public init(submit: Bool = false, exported: Bool = true) { (self.submit, self.exported) = (submit, exported) }

    /// Clicks the named field or checks the active window, asks the gate, types.
    public func replay(_ step: RecordedStep, on replay: any StepReplaying) throws {
        // Typed into a field named by the run (`type_text into:`): that field is found and clicked first.
        var field: Point?
        if step.focus == true, step.target != nil {
            field = try replay.located()
        } else {
            try replay.activeWindowHolds()
        }
        try replay.approve(at: field, text: replay.text)
        if let field { try replay.input.click(at: field) }
        try replay.input.keyboard.type(replay.text ?? "", interrupted: replay.stopped)
        if submit, !replay.stopped() { try replay.input.keyboard.press([try KeyCombo.parse("Return")]) }
    }

    /// `type`, after a `tap` on the field the run named, and `key Return` when submitted.
    public func shell(_ s: ShellStep) -> [String] {
        guard exported else { return ["# not replayable by a command: \(s.step.tool) \(s.step.action)"] }
        var lines: [String] = []
        // Typed into a field the run named: it is tapped first, as the run focused it.
        if s.step.focus == true, let label = s.label {
            lines.append("$xclaw tap\(s.selector) --timeout 10 -- \(label)")
        }
        lines.append("$xclaw type -- \(s.text ?? "''")")
        if submit { lines.append("$xclaw key Return") }
        return lines
    }
}

/// Key combinations pressed into the active window (the text: `ctrl+s Return`).
public struct KeysPlayback: ActionPlayback {
    /// Keys.
    public init() {}

    /// Checks the active window, asks the gate, presses.
    public func replay(_ step: RecordedStep, on replay: any StepReplaying) throws {
        try replay.activeWindowHolds()
        let combos = try (step.text ?? "").split(separator: " ").map { try KeyCombo.parse(String($0)) }
        try replay.approve(at: nil, text: step.text)
        try replay.input.keyboard.press(combos)
    }

    /// `key` with each combination.
    public func shell(_ s: ShellStep) -> [String] {
        [
            "$xclaw key -- "
                + (s.step.text ?? "").split(separator: " ").map { ShellStep.quoted(String($0)) }.joined(separator: " ")
        ]
    }
}

/// Wheel clicks (the text: `down 3`, or `down 3 with ctrl`, a zoom), on the target found again when it had one.
public struct ScrollPlayback: ActionPlayback {
    /// A scroll.
    public init() {}

    /// Reads direction, amount and modifiers, finds the target, scrolls (ungated: a scroll presses nothing).
    public func replay(_ step: RecordedStep, on replay: any StepReplaying) throws {
        let words = (step.text ?? "down 1").split(separator: " ").map(String.init)
        guard let direction = words.first.flatMap(ScrollDirection.init(rawValue:)) else {
            throw replay.divergence("the recorded scroll \(step.text ?? "") names no direction")
        }
        let amount = words.count > 1 ? Int(words[1]) ?? 1 : 1
        let held = try replay.modifiers(words.count > 3 && words[2] == "with" ? words[3] : nil)
        let point = step.target == nil ? nil : try replay.located()
        replay.acting()
        try replay.input.scroll(direction, amount: amount, at: point, modifiers: held)
    }

    /// `scroll` with its amount, at the recorded point.
    public func shell(_ s: ShellStep) -> [String] {
        let parts = (s.step.text ?? "down 1").split(separator: " ")
        let at = s.point.isEmpty ? "" : " --at \(s.point.replacingOccurrences(of: " ", with: ","))"
        return ["$xclaw scroll \(parts.first ?? "down") --amount \(parts.count > 1 ? parts[1] : "1")\(at)"]
    }
}

/// A drag from the recorded point to the one its text names (`to X,Y`): a script does it; a replay does not yet.
public struct DragPlayback: ActionPlayback {
    /// A drag.
    public init() {}

    /// `drag` between the two points.
    public func shell(_ s: ShellStep) -> [String] {
        let end = (s.step.text ?? "").dropFirst(3).replacingOccurrences(of: ",", with: " ")
        return ["$xclaw drag \(s.point) \(end)"]
    }
}

/// The pointer moved, or the left button pressed or released: a script does it; a replay does not yet.
public struct PointerPlayback: ActionPlayback {
    /// What the pointer did.
    public enum Motion: Sendable {
        /// Moved to the recorded point.
        case move
        /// The left button went down.
        case down
        /// The left button came up.
        case up
    }

    /// What the pointer did.
    public var motion: Motion

    /// A pointer action.
    public init(_ motion: Motion) { self.motion = motion }

    /// `move`, `mousedown` or `mouseup`.
    public func shell(_ s: ShellStep) -> [String] {
        switch motion {
        case .move: ["$xclaw move \(s.point)"]
        case .down: ["$xclaw mousedown"]
        case .up: ["$xclaw mouseup"]
        }
    }
}

import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawMessages
import XclawPerception
import XclawScreen

// What the tools of this module share: the gate-act-settle-log path of input actions, normalized coordinates, and
// turning lower layers' errors into messages the model can act on.

/// Milliseconds since `start`.
func millisecondsSince(_ start: ContinuousClock.Instant) -> Double {
    (ContinuousClock.now - start).milliseconds
}

/// How an input action ended when it did not throw.
enum InputOutcome: Sendable {
    /// Not performed (dry run, or the user declined); the text says so for the model.
    case skipped(String)
    /// Performed; the screen settled (or timed out settling) afterwards; nil inside a batch, which settles once at
    /// its end. `secret`: the text went into a password field (the tool's result says so: `SecretText`).
    case done(ms: Double, settle: SettleResult?, screenshot: Screenshot?, secret: Bool)
}

extension ScreenSession {
    /// The one path every input action takes: ask `context.mayAct` first (nothing touches the display under
    /// `--dry-run` or when the user declines), act under the session lock, settle, log the record with its result
    /// and time. `screenshot` also encodes the settled frame for the model (no extra capture).
    /// With an approval gate, `subject` says what the action acts on; without one, the control under the action's
    /// point (or, for typing, the focused field) is looked up on a fresh snapshot.
    /// The frame the action acts on is kept for the run's report (`ToolContext.frames`), whatever the outcome: done,
    /// skipped (a dry run shows what it would have acted on) or failed.
    func runInput(
        _ record: ActionRecord, describe: String, context: ToolContext, screenshot: Bool = false,
        settle: Bool = true, subject: ActionSubject? = nil, act: @escaping @Sendable (ScreenSession) throws -> Void
    ) async throws -> InputOutcome {
        let frame = PendingFrame()
        do {
            let outcome = try await runInput(
                record, describe: describe, context: context, screenshot: screenshot, settle: settle,
                subject: subject, frame: frame, act: act)
            frame.keep(context)
            return outcome
        } catch {
            frame.keep(context)
            throw error
        }
    }

    /// `runInput`'s steps; `frame` is taken from the look before the action (or a capture of its own when there is
    /// none).
    private func runInput(
        _ record: ActionRecord, describe: String, context: ToolContext, screenshot: Bool, settle: Bool,
        subject: ActionSubject?, frame: PendingFrame, act: @escaping @Sendable (ScreenSession) throws -> Void
    ) async throws -> InputOutcome {
        var subject = subject
        let typing = typingActions.contains(record.action) || record.tool == TypeTextTool.toolName
        // The description with the typed text masked: what is said wherever the field is a password or unknown.
        let hidden = SecretText.hiding(
            record.text ?? "", in: describe, spellings: [quoted(record.text ?? "", limit: .max)])
        let gating = context.gate != nil && subject == nil
        // One look before the action serves the gate (what it would act on), the recording (its anchors) and the
        // report (the frame it acted on).
        var before: (snapshot: Snapshot, patch: (png: String, origin: Point)?, pointer: Point?)?
        // A dry run does nothing, so there is nothing to record.
        let recording = context.recordStep != nil && !context.dryRun
        let framing = context.callID.map { context.frames?.wants(call: $0) == true } ?? false
        if gating || recording {
            let looked = ContinuousClock.now
            do {
                before = try await perform { session in
                    let (snapshot, seen) = try session.framedSnapshot()
                    if framing { frame.start(seen, session: session) }
                    let pointer = try? session.input.cursorPosition()
                    let patch = recording ? session.patch(around: record, pointer: pointer) : nil
                    return (snapshot, patch, pointer)
                }
                if gating, let before {
                    subject = try await perform { session in try session.gateSubject(for: record, in: before.snapshot) }
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch  where gating {
                // A lost display ends the run at once (exit 3), as it does everywhere else: the model could only try
                // again and fail again. The gate fails closed otherwise: an action whose control cannot be read is
                // not done.
                let fatal = (modelError(error) as? ToolError).flatMap { $0.endsRun != nil ? $0 : nil }
                // Typed text is masked, since its field could not be read.
                let what = typing ? hidden : describe
                let thrown =
                    fatal.map {
                        ToolError(
                            $0.message + (typing ? "; nothing was typed" + SecretText.resultNote : ""),
                            endsRun: $0.endsRun)
                    }
                    ?? ToolError(
                        "the approval gate could not read what \(what) would act on (\(modelError(error))); "
                            + "nothing was done: take a screenshot and try again")
                // Logged here, once, with its point and time (the runner adds a bare record only for what a tool
                // did not log).
                var failed = record
                failed.result = "error: \(thrown.message)"
                failed.ms = millisecondsSince(looked)
                if typing, let text = failed.text { failed.text = SecretText.masked(text.count) }
                context.log(failed)
                throw thrown
            } catch {
                before = nil  // a recording without anchors is still a recording
            }
        }
        // No look was taken (no gate, no recording): the frame alone, one capture.
        if framing && !frame.started, let seen = try? await perform({ try $0.capturer.capture() }) {
            frame.start(seen, session: self)
        }
        // Text for a password field is masked in every record of it (the log, the store's steps, the web view);
        // without a gate or a recording its field is looked up here, for typing only (a look changes nothing, so a
        // dry run looks too).
        var secret = false
        if typing {
            if let subject {
                secret = subject.intoPassword
            } else if let before {
                secret = GateSubject.of(record, in: before.snapshot, pointer: before.pointer)?.intoPassword == true
            } else if let look = try? await perform({ session in
                (try session.snapshot(), try? session.input.cursorPosition())
            }) {
                secret = GateSubject.of(record, in: look.0, pointer: look.1)?.intoPassword == true
            }
        }
        // What every record of the action shows: the typed text masked when it went into a password field.
        var shown = record
        if secret, let text = record.text { shown.text = SecretText.masked(text.count) }
        let said = secret ? hidden : describe
        // A skipped password call says so, which marks the call for the views that mask it.
        let unsaid = secret ? "; nothing was typed" + SecretText.resultNote : ""
        switch await context.permit(shown, describe: said, subject: subject) {
        case .go: break
        case .dryRun: return .skipped("dry run: would \(said)")
        case .declined:
            return .skipped(
                "the user declined \(said); nothing was done. Do not repeat it: ask the user or try another way.")
        case .denied(let why): return .skipped(why + unsaid)
        }
        // The run may have been cancelled while the user was being asked: then act on nothing.
        if context.isCancelled() { throw CancellationError() }
        // The display's input turn across processes (MCP calls, agents elsewhere), for the action itself only: an
        // approval wait or a model's reply must not hold other actors up.
        let turn = try await DisplayInputLock.acquire(connection.name)
        defer { turn.release() }
        let start = ContinuousClock.now
        do {
            let (settled, shot) = try await perform { session -> (SettleResult?, Screenshot?) in
                try act(session)
                guard settle else { return (nil, nil) }
                let settled = try session.settle()
                return (settled, screenshot ? try session.encodeForModel(settled.frame) : nil)
            }
            turn.release()  // the recording's look after the action needs no turn
            var done = shown
            done.result = "ok"
            done.ms = millisecondsSince(start)
            context.log(done)
            if let keep = context.recordStep {
                let after = try? await perform { try $0.snapshot() }
                var step = StepRecorder.step(
                    done, before: before?.snapshot, patch: before?.patch, pointer: before?.pointer, after: after,
                    changed: settled?.changed ?? true)
                if secret {
                    // Never kept: a replay must be given it (`--param PASSWORD=…`).
                    (step.text, step.parameter) = (nil, "password")
                }
                keep(step)
            }
            return .done(ms: done.ms ?? 0, settle: settled, screenshot: shot, secret: secret)
        } catch {
            var reported = modelError(error)
            if secret, let error = reported as? ToolError {
                reported = ToolError(
                    error.message + "; the text was being typed" + SecretText.resultNote, endsRun: error.endsRun)
            }
            var failed = shown
            failed.result = "error: \(reported)"
            failed.ms = millisecondsSince(start)
            context.log(failed)
            throw reported
        }
    }
}

/// The frame an input action acts on, for the run's report: taken before the action, handed to the run's sink
/// when the action ended (whatever the outcome), which encodes it off the action's path.
final class PendingFrame: Sendable {
    private let image = Mutex<(@Sendable () throws -> (mediaType: String, data: Data))?>(nil)

    /// Whether a frame was taken.
    var started: Bool { image.withLock { $0 != nil } }

    /// Takes `frame` (the first one given: the screen before the action), with what the session says of its
    /// encoding now.
    func start(_ frame: Frame, session: ScreenSession) {
        guard !started else { return }
        let encode = session.reportImage(frame)
        image.withLock { if $0 == nil { $0 = encode } }
    }

    /// Hands the frame to the run's sink, under the call's id.
    func keep(_ context: ToolContext) {
        guard let encode = image.withLock({ $0 }), let call = context.callID, let sink = context.frames else { return }
        sink.keep(call: call, image: encode)
    }
}

/// The actions that press what is under their point (a scroll or a hover presses nothing).
private let pressingActions: Set<RecordedAction> = [
    .leftClick, .rightClick, .middleClick, .doubleClick, .tripleClick, .leftMouseDown, .leftMouseUp, .tap, .doubleTap,
    .press, .pressButton, .click,
]
/// The tools whose every action presses what is under its point.
private let pressingTools: Set<String> = [
    TapElementTool.toolName, FindAndTapTool.toolName, TapXYTool.toolName, PressButtonTool.toolName,
]
/// Answers whose meaning is the question's: the gate reads the dialog they answer.
private let genericAnswers: Set<String> = [
    "ok", "okay", "yes", "continue", "confirm", "apply", "proceed", "done", "next", "go", "sure", "accept",
]
/// Whether a label is only a generic answer ("OK", "Yes"), which the gate classifies by its dialog.
func isGenericAnswer(_ label: String) -> Bool {
    let words = ApprovalPolicy.words(label)
    return !words.isEmpty && words.allSatisfy(genericAnswers.contains)
}

/// The actions that drag from their point to the one their text names ("to X,Y").
private let draggingActions: Set<RecordedAction> = [.leftClickDrag, .swipe]
/// The actions that type text.
private let typingActions: Set<RecordedAction> = [.type, .typeText, .typeSubmit]
/// The actions that press keys (their text is the key combinations).
private let keyActions: Set<RecordedAction> = [.key, .holdKey, .pressButton]

extension ScreenSession {
    /// What an action acts on, for the approval gate: the control under its point (the pointer's when it names
    /// none), both ends of a drag, or for typing and keys the focused field (else the field under the pointer, where
    /// the model clicked to focus it). Nil only for what presses and types nothing (a scroll, a hover, a launch by
    /// name). Runs a snapshot, so only runs with a gate call it.
    func gateSubject(for record: ActionRecord, in snapshot: Snapshot) throws -> ActionSubject? {
        GateSubject.of(record, in: snapshot, pointer: try? input.cursorPosition())
    }
}

/// What an action acts on, for the approval gate, read off a snapshot: an agent's tools and a replay classify the
/// same way.
public enum GateSubject {
    /// The control under the action's point (`pointer` when it names none), both ends of a drag, or for typing and
    /// keys the focused field (else the field under the pointer, where a click focused it). Nil only for what presses
    /// and types nothing (a scroll, a hover, a launch by name).
    public static func of(_ record: ActionRecord, in snapshot: Snapshot, pointer: Point?) -> ActionSubject? {
        let keys = keyActions.contains(record.action) || record.tool == PressButtonTool.toolName
        let typing = typingActions.contains(record.action) || record.tool == TypeTextTool.toolName
        let dragging = draggingActions.contains(record.action)
        let pressing = !keys && (pressingActions.contains(record.action) || pressingTools.contains(record.tool))
        guard pressing || typing || dragging || keys else { return nil }
        func under(_ p: Point) -> Element? { snapshot.element(at: p) }
        if pressing || dragging {
            var points = [record.x.flatMap { x in record.y.map { Point(x: x, y: $0) } } ?? pointer].compactMap { $0 }
            if dragging, let text = record.text, let end = try? Point(parsing: String(text.dropFirst(3))) {
                points.append(end)
            }
            let found = points.compactMap(under)
            guard !found.isEmpty else { return ActionSubject() }
            // A drag is what it drops onto as much as what it picks up ("file.txt" onto "Trash").
            let interactive = found.first { $0.role.isInteractive } ?? found[0]
            var label = found.map(\.label).joined(separator: " ")
            // "OK" says nothing by itself: in a dialog it does what the dialog asks ("Delete 3 files?").
            if isGenericAnswer(label), let window = interactive.windowID {
                let inWindow = snapshot.elements.filter { $0.windowID == window }
                if inWindow.count <= 40 {
                    label +=
                        " "
                        + inWindow.filter { $0.role == .text || $0.role == .window }.map(\.label)
                        .joined(separator: " ")
                }
            }
            return ActionSubject(label: label, role: interactive.role.rawValue, toolkitRole: interactive.toolkitRole)
        }
        // A field named by the action (`type_text into:` records its point) is where the text goes.
        let named = record.x.flatMap { x in record.y.map { Point(x: x, y: $0) } }.flatMap(under)
        let focused =
            named ?? snapshot.elements.first { $0.states?.contains("focused") == true && $0.role == .field }
            ?? pointer.flatMap(under)
        let password =
            focused.map { e in
                e.toolkitRole == "password text"
                    || ApprovalPolicy.words(e.label).contains(where: { ["password", "passphrase", "pin"].contains($0) })
                    || (!(e.value ?? e.label).isEmpty && (e.value ?? e.label).allSatisfy { "•●*∗·".contains($0) })
            } ?? false
        // The window typed into: the focused field's, else the active one (a terminal has no field).
        let window = snapshot.elements.first { w in
            w.role == .window && (focused.map { w.windowID == $0.windowID } ?? (w.active == true))
        }
        let terminal =
            focused?.toolkitRole == "terminal"
            || ["xterm", "rxvt", "terminal", "konsole", "kitty", "alacritty", "tilix"].contains { name in
                (window?.className ?? "").lowercased().contains(name)
            }
        let typed = (record.text ?? "") + (record.action == .typeSubmit ? "\n" : "")
        return ActionSubject(
            label: focused?.label, role: focused?.role.rawValue, toolkitRole: focused?.toolkitRole,
            typed: typed, intoPassword: password, intoTerminal: terminal, keys: keys)
    }
}

/// A short note on how settling went, for result texts ("" when it settled normally).
func settleNote(_ settle: SettleResult?) -> String {
    guard let settle else { return "" }
    return settle.timedOut ? " (the screen was still changing after \(Int(settle.elapsedMs)) ms)" : ""
}

/// Turns an error of a lower layer into what the model should read: a `ToolError` whose message says what to do
/// differently. Cancellation passes through (the registry reports it as an interruption).
func modelError(_ error: any Error) -> any Error {
    if let e = error as? ClassifiedError, e.endsRun { return ToolError(e.description, endsRun: e.exitStatus) }
    switch error {
    case let e as ToolError: return e
    case is CancellationError: return error
    case let e as ScreenError:
        switch e {
        case .untypeable(let what):
            return ToolError(
                "cannot type \(what): only printable characters, tab and newline can be typed; "
                    + "send other keys as key names (e.g. Escape, ctrl+c)")
        case .unknownKey(let name, let suggestion):
            let hint = suggestion.map { " Did you mean \"\($0)\"?" } ?? ""
            return ToolError(
                "unknown key name \"\(name)\".\(hint) Use X keysym names as in xdotool: Return, Tab, "
                    + "Escape, BackSpace, Delete, Up, F5, KP_0, ctrl+s, alt+Tab, super; several combos separated by spaces."
            )
        case .outOfBounds(let x, let y, let w, let h):
            return ToolError(
                "point (\(x), \(y)) is outside the screen (\(w)x\(h)); the screen may have been "
                    + "resized: take a new screenshot")
        default:
            return ToolError(e.description)
        }
    case let e as PerceptionError:
        switch e {
        case .notFound(let label, let closest):
            let hint = closest.isEmpty ? "no similar text is on screen" : "closest: " + closest.joined(separator: ", ")
            return ToolError(
                "nothing on screen matches \"\(label)\" (\(hint)). Check the spelling against "
                    + "screen_snapshot or read_screen_text, use a ref from screen_snapshot, or take a screenshot.")
        case .ambiguous(let label, let candidates):
            return ToolError(
                "\"\(label)\" matches \(candidates.count) elements equally; pass nth (1-based, in "
                    + "reading order) or role, or the ref of the one you mean:\n  "
                    + candidates.joined(separator: "\n  "))
        case .staleRef(let ref):
            return ToolError("\(ref) is not on screen any more; call screen_snapshot again and use a current ref")
        case .timedOut(let condition, let last):
            return ToolError("timed out waiting for \(condition); last observed: \(last)")
        default:
            return ToolError(e.description)
        }
    default:
        return ToolError("\(error)")
    }
}

/// The screen pixel a normalized (0–1) position names: `round(x·(W−1)), round(y·(H−1))`, so 0 and 1 are the first
/// and last pixels.
func screenPoint(x: Double, y: Double, screen: Size) -> Point {
    func map(_ v: Double, _ size: Int) -> Int { max(0, min(size - 1, Int((v * Double(size - 1)).rounded()))) }
    return Point(x: map(x, screen.width), y: map(y, screen.height))
}

/// A screen point as normalized coordinates, the way custom tools take them back ("x=0.512 y=0.233").
func normalizedText(_ p: Point, screen: Size) -> String {
    func n(_ v: Int, _ size: Int) -> String { String(format: "%.3f", size > 1 ? Double(v) / Double(size - 1) : 0) }
    return "x=\(n(p.x, screen.width)) y=\(n(p.y, screen.height))"
}

/// Where a tap landed, in screen pixels with the screen's size and, when known, the box it aimed at, so a run report
/// can draw both on the screenshot: "(screen 983,251; box 950,240 66x22 of 1920x1080)".
func tapPlacement(_ p: Point, box: Rect?, screen: Size) -> String {
    let box = box.map { "; box \($0.x),\($0.y) \($0.width)x\($0.height)" } ?? ""
    return "(screen \(p.x),\(p.y)\(box) of \(screen.width)x\(screen.height))"
}

/// A number in 0–1 from `input[key]`, nil when absent.
func fraction(_ input: JSONValue, _ key: String) throws -> Double? {
    guard let value = input[key] else { return nil }
    guard let v = value.double, v.isFinite, (0...1).contains(v) else {
        throw ToolError(
            "\(key) must be a number from 0 to 1 (a fraction of the screen: 0 = left/top edge, "
                + "1 = right/bottom edge), got \(value.jsonText)")
    }
    return v
}

/// A whole number in `range` from `input[key]`, `fallback` when absent; anything else (a fraction, a string, out of
/// range) is refused with the range, so the model knows what to send.
func integer(_ input: JSONValue, _ key: String, in range: ClosedRange<Int>, default fallback: Int) throws -> Int {
    guard let value = input[key] else { return fallback }
    guard let v = value.int, range.contains(v) else {
        throw ToolError(
            "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \(value.jsonText)")
    }
    return v
}

/// The JSON schema of a whole number in `range`.
func integerSchema(_ range: ClosedRange<Int>, _ what: String) -> JSONValue {
    [
        "type": "integer", "minimum": .number(Double(range.lowerBound)), "maximum": .number(Double(range.upperBound)),
        "description": .string(what),
    ]
}

/// The JSON schema of a normalized coordinate.
func fractionSchema(_ what: String) -> JSONValue {
    ["type": "number", "minimum": 0, "maximum": 1, "description": .string(what)]
}

/// The JSON schema of a normalized region.
let regionSchema: JSONValue = [
    "type": "object",
    "description": .string(
        "A part of the screen in fractions of its size (0–1): x,y = top-left corner, "
            + "width,height = size. Omit for the whole screen."),
    "required": ["x", "y", "width", "height"],
    "properties": [
        "x": fractionSchema("Left edge, 0–1."), "y": fractionSchema("Top edge, 0–1."),
        "width": fractionSchema("Width, 0–1."), "height": fractionSchema("Height, 0–1."),
    ],
]

/// The screen rectangle a normalized region names (nil when absent), clipped to the screen.
func screenRegion(_ value: JSONValue?, screen: Size) throws -> Rect? {
    guard let value else { return nil }
    guard let x = try fraction(value, "x"), let y = try fraction(value, "y"), let w = try fraction(value, "width"),
        let h = try fraction(value, "height")
    else {
        throw ToolError("region needs x, y, width and height, each a fraction of the screen from 0 to 1")
    }
    guard w > 0, h > 0, x + w <= 1.0001, y + h <= 1.0001 else {
        throw ToolError(
            "region must have a positive width and height and lie on the screen "
                + "(x + width ≤ 1, y + height ≤ 1), got x=\(x) y=\(y) width=\(w) height=\(h)")
    }
    let x0 = Int((x * Double(screen.width)).rounded(.down)), y0 = Int((y * Double(screen.height)).rounded(.down))
    let x1 = Int(((x + w) * Double(screen.width)).rounded(.up)),
        y1 = Int(((y + h) * Double(screen.height)).rounded(.up))
    let rect = Rect(x: x0, y: y0, width: max(1, x1 - x0), height: max(1, y1 - y0)).intersection(Rect(size: screen))
    guard !rect.isEmpty else { throw ToolError("region is empty on the \(screen) screen; make it larger") }
    return rect
}

/// The mouse button `input["button"]` names (default left).
func mouseButton(_ input: JSONValue) throws -> MouseButton {
    guard let value = input["button"] else { return .left }
    guard let name = value.string, let button = MouseButton(rawValue: name) else {
        throw ToolError("button must be \"left\", \"right\" or \"middle\", got \(value.jsonText)")
    }
    return button
}

/// Key combinations in xdotool syntax, several separated by spaces ("ctrl+a Delete"); all parsed before any is
/// pressed, so a typo in the second sends nothing.
func keyCombos(_ text: String) throws -> [KeyCombo] {
    let parts = text.split(whereSeparator: \.isWhitespace).map(String.init)
    guard !parts.isEmpty else {
        throw ToolError("no key given: name keys in xdotool syntax, e.g. \"Return\", \"ctrl+s\", \"alt+Tab\"")
    }
    do { return try parts.map(KeyCombo.parse) } catch { throw modelError(error) }
}

/// Text for prompts and logs: quoted, control characters escaped, long text shortened.
func quoted(_ text: String, limit: Int = 60) -> String { UntrustedText.quoted(text, limit: limit - 1) }

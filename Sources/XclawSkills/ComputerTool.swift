import Foundation
import XclawAgent
import XclawMessages
import XclawPerception
import XclawScreen

/// Which built-in computer-use tool the model was trained on; the model decides, not us (see the model catalog).
public enum ComputerToolVersion: String, Sendable, CaseIterable, Codable {
    /// Claude Sonnet 3.7, Sonnet 4, Opus 4/4.1, Sonnet 4.5, Haiku 4.5.
    case v20250124 = "computer_20250124"
    /// Opus 4.5, Opus 4.6, Sonnet 4.6 and newer: adds `zoom`.
    case v20251124 = "computer_20251124"

    /// The `anthropic-beta` header the tool needs.
    public var betaHeader: String {
        switch self {
        case .v20250124: return "computer-use-2025-01-24"
        case .v20251124: return "computer-use-2025-11-24"
        }
    }

    /// Whether the version has the `zoom` action (and `enable_zoom` in its definition).
    public var supportsZoom: Bool { self == .v20251124 }
}

/// The computer tool's actions, as the model names them (the raw values), in the order error messages list them.
public enum ComputerAction: String, CaseIterable, Sendable, CustomStringConvertible {
    // Each case is the API's name; the raw values are how the model spells them.
    case screenshot
    case cursorPosition = "cursor_position"
    case mouseMove = "mouse_move"
    case leftClick = "left_click"
    case rightClick = "right_click"
    case middleClick = "middle_click"
    case doubleClick = "double_click"
    case tripleClick = "triple_click"
    case leftClickDrag = "left_click_drag"
    case leftMouseDown = "left_mouse_down"
    case leftMouseUp = "left_mouse_up"
    case key
    case holdKey = "hold_key"
    case `type`, scroll, wait, zoom

    /// The name the model uses, so messages read as the API's.
    public var description: String { rawValue }
}

/// Claude's built-in computer-use tool (`computer_20250124` / `computer_20251124`) over the session's screen. The
/// model sees screenshots downscaled exactly to `geometry.model` and answers in those pixels: every coordinate is
/// checked against the model's size first, then mapped to the screen with `geometry.toScreen`, so a click lands on
/// the pixel the model pointed at.
public struct ComputerTool: AgentTool {
    /// The screen this tool drives.
    public let session: ScreenSession
    /// The tool type advertised to the model.
    public let version: ComputerToolVersion
    /// False when the tool is declared only so Anthropic's prompt-injection classifiers run (they run only for
    /// requests that declare it): then it looks (screenshot, zoom, cursor position, wait) and never acts.
    public let inputAllowed: Bool

    /// Inside `computer_batch`: input actions neither settle nor take a screenshot (the batch does both once, at
    /// its end).
    var batched = false

    /// Creates the tool for a session and the version the model expects.
    public init(session: ScreenSession, version: ComputerToolVersion = .v20250124, inputAllowed: Bool = true) {
        self.session = session
        self.version = version
        self.inputAllowed = inputAllowed
    }

    /// Shown in logs and listings only; the API takes the built-in definition, whose schema the model knows.
    public var description: String {
        "Claude's computer-use tool (\(version.rawValue)): screenshots, mouse and keyboard in screenshot pixels."
    }

    /// Permissive on purpose: the registry's schema check must not reject anything before `execute` gives its
    /// own, action-specific messages.
    public var inputSchema: JSONValue {
        ["type": "object", "required": ["action"], "properties": ["action": ["type": "string"]]]
    }

    /// The beta header of this tool version: a request offering the tool must carry it.
    public var betas: [String] { [version.betaHeader] }

    /// The built-in definition: type, name, the model's display size and, when known, the X display number.
    public var definition: JSONValue {
        let model = session.geometry.model
        var d: [String: JSONValue] = [
            "type": .string(version.rawValue), "name": "computer",
            "display_width_px": .int(model.width), "display_height_px": .int(model.height),
        ]
        if let n = session.displayNumber { d["display_number"] = .int(n) }
        if version.supportsZoom { d["enable_zoom"] = true }
        return .object(d)
    }

    /// Every action of the version, in the order the error message lists them.
    public var actions: [ComputerAction] {
        ComputerAction.allCases.filter { $0 != .zoom || version.supportsZoom }
    }

    /// Runs one action; invalid input is a `ToolError` that names the valid values.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        guard let name = input["action"]?.string else {
            throw ToolError("action is required: one of \(actions.map(\.rawValue).joined(separator: ", "))")
        }
        let geometry = session.geometry
        do {
            guard let action = ComputerAction(rawValue: name) else {  // zoom says itself which version it needs
                throw ToolError(
                    "Unknown action \"\(name)\". Actions: \(actions.map(\.rawValue).joined(separator: ", ")).")
            }
            switch action {
            case .screenshot:
                let shot = try await session.perform { try $0.screenshot() }
                return ToolOutput(content: [shot.imageBlock])
            case .cursorPosition:
                let p = try await session.perform { try $0.input.cursorPosition() }
                let m = geometry.toModel(p)
                return .text("X=\(m.x),Y=\(m.y)")
            case .wait:
                return try await wait(input, context: context)
            case .zoom:
                return try await zoom(input, geometry: geometry)
            default:
                guard inputAllowed else {
                    throw ToolError(
                        "this agent may only look through the computer tool (screenshot, zoom, cursor_position, "
                            + "wait): act with its other tools instead")
                }
                return try await act(action, input, geometry: geometry, context: context)
            }
        } catch {
            throw modelError(error)
        }
    }

    // MARK: - Input actions

    /// Validates everything, then gates, acts, settles and answers with a line and the settled screenshot.
    private func act(
        _ action: ComputerAction, _ input: JSONValue, geometry g: ScreenGeometry,
        context: ToolContext
    ) async throws -> ToolOutput {
        var record = ActionRecord(tool: name, action: RecordedAction(rawValue: action.rawValue), result: "pending")
        let describe: String
        let done: String
        let perform: @Sendable (ScreenSession) throws -> Void
        let cancelled = context.isCancelled

        func at(_ m: Point) -> (Point, String) {
            let s = g.toScreen(m)
            return (s, "(\(s.x), \(s.y)) [model (\(m.x), \(m.y))]")
        }

        switch action {
        case .mouseMove:
            let m = try coordinate(input, "coordinate", for: action, required: true, g) ?? Point(x: 0, y: 0)
            let (s, text) = at(m)
            (record.x, record.y) = (s.x, s.y)
            describe = "mouse_move to \(text)"
            done = "moved the pointer to (\(m.x), \(m.y))"
            perform = { try $0.input.move(to: s) }

        case .leftClick, .rightClick, .middleClick, .doubleClick, .tripleClick:
            let m = try coordinate(input, "coordinate", for: action, required: false, g)
            let mods = try modifiers(input)
            let button: MouseButton = action == .rightClick ? .right : action == .middleClick ? .middle : .left
            let count = action == .doubleClick ? 2 : action == .tripleClick ? 3 : 1
            let point = m.map { at($0) }
            (record.x, record.y) = (point?.0.x, point?.0.y)
            record.text = mods.text
            let with = mods.text.map { " holding \($0)" } ?? ""
            describe = "\(action) at \(point?.1 ?? "the pointer")\(with)"
            done = "\(action) at \(m.map { "(\($0.x), \($0.y))" } ?? "the pointer")\(with)"
            perform = { try $0.input.click(at: point?.0, button: button, count: count, modifiers: mods.syms) }

        case .leftClickDrag:
            let from = try coordinate(input, "start_coordinate", for: action, required: true, g) ?? Point(x: 0, y: 0)
            let to = try coordinate(input, "coordinate", for: action, required: true, g) ?? Point(x: 0, y: 0)
            let (s0, t0) = at(from), (s1, t1) = at(to)
            (record.x, record.y) = (s0.x, s0.y)
            record.text = "to \(s1.x),\(s1.y)"
            describe = "left_click_drag from \(t0) to \(t1)"
            done = "dragged from (\(from.x), \(from.y)) to (\(to.x), \(to.y))"
            perform = { session in
                try session.input.drag(
                    from: s0, to: s1, steps: 20, duration: .milliseconds(150),
                    interrupted: cancelled)
            }

        case .leftMouseDown, .leftMouseUp:
            let m = try coordinate(input, "coordinate", for: action, required: false, g)
            let point = m.map { at($0) }
            (record.x, record.y) = (point?.0.x, point?.0.y)
            describe = "\(action) at \(point?.1 ?? "the pointer")"
            done =
                "\(action == .leftMouseDown ? "pressed" : "released") the left button at "
                + (m.map { "(\($0.x), \($0.y))" } ?? "the pointer")
            let down = action == .leftMouseDown
            perform = { session in
                if down {
                    try session.input.buttonDown(.left, at: point?.0)
                } else {
                    try session.input.buttonUp(.left, at: point?.0)
                }
            }

        case .key:
            let text = try requiredText(input, for: action, example: "\"ctrl+s\" or \"Return\"")
            let combos = try keyCombos(text)
            record.text = text
            describe = "key \(quoted(text))"
            done = "pressed \(text)"
            perform = { try $0.input.keyboard.press(combos) }

        case .holdKey:
            let text = try requiredText(input, for: action, example: "\"shift\"")
            let combos = try keyCombos(text)
            let seconds = try duration(input, for: action)
            // Several names are held together: all but the last act as modifiers of the last.
            let syms = combos.flatMap { $0.modifiers + [$0.key] }
            let held: KeyCombo = {
                var combo = combos[0]
                combo.modifiers = Array(syms.dropLast())
                combo.key = syms[syms.count - 1]
                combo.text = text
                return combo
            }()
            record.text = text
            describe = "hold_key \(quoted(text)) for \(seconds) s"
            done = "held \(text) for \(seconds) s"
            perform = { session in
                try session.input.keyboard.hold(held, for: .milliseconds(Int(seconds * 1000)), interrupted: cancelled)
            }

        case .type:
            let text = try requiredText(input, for: action, example: "\"hello\\n\"")
            _ = try Keyboard.keysyms(for: text)  // refuse untypeable text before anything is sent
            record.text = text
            describe = "type \(quoted(text, limit: .max))"  // the whole text: --confirm must show all it types
            done = "typed \(text.count) characters"
            perform = { try $0.input.keyboard.type(text, interrupted: cancelled) }

        case .scroll:
            let m = try coordinate(input, "coordinate", for: action, required: false, g)
            guard let dirName = input["scroll_direction"]?.string, let direction = ScrollDirection(rawValue: dirName)
            else {
                throw ToolError("scroll_direction is required for scroll: \"up\", \"down\", \"left\" or \"right\"")
            }
            guard let amount = input["scroll_amount"]?.int, (0...1000).contains(amount) else {
                throw ToolError(
                    "scroll_amount is required for scroll: a whole number of wheel clicks from 0 to 1000"
                        + (input["scroll_amount"].map { ", got \($0.jsonText)" } ?? ""))
            }
            let mods = try modifiers(input)
            let point = m.map { at($0) }
            (record.x, record.y) = (point?.0.x, point?.0.y)
            record.text = "\(dirName) \(amount)" + (mods.text.map { " with \($0)" } ?? "")
            let with = mods.text.map { " holding \($0)" } ?? ""
            describe = "scroll \(dirName) \(amount) at \(point?.1 ?? "the pointer")\(with)"
            done = "scrolled \(dirName) \(amount) at \(m.map { "(\($0.x), \($0.y))" } ?? "the pointer")\(with)"
            perform = { session in
                if amount > 0 {
                    try session.input.scroll(direction, amount: amount, at: point?.0, modifiers: mods.syms)
                } else if let p = point?.0 {
                    try session.input.move(to: p)
                }
            }

        default:
            throw ToolError(
                "Unknown action \"\(action)\". Actions: \(actions.map(\.rawValue).joined(separator: ", ")).")
        }

        switch try await session.runInput(
            record, describe: describe, context: context, screenshot: !batched, settle: !batched,
            act: perform)
        {
        case .skipped(let text):
            return .text(text)
        case .done(_, let settle, let shot, let secret):
            var blocks: [ContentBlock] = [.text(done + (secret ? SecretText.resultNote : "") + settleNote(settle))]
            if let shot { blocks.append(shot.imageBlock) }
            return ToolOutput(content: blocks)
        }
    }

    // MARK: - wait and zoom

    /// Waits (cancellably, without blocking a thread), then answers with a fresh screenshot.
    private func wait(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let seconds = try duration(input, for: .wait)
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end {
            if context.isCancelled() { throw CancellationError() }
            try await Task.sleep(for: min(.milliseconds(50), end - ContinuousClock.now))
        }
        let shot = try await session.perform { try $0.screenshot() }
        return ToolOutput(content: [.text("waited \(seconds) s"), shot.imageBlock])
    }

    /// Crops the full-resolution frame at the screen area a model-space region covers, so the model sees detail the
    /// downscaled screenshot lost; downscaled only when the crop itself exceeds the model's image limits.
    private func zoom(_ input: JSONValue, geometry g: ScreenGeometry) async throws -> ToolOutput {
        guard version.supportsZoom else {
            throw ToolError(
                "zoom needs the computer_20251124 tool version (enable_zoom); this run uses "
                    + "\(version.rawValue). Take a screenshot instead.")
        }
        let W = g.model.width, H = g.model.height
        let usage =
            "region must be [x1, y1, x2, y2] in screenshot pixels with 0 ≤ x1 < x2 ≤ \(W) and "
            + "0 ≤ y1 < y2 ≤ \(H)"
        guard let values = input["region"]?.array, values.count == 4 else {
            throw ToolError(usage + (input["region"].map { ", got \($0.jsonText)" } ?? "; region is missing"))
        }
        let numbers = values.compactMap { v -> Int? in
            guard let d = v.double, d.isFinite, abs(d) < 1e9 else { return nil }
            return Int(d.rounded())
        }
        guard numbers.count == 4 else { throw ToolError(usage + ", got \(input["region"]?.jsonText ?? "")") }
        let (x1, y1, x2, y2) = (numbers[0], numbers[1], numbers[2], numbers[3])
        guard x1 >= 0, y1 >= 0, x1 < x2, y1 < y2, x2 <= W, y2 <= H else {
            throw ToolError(usage + ", got [\(x1), \(y1), \(x2), \(y2)] (the display is \(W)x\(H))")
        }
        let area = g.toScreen(Rect(x: x1, y: y1, width: x2 - x1, height: y2 - y1))
        let (png, size) = try await session.perform { session -> ([UInt8], Size) in
            let settled = try session.settle()
            let crop = try settled.frame.cropped(to: area)
            // The crop comes from the full-resolution frame; the model's own size limits still apply.
            let limits = ScreenGeometry(screen: crop.size, sizing: session.sizing)
            let image = limits.isIdentity ? crop : try crop.downscaled(to: limits.model)
            return (try PNG.encode(image), image.size)
        }
        let scaled = size == area.size ? "full resolution" : "scaled to fit"
        return ToolOutput(content: [
            .text(
                "zoom [\(x1), \(y1), \(x2), \(y2)]: screen area \(area.width)x\(area.height) at "
                    + "\(area.x),\(area.y), \(scaled) (\(size.width)x\(size.height)). Coordinates still refer to the "
                    + "full \(W)x\(H) screenshot, not to this image."),
            .image(mediaType: "image/png", base64: Data(png).base64EncodedString()),
        ])
    }

    // MARK: - Input parsing

    /// A model-space coordinate `[x, y]`, bounds-checked in the model's space (nil when optional and absent).
    private func coordinate(
        _ input: JSONValue, _ key: String, for action: ComputerAction, required: Bool,
        _ g: ScreenGeometry
    ) throws -> Point? {
        let W = g.model.width, H = g.model.height
        guard let value = input[key] else {
            if required {
                throw ToolError(
                    "\(key) is required for \(action): [x, y] in screenshot pixels, x 0–\(W - 1), "
                        + "y 0–\(H - 1)")
            }
            return nil
        }
        guard let pair = value.array, pair.count == 2, let x = pair[0].double, let y = pair[1].double,
            x.isFinite, y.isFinite
        else {
            throw ToolError("\(key) must be [x, y], two integers in screenshot pixels, got \(value.jsonText)")
        }
        guard abs(x) < 1e9, abs(y) < 1e9, g.modelContains(Point(x: Int(x.rounded()), y: Int(y.rounded()))) else {
            let shown = { (v: Double) in abs(v) < 1e9 ? String(Int(v.rounded())) : String(v) }
            throw ToolError(
                "Coordinates (\(shown(x)), \(shown(y))) are outside the display (\(W)x\(H)): x must be "
                    + "0–\(W - 1) and y 0–\(H - 1), in the pixels of the latest screenshot")
        }
        return Point(x: Int(x.rounded()), y: Int(y.rounded()))
    }

    /// Modifier keys held during a click or scroll (`text`: "shift", "ctrl+shift"); none when absent.
    private func modifiers(_ input: JSONValue) throws -> (syms: [UInt], text: String?) {
        guard let text = input["text"]?.string?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return ([], nil)
        }
        let names = text.split { $0 == "+" || $0.isWhitespace }.map(String.init)
        do {
            return (try names.map { try KeyNames.keysym(for: $0) }, text)
        } catch {
            throw ToolError(
                "text holds the modifier keys for a click or scroll, e.g. \"shift\" or \"ctrl+shift\"; "
                    + "\(modelError(error))")
        }
    }

    /// The non-empty `text` an action needs.
    private func requiredText(_ input: JSONValue, for action: ComputerAction, example: String) throws -> String {
        guard let text = input["text"]?.string, !text.isEmpty else {
            throw ToolError("text is required for \(action), e.g. \(example)")
        }
        return text
    }

    /// A `duration` in seconds, 0–100.
    private func duration(_ input: JSONValue, for action: ComputerAction) throws -> Double {
        guard let value = input["duration"]?.double, value.isFinite, (0...100).contains(value) else {
            throw ToolError(
                "duration is required for \(action): a number of seconds from 0 to 100"
                    + (input["duration"].map { ", got \($0.jsonText)" } ?? ""))
        }
        return value
    }
}

extension ComputerTool: RecordingTool {
    /// Always "computer": the name the model is trained to call.
    public static var toolName: String { "computer" }

    /// Clicks, drags, pointer moves, keys, typing and scrolls; a held key is not done again.
    public static var playbacks: [RecordedAction: any ActionPlayback] {
        [
            .leftClick: ClickPlayback(), .rightClick: ClickPlayback(button: .right),
            .middleClick: ClickPlayback(button: .middle), .doubleClick: ClickPlayback(count: 2),
            .tripleClick: ClickPlayback(count: 3), .leftClickDrag: DragPlayback(), .mouseMove: PointerPlayback(.move),
            .leftMouseDown: PointerPlayback(.down), .leftMouseUp: PointerPlayback(.up), .key: KeysPlayback(),
            .holdKey: NoPlayback(), .type: TypePlayback(), .scroll: ScrollPlayback(),
        ]
    }

    /// The clicks whose record's text is the modifier keys they held.
    static let clicks: Set<RecordedAction> = [.leftClick, .rightClick, .middleClick, .doubleClick, .tripleClick]

    /// A click's text is the modifier keys it held: a replay holds them again.
    public static func recorded(_ step: inout RecordedStep, from record: ActionRecord) {
        if clicks.contains(record.action) { (step.modifiers, step.text) = (record.text, nil) }
    }

    /// Screenshots, zooms, the pointer's position and waits only look.
    public static func acts(_ input: JSONValue) -> Bool {
        let looking: Set<ComputerAction> = [.screenshot, .zoom, .cursorPosition, .wait]
        return input["action"]?.string.flatMap(ComputerAction.init(rawValue:)).map { !looking.contains($0) } ?? false
    }

    /// Its coordinates are the scaled screenshot's own pixels; a click, press or move without one is at the pointer.
    public static func overlay(_ call: inout OverlayCall) -> OverlayAction {
        let action = call.text("action")
        let parsed = ComputerAction(rawValue: action)
        switch parsed {
        case .leftClick?, .rightClick?, .middleClick?, .doubleClick?, .tripleClick?, .leftMouseDown?, .leftMouseUp?,
            .mouseMove?:
            let point = call.coordinate("coordinate") ?? call.atPointer()
            if let point { call.move(point) }
            let held = call.input["text"]?.string.map { " holding \($0)" } ?? ""
            return OverlayAction(
                marks: point.map { [.click($0)] } ?? [],
                caption: action.replacingOccurrences(of: "_", with: " ") + held
                    + (call.coordinate("coordinate") == nil ? " at the pointer" : ""))
        case .leftClickDrag?:
            guard let from = call.coordinate("start_coordinate"), let to = call.coordinate("coordinate") else {
                return OverlayAction(marks: [], caption: "drag")
            }
            call.move(to)
            return OverlayAction(marks: [.drag(from: from, to: to)], caption: "drag")
        case .scroll?:
            let at = call.coordinate("coordinate")
            let direction = call.text("scroll_direction"), amount = call.input["scroll_amount"]?.int ?? 0
            return call.scrollOverlay(at: at, direction: direction, amount: amount)
        case .type?:
            return OverlayAction(marks: [], caption: "type " + OverlayCall.shown(call.text("text")))
        case .key?, .holdKey?:
            return OverlayAction(marks: [], caption: (parsed == .key ? "key " : "hold ") + call.text("text"))
        case .zoom?:
            guard let r = call.input["region"]?.array?.compactMap(\.double), r.count == 4 else {
                return OverlayAction(marks: [], caption: "zoom")
            }
            let a = call.fromImage(r[0], r[1]), b = call.fromImage(r[2], r[3])
            return OverlayAction(
                marks: [.box(x: a.x, y: a.y, width: b.x - a.x, height: b.y - a.y)], caption: "zoom")
        default:
            return OverlayAction(marks: [], caption: action.isEmpty ? "computer" : action)
        }
    }
}

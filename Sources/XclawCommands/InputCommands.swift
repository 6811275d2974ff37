import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen

extension MouseButton: ExpressibleByArgument {}
extension ScrollDirection: ExpressibleByArgument {}

/// The input controller for one command: a new one in-process, the display's own in the daemon.
private func input(_ options: DisplayOptions) throws -> InputController {
    try Hosting.current.input(options.display)
}

/// `xclaw move X Y`.
struct Move: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "move",
        abstract: "Move the pointer to X Y, by DX DY (--relative), or to X Y inside a window (--window).",
        discussion: """
            Examples:
              xclaw move 640 400
              xclaw move --relative -- -20 15  # 20 px left and 15 down from where it is
            """)
    @OptionGroup var target: DisplayOptions
    @Flag(help: "X Y are an offset from where the pointer is (may be negative).") var relative = false
    @Option(help: "X Y are relative to this window's content area (id, title or class).") var window: String?
    @OptionGroup var select: WindowSelection
    @Argument(parsing: .allUnrecognized, help: "X Y (negative ones allowed with --relative and --window).")
    var coordinates: [String] = []

    /// The two numbers; anything else is exit 2 before the pointer moves.
    func point() throws -> Point {
        let coordinates = self.coordinates.filter { $0 != "--" }
        if let unknown = coordinates.first(where: { $0.hasPrefix("--") }) {
            throw ValidationError("unknown option \(unknown)")
        }
        guard coordinates.count == 2 else { throw ValidationError("give X and Y, got \(coordinates.count) values") }
        let values = try coordinates.map { text -> Int in
            guard let value = Int(text), abs(value) <= Rect.coordinateLimit else {
                throw ValidationError("\"\(text)\" is not a coordinate (an integer within ±\(Rect.coordinateLimit))")
            }
            return value
        }
        return Point(x: values[0], y: values[1])
    }

    func validate() throws {
        _ = try point()
        if relative && (window != nil || !select.filter.isEmpty) {
            throw ValidationError("--relative moves from the pointer: it does not take a window")
        }
    }

    func run() throws {
        let controller = try input(target)
        var p = try point()
        if relative {
            try controller.move(by: p)
        } else {
            if window != nil || !select.filter.isEmpty {
                let frame = try select.resolve(window, WindowManager(connection: controller.connection)).frame
                p = Point(x: frame.x + p.x, y: frame.y + p.y)
            }
            try controller.move(to: p)
        }
        try controller.sync()
    }
}

/// `xclaw click [X Y]`.
struct Click: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "click", abstract: "Click at a point (or where the pointer is).",
        discussion: """
            Examples:
              xclaw click 640 400 --button right
              xclaw click 640 400 --count 2 --with ctrl  # a double click with ctrl held
            """)
    @OptionGroup var target: DisplayOptions
    @Argument var x: Int?
    @Argument var y: Int?
    @Option(help: "left, middle or right.") var button: MouseButton = .left
    @Option(help: "1 (single), 2 (double) or 3 (triple); up to 100 separate clicks with --interval.") var count = 1
    @Option(name: .customLong("with"), help: "Modifiers held during the click, e.g. ctrl+shift.") var modifiers: String?
    @Option(help: "Milliseconds between clicks (as xdotool click --delay): each one a single click to the app.")
    var interval: Int?
    @Option(name: .customLong("hold-ms"), help: "Milliseconds each press is held before its release.") var holdMs: Int?

    func validate() throws {
        if (x == nil) != (y == nil) { throw ValidationError("give both X and Y, or neither") }
        try requireRange(interval, 0...60_000, "--interval", "ms")
        try requireRange(holdMs, 0...60_000, "--hold-ms", "ms")
        if (interval ?? 0) > 0 {
            try requireRange(count, 1...InputController.maximumClicks, "--count", "")
        } else if !(1...3).contains(count) {
            throw ValidationError("--count must be 1, 2 or 3 (more with --interval)")
        }
    }

    func run() throws {
        let controller = try input(target)
        let point = x.flatMap { x in y.map { Point(x: x, y: $0) } }
        let modifiers = try parseModifiers(modifiers)
        try Interrupt.guarded {
            try controller.click(
                at: point, button: button, count: count, modifiers: modifiers,
                interval: .milliseconds(interval ?? 0), hold: .milliseconds(holdMs ?? 0)
            ) { Interrupt.requested }
        }
        try controller.sync()
    }
}

/// Where and which button `mousedown`/`mouseup` act on.
struct ButtonTarget: ParsableArguments {
    @OptionGroup var target: DisplayOptions
    @Argument var x: Int?
    @Argument var y: Int?
    @Option var button: MouseButton = .left

    func validate() throws {
        if (x == nil) != (y == nil) { throw ValidationError("give both X and Y, or neither") }
    }

    /// The point, when one was given.
    var point: Point? { x.flatMap { x in y.map { Point(x: x, y: $0) } } }
}

/// `xclaw mousedown [X Y]`.
struct MouseDown: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mousedown", abstract: "Press a mouse button and keep it down.",
        discussion: """
            Examples:
              xclaw mousedown 100 100  # then move and mouseup: a drag at your own pace
              xclaw mousedown --button middle
            """)
    @OptionGroup var options: ButtonTarget

    func run() throws {
        let controller = try input(options.target)
        try controller.buttonDown(options.button, at: options.point)
        try controller.recordButton(options.button, down: true)  // for `release-all`
        try controller.sync()
    }
}

/// `xclaw mouseup [X Y]`.
struct MouseUp: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mouseup", abstract: "Release a mouse button.",
        discussion: """
            Examples:
              xclaw mouseup 400 300  # moves there first, then releases
              xclaw mouseup --button middle
            """)
    @OptionGroup var options: ButtonTarget

    func run() throws {
        let controller = try input(options.target)
        try controller.buttonUp(options.button, at: options.point)
        try controller.recordButton(options.button, down: false)
        try controller.sync()
    }
}

/// `xclaw drag X1 Y1 X2 Y2`, or `drag --path X,Y X,Y …`.
struct Drag: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drag",
        abstract: "Drag with a button held, from X1 Y1 to X2 Y2 or through the waypoints of --path.",
        discussion: """
            Examples:
              xclaw drag 100 100 400 300 --steps 20
              xclaw drag --path 100,100 300,120 300,400  # pressed at the first waypoint, released at the last
            """)
    @OptionGroup var target: DisplayOptions
    @Argument var coordinates: [Int] = []
    @Option(
        parsing: .upToNextOption,
        help: "Waypoints X,Y X,Y … (at least two): pressed at the first, released at the last.")
    var path: [String] = []
    @Option var button: MouseButton = .left
    @Option(help: "Intermediate motion events (per leg with --path).") var steps = 16
    @Option(help: "Milliseconds the motion takes (some toolkits need time to start a drag).") var duration = 0
    @Option(name: .customLong("with"), help: "Modifiers held, e.g. shift.") var modifiers: String?

    /// The points dragged through.
    func points() throws -> [Point] {
        if path.isEmpty {
            guard coordinates.count == 4 else { throw ValidationError("give X1 Y1 X2 Y2, or --path X,Y X,Y …") }
            return [Point(x: coordinates[0], y: coordinates[1]), Point(x: coordinates[2], y: coordinates[3])]
        }
        guard coordinates.isEmpty else { throw ValidationError("give X1 Y1 X2 Y2 or --path, not both") }
        guard (2...InputController.maximumWaypoints).contains(path.count) else {
            throw ValidationError("--path needs 2 to \(InputController.maximumWaypoints) points X,Y, not \(path.count)")
        }
        return try path.map { text in
            do { return try Point(parsing: text) } catch { throw ValidationError("--path: \(error)") }
        }
    }

    func validate() throws {
        _ = try points()
        try requireRange(steps, 1...InputController.maximumSteps, "--steps", "")
        try requireRange(duration, 0...600_000, "--duration", "ms")
    }

    func run() throws {
        let controller = try input(target)
        let modifiers = try parseModifiers(self.modifiers)
        let points = try points()
        try Interrupt.guarded {
            try controller.drag(
                path: points, button: button, steps: steps, duration: .milliseconds(max(0, duration)),
                modifiers: modifiers
            ) { Interrupt.requested }
        }
        try controller.sync()
    }
}

/// `xclaw scroll DIR`.
struct Scroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scroll",
        abstract: "Scroll up, down, left or right.",
        discussion: """
            Scrolling is sent as notches (core buttons 4–7), which every app takes. There is no --smooth: XInput2 \
            smooth scrolling comes only from a device with scroll valuators, and the XTest device xclaw (and xdotool) \
            sends through has none; making one takes uinput and a real Xorg input driver, which Xvfb lacks.
            Examples:
              xclaw scroll down --amount 5 --at 640,400
              xclaw scroll up --with ctrl  # ctrl+wheel: zoom in most apps
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "up, down, left or right.") var direction: ScrollDirection
    @Option(help: "Notches.") var amount = 1
    @Option(help: "Point X,Y to scroll at (default: where the pointer is).") var at: String?
    @Option(name: .customLong("with"), help: "Modifiers held, e.g. ctrl.") var modifiers: String?

    func validate() throws {
        try requireRange(amount, 1...InputController.maximumScroll, "--amount", "notches")
    }

    func run() throws {
        let controller = try input(target)
        try controller.scroll(
            direction, amount: amount, at: try at.map(Point.init(parsing:)),
            modifiers: try parseModifiers(modifiers))
        try controller.sync()
    }
}

/// `xclaw key COMBO...`.
struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Press key combinations in xdotool syntax: ctrl+shift+t, Return, alt+Tab, super, KP_0, F5.",
        discussion: """
            --window sends the keys to that window as xdotool's --window does: as synthetic events (XSendEvent), \
            whichever window has the focus. Many apps ignore synthetic events (xterm unless its allowSendEvents \
            resource is set; some games and browsers): activate the window and press without --window for those. A \
            window that has the focus already gets real keys (XTest), as with xdotool.

            Examples:
              xclaw key ctrl+shift+t alt+Tab Return  # one after the other
              xclaw key --window xterm --repeat 3 --delay 50 Tab  # three Tabs to that window, wherever the focus is
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "Combinations, pressed in order.") var combos: [String]
    @Option(help: "Hold the (single) combination down for this many seconds.") var hold: Double?
    @Option(help: "Milliseconds between combinations (as xdotool key --delay; default 0).") var delay: Int?
    @Option(help: "Press the whole list this many times (as xdotool key --repeat).") var `repeat` = 1
    @Option(name: .customLong("repeat-delay"), help: "Milliseconds between repetitions.") var repeatDelay: Int?
    @Flag(
        name: .customLong("clearmodifiers"),
        help: "Release the modifier keys held now (and Caps Lock) first, and press them again after, as xdotool does.")
    var clearModifiers = false
    @Option(help: "Send to this window (id, title or class) as synthetic events; see below.") var window: String?
    @OptionGroup var select: WindowSelection

    func validate() throws {
        if combos.isEmpty { throw ValidationError("name at least one key, e.g. Return or ctrl+s") }
        if hold != nil && combos.count != 1 { throw ValidationError("--hold takes exactly one combination") }
        if hold != nil && self.repeat != 1 { throw ValidationError("--hold presses once: it takes no --repeat") }
        try requireRange(hold, 0...3600, "--hold", "seconds")
        try requireRange(delay, 0...60_000, "--delay", "ms")
        try requireRange(repeatDelay, 0...60_000, "--repeat-delay", "ms")
        try requireRange(self.repeat, 1...100_000, "--repeat", "")
    }

    func run() throws {
        // Parse every name before sending anything: a typo in the third combo must not send the first two.
        let parsed = try combos.map(KeyCombo.parse)
        let controller = try input(target)
        let sink = try syntheticTarget(window, select, controller)
        let send = {
            if let hold, let combo = parsed.first {
                try Interrupt.guarded {
                    try controller.keyboard.hold(combo, for: .milliseconds(Int(hold * 1000)), to: sink) {
                        Interrupt.requested
                    }
                }
            } else if delay == nil && repeatDelay == nil && self.repeat == 1 {
                try controller.keyboard.press(parsed, to: sink)
            } else {
                try pressPaced(parsed, controller, sink)
            }
        }
        if clearModifiers { try controller.keyboard.withModifiersCleared(send) } else { try send() }
        try Interrupt.guarded { try Hosting.current.restoreMapping(controller.keyboard) }
        try controller.sync()
    }

    /// The combinations `repeat` times, `delay` apart, the rounds `repeatDelay` apart; Ctrl-C stops between two.
    private func pressPaced(_ parsed: [KeyCombo], _ controller: InputController, _ sink: UInt?) throws {
        try Interrupt.guarded {
            /// Sleeps `ms` in slices, so Ctrl-C ends a long delay at once; false when it did.
            func pause(_ ms: Int) -> Bool {
                let end = ContinuousClock.now + .milliseconds(ms)
                while ContinuousClock.now < end {
                    if Interrupt.requested { return false }
                    Thread.sleep(forTimeInterval: min(0.02, (end - ContinuousClock.now).seconds))
                }
                return !Interrupt.requested
            }
            for round in 0..<self.repeat {
                if round > 0, let repeatDelay, !pause(repeatDelay) { return }
                for (index, combo) in parsed.enumerated() {
                    if Interrupt.requested { return }
                    if index > 0 || (round > 0 && repeatDelay == nil), let delay, !pause(delay) { return }
                    try controller.keyboard.press([combo], to: sink)
                }
            }
        }
    }
}

/// The window `--window` and the selection flags name, to send keys to as synthetic events; nil when they name
/// none, or the one that has the focus already (real keys reach it, as xdotool does for the current window).
func syntheticTarget(_ window: String?, _ select: WindowSelection, _ controller: InputController) throws -> UInt? {
    guard select.names(window) else { return nil }
    let manager = WindowManager(connection: controller.connection)
    let picked = try select.resolve(window, manager)
    return try manager.activeWindow() == picked.id ? nil : picked.id
}

/// `xclaw type TEXT`.
struct TypeText: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "type",
        abstract: "Type any Unicode text exactly into the focused window (newline = Return, tab = Tab).",
        discussion: """
            --window alone sends the text to that window as xdotool type --window does: as synthetic events \
            (XSendEvent), which many apps ignore (xterm unless allowSendEvents is set): activate the window and type \
            without --window for those. With --into, --window is where the field is looked for, and the field is \
            focused and typed into for real.

            Examples:
              xclaw type 'héllo wörld ß € 你好 ✓'
              xclaw type --into Name 'Zoë Müller'  # focus the field labelled Name first
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "The text, or - to read it from stdin.") var text: String
    @Option(help: "Milliseconds between characters (for slow input methods).") var delay: Int?
    @Option(
        help: """
            Focus this field first (a label or a ref from `xclaw snapshot`): through the accessibility tree when the app \
            exposes one, else by clicking it.
            """)
    var into: String?
    @Option(help: "Window id (0x…), title or class: where to look for --into, or alone, where to send the text.")
    var window: String?
    @OptionGroup var select: WindowSelection
    @Flag(
        name: .customLong("clearmodifiers"),
        help: "Release the modifier keys held now (and Caps Lock) first, and press them again after, as xdotool does.")
    var clearModifiers = false
    /// --nth, --near, --role and --source pick among the fields --into names, as they do for `tap`.
    @OptionGroup var choose: SelectionOptions
    @Flag(
        help: """
            Paste instead of typing: set the clipboard to the text, press ctrl+v, then give the clipboard its old \
            text back (other types are not restored). Fast for long text; the app must paste with ctrl+v.
            """)
    var paste = false

    func validate() throws {
        try requireRange(delay, 0...10_000, "--delay", "ms")
        if (choose.nth != nil || choose.near != nil || choose.role != nil || choose.source != .auto) && into == nil {
            throw ValidationError("--nth, --near, --role and --source go with --into")
        }
        if paste && delay != nil { throw ValidationError("--paste sends no characters: it takes no --delay") }
    }

    func run() throws {
        var content = text
        if text == "-" {
            let data = Invocation.current.readAll()
            guard let decoded = String(data: data, encoding: .utf8) else {
                throw ScreenError.invalidArgument("stdin is not valid UTF-8")
            }
            content = decoded
        }
        let controller = try input(target)
        var sink: UInt?
        if let into {
            try focusField(into, controller: controller)
        } else {
            sink = try syntheticTarget(window, select, controller)
        }
        let send = {
            if paste { return try pasteText(content, controller: controller, to: sink) }
            try Interrupt.guarded {
                try controller.keyboard.type(content, delay: delay.map { .milliseconds(max(0, $0)) }, to: sink) {
                    Interrupt.requested
                }
            }
        }
        if clearModifiers { try controller.keyboard.withModifiersCleared(send) } else { try send() }
        // Spare keycodes bound for missing characters are unbound once the client has read them.
        try Interrupt.guarded { try Hosting.current.restoreMapping(controller.keyboard) }
        try controller.sync()
    }
}

extension TypeText {
    /// Focuses the field `label` names (fields first: `Selection.resolveField`): the toolkit's own focus call when it
    /// comes from the accessibility tree (no pointer motion), else — or when the toolkit refuses — a click on its
    /// centre.
    func focusField(_ label: String, controller: InputController) throws {
        try withPerceiver(target) { p in
            let snapshot = try takeSnapshot(
                p, area: p.area(window: window, matching: select.filter), source: choose.source)
            let match = try choose.selection.resolveField(label, in: snapshot)
            switch p.focusForTyping(match) {
            case .focused: return
            case .raised: break  // its window is on top now: the click reaches it
            case .none: if match.covered == true { throw PerceptionError.covered(match.summary) }
            }
            try controller.click(at: match.point)
        }
    }
}

extension TypeText {
    /// Puts `text` on the clipboard, presses ctrl+v, waits until the app fetched it, and gives the clipboard its
    /// old text back. The selection is owned here while the app fetches: the old contents return only after.
    func pasteText(_ text: String, controller: InputController, to sink: UInt? = nil) throws {
        let display = try DisplayConnection.resolveName(target.display)
        let old = try? SelectionReader.read(.clipboard, type: .text, display: display)
        let owner = try SelectionOwner.start(
            display: display, selection: .clipboard, type: .text, data: Data(text.utf8))
        try controller.keyboard.press([try KeyCombo.parse("ctrl+v")], to: sink)
        try controller.sync()
        let fetched = owner.waitForRequests(timeout: .seconds(2))
        if let old {
            try Hosting.current.serveSelection(.clipboard, type: .text, data: old, display: display)
        } else {
            owner.stop()
        }
        owner.waitUntilDone()
        guard fetched else {
            throw ScreenError.ignored(
                "paste: no app asked for the clipboard within 2 s of ctrl+v (does the focused window paste with ctrl+v?)"
            )
        }
    }
}

/// `xclaw keydown KEYS…`.
struct KeyDown: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keydown",
        abstract: "Press keys and leave them down across commands (until keyup, release-all, or the daemon stops).",
        discussion: """
            Examples:
              xclaw keydown shift  # then: xclaw click 10 10; xclaw keyup shift
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "Keys or combinations, e.g. shift or ctrl+alt; all are pressed, in order.") var keys: [String]

    func validate() throws {
        if keys.isEmpty { throw ValidationError("name at least one key, e.g. shift") }
        for key in keys { try checkParses(key) { try KeyCombo.parse($0) } }
    }

    func run() throws {
        let controller = try input(target)
        try controller.keyDown(try keys.map(KeyCombo.parse))
        try controller.sync()
    }
}

/// `xclaw keyup KEYS…`.
struct KeyUp: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keyup", abstract: "Release keys that keydown (or anything else) holds down.",
        discussion: """
            Examples:
              xclaw keyup shift
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "Keys or combinations, released in reverse order.") var keys: [String]

    func validate() throws {
        if keys.isEmpty { throw ValidationError("name at least one key, e.g. shift") }
        for key in keys { try checkParses(key) { try KeyCombo.parse($0) } }
    }

    func run() throws {
        let controller = try input(target)
        try controller.keyUp(try keys.map(KeyCombo.parse))
        try controller.sync()
    }
}

/// `xclaw release-all`.
struct ReleaseAll: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release-all",
        abstract: "Release the keys and buttons keydown and mousedown left held (--everything: every key and button).",
        discussion: """
            Examples:
              xclaw release-all
              xclaw release-all --everything  # every key and button the server holds, whoever pressed it
            """)
    @OptionGroup var target: DisplayOptions
    @Flag(help: "Release every key and button the server holds down, whoever pressed it.") var everything = false
    @Flag var json = false

    func run() throws {
        let controller = try input(target)
        var released = try controller.releaseHeld()
        if everything { released += try controller.releaseEverything() }
        try controller.sync()
        struct Released: Encodable { var released: Int }
        try emit(Released(released: released), json: json) { "released \(released)" }
    }
}

/// `xclaw cursor`.
struct Cursor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cursor",
        abstract: "Print the pointer position (with --window, and the top-level window under it, or -).",
        discussion: """
            Examples:
              xclaw cursor  # X Y
              xclaw cursor --window  # and the window under the pointer
            """)
    @OptionGroup var target: DisplayOptions
    @Flag(help: "Also print the window under the pointer.") var window = false
    @Flag var json = false

    func run() throws {
        let controller = try input(target)
        let p = try controller.cursorPosition()
        guard window else { return try emit(p, json: json) { "\(p.x) \(p.y)" } }
        struct Located: Encodable {
            var x: Int, y: Int, window: WindowInfo?
        }
        let under = try WindowManager(connection: controller.connection).windowUnderPointer()
        try emit(Located(x: p.x, y: p.y, window: under), json: json) {
            "\(p.x) \(p.y)\t" + (under.map(windowRow) ?? "-")
        }
    }
}

/// `xclaw keymap-restore` (hidden): what a typing command leaves behind when it exits at once. Waits until the
/// clients have had their settle delay, then unbinds the spare keycodes that still hold what the command bound.
struct KeymapRestore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keymap-restore", abstract: "Unbind spare keycodes a typing command bound (internal).",
        shouldDisplay: false)
    @OptionGroup var target: DisplayOptions
    @Option(help: "Milliseconds to wait first.") var afterMs = 0
    @Option(help: "The token of the announcement this restore answers to.") var token: UInt32
    @Argument(help: "CODE=KEYSYM pairs.") var bindings: [String]

    func validate() throws { try requireRange(afterMs, 0...60_000, "--after-ms", "ms") }

    func run() throws {
        let parsed = try parseBindings(bindings)
        Thread.sleep(forTimeInterval: Double(afterMs) / 1000)
        try Keyboard(connection: target.connect()).unbind(parsed, token: token)
    }
}

/// `CODE=KEYSYM` arguments as bindings; a malformed one is bad usage.
private func parseBindings(_ arguments: [String]) throws -> [Keyboard.Binding] {
    try arguments.map { pair in
        guard let binding = Keyboard.Binding(argument: pair) else {
            throw ValidationError("a binding is CODE=KEYSYM, not \(pair)")
        }
        return binding
    }
}

/// `xclaw input-restore` (hidden): what the process guard of a killed xclaw (a daemon, or a one-shot command) runs
/// for it. Releases the keys and buttons it held inside a command, those still down, and unbinds the spare keycodes
/// it had bound, those still holding what it bound.
struct InputRestore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "input-restore", abstract: "Release what a killed xclaw held and unbind its keycodes (internal).",
        shouldDisplay: false)
    @OptionGroup var target: DisplayOptions
    @Option(help: "Keycodes to release, comma-separated.") var keys: String?
    @Option(help: "Mouse buttons to release, comma-separated.") var buttons: String?
    @Argument(help: "CODE=KEYSYM pairs to unbind.") var bindings: [String] = []

    func run() throws {
        let numbers = { (list: String?) throws -> [UInt32] in
            try (list ?? "").split(separator: ",").map { item in
                guard let value = UInt32(item) else { throw ValidationError("not a number: \(item)") }
                return value
            }
        }
        let (keyCodes, buttonNumbers, parsed) = (try numbers(keys), try numbers(buttons), try parseBindings(bindings))
        let controller = try InputController(connection: target.connect())
        try controller.releaseIfDown(keys: keyCodes, buttons: buttonNumbers)
        if !parsed.isEmpty { try controller.keyboard.unbind(parsed) }
    }
}

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
    static let configuration = CommandConfiguration(abstract: "Move the pointer.")
    @OptionGroup var target: DisplayOptions
    @Argument var x: Int
    @Argument var y: Int

    func run() throws {
        let controller = try input(target)
        try controller.move(to: Point(x: x, y: y))
        try controller.sync()
    }
}

/// `xclaw click [X Y]`.
struct Click: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Click at a point (or where the pointer is).")
    @OptionGroup var target: DisplayOptions
    @Argument var x: Int?
    @Argument var y: Int?
    @Option(help: "left, middle or right.") var button: MouseButton = .left
    @Option(help: "1 (single), 2 (double) or 3 (triple).") var count = 1
    @Option(name: .customLong("with"), help: "Modifiers held during the click, e.g. ctrl+shift.") var modifiers: String?

    func validate() throws {
        if (x == nil) != (y == nil) { throw ValidationError("give both X and Y, or neither") }
        if !(1...3).contains(count) { throw ValidationError("--count must be 1, 2 or 3") }
    }

    func run() throws {
        let controller = try input(target)
        let point = x.flatMap { x in y.map { Point(x: x, y: $0) } }
        try controller.click(at: point, button: button, count: count, modifiers: try parseModifiers(modifiers))
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
        commandName: "mousedown", abstract: "Press a mouse button and keep it down.")
    @OptionGroup var options: ButtonTarget

    func run() throws {
        let controller = try input(options.target)
        try controller.buttonDown(options.button, at: options.point)
        try controller.sync()
    }
}

/// `xclaw mouseup [X Y]`.
struct MouseUp: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mouseup", abstract: "Release a mouse button.")
    @OptionGroup var options: ButtonTarget

    func run() throws {
        let controller = try input(options.target)
        try controller.buttonUp(options.button, at: options.point)
        try controller.sync()
    }
}

/// `xclaw drag X1 Y1 X2 Y2`.
struct Drag: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Drag with a button held, through intermediate points.")
    @OptionGroup var target: DisplayOptions
    @Argument var x1: Int
    @Argument var y1: Int
    @Argument var x2: Int
    @Argument var y2: Int
    @Option var button: MouseButton = .left
    @Option(help: "Intermediate motion events.") var steps = 16
    @Option(help: "Milliseconds the motion takes (some toolkits need time to start a drag).") var duration = 0
    @Option(name: .customLong("with"), help: "Modifiers held, e.g. shift.") var modifiers: String?

    func validate() throws {
        try requireRange(steps, 1...InputController.maximumSteps, "--steps", "")
        try requireRange(duration, 0...600_000, "--duration", "ms")
    }

    func run() throws {
        let controller = try input(target)
        let modifiers = try parseModifiers(self.modifiers)
        try Interrupt.guarded {
            try controller.drag(
                from: Point(x: x1, y: y1), to: Point(x: x2, y: y2), button: button, steps: steps,
                duration: .milliseconds(max(0, duration)), modifiers: modifiers
            ) { Interrupt.requested }
        }
        try controller.sync()
    }
}

/// `xclaw scroll DIR`.
struct Scroll: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Scroll up, down, left or right.")
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
        abstract: "Press key combinations in xdotool syntax: ctrl+shift+t, Return, alt+Tab, super, KP_0, F5.")
    @OptionGroup var target: DisplayOptions
    @Argument(help: "Combinations, pressed in order.") var combos: [String]
    @Option(help: "Hold the (single) combination down for this many seconds.") var hold: Double?

    func validate() throws {
        if combos.isEmpty { throw ValidationError("name at least one key, e.g. Return or ctrl+s") }
        if hold != nil && combos.count != 1 { throw ValidationError("--hold takes exactly one combination") }
        try requireRange(hold, 0...3600, "--hold", "seconds")
    }

    func run() throws {
        // Parse every name before sending anything: a typo in the third combo must not send the first two.
        let parsed = try combos.map(KeyCombo.parse)
        let controller = try input(target)
        if let hold, let combo = parsed.first {
            try Interrupt.guarded {
                try controller.keyboard.hold(combo, for: .milliseconds(Int(hold * 1000))) { Interrupt.requested }
            }
        } else {
            try controller.keyboard.press(parsed)
        }
        try Interrupt.guarded { try Hosting.current.restoreMapping(controller.keyboard) }
        try controller.sync()
    }
}

/// `xclaw type TEXT`.
struct TypeText: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "type",
        abstract: "Type any Unicode text exactly into the focused window (newline = Return, tab = Tab).")
    @OptionGroup var target: DisplayOptions
    @Argument(help: "The text, or - to read it from stdin.") var text: String
    @Option(help: "Milliseconds between characters (for slow input methods).") var delay: Int?
    @Option(
        help: """
            Focus this field first (a label or a ref from `xclaw snapshot`): through the accessibility tree when the app \
            exposes one, else by clicking it.
            """)
    var into: String?
    @Option(help: "Window id (0x…) or title substring to look for --into in.") var window: String?

    func validate() throws {
        try requireRange(delay, 0...10_000, "--delay", "ms")
        if window != nil && into == nil { throw ValidationError("--window goes with --into") }
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
        if let into { try focusField(into, controller: controller) }
        try Interrupt.guarded {
            try controller.keyboard.type(content, delay: delay.map { .milliseconds(max(0, $0)) }) {
                Interrupt.requested
            }
        }
        // Spare keycodes bound for missing characters are unbound once the client has read them.
        try Interrupt.guarded { try Hosting.current.restoreMapping(controller.keyboard) }
        try controller.sync()
    }
}

extension TypeText {
    /// Focuses the field `label` names: the toolkit's own focus call when it comes from the accessibility tree (no
    /// pointer motion), else — or when the toolkit refuses — a click on its centre.
    func focusField(_ label: String, controller: InputController) throws {
        try withPerceiver(target) { p in
            let snapshot = try takeSnapshot(p, area: p.area(window: window))
            let match = try Selection().resolve(label, in: snapshot)
            switch p.focusForTyping(match) {
            case .focused: return
            case .raised: break  // its window is on top now: the click reaches it
            case .none: if match.covered == true { throw PerceptionError.covered(match.summary) }
            }
            try controller.click(at: match.point)
        }
    }
}

/// `xclaw cursor`.
struct Cursor: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the pointer position.")
    @OptionGroup var target: DisplayOptions
    @Flag var json = false

    func run() throws {
        let p = try input(target).cursorPosition()
        try emit(p, json: json) { "\(p.x) \(p.y)" }
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
        let parsed = try bindings.map { pair -> Keyboard.Binding in
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let code = UInt32(parts[0]), let sym = UInt(parts[1]) else {
                throw ValidationError("a binding is CODE=KEYSYM, not \(pair)")
            }
            return Keyboard.Binding(code: code, sym: sym)
        }
        Thread.sleep(forTimeInterval: Double(afterMs) / 1000)
        try Keyboard(connection: target.connect()).unbind(parsed, token: token)
    }
}

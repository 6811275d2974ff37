import CX11
import CXTest
import Glibc
import XclawKeyNames

/// Whether the direct `cursor --json` runs, for the IO error handler (a C callback, which captures nothing).
nonisolated(unsafe) private var directJSON = false

/// The input commands the front does itself, daemon or not, in their plainest forms only: `click [X Y]`,
/// `move X Y`, `cursor [--json]` and `key COMBO…` with keys the keymap has, each with `--display`. Anything else —
/// another option, a key that needs binding, a point off the screen, a display that does not open — goes to
/// `xclaw-core`, which does it or explains the error exactly as always.
struct DirectInput {
    private let command: String
    private let operands: [String]
    private let json: Bool
    private let display: String

    /// Nil when the command is not one of the plain forms.
    init?(_ arguments: [String], display fallback: String?) {
        guard let command = arguments.first, ["click", "move", "cursor", "key"].contains(command) else { return nil }
        var operands: [String] = []
        var display = fallback
        var json = false
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            if argument == "--display", let value = rest.popFirst() {
                display = value
            } else if argument.hasPrefix("--display=") {
                display = String(argument.dropFirst("--display=".count))
            } else if argument == "--json", command == "cursor" {
                json = true
            } else if argument.hasPrefix("-") {
                return nil
            } else {
                operands.append(argument)
            }
        }
        guard let display, !display.isEmpty else { return nil }
        (self.command, self.operands, self.json, self.display) = (command, operands, json, display)
    }

    /// The exit status; nil to hand the command to `xclaw-core`.
    func run() -> Int32? {
        switch command {
        case "cursor" where operands.isEmpty: return withDisplay { cursor($0) }
        case "click" where operands.isEmpty: return withDisplay { click($0, at: nil) }
        case "click", "move":
            guard operands.count == 2, let x = Self.coordinate(operands[0]), let y = Self.coordinate(operands[1])
            else { return nil }
            return withDisplay { command == "move" ? move($0, x, y) : click($0, at: (x, y)) }
        case "key" where !operands.isEmpty: return withDisplay { key($0) }
        default: return nil
        }
    }

    /// Opens the display, checks for XTest, runs `body` and waits until the server has processed it all.
    private func withDisplay(_ body: (OpaquePointer) -> Bool) -> Int32? {
        guard let connection = XOpenDisplay(display) else { return nil }
        var event: Int32 = 0, error: Int32 = 0, major: Int32 = 0, minor: Int32 = 0
        guard XTestQueryExtension(connection, &event, &error, &major, &minor) != 0 else {
            XCloseDisplay(connection)
            return nil
        }
        directJSON = json
        XSetIOErrorHandler { _ in
            let line = "xclaw: lost the connection to the X server\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            if directJSON {
                let object = Front.errorObject(String(line.dropLast()), status: 3)
                _ = object.withCString { write(1, $0, strlen($0)) }
            }
            _exit(3)
        }
        guard body(connection) else {
            XCloseDisplay(connection)
            return nil
        }
        XSync(connection, 0)
        XCloseDisplay(connection)
        return 0
    }

    private func cursor(_ display: OpaquePointer) -> Bool {
        var root: Window = 0, child: Window = 0
        var x: Int32 = 0, y: Int32 = 0, wx: Int32 = 0, wy: Int32 = 0
        var mask: UInt32 = 0
        XQueryPointer(display, XDefaultRootWindow(display), &root, &child, &x, &y, &wx, &wy, &mask)
        let text = json ? "{\"x\":\(x),\"y\":\(y)}\n" : "\(x) \(y)\n"
        _ = text.withCString { write(1, $0, strlen($0)) }
        return true
    }

    private func onScreen(_ display: OpaquePointer, _ x: Int32, _ y: Int32) -> Bool {
        let screen = XDefaultScreen(display)
        return x < XDisplayWidth(display, screen) && y < XDisplayHeight(display, screen)
    }

    private func move(_ display: OpaquePointer, _ x: Int32, _ y: Int32) -> Bool {
        guard onScreen(display, x, y) else { return false }
        XTestFakeMotionEvent(display, XDefaultScreen(display), x, y, 0)
        return true
    }

    private func click(_ display: OpaquePointer, at point: (Int32, Int32)?) -> Bool {
        if let (x, y) = point, !move(display, x, y) { return false }
        XTestFakeButtonEvent(display, 1, 1, 0)
        XTestFakeButtonEvent(display, 1, 0, 0)
        return true
    }

    /// Every combination resolved before any is pressed (as the full binary does); false when one needs more
    /// than the keymap's first two levels hold.
    private func key(_ display: OpaquePointer) -> Bool {
        var combos: [[(code: KeyCode, shifted: Bool)]] = []
        for combo in operands {
            guard !combo.contains(" "), combo != "+", !combo.hasSuffix("++") else { return false }
            let parts = combo.split(separator: "+", omittingEmptySubsequences: false)
            var keys: [(code: KeyCode, shifted: Bool)] = []
            for part in parts {
                guard let key = Self.key(display, String(part)) else { return false }
                keys.append(key)
            }
            combos.append(keys)
        }
        let shift = XKeysymToKeycode(display, KeySym(0xffe1))
        for keys in combos {
            var pressed: [KeyCode] = []
            for (index, key) in keys.enumerated() {
                let needsShift =
                    index == keys.count - 1 && key.shifted && !keys.dropLast().contains { $0.code == shift }
                if needsShift {
                    guard shift != 0 else { return false }
                    pressed.append(shift)
                }
                pressed.append(key.code)
            }
            for code in pressed { XTestFakeKeyEvent(display, UInt32(code), 1, 0) }
            for code in pressed.reversed() { XTestFakeKeyEvent(display, UInt32(code), 0, 0) }
        }
        return true
    }

    /// A key name's keycode and whether it needs Shift: X's name, else one of xclaw's aliases, on the first or
    /// second level of a key.
    private static func key(_ display: OpaquePointer, _ name: String) -> (code: KeyCode, shifted: Bool)? {
        var sym = XStringToKeysym(name)
        if sym == 0, let alias = KeyAliases.table[name.lowercased()] { sym = XStringToKeysym(alias) }
        guard sym != 0 else { return nil }
        let code = XKeysymToKeycode(display, sym)
        guard code != 0 else { return nil }
        if XkbKeycodeToKeysym(display, code, 0, 0) == sym { return (code, false) }
        if XkbKeycodeToKeysym(display, code, 0, 1) == sym { return (code, true) }
        return nil
    }

    /// A coordinate in plain decimal digits (what the full binary parses the same way).
    private static func coordinate(_ text: String) -> Int32? {
        guard !text.isEmpty, text.count <= 6, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int32(text)
    }
}

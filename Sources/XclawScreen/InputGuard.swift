import CX11
import Foundation
import Synchronization
import XclawBase

/// What this process holds down inside a command (`click --hold-ms`, `key --hold`) or has bound for typing (spare
/// keycodes), covered by a `ProcessGuard`: when the process is killed (SIGKILL, so nothing of ours runs), the guard's
/// watcher runs `xclaw-core input-restore`, which releases those keys and buttons and unbinds those keycodes. A
/// daemon and a one-shot xclaw are covered alike. Nothing is covered when `xclaw-core` is not beside the binary.
public enum InputGuard {
    /// The guard, started at the first cover; `.some(nil)` once it could not start (then nothing is covered).
    private static let processGuard = Mutex<ProcessGuard??>(nil)

    /// Covers what is about to be held on `display`; returns the cover's id for `uncover` (nil: nothing covered).
    static func cover(
        display: String, keys: [UInt32] = [], buttons: [UInt32] = [], bindings: [Keyboard.Binding] = []
    ) -> UInt32? {
        guard !(keys.isEmpty && buttons.isEmpty && bindings.isEmpty), let core = XclawPaths.sibling("xclaw-core")
        else { return nil }
        var arguments = [core, "input-restore", "--display", display]
        if !keys.isEmpty { arguments += ["--keys", keys.map(String.init).joined(separator: ",")] }
        if !buttons.isEmpty { arguments += ["--buttons", buttons.map(String.init).joined(separator: ",")] }
        arguments += bindings.map(\.argument)
        return processGuard.withLock { started -> UInt32? in
            if started == nil { started = .some(try? ProcessGuard()) }
            return started??.onDeath(run: arguments)
        }
    }

    /// Drops a cover: what it covered was let go.
    static func uncover(_ id: UInt32?) {
        guard let id else { return }
        processGuard.withLock { $0??.forget(id) }
    }
}

extension Keyboard.Binding {
    /// The binding as `CODE=KEYSYM`, how `keymap-restore` and `input-restore` take it.
    public var argument: String { "\(code)=\(sym)" }

    /// A binding from its `CODE=KEYSYM` form; nil when malformed.
    public init?(argument: String) {
        let parts = argument.split(separator: "=")
        guard parts.count == 2, let code = UInt32(parts[0]), let sym = UInt(parts[1]) else { return nil }
        self.init(code: code, sym: KeySym(sym))
    }
}

extension InputController {
    /// Releases those of `keys` and `buttons` the server holds down now (a key already up gets no event): what a
    /// killed xclaw held inside a command.
    @discardableResult
    public func releaseIfDown(keys: [UInt32], buttons: [UInt32]) throws -> Int {
        let (down, pressed) = try pressedNow()
        let releasedKeys = keys.filter(down.contains)
        let releasedButtons = buttons.filter(pressed.contains)
        for code in releasedKeys.reversed() { connection.fakeKey(code, down: false) }
        for button in releasedButtons { connection.fakeButton(button, down: false) }
        try connection.sync()
        return releasedKeys.count + releasedButtons.count
    }

    /// The keycodes and mouse buttons the server holds down now (`XQueryKeymap`, `XQueryPointer`).
    public func pressedNow() throws -> (keys: [UInt32], buttons: [UInt32]) {
        try connection.trapped { display -> ([UInt32], [UInt32]) in
            var map = [CChar](repeating: 0, count: 32)
            XQueryKeymap(display, &map)
            var keys: [UInt32] = []
            for byte in 0..<32 {
                let bits = UInt8(bitPattern: map[byte])
                for bit in 0..<8 where bits & (1 << bit) != 0 { keys.append(UInt32(byte * 8 + bit)) }
            }
            var rootReturn: Window = 0, child: Window = 0
            var rx: Int32 = 0, ry: Int32 = 0, wx: Int32 = 0, wy: Int32 = 0
            var mask: UInt32 = 0
            XQueryPointer(display, connection.root, &rootReturn, &child, &rx, &ry, &wx, &wy, &mask)
            let buttons = (1...5).map(UInt32.init).filter { mask & (UInt32(Button1Mask) << ($0 - 1)) != 0 }
            return (keys, buttons)
        }
    }
}

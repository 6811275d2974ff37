import CX11
import Foundation
import XclawBase

/// Keys and buttons held down across commands (`keydown`, `mousedown`), recorded on the display itself.
///
/// XTest's key and button state lives in the server and outlasts the command that pressed it, so the record has to
/// outlast it too: a root-window property (`_XCLAW_HELD_INPUT`) dies with the server it describes, belongs to one
/// display, needs no file and no cleanup, and `release-all` releases exactly what xclaw pressed — not a key a person
/// holds on a real keyboard.
extension InputController {
    /// The root property holding what is held: keycodes, and mouse buttons as `0x10000 | button`.
    static let heldProperty = "_XCLAW_HELD_INPUT"
    private static let buttonFlag: UInt = 0x1_0000

    /// Presses `combos`' keys and leaves them down; returns the keycodes pressed. Every name is resolved first, so a
    /// bad one presses nothing.
    @discardableResult
    public func keyDown(_ combos: [KeyCombo]) throws -> [UInt32] {
        let codes = try combos.flatMap { try keyboard.keycodesToHold($0) }
        try connection.checkAlive()
        for code in codes { connection.fakeKey(code, down: true) }
        try updateHeld { $0 + codes.map(UInt.init) }
        return codes
    }

    /// Releases `combos`' keys (in reverse order), whether or not xclaw pressed them.
    public func keyUp(_ combos: [KeyCombo]) throws {
        let codes = try combos.flatMap { try keyboard.keycodesToHold($0) }
        try connection.checkAlive()
        for code in codes.reversed() { connection.fakeKey(code, down: false) }
        let released = Set(codes.map(UInt.init))
        try updateHeld { $0.filter { !released.contains($0) } }
    }

    /// Records a button pressed and left down (`mousedown`), or released.
    public func recordButton(_ button: MouseButton, down: Bool) throws {
        let value = Self.buttonFlag | UInt(button.number)
        try updateHeld { held in down ? held + [value] : held.filter { $0 != value } }
    }

    /// What xclaw holds down on this display: keycodes and mouse buttons.
    public func held() throws -> (keys: [UInt32], buttons: [UInt32]) {
        let values = try WindowManager(connection: connection).cardinals(
            connection.root, Self.heldProperty, type: Atom(XA_CARDINAL))
        return (
            values.filter { $0 & Self.buttonFlag == 0 }.map { UInt32(truncatingIfNeeded: $0) },
            values.filter { $0 & Self.buttonFlag != 0 }.map { UInt32(truncatingIfNeeded: $0 & 0xff) }
        )
    }

    /// Releases what `keydown` and `mousedown` left held (last pressed first) and clears the record; returns how many.
    @discardableResult
    public func releaseHeld() throws -> Int {
        let (keys, buttons) = try held()
        for code in keys.reversed() { connection.fakeKey(code, down: false) }
        for button in buttons { connection.fakeButton(button, down: false) }
        try updateHeld { _ in [] }
        return keys.count + buttons.count
    }

    /// Rewrites the record under a server grab, so two commands never lose each other's entries.
    private func updateHeld(_ change: ([UInt]) -> [UInt]) throws {
        let atom = connection.atom(Self.heldProperty)
        try connection.trapped { display in
            connection.request { XGrabServer($0) }
            defer { connection.request { XUngrabServer($0) } }
            let current =
                WindowManager.property(display, connection.root, atom, type: Atom(XA_CARDINAL)).map { value in
                    value.bytes.withUnsafeBytes { Array($0.bindMemory(to: UInt.self)) }
                } ?? []
            var seen = Set<UInt>()
            let next = change(current).filter { seen.insert($0).inserted }
            if next.isEmpty {
                XDeleteProperty(display, connection.root, atom)
            } else {
                let longs = next.map { CLong(bitPattern: $0) }
                longs.withUnsafeBytes { raw in
                    _ = XChangeProperty(
                        display, connection.root, atom, Atom(XA_CARDINAL), 32, PropModeReplace,
                        raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(longs.count))
                }
            }
        }
    }
}

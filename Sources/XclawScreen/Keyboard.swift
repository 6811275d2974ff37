import CX11
import CXTest
import Foundation

/// Sends keys through XTest and types any Unicode text exactly.
///
/// Characters the keymap has are sent as their keycode (with Shift for the second level). Characters it lacks are
/// bound to spare keycodes (ones with no keysym) with `XChangeKeyboardMapping`, typed, and unbound later. A client
/// translates a keycode when it reads the event, not when we send it, so a spare keycode is rebound or restored only
/// `settleDelay` after its last use: xdotool restores at once and drops non-ASCII text at `--delay 0`.
public final class Keyboard: @unchecked Sendable {
    /// The connection keys are sent on.
    public let connection: DisplayConnection
    /// How long clients get to read key events of a rebound keycode before it is rebound again or restored.
    public var settleDelay: Duration = .milliseconds(150)

    private let minKeycode: Int
    private let perKeycode: Int
    /// Unicode scalar or keysym → (keycode, shift level 0/1), from the current keymap.
    private var bySymbol: [KeySym: (keycode: UInt32, level: Int)] = [:]
    /// Keycodes with no keysym at all: free to bind.
    private var spares: [UInt32] = []
    /// Spare keycodes currently bound by us, and to what.
    private var bound: [KeySym: UInt32] = [:]
    private var boundOrder: [UInt32] = []
    private var lastBoundUse: ContinuousClock.Instant?
    private let lock = NSLock()

    /// Reads the keymap (`XGetKeyboardMapping`); fails when the server lacks XTEST.
    public init(connection: DisplayConnection) throws {
        self.connection = connection
        var event: Int32 = 0, error: Int32 = 0, major: Int32 = 0, minor: Int32 = 0
        guard XTestQueryExtension(connection.handle, &event, &error, &major, &minor) != 0 else {
            throw ScreenError.extensionMissing("XTEST")
        }
        let (first, per, map) = try Self.keymap(connection)
        minKeycode = first
        perKeycode = per
        let count = map.count / max(1, per)
        guard perKeycode > 0 else { throw ScreenError.invalidArgument("the server returned an empty keymap") }
        for index in 0..<count {
            let code = UInt32(minKeycode + index)
            let syms = map[(index * perKeycode)..<((index + 1) * perKeycode)]
            if syms.allSatisfy({ $0 == 0 }) {
                spares.append(code)
                continue
            }
            // Keypad keys reach their second level with NumLock, not Shift (XKB's KEYPAD type): their level-1
            // keysyms (KP_0…) are bound to a spare keycode when needed instead.
            let keypad = syms.contains { (0xff80...0xffbd).contains($0) }
            for level in 0..<min(keypad ? 1 : 2, perKeycode) {
                let sym = syms[syms.startIndex + level]
                guard sym != 0, bySymbol[sym] == nil || bySymbol[sym]?.level == 1 && level == 0 else { continue }
                bySymbol[sym] = (code, level)
            }
            // A lone lower-case letter implies its upper case on level 1 (X's case rule).
            let first = syms[syms.startIndex]
            if perKeycode == 1 || syms[syms.startIndex + 1] == 0 {
                var lower: KeySym = 0, upper: KeySym = 0
                XConvertCase(first, &lower, &upper)
                if upper != first, bySymbol[upper] == nil { bySymbol[upper] = (code, 1) }
            }
        }
    }

    deinit { try? restoreMapping() }

    /// The server's current keymap (`XGetKeyboardMapping`): first keycode, keysyms per keycode, all keysyms.
    static func keymap(_ connection: DisplayConnection) throws -> (first: Int, perKeycode: Int, keysyms: [KeySym]) {
        var minCode: Int32 = 0, maxCode: Int32 = 0
        XDisplayKeycodes(connection.handle, &minCode, &maxCode)
        let count = Int(maxCode - minCode + 1)
        var per: Int32 = 0
        let map: [KeySym] = try connection.trapped { display in
            guard let raw = XGetKeyboardMapping(display, UInt8(minCode), Int32(count), &per) else { return [] }
            defer { XFree(raw) }
            return Array(UnsafeBufferPointer(start: raw, count: count * Int(per)))
        }
        return (Int(minCode), Int(per), map)
    }

    /// The keysym X uses for a Unicode scalar: Latin-1 keysyms are the code point, others `0x01000000 | cp`.
    public static func keysym(for scalar: Unicode.Scalar) -> KeySym {
        let v = KeySym(scalar.value)
        return (0x20...0x7e).contains(v) || (0xa0...0xff).contains(v) ? v : 0x0100_0000 | v
    }

    /// Converts text to the keysyms to press: newline is Return, tab is Tab, CR LF one Return.
    /// Other control characters are refused: they have no key.
    public static func keysyms(for text: String) throws -> [KeySym] {
        var result: [KeySym] = []
        var previousWasCR = false
        for scalar in text.unicodeScalars {
            defer { previousWasCR = scalar == "\r" }
            switch scalar {
            case "\n": if !previousWasCR { result.append(0xff0d) }  // Return
            case "\r": result.append(0xff0d)
            case "\t": result.append(0xff09)  // Tab
            default:
                guard scalar.value >= 0x20, !(0x7f...0x9f).contains(scalar.value) else {
                    throw ScreenError.untypeable(String(format: "control character U+%04X", scalar.value))
                }
                result.append(keysym(for: scalar))
            }
        }
        return result
    }

    /// Types `text` exactly into the focused window. `delay` spaces the characters for slow input methods;
    /// `interrupted` is polled between characters so Ctrl-C stops a long, slow run.
    public func type(_ text: String, delay: Duration? = nil, interrupted: () -> Bool = { false }) throws {
        let syms = try Self.keysyms(for: text)
        lock.lock()
        defer { lock.unlock() }
        try withCapsLockOff {
            let shift = try keycode(forModifier: 0xffe1)  // Shift_L
            var index = 0
            while index < syms.count {
                // Bind the characters the keymap lacks for as long a stretch as the spare keycodes allow.
                let end = try bindMissing(syms, from: index)
                for sym in syms[index..<end] {
                    if interrupted() { break }
                    try sendKey(sym, shift: shift)
                    if let delay {
                        connection.flush()
                        Thread.sleep(forTimeInterval: delay.seconds)
                    }
                }
                index = interrupted() ? syms.count : end
            }
            connection.flush()
        }
    }

    /// Presses and releases each combination in turn. Modifiers are released even when something fails.
    public func press(_ combos: [KeyCombo]) throws {
        for combo in combos { try hold(combo, for: nil) }
    }

    /// Holds a combination down for `duration` (nil: just press and release), polling `interrupted` so Ctrl-C
    /// still releases every key.
    public func hold(_ combo: KeyCombo, for duration: Duration?, interrupted: () -> Bool = { false }) throws {
        lock.lock()
        defer { lock.unlock() }
        let all = combo.modifiers + [combo.key]
        _ = try bindMissing(all, from: 0, allowPartial: false)
        var pressed: [UInt32] = []
        defer {
            for code in pressed.reversed() { XTestFakeKeyEvent(connection.handle, code, 0, 0) }
            connection.flush()
        }
        for (i, sym) in all.enumerated() {
            let (code, level) = try location(of: sym)
            // A second-level key (`A`, `exclam`) needs Shift unless the combination holds it already.
            if i == all.count - 1, level == 1, !combo.modifiers.contains(where: isShift) {
                let shift = try keycode(forModifier: 0xffe1)
                press(shift)
                pressed.append(shift)
            }
            press(code)
            pressed.append(code)
            if bound[sym] != nil { lastBoundUse = .now }
        }
        connection.flush()
        if let duration {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline, !interrupted() { Thread.sleep(forTimeInterval: 0.01) }
        }
    }

    /// Unbinds every spare keycode bound for typing, after waiting until clients have had `settleDelay` to read
    /// the events that used them.
    public func restoreMapping() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !bound.isEmpty else { return }
        waitForSettle()
        guard connection.isAlive else { bound = [:]; boundOrder = []; return }
        try connection.trapped { display in
            for code in boundOrder { setMapping(display, code, to: 0) }
        }
        for code in boundOrder { bySymbol = bySymbol.filter { $0.value.keycode != code } }
        bound = [:]
        boundOrder = []
    }

    /// Keycodes for modifier keysyms held during mouse actions.
    func modifierKeycodes(_ syms: [KeySym]) throws -> [UInt32] {
        lock.lock()
        defer { lock.unlock() }
        return try syms.map { try keycode(forModifier: $0) }
    }

    /// The keycode of a modifier keysym, binding a spare one if the keymap lacks it. Callers hold `lock`.
    private func keycode(forModifier sym: KeySym) throws -> UInt32 {
        if let hit = bySymbol[sym] { return hit.keycode }
        _ = try bindMissing([sym], from: 0, allowPartial: false)
        return try location(of: sym).keycode
    }

    // MARK: - Internals

    private func isShift(_ sym: KeySym) -> Bool { sym == 0xffe1 || sym == 0xffe2 }

    private func press(_ code: UInt32) { XTestFakeKeyEvent(connection.handle, code, 1, 0) }

    private func sendKey(_ sym: KeySym, shift: UInt32) throws {
        let (code, level) = try location(of: sym)
        if level == 1 { press(shift) }
        XTestFakeKeyEvent(connection.handle, code, 1, 0)
        XTestFakeKeyEvent(connection.handle, code, 0, 0)
        if level == 1 { XTestFakeKeyEvent(connection.handle, shift, 0, 0) }
        if bound[sym] != nil { lastBoundUse = .now }
    }

    private func location(of sym: KeySym) throws -> (keycode: UInt32, level: Int) {
        if let code = bound[sym] { return (code, 0) }
        if let hit = bySymbol[sym] { return hit }
        throw ScreenError.noSpareKeycode
    }

    /// Binds spare keycodes for the keysyms in `syms[start...]` the keymap lacks; returns where the stretch that
    /// could be bound ends. Rebinding a keycode first waits for clients to read its earlier events.
    private func bindMissing(_ syms: [KeySym], from start: Int, allowPartial: Bool = true) throws -> Int {
        var needed: [KeySym] = []
        var inUse = Set<UInt32>()
        var end = start
        while end < syms.count {
            let sym = syms[end]
            if let code = bound[sym] { inUse.insert(code) } else if bySymbol[sym] == nil, !needed.contains(sym) {
                if needed.count + inUse.count >= spares.count { break }
                needed.append(sym)
            }
            end += 1
        }
        if (spares.isEmpty && !needed.isEmpty) || (!allowPartial && end < syms.count) {
            throw ScreenError.noSpareKeycode
        }
        guard !needed.isEmpty else { return end }
        // Prefer never-bound spares; otherwise reuse the least recently bound ones not needed in this stretch.
        var free = spares.filter { code in !boundOrder.contains(code) }
        let reusable = boundOrder.filter { !inUse.contains($0) }
        if free.count < needed.count {
            waitForSettle()
            free += reusable.prefix(needed.count - free.count)
        }
        try connection.trapped { display in
            for (sym, code) in zip(needed, free) {
                if let old = bound.first(where: { $0.value == code })?.key { bound[old] = nil }
                setMapping(display, code, to: sym)
                bound[sym] = code
                boundOrder.removeAll { $0 == code }
                boundOrder.append(code)
            }
        }
        return end
    }

    private func setMapping(_ display: OpaquePointer, _ code: UInt32, to sym: KeySym) {
        // Both levels carry the keysym so a held Shift cannot change what the key types.
        var syms = [KeySym](repeating: 0, count: perKeycode)
        if sym != 0 {
            syms[0] = sym
            if perKeycode > 1 { syms[1] = sym }
        }
        XChangeKeyboardMapping(display, Int32(code), Int32(perKeycode), &syms, 1)
    }

    private func waitForSettle() {
        guard let last = lastBoundUse else { return }
        XSync(connection.handle, 0)
        let ready = last + settleDelay
        let now = ContinuousClock.now
        if now < ready { Thread.sleep(forTimeInterval: (ready - now).seconds) }
    }

    /// Caps Lock would invert letter case: switch it off while typing, back on after.
    private func withCapsLockOff(_ body: () throws -> Void) throws {
        var state = XkbStateRec()
        XkbGetState(connection.handle, UInt32(XkbUseCoreKbd), &state)
        let capsOn = state.locked_mods & UInt8(LockMask) != 0
        guard capsOn, let caps = bySymbol[0xffe5]?.keycode else { return try body() }  // Caps_Lock
        let toggle = {
            XTestFakeKeyEvent(self.connection.handle, caps, 1, 0)
            XTestFakeKeyEvent(self.connection.handle, caps, 0, 0)
        }
        toggle()
        defer { toggle(); connection.flush() }
        try body()
    }
}

extension Duration {
    /// The duration in seconds, for `Thread.sleep`.
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

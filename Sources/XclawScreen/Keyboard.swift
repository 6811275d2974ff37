import CX11
import CXTest
import Foundation
import XclawBase

/// Sends keys through XTest and types any Unicode text exactly.
///
/// Characters the keymap has are sent as their keycode (with Shift for the second level). Characters it lacks are
/// bound to spare keycodes (ones with no keysym) with `XChangeKeyboardMapping`, typed, and unbound later. A client
/// translates a keycode when it reads the event, not when we send it, so a spare keycode is rebound or restored only
/// `settleDelay` after its last use: xdotool restores at once and drops non-ASCII text at `--delay 0`.
/// Safe because the keymap tables and the spare keycodes are read and changed only under `lock`; `settleDelay` is a
/// constant.
public final class Keyboard: @unchecked Sendable {
    /// The connection keys are sent on.
    public let connection: DisplayConnection
    /// How long clients get to read key events of a rebound keycode before it is rebound again or restored.
    /// 300 ms by default (a busy app may lag behind a burst of keys); `XCLAW_KEYMAP_SETTLE_MS` overrides it.
    public let settleDelay: Duration = .milliseconds(
        Invocation.current.environment["XCLAW_KEYMAP_SETTLE_MS"].flatMap { Int($0) }.map { max(0, $0) } ?? 300)

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
    /// Whether a restore another xclaw process left pending was looked for (once, before the first key).
    private var adoptionChecked = false
    /// The `InputGuard` cover of the spare keycodes bound now, so a killed process's guard unbinds them.
    private var bindingsCover: UInt32?
    private let lock = NSLock()
    /// Where the keys of the call under way go: nil, the focused window through XTest; a window, as synthetic events
    /// (set and cleared under `lock` by each call that sends).
    private var sink: UInt?
    /// The modifier mask the synthetic events carry: what the keys sent so far hold down.
    private var sinkState: UInt32 = 0
    /// Modifier keycodes and their masks (`XGetModifierMapping`), read when first needed.
    private var modifierMasks: [UInt32: UInt32]?
    /// Keycodes that held one keysym on every level they filled when the keymap was read: how a typer's binding of
    /// a spare keycode reads back (another xclaw's, xdotool's), and a few keys of the keymap's own (BackSpace). Only
    /// these are checked again before use (`forgetVanished`), so plain text costs no keymap read.
    private var borrowed: Set<UInt32> = []

    /// Reads the keymap (`XGetKeyboardMapping`); fails when the server lacks XTEST.
    public init(connection: DisplayConnection) throws {
        self.connection = connection
        try connection.requireXTest()
        let (first, per, map) = try Self.keymap(connection)
        minKeycode = first
        perKeycode = per
        let count = map.count / max(1, per)
        guard perKeycode > 0 else { throw ScreenError.invalidArgument("the server returned an empty keymap") }
        for index in 0..<count {
            let row = map[(index * perKeycode)..<((index + 1) * perKeycode)]
            if row.allSatisfy({ $0 == 0 }) {
                spares.append(UInt32(minKeycode + index))
            } else if let sym = row.first, sym != 0, row.allSatisfy({ $0 == 0 || $0 == sym }) {
                borrowed.insert(UInt32(minKeycode + index))
            }
        }
        // What each key really produces without and with Shift, in the first layout group, as XKB computes it for
        // clients (`XkbTranslateKeyCode`). Reading the core columns instead would assume Shift reaches column 2,
        // which is false for keypad keys (NumLock does), Sys_Req/Break (Alt/Control do) and others: those keysyms
        // are bound to a spare keycode when needed.
        try connection.trapped { display in
            let mask = UInt32(XkbKeyTypesMask | XkbKeySymsMask | XkbModifierMapMask)
            guard let xkb = XkbGetMap(display, mask, UInt32(XkbUseCoreKbd)) else { return }
            defer { XkbFreeKeyboard(xkb, 0, 1) }
            for index in 0..<count {
                let code = UInt32(minKeycode + index)
                for (level, mods) in [(0, UInt32(0)), (1, UInt32(ShiftMask))] {
                    var consumed: UInt32 = 0
                    var sym: KeySym = 0
                    guard XkbTranslateKeyCode(xkb, KeyCode(code), mods, &consumed, &sym) != 0, sym != 0 else {
                        continue
                    }
                    if bySymbol[sym] == nil || (level == 0 && bySymbol[sym]?.level == 1) {
                        bySymbol[sym] = (code, level)
                    }
                }
            }
        }
    }

    deinit { try? restoreMapping() }

    /// The server's current keymap (`XGetKeyboardMapping`): first keycode, keysyms per keycode, all keysyms.
    static func keymap(_ connection: DisplayConnection) throws -> (first: Int, perKeycode: Int, keysyms: [KeySym]) {
        try connection.trapped { readKeymap($0) }
    }

    /// `keymap` for callers already inside `trapped`.
    private static func readKeymap(_ display: OpaquePointer) -> (first: Int, perKeycode: Int, keysyms: [KeySym]) {
        var minCode: Int32 = 0, maxCode: Int32 = 0
        XDisplayKeycodes(display, &minCode, &maxCode)
        let count = Int(maxCode - minCode + 1)
        var per: Int32 = 0
        guard count > 0, let raw = XGetKeyboardMapping(display, UInt8(minCode), Int32(count), &per) else {
            return (Int(minCode), 0, [])
        }
        defer { XFree(raw) }
        return (Int(minCode), Int(per), Array(UnsafeBufferPointer(start: raw, count: count * Int(per))))
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

    /// Types `text` exactly into the focused window, or into `window` as synthetic events (`XSendEvent`, which apps
    /// may ignore). `delay` spaces the characters for slow input methods; `interrupted` is polled between characters
    /// so Ctrl-C stops a long, slow run.
    public func type(
        _ text: String, delay: Duration? = nil, to window: UInt? = nil, interrupted: () -> Bool = { false }
    ) throws {
        let syms = try Self.keysyms(for: text)
        lock.lock()
        defer { lock.unlock() }
        defer { sink = nil }
        try sending(to: window)
        try adoptPendingRestore()
        try forgetVanished(syms)
        // Fail before sending anything when a character can never be typed.
        if spares.isEmpty, syms.contains(where: { bySymbol[$0] == nil && bound[$0] == nil }) {
            throw ScreenError.noSpareKeycode
        }
        try withTypingState {
            let shift = try keycode(forModifier: 0xffe1)  // Shift_L
            // Xlib sends its buffer when it fills, which can fall between a press and its release: the keys this text
            // may press are covered while it types, so a kill then leaves none down.
            let keys = Set(syms.compactMap { bySymbol[$0]?.keycode } + spares + [shift])
            let covered = InputGuard.cover(display: connection.name, keys: keys.sorted())
            defer { InputGuard.uncover(covered) }
            var index = 0
            while index < syms.count {
                // Bind the characters the keymap lacks for as long a stretch as the spare keycodes allow.
                let end = try bindMissing(syms, from: index)
                for sym in syms[index..<end] {
                    if interrupted() { break }
                    try connection.checkAlive()
                    try sendKey(sym, shift: shift)
                    if let delay {
                        connection.flush()
                        Thread.sleep(forTimeInterval: delay.seconds)
                    }
                }
                index = interrupted() ? syms.count : end
            }
            connection.flush()
            try connection.checkAlive()
        }
        let name = connection.name
        InputObserver.report { InputEvent(display: name, action: "type", point: nil, detail: text) }
    }

    /// Presses and releases each combination in turn, into the focused window or as synthetic events into `window`.
    /// Modifiers are released even when something fails.
    public func press(_ combos: [KeyCombo], to window: UInt? = nil) throws {
        for combo in combos { try hold(combo, for: nil, to: window) }
        let name = connection.name
        InputObserver.report {
            InputEvent(display: name, action: "key", point: nil, detail: combos.map(\.text).joined(separator: " "))
        }
    }

    /// Holds a combination down for `duration` (nil: just press and release), polling `interrupted` so Ctrl-C
    /// still releases every key.
    public func hold(
        _ combo: KeyCombo, for duration: Duration?, to window: UInt? = nil, interrupted: () -> Bool = { false }
    ) throws {
        lock.lock()
        defer { lock.unlock() }
        defer { sink = nil }
        try sending(to: window)
        try adoptPendingRestore()
        let all = combo.modifiers + [combo.key]
        try forgetVanished(all)
        _ = try bindMissing(all, from: 0, allowPartial: false)
        var pressed: [UInt32] = []
        var covered: UInt32?
        defer {
            for code in pressed.reversed() { emit(code, down: false) }
            connection.flush()
            InputGuard.uncover(covered)
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
        // A combination held for a while is covered: if this process is killed mid-hold, its guard releases it.
        if let duration, duration > .zero, sink == nil {
            covered = InputGuard.cover(display: connection.name, keys: pressed)
        }
        connection.flush()
        try connection.checkAlive()
        if let duration {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline, !interrupted() {
                try connection.poll()  // a server that dies while a key is held ends the hold at once
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    /// When `restoreMapping` can unbind without waiting; nil when nothing is bound. A resident process restores on
    /// a timer at this instant instead of making the command that typed wait.
    public var restoreDue: ContinuousClock.Instant? {
        lock.withLock { bound.isEmpty ? nil : (lastBoundUse ?? .now) + settleDelay }
    }

    /// Unbinds every spare keycode bound for typing, after waiting until clients have had `settleDelay` to read
    /// the events that used them.
    public func restoreMapping() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !bound.isEmpty else { return }
        waitForSettle()
        guard connection.isAlive else {
            (bound, boundOrder) = ([:], [])
            coverBindings()
            return
        }
        try connection.trapped { display in
            for code in boundOrder { setMapping(display, code, to: 0) }
        }
        bound = [:]
        boundOrder = []
        coverBindings()
    }

    /// A spare keycode bound for typing and the keysym it holds.
    public struct Binding: Sendable, Hashable {
        /// The keycode.
        public var code: UInt32
        /// What it was bound to.
        public var sym: KeySym

        /// A binding, as `CODE=SYM` on a command line.
        public init(code: UInt32, sym: KeySym) { (self.code, self.sym) = (code, sym) }
    }

    /// Hands the spare keycodes bound for typing to someone who restores them when due (`unbind`, in a detached
    /// helper), so the command that typed can exit now; this keyboard forgets them. Nil when none is bound. The
    /// requests sent so far are flushed first.
    public func handOverBindings() -> (due: ContinuousClock.Instant, bindings: [Binding])? {
        lock.lock()
        defer { lock.unlock() }
        guard !bound.isEmpty else { return nil }
        connection.request { XSync($0, 0) }
        let due = (lastBoundUse ?? .now) + settleDelay
        let byCode = Dictionary(bound.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        let bindings = boundOrder.compactMap { code in byCode[code].map { Binding(code: code, sym: $0) } }
        bound = [:]
        boundOrder = []
        coverBindings()
        return (due, bindings)
    }

    /// The root property where a pending restore is announced: a token the restorer holds, then keycode/keysym
    /// pairs. A process that types before the restorer ran takes the bindings over and removes the announcement, and
    /// a restorer unbinds only while its token is announced, so a keycode is never unbound under a process that is
    /// using it: `xclaw type "€"; xclaw type "€"` in a row stays exact. (Two typers that overlap before either
    /// announced can leave the first's keycodes bound: harmless, like a crash's.)
    static let pendingRestoreProperty = "_XCLAW_PENDING_KEYMAP_RESTORE"

    /// A token for a restore announcement: 32 random bits (what a format-32 property holds), never 0.
    public static func restoreToken() -> UInt32 { UInt32.random(in: 1...UInt32.max) }

    /// Announces that the holder of `token` (a detached restorer) will unbind `bindings` when they are due. Made
    /// before the restorer starts, so it always finds its announcement unless another process took it over.
    public func announcePendingRestore(token: UInt32, _ bindings: [Binding]) throws {
        let atom = connection.atom(Self.pendingRestoreProperty)
        var values: [CLong] = [CLong(token)]
        for binding in bindings { values += [CLong(binding.code), CLong(bitPattern: UInt(binding.sym))] }
        try connection.trapped { display in
            values.withUnsafeBytes { raw in
                _ = XChangeProperty(
                    display, connection.root, atom, Atom(XA_CARDINAL), 32, PropModeReplace,
                    raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(values.count))
            }
        }
    }

    /// Takes over a restore another process left pending (before this keyboard sends its first key): the
    /// announcement goes, so its restorer leaves the keycodes alone, and they become this keyboard's to restore. The
    /// keysyms they hold are no longer taken for keymap entries (they would be typed with keycodes restored later).
    /// Callers hold `lock`.
    private func adoptPendingRestore() throws {
        guard !adoptionChecked else { return }
        adoptionChecked = true
        let atom = connection.atom(Self.pendingRestoreProperty)
        try connection.trapped { display in
            connection.request { XGrabServer($0) }
            defer { connection.request { XUngrabServer($0) } }
            guard let pending = Self.pendingRestore(display, root: connection.root, atom: atom) else { return }
            XDeleteProperty(display, connection.root, atom)
            let current = Self.readKeymap(display)
            for binding in pending.bindings {
                if bySymbol[binding.sym]?.keycode == binding.code { bySymbol[binding.sym] = nil }
                if !spares.contains(binding.code) { spares.append(binding.code) }
                let i = (Int(binding.code) - current.first) * current.perKeycode
                guard i >= 0, i < current.keysyms.count, current.keysyms[i] == binding.sym else { continue }
                bound[binding.sym] = binding.code
                boundOrder.append(binding.code)
            }
            if !pending.bindings.isEmpty { lastBoundUse = .now }
        }
        if !bound.isEmpty { coverBindings() }
    }

    /// Forgets keymap entries for `syms` whose keycode no longer holds that keysym: another process's typing
    /// binding (a spare keycode bound to ✓), seen in the keymap when this keyboard read it and unbound or rebound
    /// since (a second daemon on the display restored it). A long-lived keyboard (a daemon's) would otherwise send
    /// that keycode for ever and type nothing, or the wrong character; it binds a spare of its own instead. A keycode
    /// left empty is a spare again. (A binding still live is taken as it is, and its owner may unbind it under this
    /// keyboard's keys: two daemons typing on one display are not yet exact.) One keymap read, only when `syms` use
    /// a `borrowed` keycode; callers hold `lock`.
    private func forgetVanished(_ syms: [KeySym]) throws {
        let suspects = Set(
            syms.filter { sym in
                bound[sym] == nil && bySymbol[sym].map { borrowed.contains($0.keycode) } == true
            })
        guard !suspects.isEmpty else { return }
        let current = try connection.trapped { Self.readKeymap($0) }
        guard current.perKeycode > 0 else { return }
        for sym in suspects {
            guard let code = bySymbol[sym]?.keycode else { continue }
            let i = (Int(code) - current.first) * current.perKeycode
            guard i >= 0, i + current.perKeycode <= current.keysyms.count else { continue }
            let keys = current.keysyms[i..<(i + current.perKeycode)]
            guard !keys.contains(sym) else { continue }
            bySymbol[sym] = nil
            borrowed.remove(code)
            if keys.allSatisfy({ $0 == 0 }), !spares.contains(code) { spares.append(code) }
        }
    }

    /// The pending restore announced on the root window, if any.
    private static func pendingRestore(_ display: OpaquePointer, root: Window, atom: Atom)
        -> (token: UInt32, bindings: [Binding])?
    {
        guard let value = WindowManager.property(display, root, atom, type: Atom(XA_CARDINAL)), value.format == 32
        else { return nil }
        let values = value.bytes.withUnsafeBytes { Array($0.bindMemory(to: CLong.self)) }
        guard let token = values.first else { return nil }
        let pairs = stride(from: 1, to: values.count - 1, by: 2).map {
            Binding(code: UInt32(truncatingIfNeeded: values[$0]), sym: KeySym(UInt(bitPattern: values[$0 + 1])))
        }
        return (UInt32(truncatingIfNeeded: token), pairs)
    }

    /// Unbinds the keycodes of `bindings` that still hold what was bound, under a server grab: another xclaw may have
    /// bound one to something else meanwhile, and that binding is left alone. A restorer (`token`) unbinds only while
    /// its announcement stands, and removes it: a process that took its bindings over removed it already.
    public func unbind(_ bindings: [Binding], token: UInt32? = nil) throws {
        lock.lock()
        defer { lock.unlock() }
        let atom = connection.atom(Self.pendingRestoreProperty)
        try connection.trapped { display in
            connection.request { XGrabServer($0) }
            defer { connection.request { XUngrabServer($0) } }
            if let token {
                guard Self.pendingRestore(display, root: connection.root, atom: atom)?.token == token else { return }
                XDeleteProperty(display, connection.root, atom)
            }
            let current = Self.readKeymap(display)
            for binding in bindings {
                let i = (Int(binding.code) - current.first) * current.perKeycode
                guard i >= 0, i < current.keysyms.count, current.keysyms[i] == binding.sym else { continue }
                setMapping(display, binding.code, to: 0)
            }
        }
    }

    /// The keycodes whose first level holds `sym` in the server's keymap now (for checking what typing left bound).
    public func keycodes(holding sym: KeySym) throws -> [UInt32] {
        try connection.trapped { display in
            let current = Self.readKeymap(display)
            return stride(from: 0, to: current.keysyms.count, by: max(1, current.perKeycode))
                .filter { current.keysyms[$0] == sym }
                .map { UInt32(current.first + $0 / max(1, current.perKeycode)) }
        }
    }

    /// The keycodes that press `combo` with the keymap as it is, in press order (Shift added for a second-level key);
    /// throws `notHoldable` for a key the keymap lacks: a key held across commands cannot sit on a spare keycode,
    /// which another command would rebind under it.
    public func keycodesToHold(_ combo: KeyCombo) throws -> [UInt32] {
        lock.lock()
        defer { lock.unlock() }
        var codes: [UInt32] = []
        let all = combo.modifiers + [combo.key]
        for (i, sym) in all.enumerated() {
            guard let hit = bySymbol[sym] else { throw ScreenError.notHoldable(combo.text) }
            if i == all.count - 1, hit.level == 1, !combo.modifiers.contains(where: isShift),
                let shift = bySymbol[0xffe1]?.keycode
            {
                codes.append(shift)
            }
            codes.append(hit.keycode)
        }
        return codes
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

    /// Covers the spare keycodes bound now (the new cover first, then the old one dropped: never a gap). Callers hold
    /// `lock`.
    private func coverBindings() {
        let byCode = Dictionary(bound.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        let bindings = boundOrder.compactMap { code in byCode[code].map { Binding(code: code, sym: $0) } }
        let previous = bindingsCover
        bindingsCover = InputGuard.cover(display: connection.name, bindings: bindings)
        InputGuard.uncover(previous)
    }

    private func isShift(_ sym: KeySym) -> Bool { sym == 0xffe1 || sym == 0xffe2 }

    private func press(_ code: UInt32) { emit(code, down: true) }

    /// A press or release where the call's keys go: XTest, or a synthetic event carrying the modifiers held so far.
    private func emit(_ code: UInt32, down: Bool) {
        guard let sink else { return connection.fakeKey(code, down: down) }
        let mask = modifierMasks?[code] ?? 0
        // As the server reports it: a modifier's own press does not carry its mask, its release does.
        connection.sendKey(code, down: down, state: sinkState, to: sink)
        sinkState = down ? sinkState | mask : sinkState & ~mask
    }

    /// Makes the call under way send to `window` (nil: XTest), reading the modifier map the first time.
    private func sending(to window: UInt?) throws {
        sink = window
        sinkState = 0
        guard window != nil, modifierMasks == nil else { return }
        modifierMasks = try Self.modifierMap(connection)
    }

    /// Each modifier keycode and the mask it sets (Shift 1, Lock 2, Control 4, Mod1 8 … Mod5 128).
    static func modifierMap(_ connection: DisplayConnection) throws -> [UInt32: UInt32] {
        try connection.trapped { display in
            guard let map = XGetModifierMapping(display) else { return [:] }
            defer { XFreeModifiermap(map) }
            let per = Int(map.pointee.max_keypermod)
            var masks: [UInt32: UInt32] = [:]
            for modifier in 0..<8 {
                for slot in 0..<per {
                    let code = UInt32(map.pointee.modifiermap[modifier * per + slot])
                    if code != 0 { masks[code] = UInt32(1 << modifier) }
                }
            }
            return masks
        }
    }

    /// Runs `body` with the modifier keys that are down now released, and Caps Lock off, as xdotool's
    /// `--clearmodifiers` does (a hotkey's held Ctrl must not turn `key a` into ctrl+a); presses them again and puts
    /// Caps Lock back after, even when `body` fails.
    public func withModifiersCleared<T>(_ body: () throws -> T) throws -> T {
        let (held, capsLocked): ([UInt32], Bool) = try lock.withLock {
            let masks = try modifierMasks ?? Self.modifierMap(connection)
            modifierMasks = masks
            return try connection.trapped { display in
                var keys = [CChar](repeating: 0, count: 32)
                XQueryKeymap(display, &keys)
                let down = masks.keys.filter { code in
                    code < 256 && UInt8(bitPattern: keys[Int(code / 8)]) & UInt8(1 << (code % 8)) != 0
                }
                var state = XkbStateRec()
                XkbGetState(display, UInt32(XkbUseCoreKbd), &state)
                return (down.sorted(), state.locked_mods & UInt8(LockMask) != 0)
            }
        }
        let caps = capsLocked ? lock.withLock { bySymbol[0xffe5]?.keycode } : nil  // Caps_Lock
        let toggleCaps = {
            guard let caps else { return }
            self.connection.fakeKey(caps, down: true)
            self.connection.fakeKey(caps, down: false)
        }
        for code in held { connection.fakeKey(code, down: false) }
        toggleCaps()
        connection.flush()
        defer {
            toggleCaps()
            for code in held { connection.fakeKey(code, down: true) }
            connection.flush()
        }
        return try body()
    }

    private func sendKey(_ sym: KeySym, shift: UInt32) throws {
        let (code, level) = try location(of: sym)
        if level == 1 { press(shift) }
        emit(code, down: true)
        emit(code, down: false)
        if level == 1 { emit(shift, down: false) }
        if bound[sym] != nil { lastBoundUse = .now }
    }

    private func location(of sym: KeySym) throws -> (keycode: UInt32, level: Int) {
        if let code = bound[sym] { return (code, 0) }
        if let hit = bySymbol[sym] { return hit }
        throw ScreenError.noSpareKeycode
    }

    /// Binds spare keycodes for the keysyms in `syms[start...]` the keymap lacks; returns where the stretch that
    /// could be bound ends (always past `start`, or it throws `noSpareKeycode`). Rebinding a keycode first waits for
    /// clients to read its earlier events. Candidates are checked again under a server grab, so a keycode another
    /// xclaw (or xdotool) bound meanwhile is left alone.
    private func bindMissing(_ syms: [KeySym], from start: Int, allowPartial: Bool = true) throws -> Int {
        var needed: [KeySym] = []
        var inUse = Set<UInt32>()
        var end = start
        while end < syms.count {
            let sym = syms[end]
            if let code = bound[sym] {
                inUse.insert(code)
            } else if bySymbol[sym] == nil, !needed.contains(sym) {
                if needed.count + inUse.count >= spares.count { break }
                needed.append(sym)
            }
            end += 1
        }
        if !needed.isEmpty {
            // Prefer never-bound spares; else reuse the least recently bound ones this stretch does not use.
            var candidates = spares.filter { !boundOrder.contains($0) }
            if candidates.count < needed.count {
                waitForSettle()
                candidates += boundOrder.filter { !inUse.contains($0) }
            }
            var planned: UInt32?
            defer { InputGuard.uncover(planned) }
            try connection.trapped { display in
                connection.request { XGrabServer($0) }
                defer { connection.request { XUngrabServer($0) } }
                try connection.checkAlive()
                let current = Self.readKeymap(display)
                try connection.checkAlive()
                let mine = Dictionary(bound.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
                let available = candidates.filter { code in
                    let i = (Int(code) - current.first) * current.perKeycode
                    guard i >= 0, i + current.perKeycode <= current.keysyms.count else { return false }
                    let syms = current.keysyms[i..<(i + current.perKeycode)]
                    return syms.allSatisfy { $0 == 0 } || (mine[code].map { syms.first == $0 } ?? false)
                }
                // Covered before anyone can see them (the server is grabbed): a kill right after the grab ends must
                // not leave them bound. `coverBindings` below replaces this cover with the exact set.
                planned = InputGuard.cover(
                    display: connection.name,
                    bindings: bound.map { Binding(code: $0.value, sym: $0.key) }
                        + zip(needed, available).map { Binding(code: $1, sym: $0) })
                for (sym, code) in zip(needed, available) {
                    if let old = mine[code] { bound[old] = nil }
                    try connection.checkAlive()
                    setMapping(display, code, to: sym)
                    bound[sym] = code
                    boundOrder.removeAll { $0 == code }
                    boundOrder.append(code)
                }
            }
            coverBindings()
            // The stretch ends at the first character that could not be bound.
            end = start
            while end < syms.count, bound[syms[end]] != nil || bySymbol[syms[end]] != nil { end += 1 }
        }
        if end == start && start < syms.count || (!allowPartial && end < syms.count) {
            throw ScreenError.noSpareKeycode
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
        connection.request { XChangeKeyboardMapping($0, Int32(code), Int32(perKeycode), &syms, 1) }
    }

    private func waitForSettle() {
        guard let last = lastBoundUse else { return }
        connection.request { XSync($0, 0) }
        let ready = last + settleDelay
        let now = ContinuousClock.now
        if now < ready { Thread.sleep(forTimeInterval: (ready - now).seconds) }
    }

    /// Caps Lock would invert letter case and another layout group would change every key: switch Caps Lock off
    /// and lock the first group (whose keys were read) while typing, and put both back after.
    private func withTypingState(_ body: () throws -> Void) throws {
        // Synthetic events carry their own state (no Caps Lock, the first group): the server's is not theirs.
        if sink != nil { return try body() }
        var state = XkbStateRec()
        try connection.checkAlive()
        connection.request { XkbGetState($0, UInt32(XkbUseCoreKbd), &state) }
        try connection.checkAlive()
        let capsOn = state.locked_mods & UInt8(LockMask) != 0
        let caps = capsOn ? bySymbol[0xffe5]?.keycode : nil  // Caps_Lock
        let group = UInt32(state.locked_group)
        let toggleCaps = {
            guard let caps else { return }
            self.connection.fakeKey(caps, down: true)
            self.connection.fakeKey(caps, down: false)
        }
        toggleCaps()
        if state.group != 0 { connection.request { XkbLockGroup($0, UInt32(XkbUseCoreKbd), 0) } }
        defer {
            toggleCaps()
            if state.group != 0 { connection.request { XkbLockGroup($0, UInt32(XkbUseCoreKbd), group) } }
            connection.flush()
        }
        try body()
    }
}

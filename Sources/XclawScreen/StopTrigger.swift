import CX11
import Foundation
import Synchronization
import XclawBase

/// What stopped a run from the display.
public enum StopCause: Sendable, Equatable, CustomStringConvertible {
    /// The stop hotkey was pressed (its combination as configured).
    case hotkey(String)
    /// The pointer was parked in a screen corner (the failsafe).
    case corner(Point)

    /// The cause in words, for the session's error and the log.
    public var description: String {
        switch self {
        case .hotkey(let combo): return "the stop hotkey \(combo) was pressed"
        case .corner(let p): return "the pointer was parked in a screen corner (\(p.x),\(p.y)): the failsafe"
        }
    }
}

/// The emergency stop on a display: a global hotkey grabbed on its root window (so it works whatever window has the
/// focus, and the focused app never sees it) and, optionally, PyAutoGUI's failsafe (the pointer parked in a corner).
/// It owns a connection of its own and one thread that waits on it, so a run blocked anywhere (a model request, a
/// long tool) is still stopped at once.
public final class StopTrigger: Sendable {
    /// The default combination: nothing else uses Pause with two modifiers.
    public static let defaultHotkey = "ctrl+alt+Pause"

    /// The combination grabbed, as given.
    public let hotkey: String?
    private let wake: (read: Int32, write: Int32)
    private let finished = CancelFlag()
    private let once = Mutex<Bool>(false)

    /// Grabs `hotkey` (nil: none) on `display` and, with `failsafe`, watches the pointer every 50 ms; `onStop` is
    /// called once, on the watcher's thread, when either fires. Throws when the display cannot be opened, the
    /// combination names no key, or another client already holds it (then the message says which).
    public init(
        display: String?, hotkey: String? = StopTrigger.defaultHotkey, failsafe: Bool = false,
        onStop: @escaping @Sendable (StopCause) -> Void
    ) throws {
        self.hotkey = hotkey
        let connection = try DisplayConnection(name: display)
        let grabs = try hotkey.map { try Self.grab($0, on: connection) } ?? []
        wake = try Subprocess.pipe()
        let (wakeRead, hotkeyName) = (wake.read, hotkey ?? "")
        let done = finished
        let worker = Thread {
            Self.watch(
                connection, grabs: grabs, failsafe: failsafe, wake: wakeRead, finished: done,
                hotkey: hotkeyName, onStop: onStop)
        }
        worker.name = "xclaw stop trigger"
        worker.start()
    }

    deinit {
        cancel()
        // The watcher closes the read end as it ends; the write end is this object's (a daemon runs thousands).
        close(wake.write)
    }

    /// Stops watching and releases the grab; the watcher's connection closes with its thread.
    public func cancel() {
        let first = once.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        finished.set()
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
    }

    /// The keycode and modifier mask of `combo`, grabbed on the root window with every combination of the lock
    /// modifiers (Caps Lock, Num Lock, Scroll Lock), which X counts as part of the state.
    private static func grab(_ combo: String, on connection: DisplayConnection) throws -> [(UInt32, UInt32)] {
        let parsed = try KeyCombo.parse(combo)
        let (code, mask) = try connection.trapped { display -> (UInt32, UInt32) in
            let code = UInt32(XKeysymToKeycode(display, parsed.key))
            var mask: UInt32 = 0
            if let map = XGetModifierMapping(display) {
                defer { XFreeModifiermap(map) }
                let perModifier = Int(map.pointee.max_keypermod)
                for sym in parsed.modifiers {
                    let modCode = XKeysymToKeycode(display, sym)
                    guard modCode != 0 else { continue }
                    for row in 0..<8 {
                        for column in 0..<perModifier
                        where map.pointee.modifiermap[row * perModifier + column] == modCode {
                            mask |= 1 << UInt32(row)
                        }
                    }
                }
            }
            return (code, mask)
        }
        guard code != 0 else {
            throw ScreenError.invalidArgument(
                "the stop hotkey \(combo) names a key this display's keymap lacks: choose another (stop_key in "
                    + "the config file)")
        }
        guard mask != 0 || parsed.modifiers.isEmpty else {
            throw ScreenError.invalidArgument(
                "the modifiers of the stop hotkey \(combo) are not modifiers on this display: choose others")
        }
        let locks: [UInt32] = [0, UInt32(LockMask), UInt32(Mod2Mask), UInt32(Mod5Mask)]
        var masks = Set<UInt32>()
        for a in locks { for b in locks { masks.insert(mask | a | b) } }
        do {
            try connection.trapped { display in
                for m in masks {
                    XGrabKey(display, Int32(code), m, connection.root, 1, GrabModeAsync, GrabModeAsync)
                }
            }
        } catch ScreenError.protocolError(let code, _, _, _) where code == Int(BadAccess) {
            throw ScreenError.invalidArgument(
                "another program already holds the stop hotkey \(combo) on this display: close it, or choose "
                    + "another key (stop_key in the config file)")
        }
        return masks.map { (code, $0) }
    }

    /// The watcher's loop: wait on the connection and the wake pipe (50 ms at most, for the failsafe), hand every
    /// grabbed key press to `onStop`, and check the pointer's corner when asked to.
    private static func watch(
        _ connection: DisplayConnection, grabs: [(UInt32, UInt32)], failsafe: Bool, wake: Int32,
        finished: CancelFlag, hotkey: String, onStop: @Sendable (StopCause) -> Void
    ) {
        defer {
            connection.request { display in
                for (code, mask) in grabs { XUngrabKey(display, Int32(code), mask, connection.root) }
                XFlush(display)
            }
            close(wake)
        }
        let codes = Set(grabs.map(\.0))
        var fired = false
        let screen = (try? connection.screenSize()) ?? Size(width: 0, height: 0)
        while !finished.isSet, connection.isAlive {
            var fds = [
                pollfd(fd: XConnectionNumber(connection.handle), events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            _ = Glibc.poll(&fds, 2, 50)
            if fds[1].revents != 0 { return }
            var pressed = false
            connection.request { display in
                while XPending(display) > 0 {
                    var event = XEvent()
                    XNextEvent(display, &event)
                    if event.type == KeyPress, codes.contains(UInt32(event.xkey.keycode)) { pressed = true }
                }
            }
            if pressed, !fired {
                fired = true
                onStop(.hotkey(hotkey))
            }
            if failsafe, !fired, screen.width > 0, let p = pointer(connection),
                p.x <= 0 || p.x >= screen.width - 1, p.y <= 0 || p.y >= screen.height - 1
            {
                fired = true
                onStop(.corner(p))
            }
        }
    }

    /// Where the pointer is, or nil when the server did not answer.
    private static func pointer(_ connection: DisplayConnection) -> Point? {
        var point: Point?
        connection.request { display in
            var rootReturn: Window = 0, child: Window = 0
            var rx: Int32 = 0, ry: Int32 = 0, wx: Int32 = 0, wy: Int32 = 0
            var mask: UInt32 = 0
            if XQueryPointer(display, connection.root, &rootReturn, &child, &rx, &ry, &wx, &wy, &mask) != 0 {
                point = Point(x: Int(rx), y: Int(ry))
            }
        }
        return point
    }
}

extension InputController {
    /// Releases every key and mouse button the server holds down, whoever pressed it: what a stopped run leaves held
    /// (a `left_mouse_down`, a key mid-`hold_key`) must not stay held for the next person or run.
    /// Returns how many it released.
    @discardableResult
    public func releaseEverything() throws -> Int {
        let (keys, buttons) = try pressedNow()
        for code in keys { connection.fakeKey(code, down: false) }
        for button in buttons { connection.fakeButton(button, down: false) }
        try connection.sync()
        return keys.count + buttons.count
    }
}

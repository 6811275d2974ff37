import CX11
import Foundation
import Logging
import XclawBase

/// Which windows a selection keeps, as `xdotool search` picks them; every criterion given must hold (logical AND).
public struct WindowFilter: Sendable, Equatable {
    /// `WM_CLASS` class part, compared whole and case-insensitively (`XTerm`, `xterm`).
    public var className: String?
    /// `WM_CLASS` instance part, compared whole and case-insensitively.
    public var instance: String?
    /// `_NET_WM_PID`; windows that do not set it never match.
    public var pid: Int?
    /// A regular expression (ICU/NSRegularExpression, case-insensitive) found anywhere in the title.
    public var titlePattern: String?
    /// Only windows that are mapped and viewable (`map_state == IsViewable`: they and every ancestor are mapped).
    public var visibleOnly = false

    /// A filter; nothing given keeps every window.
    public init(
        className: String? = nil, instance: String? = nil, pid: Int? = nil, titlePattern: String? = nil,
        visibleOnly: Bool = false
    ) {
        (self.className, self.instance, self.pid) = (className, instance, pid)
        (self.titlePattern, self.visibleOnly) = (titlePattern, visibleOnly)
    }

    /// True when no criterion is given.
    public var isEmpty: Bool {
        className == nil && instance == nil && pid == nil && titlePattern == nil && !visibleOnly
    }

    /// The compiled title pattern; a bad pattern is bad input (exit 2) naming what is wrong.
    public func compiledPattern() throws -> NSRegularExpression? {
        guard let titlePattern else { return nil }
        do {
            return try NSRegularExpression(pattern: titlePattern, options: [.caseInsensitive])
        } catch {
            throw ScreenError.invalidArgument(
                "--regex \"\(titlePattern)\" is not a valid regular expression (ICU syntax, e.g. '^Untitled.*Editor$')")
        }
    }

    /// Whether a window passes every criterion except `visibleOnly`, which needs the server (see `WindowManager`).
    func matches(_ window: WindowInfo, pattern: NSRegularExpression?) -> Bool {
        if let className, window.className.lowercased() != className.lowercased() { return false }
        if let instance, window.instance.lowercased() != instance.lowercased() { return false }
        if let pid, window.pid != pid { return false }
        if let pattern {
            let range = NSRange(window.title.startIndex..., in: window.title)
            if pattern.firstMatch(in: window.title, range: range) == nil { return false }
        }
        return true
    }
}

/// A state a window manager keeps for a window (`_NET_WM_STATE_…`).
public enum WindowState: String, Sendable, CaseIterable, Codable {
    case maximized, fullscreen, above

    /// The `_NET_WM_STATE` atoms that make the state.
    var atoms: [String] {
        switch self {
        case .maximized: ["_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ"]
        case .fullscreen: ["_NET_WM_STATE_FULLSCREEN"]
        case .above: ["_NET_WM_STATE_ABOVE"]
        }
    }
}

/// The virtual desktops a window manager offers.
public struct Desktops: Codable, Sendable, Equatable {
    /// The current desktop, from 0.
    public var current: Int
    /// How many there are.
    public var count: Int
}

/// Window control: through EWMH client messages to the root window when a window manager runs (it owns the frames and
/// would undo direct changes), directly through Xlib when none does. Every action waits for its own effect and throws
/// `ScreenError.ignored` when it does not show within `WindowManager.effectDeadline`.
extension WindowManager {
    /// How long an action's effect may take to show: window managers act asynchronously, but within a few frames.
    public static let effectDeadline: Duration = .seconds(2)
    /// `_NET_WM_STATE` source indication 2: a pager or tool acting for the user (window managers obey those).
    private static let sourceIndication = 2

    // MARK: - Selection

    /// The windows that pass `filter`, top-most first. Without `visibleOnly`, unmapped windows are searched as
    /// `xdotool search` does only when `includeHidden` says so.
    public func list(matching filter: WindowFilter, includeHidden: Bool = false) throws -> [WindowInfo] {
        let pattern = try filter.compiledPattern()
        let candidates = try list(includeHidden: includeHidden && !filter.visibleOnly)
        return try candidates.filter { window in
            guard filter.matches(window, pattern: pattern) else { return false }
            return try !filter.visibleOnly || isViewable(window.id)
        }
    }

    /// One window: by `query` (id, title or class, as `find`), else by `filter` alone; both narrow each other.
    /// None is `windowNotFound`, several `ambiguousWindow` (never a guess).
    public func find(_ query: String?, matching filter: WindowFilter) throws -> WindowInfo {
        if filter.isEmpty {
            guard let query else { throw ScreenError.invalidArgument("name a window: an id, a title or --class …") }
            return try find(query)
        }
        let pattern = try filter.compiledPattern()
        if let query, let id = Self.parseID(query) {
            let window = try window(id: id)
            guard filter.matches(window, pattern: pattern), try !filter.visibleOnly || isViewable(id) else {
                throw ScreenError.windowNotFound(query + " with the selection flags given")
            }
            return window
        }
        // Mapped windows first: toolkits keep hidden top-levels with the app's WM_CLASS (GTK's client leader), which
        // would make every --class ambiguous. A minimized window is still found when no mapped one matches.
        let needle = query?.lowercased()
        func candidates(hidden: Bool) throws -> [WindowInfo] {
            try list(matching: filter, includeHidden: hidden).filter { window in
                needle.map { window.title.lowercased().contains($0) } ?? true
            }
        }
        var matches = try candidates(hidden: false)
        if matches.isEmpty && !filter.visibleOnly { matches = try candidates(hidden: true) }
        let described = Self.describe(query, filter)
        guard let first = matches.first else { throw ScreenError.windowNotFound(described) }
        guard matches.count == 1 else {
            throw ScreenError.ambiguousWindow(described, candidates: matches.map(\.summary))
        }
        return first
    }

    /// A query and a selection as the user gave them, for messages.
    public static func describe(_ query: String?, _ filter: WindowFilter) -> String {
        var parts: [String] = query.map { [$0] } ?? []
        if let c = filter.className { parts.append("--class \(c)") }
        if let i = filter.instance { parts.append("--instance \(i)") }
        if let p = filter.pid { parts.append("--pid \(p)") }
        if let r = filter.titlePattern { parts.append("--name \(r)") }
        if filter.visibleOnly { parts.append("--visible") }
        return parts.joined(separator: " ")
    }

    /// Mapped and viewable: the window and every ancestor (a window manager's frame) are mapped.
    public func isViewable(_ id: UInt) throws -> Bool {
        (try? attributes(Window(id)).map_state == IsViewable) ?? false
    }

    /// The top-level window under the pointer; nil over the bare root window.
    public func windowUnderPointer() throws -> WindowInfo? {
        let child: Window = try connection.trapped { display in
            var rootReturn: Window = 0, child: Window = 0
            var rx: Int32 = 0, ry: Int32 = 0, wx: Int32 = 0, wy: Int32 = 0
            var mask: UInt32 = 0
            XQueryPointer(display, connection.root, &rootReturn, &child, &rx, &ry, &wx, &wy, &mask)
            return child
        }
        guard child != 0 else { return nil }
        let top = try topLevel(containing: child, ewmh: try hasWindowManager())
        return try window(id: UInt(top))
    }

    /// The active window described; throws `noActiveWindow` when there is none.
    public func active() throws -> WindowInfo {
        guard let id = try activeWindow() else { throw ScreenError.noActiveWindow }
        return try window(id: id)
    }

    // MARK: - Geometry

    /// Moves a window so its content area's top-left (xwininfo's "Absolute upper-left") lands on `point`; the
    /// frame a reparenting window manager draws is accounted for. Returns the window as it is then.
    @discardableResult
    public func move(_ window: WindowInfo, to point: Point) throws -> WindowInfo {
        let id = Window(window.id)
        if try hasWindowManager() {
            // NorthWest gravity: the coordinates are the frame's; _NET_FRAME_EXTENTS says where the content sits.
            // One correction follows for managers that place by another rule (a frame that changed meanwhile).
            let extents = try cardinals(id, "_NET_FRAME_EXTENTS", type: Atom(XA_CARDINAL))
            var target = Point(
                x: point.x - Int(extents.first ?? 0), y: point.y - Int(extents.count > 2 ? extents[2] : 0))
            for attempt in 0..<2 {
                try sendMessage(
                    id, "_NET_MOVERESIZE_WINDOW",
                    [1 | (1 << 8) | (1 << 9) | (Self.sourceIndication << 12), target.x, target.y, 0, 0])
                let now = try settle(id) { $0.frame.x == point.x && $0.frame.y == point.y }
                if now.frame.x == point.x && now.frame.y == point.y { return now }
                if attempt == 1 {
                    throw ScreenError.ignored(
                        "move \(window.hexID) to \(point.x),\(point.y): it is at \(now.frame.x),\(now.frame.y) "
                            + "(the window manager may keep it on screen or refuse to move it)")
                }
                target = Point(x: target.x + point.x - now.frame.x, y: target.y + point.y - now.frame.y)
            }
        }
        let border = Int(try attributes(id).border_width)
        try connection.trapped { display in
            _ = XMoveWindow(display, id, Int32(clamping: point.x - border), Int32(clamping: point.y - border))
        }
        return try expect(id, "move \(window.hexID) to \(point.x),\(point.y)") {
            $0.frame.x == point.x && $0.frame.y == point.y
        }
    }

    /// Resizes a window's content area to `size` (what xwininfo reports as Width and Height), or to the size nearest
    /// it that the window's size hints accept (xterm takes whole character cells, as wmctrl and xdotool leave it to
    /// do): done when the window has that size, said on stderr (the `xclaw.windows` log) when it is not `size`.
    @discardableResult
    public func resize(_ window: WindowInfo, to asked: Size) throws -> WindowInfo {
        guard (1...32767).contains(asked.width), (1...32767).contains(asked.height) else {
            throw ScreenError.invalidArgument("a window's width and height must be 1 to 32767, not \(asked)")
        }
        let id = Window(window.id)
        let hints = try sizeHints(id)
        let size = hints.nearest(to: asked)
        if size != asked {
            Logger(label: "xclaw.windows").info(
                "\(window.hexID) takes \(hints.spoken): resizing to \(size.width)x\(size.height), the size nearest \(asked.width)x\(asked.height) it accepts"
            )
        }
        if try hasWindowManager() {
            try sendMessage(
                id, "_NET_MOVERESIZE_WINDOW",
                [1 | (1 << 10) | (1 << 11) | (Self.sourceIndication << 12), 0, 0, size.width, size.height])
        } else {
            try connection.trapped { display in
                _ = XResizeWindow(display, id, UInt32(size.width), UInt32(size.height))
            }
        }
        return try expect(id, "resize \(window.hexID) to \(size.width)x\(size.height)") {
            $0.frame.width == size.width && $0.frame.height == size.height
        }
    }

    /// The window's `WM_NORMAL_HINTS`: the sizes it accepts (none said: any).
    public func sizeHints(_ id: Window) throws -> SizeHints {
        try connection.trapped { display in
            var raw = XSizeHints()
            var supplied: Int = 0
            guard XGetWMNormalHints(display, id, &raw, &supplied) != 0 else { return SizeHints() }
            let flags = Int(raw.flags)
            var hints = SizeHints()
            if flags & Int(PMinSize) != 0 {
                hints.minimum = Size(width: Int(raw.min_width), height: Int(raw.min_height))
            }
            if flags & Int(PMaxSize) != 0 {
                hints.maximum = Size(width: Int(raw.max_width), height: Int(raw.max_height))
            }
            if flags & Int(PBaseSize) != 0 {
                hints.base = Size(width: Int(raw.base_width), height: Int(raw.base_height))
            }
            if flags & Int(PResizeInc) != 0 {
                hints.increment = Size(width: Int(raw.width_inc), height: Int(raw.height_inc))
            }
            return hints
        }
    }

    // MARK: - States

    /// Sets (`on`) or clears a state. With no window manager, maximized and fullscreen cover the screen and remember
    /// the old geometry on the window (`_XCLAW_RESTORE_GEOMETRY`) for `on: false`; above needs a manager.
    public func setState(_ state: WindowState, on: Bool, for window: WindowInfo) throws {
        let id = Window(window.id)
        let what = "\(on ? "set" : "clear") \(state.rawValue) on \(window.hexID)"
        guard try hasWindowManager() else {
            guard state != .above else {
                throw ScreenError.needsWindowManager(
                    "keeping a window above the others; `xclaw window raise` raises it once")
            }
            return try directMaximize(window, on: on, what: what)
        }
        let atoms = state.atoms.map { connection.atom($0) }
        try sendMessage(
            id, "_NET_WM_STATE",
            [on ? 1 : 0, Int(atoms[0]), atoms.count > 1 ? Int(atoms[1]) : 0, Self.sourceIndication, 0])
        try wait(what) {
            let held = Set(try cardinals(id, "_NET_WM_STATE", type: Atom(XA_ATOM)))
            return atoms.allSatisfy { held.contains(UInt($0)) == on }
        }
    }

    private func directMaximize(_ window: WindowInfo, on: Bool, what: String) throws {
        let id = Window(window.id)
        let name = connection.atom("_XCLAW_RESTORE_GEOMETRY")
        let target: Rect
        if on {
            target = try connection.screenRect()
            let saved = [window.frame.x, window.frame.y, window.frame.width, window.frame.height].map { CLong($0) }
            try connection.trapped { display in
                saved.withUnsafeBytes { raw in
                    _ = XChangeProperty(
                        display, id, name, Atom(XA_CARDINAL), 32, PropModeReplace,
                        raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 4)
                }
            }
        } else {
            let saved = try cardinals(id, "_XCLAW_RESTORE_GEOMETRY", type: Atom(XA_CARDINAL))
                .map { Int(CLong(bitPattern: $0)) }
            guard saved.count == 4 else {
                throw ScreenError.needsWindowManager("restoring a window xclaw did not maximize itself")
            }
            target = Rect(x: saved[0], y: saved[1], width: saved[2], height: saved[3])
            try connection.trapped { display in _ = XDeleteProperty(display, id, name) }
        }
        let border = Int(try attributes(id).border_width)
        try connection.trapped { display in
            _ = XMoveResizeWindow(
                display, id, Int32(clamping: target.x - (on ? 0 : border)),
                Int32(clamping: target.y - (on ? 0 : border)),
                UInt32(max(1, target.width - (on ? 2 * border : 0))),
                UInt32(max(1, target.height - (on ? 2 * border : 0))))
            _ = XRaiseWindow(display, id)
        }
        _ = try expect(id, what) { info in
            on ? info.frame.width >= target.width - 2 * border : info.frame == target
        }
    }

    /// Minimizes (iconifies) a window: `XIconifyWindow` (ICCCM `WM_CHANGE_STATE`, which EWMH managers obey), or with
    /// no manager to hear it, an unmap. `xclaw activate` brings it back.
    public func minimize(_ window: WindowInfo) throws {
        let id = Window(window.id)
        let managed = try hasWindowManager()
        try connection.trapped { display in
            if managed {
                _ = XIconifyWindow(display, id, connection.screenNumber)
            } else {
                _ = XUnmapWindow(display, id)
            }
        }
        try wait("minimize \(window.hexID)") { try !isViewable(window.id) }
    }

    /// Raises a window to the top of its layer (`_NET_RESTACK_WINDOW`, else `XRaiseWindow`), or lowers it.
    public func restack(_ window: WindowInfo, raise: Bool) throws {
        let id = Window(window.id)
        let managed = try hasWindowManager()
        if managed {
            try sendMessage(id, "_NET_RESTACK_WINDOW", [Self.sourceIndication, 0, Int(raise ? Above : Below), 0, 0])
        } else {
            try connection.trapped { display in _ = raise ? XRaiseWindow(display, id) : XLowerWindow(display, id) }
        }
        let layered = connection.atom(raise ? "_NET_WM_STATE_ABOVE" : "_NET_WM_STATE_BELOW")
        try wait("\(raise ? "raise" : "lower") \(window.hexID)") {
            // Windows another layer keeps above (or below) every normal one do not count.
            let order = try topLevels(ewmh: managed, mappedOnly: true).filter { other in
                let states = (try? cardinals(other, "_NET_WM_STATE", type: Atom(XA_ATOM))) ?? []
                return other == id || !states.contains(UInt(layered))
            }
            return (raise ? order.last : order.first) == id
        }
    }

    // MARK: - Closing

    /// Asks a window to close: `_NET_CLOSE_WINDOW` with a manager; else the `WM_DELETE_WINDOW` protocol when the
    /// client speaks it, or `XDestroyWindow` when it does not (as `xdotool windowclose`). An app that asks to save
    /// first stays open: that is reported, not forced.
    public func close(_ window: WindowInfo) throws {
        let id = Window(window.id)
        if try hasWindowManager() {
            try sendMessage(id, "_NET_CLOSE_WINDOW", [0, Self.sourceIndication, 0, 0, 0])
        } else {
            let deleteAtom = connection.atom("WM_DELETE_WINDOW"), protocols = connection.atom("WM_PROTOCOLS")
            try connection.trapped { display in
                var list: UnsafeMutablePointer<Atom>?
                var count: Int32 = 0
                var speaks = false
                if XGetWMProtocols(display, id, &list, &count) != 0, let list {
                    speaks = UnsafeBufferPointer(start: list, count: Int(count)).contains(deleteAtom)
                    XFree(list)
                }
                guard speaks else {
                    _ = XDestroyWindow(display, id)
                    return
                }
                var event = XEvent()
                event.xclient.type = ClientMessage
                event.xclient.window = id
                event.xclient.message_type = protocols
                event.xclient.format = 32
                event.xclient.data.l = (Int(deleteAtom), 0 /* CurrentTime */, 0, 0, 0)
                XSendEvent(display, id, 0, NoEventMask, &event)
            }
        }
        try waitGone(window, "close", hint: "it may be asking to save or confirm; look at it, or use `window kill`")
    }

    /// Ends the client that owns the window (`XKillClient`): every window of that connection goes.
    public func kill(_ window: WindowInfo) throws {
        try connection.trapped { display in _ = XKillClient(display, XID(window.id)) }
        try waitGone(window, "kill", hint: "the server did not end its client")
    }

    private func waitGone(_ window: WindowInfo, _ action: String, hint: String) throws {
        try wait("\(action) \(window.hexID): it is still open (\(hint))") { try !exists(window.id) }
    }

    /// Whether the window still exists and is mapped (a manager may keep a closed client's window unmapped a moment).
    private func exists(_ id: UInt) throws -> Bool {
        guard let attrs = try? attributes(Window(id)) else { return false }
        return attrs.map_state != IsUnmapped
    }

    // MARK: - Desktops

    /// The current desktop and how many there are; needs a window manager.
    public func desktops() throws -> Desktops {
        guard try hasWindowManager() else { throw ScreenError.needsWindowManager("virtual desktops") }
        let count = try cardinals(connection.root, "_NET_NUMBER_OF_DESKTOPS", type: Atom(XA_CARDINAL)).first ?? 1
        let current = try cardinals(connection.root, "_NET_CURRENT_DESKTOP", type: Atom(XA_CARDINAL)).first ?? 0
        return Desktops(current: Int(current), count: Int(count))
    }

    /// Switches to desktop `number` (from 0).
    public func switchDesktop(to number: Int) throws {
        let known = try desktops()
        try checkDesktop(number, known)
        try sendMessage(connection.root, "_NET_CURRENT_DESKTOP", [number, 0, 0, 0, 0])
        try wait("switch to desktop \(number)") { try desktops().current == number }
    }

    /// The desktop a window is on; nil when it shows on all (0xFFFFFFFF) or the manager does not say.
    public func desktop(of window: WindowInfo) throws -> Int? {
        guard let value = try cardinals(Window(window.id), "_NET_WM_DESKTOP", type: Atom(XA_CARDINAL)).first,
            value != 0xFFFF_FFFF
        else { return nil }
        return Int(value)
    }

    /// Moves a window to desktop `number` (from 0).
    public func moveWindow(_ window: WindowInfo, toDesktop number: Int) throws {
        try checkDesktop(number, try desktops())
        try sendMessage(Window(window.id), "_NET_WM_DESKTOP", [number, Self.sourceIndication, 0, 0, 0])
        try wait("move \(window.hexID) to desktop \(number)") { try desktop(of: window) == number }
    }

    private func checkDesktop(_ number: Int, _ known: Desktops) throws {
        guard (0..<known.count).contains(number) else {
            throw ScreenError.invalidArgument(
                "desktop \(number) does not exist: there are \(known.count), numbered 0 to \(known.count - 1)")
        }
    }

    // MARK: - Plumbing

    /// Sends an EWMH client message about `window` to the root window, where the manager listens.
    func sendMessage(_ window: Window, _ type: String, _ data: [Int]) throws {
        let atom = connection.atom(type)
        let l = data + Array(repeating: 0, count: max(0, 5 - data.count))
        try connection.trapped { display in
            var event = XEvent()
            event.xclient.type = ClientMessage
            event.xclient.window = window
            event.xclient.message_type = atom
            event.xclient.format = 32
            event.xclient.data.l = (l[0], l[1], l[2], l[3], l[4])
            XSendEvent(display, connection.root, 0, SubstructureRedirectMask | SubstructureNotifyMask, &event)
        }
    }

    /// Polls until `done` holds, or throws `ignored(what)` at the deadline.
    private func wait(_ what: String, _ done: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + Self.effectDeadline
        while try !done() {
            if ContinuousClock.now >= deadline { throw ScreenError.ignored(what) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Polls the window until `done` holds for it and returns it; throws `ignored` with where it is at the deadline.
    private func expect(_ id: Window, _ what: String, _ done: (WindowInfo) -> Bool) throws -> WindowInfo {
        let now = try settle(id, done)
        guard done(now) else {
            throw ScreenError.ignored(
                "\(what): it is \(now.frame.width)x\(now.frame.height) at \(now.frame.x),\(now.frame.y) "
                    + "(size hints or the window manager may have refused)")
        }
        return now
    }

    /// The window once `done` holds, or as it is at the deadline.
    private func settle(_ id: Window, _ done: (WindowInfo) -> Bool) throws -> WindowInfo {
        let deadline = ContinuousClock.now + Self.effectDeadline
        while true {
            let now = try window(id: UInt(id))
            if done(now) || ContinuousClock.now >= deadline { return now }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}

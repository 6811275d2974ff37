import CX11
import Foundation
import Logging
import Synchronization
import XclawBase

/// A top-level window as a person sees it.
public struct WindowInfo: Codable, Sendable, Hashable {
    /// The X window id (of the client window, not a window manager's frame).
    public var id: UInt
    /// `_NET_WM_NAME` (UTF-8), else `WM_NAME`; empty when the window has none.
    public var title: String
    /// `WM_CLASS` class part (e.g. `XTerm`).
    public var className: String
    /// `WM_CLASS` instance part (e.g. `xterm`).
    public var instance: String
    /// `_NET_WM_PID` when the client sets it.
    public var pid: Int?
    /// Geometry in root coordinates.
    public var frame: Rect
    /// The window is mapped (shown), though it may be covered or off screen.
    public var mapped: Bool
    /// Mapped and on screen at least in part.
    public var visible: Bool
    /// The window with keyboard focus (or, with no window manager and pointer-root focus, the one under the pointer).
    public var active: Bool
    /// Override-redirect: placed by the application itself, outside any window manager — menus, tooltips, popups.
    public var popup: Bool = false

    /// snake_case, as every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case id, title, instance, pid, frame, mapped, visible, active, popup
        case className = "class_name"
    }

    /// The id as `0x…`, the way xdotool and xwininfo print it.
    public var hexID: String { "0x" + String(id, radix: 16) }

    /// One line for listings.
    public var summary: String {
        "\(hexID) \(UntrustedText.quoted(title, limit: 80)) \(UntrustedText.escaped(className, limit: 40)) "
            + "\(frame.width)x\(frame.height)+\(frame.x)+\(frame.y)"
    }
}

/// Lists, finds and activates windows (EWMH when a window manager runs, the bare window tree when none does).
public struct WindowManager: Sendable {
    /// The connection used.
    public let connection: DisplayConnection

    /// Wraps a connection.
    public init(connection: DisplayConnection) { self.connection = connection }

    /// True when an EWMH window manager runs: the root's `_NET_SUPPORTING_WM_CHECK` names a live window whose own
    /// property names itself. A manager that exited leaves its root properties behind; they are then ignored.
    public func hasWindowManager() throws -> Bool {
        guard let check = try cardinals(connection.root, "_NET_SUPPORTING_WM_CHECK", type: XA_WINDOW).first,
            check != 0
        else { return false }
        let own = try? cardinals(Window(check), "_NET_SUPPORTING_WM_CHECK", type: XA_WINDOW).first
        return own == check
    }

    /// Top-level windows, top-most first. Unmapped ones only with `includeHidden`.
    public func list(includeHidden: Bool = false) throws -> [WindowInfo] {
        let screen = try connection.screenRect()
        let ewmh = try hasWindowManager()
        let levels = try topLevels(ewmh: ewmh, mappedOnly: !includeHidden)
        let active = try activeWindow(ewmh: ewmh, topLevels: levels)
        var result: [WindowInfo] = []
        for id in levels.reversed() {
            guard let info = try? describe(id, screen: screen, active: active) else { continue }  // closed meanwhile
            if info.mapped || includeHidden { result.append(info) }
        }
        return result
    }

    /// Describes one window by id; throws `windowNotFound` when it does not exist.
    public func window(id: UInt) throws -> WindowInfo {
        do {
            return try describe(Window(id), screen: try connection.screenRect(), active: try activeWindow())
        } catch ScreenError.protocolError {
            throw ScreenError.windowNotFound("0x" + String(id, radix: 16))
        }
    }

    /// Resolves an id (`0x3a00007` or decimal), a case-insensitive title substring, or an application's class or
    /// instance name (`xcalc`, `XTerm`) to exactly one window. An exact title wins over substrings, titles over class
    /// names; several equal matches are refused rather than guessed.
    public func find(_ query: String) throws -> WindowInfo {
        if let id = Self.parseID(query) { return try window(id: id) }
        let needle = query.lowercased()
        guard !needle.isEmpty else { throw ScreenError.invalidArgument("empty window name") }
        let mapped = try list()
        // A minimized (unmapped) window is still found by its name, once no mapped window has it.
        let hidden = { () throws -> [WindowInfo] in
            try self.list(includeHidden: true).filter { !$0.mapped && !$0.popup }
        }
        var all = mapped
        if !mapped.contains(where: {
            $0.title.lowercased().contains(needle) || $0.className.lowercased() == needle
                || $0.instance.lowercased() == needle
        }) {
            all = try hidden()
        }
        let candidates = all.filter { $0.title.lowercased().contains(needle) }
        if candidates.count == 1 { return Self.said(candidates[0], query, in: all) }
        let exact = candidates.filter { $0.title.lowercased() == needle }
        if exact.count == 1 { return Self.said(exact[0], query, in: all) }
        if candidates.isEmpty {
            let byClass = all.filter { $0.className.lowercased() == needle || $0.instance.lowercased() == needle }
            if byClass.count == 1 { return byClass[0] }
            if byClass.isEmpty { throw ScreenError.windowNotFound(query) }
            throw ScreenError.ambiguousWindow(query, candidates: byClass.map(\.summary))
        }
        throw ScreenError.ambiguousWindow(query, candidates: candidates.map(\.summary))
    }

    /// The notices `said` gave, by the asking process and text, so each command says one once.
    private static let saidAlready = Mutex<[String: ContinuousClock.Instant]>([:])

    /// `picked`, found by its title; when the name is also another window's class or instance, which was not
    /// picked, says so on stderr (the `xclaw.windows` log, info): an "About FeatherPad" dialog whose title holds the
    /// name is not what `--window FeatherPad` meant when the main window's class is FeatherPad.
    static func said(_ picked: WindowInfo, _ query: String, in all: [WindowInfo]) -> WindowInfo {
        let needle = query.lowercased()
        let byClass = all.filter {
            $0.id != picked.id && ($0.className.lowercased() == needle || $0.instance.lowercased() == needle)
        }
        guard !byClass.isEmpty else { return picked }
        let others = byClass.map { "\($0.hexID) \(UntrustedText.quoted($0.title))" }.joined(separator: ", ")
        let message =
            "\"\(query)\" picked \(picked.hexID) \(UntrustedText.quoted(picked.title)) because its title contains it; "
            + "\(others) \(byClass.count == 1 ? "has" : "have") it as class, not picked: --class \(query) "
            + "picks by class (or give the window's id)"
        // Once per command: `tap --window NAME --timeout` resolves the window at every look.
        // The command: its interrupt hub (one per served command and per scheduled run), else its process.
        let invocation = Invocation.current
        let command = invocation.interrupts.map { "\(ObjectIdentifier($0).hashValue)" } ?? "\(invocation.pid)"
        let key = "\(command) \(message)"
        let now = ContinuousClock.now
        let first = saidAlready.withLock { said -> Bool in
            said = said.filter { now - $0.value < .seconds(60) }
            return said.updateValue(now, forKey: key) == nil
        }
        if first { Logger(label: "xclaw.windows").info("\(message)") }
        return picked
    }

    /// Parses `0x…` hex or plain decimal window ids.
    static func parseID(_ text: String) -> UInt? {
        let t = text.lowercased()
        if t.hasPrefix("0x") { return UInt(t.dropFirst(2), radix: 16) }
        return t.allSatisfy(\.isNumber) ? UInt(t) : nil
    }

    /// Raises a window and gives it keyboard focus: `_NET_ACTIVE_WINDOW` when a window manager runs, else
    /// `XMapRaised` + `XSetInputFocus`. Waits (up to 1 s) until the window is viewable and focused.
    public func activate(_ window: WindowInfo) throws {
        let id = Window(window.id)
        let ewmh = try hasWindowManager()
        if ewmh {
            try sendMessage(id, "_NET_ACTIVE_WINDOW", [2])  // source 2: a pager/tool acting for the user
        }
        try connection.trapped { display in XMapRaised(display, id) }
        let deadline = ContinuousClock.now + .seconds(2)
        while try attributes(id).map_state != IsViewable {
            if ContinuousClock.now >= deadline { throw ScreenError.notActivated(window.hexID) }
            Thread.sleep(forTimeInterval: 0.005)
        }
        if !ewmh {
            try connection.trapped { display in _ = XSetInputFocus(display, id, RevertToParent, 0 /* CurrentTime */) }
        }
        // A window manager acts on the request asynchronously: return once it reports the window active.
        while try activeWindow(ewmh: ewmh) != window.id {
            if ContinuousClock.now >= deadline { throw ScreenError.notActivated(window.hexID) }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    /// The active window: `_NET_ACTIVE_WINDOW`, else the top-level holding focus, else (pointer-root focus, the
    /// default with no window manager) the top-level under the pointer. Nil when there is none.
    public func activeWindow() throws -> UInt? { try activeWindow(ewmh: try hasWindowManager()) }

    /// `topLevels`: the list the caller already walked (walking the tree again costs a round trip per window).
    func activeWindow(ewmh: Bool, topLevels known: [Window]? = nil) throws -> UInt? {
        if ewmh, let net = try cardinals(connection.root, "_NET_ACTIVE_WINDOW", type: XA_WINDOW).first, net != 0 {
            return net
        }
        let (focus, pointerChild): (Window, Window) = try connection.trapped { display in
            var focus: Window = 0
            var revert: Int32 = 0
            XGetInputFocus(display, &focus, &revert)
            var rootReturn: Window = 0, child: Window = 0
            var rx: Int32 = 0, ry: Int32 = 0, wx: Int32 = 0, wy: Int32 = 0
            var mask: UInt32 = 0
            XQueryPointer(display, connection.root, &rootReturn, &child, &rx, &ry, &wx, &wy, &mask)
            return (focus, child)
        }
        let candidate = focus > 1 /* not None, not PointerRoot */ && focus != connection.root ? focus : pointerChild
        guard candidate != 0 else { return nil }
        return UInt(try topLevel(containing: candidate, ewmh: ewmh, topLevels: known))
    }

    // MARK: - Window tree

    /// Top-level client windows, bottom-most first.
    /// `mappedOnly` skips unmapped children of the root before looking inside them: toolkits keep several hidden
    /// top-levels each, and describing one costs a dozen round trips.
    func topLevels(ewmh: Bool, mappedOnly: Bool = false) throws -> [Window] {
        if ewmh {
            let stacking = try cardinals(connection.root, "_NET_CLIENT_LIST_STACKING", type: XA_WINDOW)
            if !stacking.isEmpty { return stacking.map { Window($0) } }
        }
        return try children(of: connection.root).compactMap { child in
            guard let attrs = try? attributes(child), attrs.`class` == InputOutput else { return nil }
            if mappedOnly && attrs.map_state == IsUnmapped { return nil }
            return (try? clientWindow(under: child)) ?? child
        }
    }

    /// A window manager's frame holds the client, which carries `WM_STATE`; with no manager the child is the client.
    /// One trapped block: the search's requests need no sync of their own.
    private func clientWindow(under frame: Window) throws -> Window? {
        let wmState = connection.atom("WM_STATE")
        return try connection.trapped { display in
            var queue = [frame]
            var visited = 0
            while !queue.isEmpty, visited < 64 {
                let w = queue.removeFirst()
                visited += 1
                if Self.property(display, w, wmState, type: Atom(AnyPropertyType)) != nil { return w }
                queue.append(contentsOf: Self.tree(display, w).children)
            }
            return nil
        }
    }

    func topLevel(containing window: Window, ewmh: Bool, topLevels known: [Window]? = nil) throws -> Window {
        var current = window
        let topLevelSet = Set(try known ?? topLevels(ewmh: ewmh))
        for _ in 0..<64 {
            if topLevelSet.contains(current) { return current }
            let (parent, _) = try tree(current)
            if parent == connection.root || parent == 0 { return (try? clientWindow(under: current)) ?? current }
            current = parent
        }
        return current
    }

    private func children(of window: Window) throws -> [Window] { try tree(window).children }

    func tree(_ window: Window) throws -> (parent: Window, children: [Window]) {
        try connection.trapped { display in Self.tree(display, window) }
    }

    /// A window's parent and children, bottom-most first. Inside a trapped block.
    private static func tree(_ display: OpaquePointer, _ window: Window) -> (parent: Window, children: [Window]) {
        var rootReturn: Window = 0, parent: Window = 0
        var list: UnsafeMutablePointer<Window>?
        var count: UInt32 = 0
        guard XQueryTree(display, window, &rootReturn, &parent, &list, &count) != 0 else { return (0, []) }
        defer { if let list { XFree(list) } }
        return (parent, list.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? [])
    }

    func attributes(_ window: Window) throws -> XWindowAttributes {
        try connection.trapped { display in
            var attrs = XWindowAttributes()
            XGetWindowAttributes(display, window, &attrs)
            return attrs
        }
    }

    /// Everything about one window in one trapped block: its requests are answered in order, and one sync at the
    /// end (not one per property) catches a window that vanished meanwhile.
    private func describe(_ window: Window, screen: Rect, active: UInt?) throws -> WindowInfo {
        let utf8 = connection.atom("UTF8_STRING"), netName = connection.atom("_NET_WM_NAME")
        let netPID = connection.atom("_NET_WM_PID")
        return try connection.trapped { display in
            var attrs = XWindowAttributes()
            XGetWindowAttributes(display, window, &attrs)
            var x: Int32 = 0, y: Int32 = 0
            var child: Window = 0
            XTranslateCoordinates(display, window, connection.root, 0, 0, &x, &y, &child)
            let frame = Rect(x: Int(x), y: Int(y), width: Int(attrs.width), height: Int(attrs.height))
            let (instance, className) = Self.classHint(display, window)
            let pid = Self.property(display, window, netPID, type: Atom(XA_CARDINAL)).flatMap { value in
                value.format == 32 ? value.bytes.withUnsafeBytes { $0.bindMemory(to: UInt.self).first } : nil
            }
            return WindowInfo(
                id: UInt(window), title: Self.title(display, window, netName: netName, utf8: utf8),
                className: className, instance: instance, pid: pid.map { Int($0) },
                frame: frame, mapped: attrs.map_state != IsUnmapped,
                visible: attrs.map_state == IsViewable && !frame.intersection(screen).isEmpty,
                active: active == UInt(window), popup: attrs.override_redirect != 0)
        }
    }

    // MARK: - Properties

    /// `_NET_WM_NAME` in UTF-8, else `WM_NAME` in whatever encoding it has. Inside a trapped block.
    private static func title(_ display: OpaquePointer, _ window: Window, netName: Atom, utf8: Atom) -> String {
        if let value = property(display, window, netName, type: utf8), !value.bytes.isEmpty {
            return String(decoding: value.bytes, as: UTF8.self)
        }
        var text = XTextProperty()
        guard XGetWMName(display, window, &text) != 0, text.value != nil else { return "" }
        defer { XFree(text.value) }
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        var count: Int32 = 0
        guard Xutf8TextPropertyToTextList(display, &text, &list, &count) >= 0, let list, count > 0 else { return "" }
        defer { XFreeStringList(list) }
        return list[0].map { String(cString: $0) } ?? ""
    }

    /// `WM_CLASS`'s instance and class names. Inside a trapped block.
    private static func classHint(_ display: OpaquePointer, _ window: Window) -> (instance: String, className: String) {
        var hint = XClassHint()
        guard XGetClassHint(display, window, &hint) != 0 else { return ("", "") }
        defer {
            if let n = hint.res_name { XFree(n) }
            if let c = hint.res_class { XFree(c) }
        }
        return (hint.res_name.map { String(cString: $0) } ?? "", hint.res_class.map { String(cString: $0) } ?? "")
    }

    /// A format-32 property as unsigned values. Xlib hands format-32 data back as C `long`s (8 bytes here).
    /// A token that names this run of the X server: read from a property of the root window, created there when
    /// missing. It dies with the server, so state kept per display (snapshot refs) can tell a restarted server, which
    /// reuses the display number and the same window ids, from the one it was recorded on.
    public func serverToken() throws -> String {
        let name = connection.atom("_XCLAW_SERVER_TOKEN")
        let type = Atom(XA_STRING)
        if let value = try property(connection.root, name, type: type), value.format == 8, !value.bytes.isEmpty {
            return String(decoding: value.bytes, as: UTF8.self)
        }
        let token = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        let bytes = Array(token.utf8)
        try connection.trapped { display in
            _ = XChangeProperty(display, connection.root, name, type, 8, PropModeReplace, bytes, Int32(bytes.count))
        }
        // Two processes may race to create it: whatever the server holds now is the token.
        guard let stored = try property(connection.root, name, type: type), stored.format == 8 else { return token }
        return String(decoding: stored.bytes, as: UTF8.self)
    }

    /// A text (STRING or UTF8_STRING) property of the root window, such as `AT_SPI_BUS`; nil when it is not set.
    /// Read-only: it never creates the property.
    public func rootText(_ name: String) throws -> String? {
        guard let value = try property(connection.root, connection.atom(name), type: Atom(AnyPropertyType)),
            value.format == 8, !value.bytes.isEmpty
        else { return nil }
        return String(decoding: value.bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    func cardinals(_ window: Window, _ name: String, type: Atom) throws -> [UInt] {
        guard let value = try property(window, connection.atom(name), type: type), value.format == 32 else { return [] }
        return value.bytes.withUnsafeBytes { raw in Array(raw.bindMemory(to: UInt.self)) }
    }

    func property(_ window: Window, _ name: Atom, type: Atom) throws -> (format: Int32, bytes: [UInt8])? {
        try connection.trapped { display in Self.property(display, window, name, type: type) }
    }

    /// A property's format and bytes (format-32 items as C `long`s); nil when it is not set. Inside a trapped block.
    static func property(_ display: OpaquePointer, _ window: Window, _ name: Atom, type: Atom)
        -> (format: Int32, bytes: [UInt8])?
    {
        var actualType: Atom = 0
        var format: Int32 = 0
        var items: UInt = 0, after: UInt = 0
        var data: UnsafeMutablePointer<UInt8>?
        let rc = XGetWindowProperty(
            display, window, name, 0, 1 << 16, 0, type, &actualType, &format,
            &items, &after, &data)
        defer { if let data { XFree(data) } }
        guard rc == Success, actualType != 0, let data else { return nil }
        let unit = format == 32 ? MemoryLayout<CLong>.size : Int(format) / 8
        return (format, Array(UnsafeBufferPointer(start: data, count: Int(items) * unit)))
    }
}

import CX11
import CXclawShim
import Foundation

/// One input event as a window received it; what tests and benchmarks compare against what was sent.
public struct ProbeEvent: Codable, Sendable, Equatable {
    /// What happened: `button_press`, `button_release`, `motion`, `key_press`, `key_release`, `focus_in`,
    /// `focus_out`, `enter`, `configure`, `map`.
    public var kind: String
    /// Position in the window, x.
    public var x: Int?
    /// Position in the window, y.
    public var y: Int?
    /// Position on the screen, x.
    public var rootX: Int?
    /// Position on the screen, y.
    public var rootY: Int?
    /// Button number (1 left, 2 middle, 3 right, 4–7 scroll).
    public var button: Int?
    /// Modifier and button mask held at the time (ShiftMask 1, ControlMask 4, Mod1 8, Button1 256…).
    public var state: UInt?
    /// Key events: the keycode.
    public var keycode: Int?
    /// Key events: the keysym's name.
    public var keysym: String?
    /// Key presses: the text `Xutf8LookupString` produced.
    public var text: String?
    /// Configure events: the new width.
    public var width: Int?
    /// Configure events: the new height.
    public var height: Int?
    /// Server time in ms.
    public var time: UInt?

    /// An event of a kind with no fields set.
    public init(kind: String) { self.kind = kind }
}

/// A window that draws known rectangles and records every input event it gets, decoding keys to text the way a
/// real toolkit does (an input context and `Xutf8LookupString`). The test fixture and `xclaw bench input` use it.
public final class EventProbe: @unchecked Sendable {
    /// The probe's own connection.
    public let connection: DisplayConnection
    /// The window id.
    public let window: UInt
    private let rects: [(Rect, RGB)]
    private let background: RGB
    private var gc: GC?
    private var inputMethod: XIM?
    private var inputContext: XIC?

    /// Creates, maps and paints the window, and returns once it is viewable.
    public init(display: String?, title: String, frame: Rect, background: RGB, rects: [(Rect, RGB)] = []) throws {
        connection = try DisplayConnection(name: display)
        self.rects = rects
        self.background = background
        let d = connection.handle
        let root = connection.root
        let pixel = try Self.allocate(background, on: connection)
        let id = XCreateSimpleWindow(d, root, Int32(frame.x), Int32(frame.y), UInt32(frame.width),
                                     UInt32(frame.height), 0, 0, pixel)
        window = UInt(id)
        let mask = ButtonPressMask | ButtonReleaseMask | PointerMotionMask | KeyPressMask | KeyReleaseMask
            | ExposureMask | StructureNotifyMask | FocusChangeMask | EnterWindowMask
        XSelectInput(d, id, Int(mask))
        XStoreName(d, id, title)
        var utf8 = Array(title.utf8)
        XChangeProperty(d, id, connection.atom("_NET_WM_NAME"), connection.atom("UTF8_STRING"), 8, PropModeReplace,
                        &utf8, Int32(utf8.count))
        var pid = CLong(getpid())
        _ = withUnsafeBytes(of: &pid) { raw in
            XChangeProperty(d, id, connection.atom("_NET_WM_PID"), XA_CARDINAL, 32, PropModeReplace,
                            raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
        }
        "xclaw-fixture".withCString { name in
            "XclawFixture".withCString { cls in
                var hint = XClassHint(res_name: UnsafeMutablePointer(mutating: name),
                                      res_class: UnsafeMutablePointer(mutating: cls))
                XSetClassHint(d, id, &hint)
            }
        }
        // Position the window where asked even under a window manager.
        var hints = XSizeHints()
        hints.flags = PPosition | PSize | USPosition
        hints.x = Int32(frame.x); hints.y = Int32(frame.y)
        hints.width = Int32(frame.width); hints.height = Int32(frame.height)
        XSetWMNormalHints(d, id, &hints)
        gc = XCreateGC(d, id, 0, nil)
        // The built-in input method ("@im=none") decodes keysyms to UTF-8 without any IM server.
        if XSupportsLocale() != 0 {
            _ = XSetLocaleModifiers("@im=none")
            inputMethod = XOpenIM(d, nil, nil, nil)
            if let im = inputMethod { inputContext = xclaw_create_ic(im, id) }
        }
        XMapRaised(d, id)
        try connection.sync()
        let deadline = ContinuousClock.now + .seconds(5)
        var exposed = false
        while !exposed {
            guard ContinuousClock.now < deadline else { throw ScreenError.virtualDisplay("probe window never mapped") }
            if let event = try nextRaw(timeout: .milliseconds(100)), event.type == Expose { exposed = true }
        }
        try paint()
    }

    deinit {
        guard connection.isAlive else { return }
        if let inputContext { XDestroyIC(inputContext) }
        if let inputMethod { XCloseIM(inputMethod) }
        if let gc { XFreeGC(connection.handle, gc) }
        XDestroyWindow(connection.handle, Window(window))
        XSync(connection.handle, 0)
    }

    /// The next recorded event, waiting up to `timeout`; nil when none came.
    public func next(timeout: Duration) throws -> ProbeEvent? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard let raw = try nextRaw(timeout: max(.zero, left)) else { return nil }
            if let event = try translate(raw) { return event }
            if ContinuousClock.now >= deadline { return nil }
        }
    }

    /// Collects events until `done` holds for what was collected, or `timeout` passes.
    public func collect(timeout: Duration, until done: ([ProbeEvent]) -> Bool) throws -> [ProbeEvent] {
        let deadline = ContinuousClock.now + timeout
        var events: [ProbeEvent] = []
        while !done(events) {
            let left = deadline - ContinuousClock.now
            guard left > .zero, let event = try next(timeout: left) else { break }
            events.append(event)
        }
        return events
    }

    /// The text the key presses in `events` typed, with Return as "\n" and Tab as "\t".
    public static func typedText(_ events: [ProbeEvent]) -> String {
        events.filter { $0.kind == "key_press" }.map { event -> String in
            switch event.keysym {
            case "Return", "KP_Enter": return "\n"
            case "Tab": return "\t"
            default: return event.text ?? ""
            }
        }.joined()
    }

    private func nextRaw(timeout: Duration) throws -> XEvent? {
        let d = connection.handle
        let deadline = ContinuousClock.now + timeout
        while XPending(d) == 0 {
            try connection.checkAlive()
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var fd = pollfd(fd: XConnectionNumber(d), events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, Int32(max(1, left.seconds * 1000)))
            if XEventsQueued(d, QueuedAfterReading) > 0 { break }
        }
        try connection.checkAlive()
        var event = XEvent()
        XNextEvent(d, &event)
        return event
    }

    private func translate(_ raw: XEvent) throws -> ProbeEvent? {
        var event = raw
        switch raw.type {
        case ButtonPress, ButtonRelease:
            let b = raw.xbutton
            var e = ProbeEvent(kind: raw.type == ButtonPress ? "button_press" : "button_release")
            e.x = Int(b.x); e.y = Int(b.y); e.rootX = Int(b.x_root); e.rootY = Int(b.y_root)
            e.button = Int(b.button); e.state = UInt(b.state); e.time = UInt(b.time)
            return e
        case MotionNotify:
            let m = raw.xmotion
            var e = ProbeEvent(kind: "motion")
            e.x = Int(m.x); e.y = Int(m.y); e.rootX = Int(m.x_root); e.rootY = Int(m.y_root)
            e.state = UInt(m.state); e.time = UInt(m.time)
            return e
        case KeyPress, KeyRelease:
            if XFilterEvent(&event, 0) != 0 { return nil }  // consumed by the input method (compose)
            var e = ProbeEvent(kind: raw.type == KeyPress ? "key_press" : "key_release")
            e.keycode = Int(raw.xkey.keycode); e.state = UInt(raw.xkey.state); e.time = UInt(raw.xkey.time)
            var keysym: KeySym = 0
            var buffer = [CChar](repeating: 0, count: 64)
            if raw.type == KeyPress, let inputContext {
                var status: Int32 = 0
                let n = Xutf8LookupString(inputContext, &event.xkey, &buffer, Int32(buffer.count), &keysym, &status)
                e.text = String(decoding: buffer.prefix(Int(max(0, n))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            } else {
                let n = XLookupString(&event.xkey, &buffer, Int32(buffer.count), &keysym, nil)
                if raw.type == KeyPress {
                    e.text = String(decoding: buffer.prefix(Int(max(0, n))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
            e.keysym = KeyNames.name(of: keysym)
            return e
        case FocusIn, FocusOut:
            return ProbeEvent(kind: raw.type == FocusIn ? "focus_in" : "focus_out")
        case EnterNotify:
            return ProbeEvent(kind: "enter")
        case ConfigureNotify:
            var e = ProbeEvent(kind: "configure")
            e.x = Int(raw.xconfigure.x); e.y = Int(raw.xconfigure.y)
            e.width = Int(raw.xconfigure.width); e.height = Int(raw.xconfigure.height)
            return e
        case MapNotify:
            return ProbeEvent(kind: "map")
        case Expose:
            if raw.xexpose.count == 0 { try paint() }
            return nil
        case MappingNotify:
            XRefreshKeyboardMapping(&event.xmapping)
            return nil
        default:
            return nil
        }
    }

    private func paint() throws {
        guard let gc else { return }
        let d = connection.handle
        for (rect, color) in rects {
            XSetForeground(d, gc, try Self.allocate(color, on: connection))
            XFillRectangle(d, Window(window), gc, Int32(rect.x), Int32(rect.y), UInt32(rect.width), UInt32(rect.height))
        }
        try connection.sync()
    }

    /// The pixel value for a colour on the default colormap (`XAllocColor`: exact on TrueColor visuals).
    private static func allocate(_ color: RGB, on connection: DisplayConnection) throws -> UInt {
        var xcolor = XColor()
        xcolor.red = UInt16(color.r) * 257
        xcolor.green = UInt16(color.g) * 257
        xcolor.blue = UInt16(color.b) * 257
        xcolor.flags = CChar(DoRed | DoGreen | DoBlue)
        let colormap = XDefaultColormap(connection.handle, connection.screenNumber)
        guard XAllocColor(connection.handle, colormap, &xcolor) != 0 else {
            throw ScreenError.unsupportedPixelFormat("cannot allocate colour \(color)")
        }
        return xcolor.pixel
    }
}

import CX11
import CXclawShim
import Foundation
import XclawScreen

/// One input event as a window received it; what tests and benchmarks compare against what was sent.
public struct ProbeEvent: Codable, Sendable, Equatable {
    /// What happened; the raw values are the `kind` of the fixture's JSON lines.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        // `ready` is the fixture's first line (with its window id); the rest are X events.
        case buttonPress = "button_press"
        case buttonRelease = "button_release"
        case motion
        case keyPress = "key_press"
        case keyRelease = "key_release"
        case focusIn = "focus_in"
        case focusOut = "focus_out"
        case enter, configure, map, ready
    }

    /// What happened.
    public var kind: Kind
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
    /// Button presses: the widget under the pointer (a button's or check box's label, `field@X,Y` for a field),
    /// so tests can tell what a click hit; nil elsewhere.
    public var target: String?

    /// An event of a kind with no fields set.
    public init(kind: Kind) { self.kind = kind }
}

/// Text a probe window draws with an X core font, so OCR tests know exactly what is on screen and where.
public struct ProbeText: Sendable, Equatable {
    /// Top-left corner of the text in window coordinates; the baseline is `origin.y` plus the font's ascent.
    public var origin: Point
    /// A core font: an alias such as `9x15` or `10x20`, or a full XLFD name.
    public var font: String
    /// The colour of the glyphs.
    public var foreground: RGB
    /// When set, the text's box padded by `ProbeText.padding` on every side is filled with it first.
    public var background: RGB?
    /// How long after the window's first paint the text appears; nil shows it at once.
    public var showAfter: Duration?
    /// How long after the window's first paint the text disappears; nil keeps it.
    public var hideAfter: Duration?
    /// The text: printable ASCII, since core fonts are drawn byte by byte.
    public var text: String

    /// The margin a background fills around the text, so dark labels look like real ones.
    public static let padding = 6

    /// Creates a text to draw.
    public init(
        origin: Point, font: String, foreground: RGB, background: RGB? = nil, showAfter: Duration? = nil,
        hideAfter: Duration? = nil, text: String
    ) {
        self.origin = origin; self.font = font; self.foreground = foreground; self.background = background
        self.showAfter = showAfter; self.hideAfter = hideAfter; self.text = text
    }

    /// Whether the text is on screen `elapsed` after the first paint.
    func isVisible(at elapsed: Duration) -> Bool {
        elapsed >= (showAfter ?? .zero) && hideAfter.map { elapsed >= $0 } != true
    }
}

/// A simple widget a probe window draws and names in the button presses that hit it, so tests know what a click hit.
public enum ProbeWidget: Sendable, Equatable {
    /// A push button: grey, with a dark border and its label centred in `9x15`.
    case button(Rect, label: String)
    /// An empty white text-entry box; presses on it name `field@X,Y`.
    case field(Rect)
    /// A 13x13 check box with its top-left corner at the point and its label 8 px to its right.
    case checkbox(Point, label: String)

    /// The font widget labels use.
    public static let labelFont = "9x15"
    /// The side of a check box's square.
    public static let checkboxSide = 13
}

/// A string measured with its font once, so painting and hit-testing agree on where it is.
private struct PlacedString {
    /// The loaded font (owned by the probe's font table).
    var font: UnsafeMutablePointer<XFontStruct>
    /// The bytes to draw.
    var bytes: [CChar]
    /// The logical box: left edge, top (baseline minus ascent), advance width, ascent plus descent.
    var box: Rect
    /// The glyph colour.
    var color: RGB
    /// The baseline's y.
    var baseline: Int { box.y + Int(font.pointee.ascent) }
}

/// A widget with its label placed and the box presses on it are reported for.
private struct PlacedWidget {
    var widget: ProbeWidget
    var hitBox: Rect
    var label: PlacedString?
    /// What a press on the widget reports as its target.
    var name: String
}

/// A text with its string placed; `clearBox` is what is repainted when it appears or disappears.
private struct PlacedText {
    var spec: ProbeText
    var string: PlacedString
    var clearBox: Rect
}

/// A window that draws known rectangles and records every input event it gets, decoding keys to text the way a
/// real toolkit does (an input context and `Xutf8LookupString`). The test fixture and `xclaw bench input` use it.
/// Safe because one thread drives a probe (its event loop); other threads only read the immutable window id and
/// connection.
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
    /// Core fonts by the name they were asked for; freed in deinit.
    private var fonts: [String: UnsafeMutablePointer<XFontStruct>] = [:]
    private var texts: [PlacedText] = []
    private var widgets: [PlacedWidget] = []
    private let animated: [Rect]
    /// Pixel values of the colours drawn so far, so repaints do not ask the server again.
    private var pixels: [RGB: UInt] = [:]
    /// When the window was first painted: the zero of show/hide times and of the animation; nil until then.
    private var start: ContinuousClock.Instant?
    /// Which texts are on screen now.
    private var shown: [Bool] = []
    /// How many animation periods had passed at the last repaint; even shows the first colour.
    private var animationPhase = 0

    /// How long an animated rectangle keeps each colour.
    public static let animationPeriod = Duration.milliseconds(40)
    /// The colours animated rectangles alternate between.
    public static let animationColors = (RGB(r: 0xff, g: 0, b: 0), RGB(r: 0, g: 0, b: 0xff))

    /// Creates, maps and paints the window, and returns once it is viewable. `texts`, `widgets` and `animated`
    /// (rectangles flipping between red and blue every 40 ms) are drawn over `rects`; an unknown font or non-ASCII
    /// text throws `invalidArgument` before any window appears. A `popup` is override-redirect, like a menu.
    public init(
        display: String?, title: String, frame: Rect, background: RGB, rects: [(Rect, RGB)] = [],
        texts: [ProbeText] = [], widgets: [ProbeWidget] = [], animated: [Rect] = [],
        popup: Bool = false
    ) throws {
        connection = try DisplayConnection(name: display)
        self.rects = rects
        self.background = background
        self.animated = animated
        var fontNames = texts.map(\.font)
        if !widgets.isEmpty { fontNames.append(ProbeWidget.labelFont) }
        let loaded = try Self.loadFonts(fontNames, on: connection)
        fonts = loaded
        do {
            self.texts = try texts.map { try Self.place($0, fonts: loaded) }
            self.widgets = try widgets.map { try Self.place($0, fonts: loaded) }
        } catch {
            for font in loaded.values { XFreeFont(connection.handle, font) }
            throw error
        }
        let d = connection.handle
        let root = connection.root
        let pixel = try Self.allocate(background, on: connection)
        let id = XCreateSimpleWindow(
            d, root, Int32(frame.x), Int32(frame.y), UInt32(frame.width),
            UInt32(frame.height), 0, 0, pixel)
        window = UInt(id)
        if popup {
            var attributes = XSetWindowAttributes()
            attributes.override_redirect = 1
            XChangeWindowAttributes(d, id, UInt(CWOverrideRedirect), &attributes)
        }
        let mask =
            ButtonPressMask | ButtonReleaseMask | PointerMotionMask | KeyPressMask | KeyReleaseMask
            | ExposureMask | StructureNotifyMask | FocusChangeMask | EnterWindowMask
        XSelectInput(d, id, Int(mask))
        XStoreName(d, id, title)
        // WM_CLASS: instance and class, each NUL-terminated (a replay finds a retitled window by its class).
        var windowClass = Array("xclaw-fixture\0XclawFixture\0".utf8)
        XChangeProperty(d, id, XA_WM_CLASS, XA_STRING, 8, PropModeReplace, &windowClass, Int32(windowClass.count))
        var utf8 = Array(title.utf8)
        XChangeProperty(
            d, id, connection.atom("_NET_WM_NAME"), connection.atom("UTF8_STRING"), 8, PropModeReplace,
            &utf8, Int32(utf8.count))
        var pid = CLong(getpid())
        _ = withUnsafeBytes(of: &pid) { raw in
            XChangeProperty(
                d, id, connection.atom("_NET_WM_PID"), XA_CARDINAL, 32, PropModeReplace,
                raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
        }
        "xclaw-fixture".withCString { name in
            "XclawFixture".withCString { cls in
                var hint = XClassHint(
                    res_name: UnsafeMutablePointer(mutating: name),
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
        // Generous: a window manager that is still starting holds the map request, and a loaded machine is slow.
        let deadline = ContinuousClock.now + .seconds(20)
        var exposed = false
        while !exposed {
            guard ContinuousClock.now < deadline else {
                let diagnosis = DisplayDiagnosis.describe(display: connection.name, window: UInt(id))
                throw ScreenError.virtualDisplay("probe window never mapped\n\(diagnosis)")
            }
            if let event = try nextRaw(timeout: .milliseconds(100)), event.type == Expose { exposed = true }
        }
        start = ContinuousClock.now
        shown = self.texts.map { $0.spec.isVisible(at: .zero) }
        try paint()
    }

    deinit {
        guard connection.isAlive else { return }
        if let inputContext { XDestroyIC(inputContext) }
        if let inputMethod { XCloseIM(inputMethod) }
        if let gc { XFreeGC(connection.handle, gc) }
        for font in fonts.values { XFreeFont(connection.handle, font) }
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
        events.filter { $0.kind == .keyPress }.map { event -> String in
            switch event.keysym {
            case "Return", "KP_Enter": return "\n"
            case "Tab": return "\t"
            default: return event.text ?? ""
            }
        }.joined()
    }

    /// The next raw event within `timeout`; while waiting, it wakes for every show/hide time and animation step
    /// and repaints, so timed content keeps its schedule whatever timeout the caller uses.
    private func nextRaw(timeout: Duration) throws -> XEvent? {
        let d = connection.handle
        let deadline = ContinuousClock.now + timeout
        try advance()
        while XPending(d) == 0 {
            try connection.checkAlive()
            let now = ContinuousClock.now
            let left = deadline - now
            guard left > .zero else { return nil }
            var waitMs = max(1, left.seconds * 1000)
            if let change = nextChange() { waitMs = min(waitMs, max(0, ((change - now).seconds * 1000).rounded(.up))) }
            var fd = pollfd(fd: XConnectionNumber(d), events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, Int32(min(waitMs, Double(Int32.max))))
            try advance()
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
            var e = ProbeEvent(kind: raw.type == ButtonPress ? .buttonPress : .buttonRelease)
            e.x = Int(b.x); e.y = Int(b.y); e.rootX = Int(b.x_root); e.rootY = Int(b.y_root)
            e.button = Int(b.button); e.state = UInt(b.state); e.time = UInt(b.time)
            if raw.type == ButtonPress { e.target = target(at: Point(x: Int(b.x), y: Int(b.y))) }
            return e
        case MotionNotify:
            let m = raw.xmotion
            var e = ProbeEvent(kind: .motion)
            e.x = Int(m.x); e.y = Int(m.y); e.rootX = Int(m.x_root); e.rootY = Int(m.y_root)
            e.state = UInt(m.state); e.time = UInt(m.time)
            return e
        case KeyPress, KeyRelease:
            if XFilterEvent(&event, 0) != 0 { return nil }  // consumed by the input method (compose)
            var e = ProbeEvent(kind: raw.type == KeyPress ? .keyPress : .keyRelease)
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
                    e.text = String(
                        decoding: buffer.prefix(Int(max(0, n))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
            e.keysym = KeyNames.name(of: keysym)
            return e
        case FocusIn, FocusOut:
            return ProbeEvent(kind: raw.type == FocusIn ? .focusIn : .focusOut)
        case EnterNotify:
            return ProbeEvent(kind: .enter)
        case ConfigureNotify:
            var e = ProbeEvent(kind: .configure)
            e.x = Int(raw.xconfigure.x); e.y = Int(raw.xconfigure.y)
            e.width = Int(raw.xconfigure.width); e.height = Int(raw.xconfigure.height)
            return e
        case MapNotify:
            return ProbeEvent(kind: .map)
        case Expose:
            if raw.xexpose.count == 0 {
                try advance()
                try paint()
            }
            return nil
        case MappingNotify:
            XRefreshKeyboardMapping(&event.xmapping)
            return nil
        default:
            return nil
        }
    }

    /// The name of the topmost widget containing `point`, for the `target` of a button press.
    private func target(at point: Point) -> String? {
        widgets.last { $0.hitBox.contains(point) }?.name
    }

    /// Paints everything in z-order (rectangles, widgets, texts on screen, animated rectangles). With an `area`,
    /// drawing is clipped to it and the area is first cleared to the background, so whatever a hidden text
    /// covered comes back; without one it paints the whole window (after an Expose the server has cleared it).
    private func paint(area: Rect? = nil) throws {
        guard let gc else { return }
        let d = connection.handle
        if let area {
            var clip = XRectangle(
                x: Int16(clamping: area.x), y: Int16(clamping: area.y),
                width: UInt16(clamping: area.width), height: UInt16(clamping: area.height))
            XSetClipRectangles(d, gc, 0, 0, &clip, 1, Unsorted)
            try fill(area, background, gc)
        }
        defer { if area != nil { XSetClipMask(d, gc, 0) } }
        for (rect, color) in rects { try fill(rect, color, gc) }
        for widget in widgets { try draw(widget, gc) }
        for (text, isShown) in zip(texts, shown) where isShown {
            if let bg = text.spec.background { try fill(text.clearBox, bg, gc) }
            try draw(text.string, gc)
        }
        try paintAnimated(gc)
        if area == nil { try connection.sync() } else { connection.flush() }
    }

    /// Fills the animated rectangles with the colour of the current phase.
    private func paintAnimated(_ gc: GC) throws {
        let color = animationPhase % 2 == 0 ? Self.animationColors.0 : Self.animationColors.1
        for rect in animated { try fill(rect, color, gc) }
    }

    /// Repaints what time changed since the last call: texts that appeared or disappeared, and the animated
    /// rectangles when their colour flipped. Flushes after any repaint so the screen shows it at once.
    private func advance() throws {
        guard let start, let gc else { return }
        let elapsed = ContinuousClock.now - start
        var areas: [Rect] = []
        for index in texts.indices {
            let visible = texts[index].spec.isVisible(at: elapsed)
            if visible != shown[index] {
                shown[index] = visible
                areas.append(texts[index].clearBox)
            }
        }
        let phase = animated.isEmpty ? 0 : Int(elapsed / Self.animationPeriod)
        let flipped = phase != animationPhase
        animationPhase = phase
        for area in areas { try paint(area: area) }
        if flipped {
            try paintAnimated(gc)
            connection.flush()
        }
    }

    /// When timed content next changes (a show or hide time, or the next animation step); nil when nothing will.
    private func nextChange() -> ContinuousClock.Instant? {
        guard let start else { return nil }
        let elapsed = ContinuousClock.now - start
        var times = texts.flatMap { [$0.spec.showAfter, $0.spec.hideAfter] }.compactMap { $0 }.filter { $0 > elapsed }
        if !animated.isEmpty { times.append(Self.animationPeriod * (animationPhase + 1)) }
        return times.min().map { start + $0 }
    }

    /// Fills a rectangle with a colour.
    private func fill(_ rect: Rect, _ color: RGB, _ gc: GC) throws {
        guard !rect.isEmpty else { return }
        XSetForeground(connection.handle, gc, try pixel(color))
        XFillRectangle(
            connection.handle, Window(window), gc, Int32(rect.x), Int32(rect.y), UInt32(rect.width),
            UInt32(rect.height))
    }

    /// Draws a 1 px outline just inside a rectangle.
    private func outline(_ rect: Rect, _ color: RGB, _ gc: GC) throws {
        guard !rect.isEmpty else { return }
        XSetForeground(connection.handle, gc, try pixel(color))
        XDrawRectangle(
            connection.handle, Window(window), gc, Int32(rect.x), Int32(rect.y), UInt32(rect.width - 1),
            UInt32(rect.height - 1))
    }

    /// Draws a placed string in its colour and font.
    private func draw(_ string: PlacedString, _ gc: GC) throws {
        let d = connection.handle
        XSetForeground(d, gc, try pixel(string.color))
        XSetFont(d, gc, string.font.pointee.fid)
        XDrawString(
            d, Window(window), gc, Int32(string.box.x), Int32(string.baseline), string.bytes,
            Int32(string.bytes.count))
    }

    /// Draws a widget the way the option that made it describes.
    private func draw(_ placed: PlacedWidget, _ gc: GC) throws {
        switch placed.widget {
        case .button(let rect, _):
            try fill(rect, RGB(r: 0xe0, g: 0xe0, b: 0xe0), gc)
            try outline(rect, RGB(r: 0x40, g: 0x40, b: 0x40), gc)
        case .field(let rect):
            try fill(rect, RGB(r: 0xff, g: 0xff, b: 0xff), gc)
            try outline(rect, RGB(r: 0x80, g: 0x80, b: 0x80), gc)
        case .checkbox(let point, _):
            let square = Rect(x: point.x, y: point.y, width: ProbeWidget.checkboxSide, height: ProbeWidget.checkboxSide)
            try fill(square, RGB(r: 0xff, g: 0xff, b: 0xff), gc)
            try outline(square, RGB(r: 0x40, g: 0x40, b: 0x40), gc)
        }
        if let label = placed.label { try draw(label, gc) }
    }

    /// The pixel value for a colour, allocated once per colour.
    private func pixel(_ color: RGB) throws -> UInt {
        if let known = pixels[color] { return known }
        let value = try Self.allocate(color, on: connection)
        pixels[color] = value
        return value
    }

    /// Loads each distinct core font once (`XLoadQueryFont`); an unknown name throws after freeing the others.
    private static func loadFonts(_ names: [String], on connection: DisplayConnection) throws
        -> [String: UnsafeMutablePointer<XFontStruct>]
    {
        var loaded: [String: UnsafeMutablePointer<XFontStruct>] = [:]
        for name in names where loaded[name] == nil {
            guard let font = XLoadQueryFont(connection.handle, name) else {
                for font in loaded.values { XFreeFont(connection.handle, font) }
                throw ScreenError.invalidArgument(
                    "unknown font \"\(name)\" on display \(connection.name): use a core font alias such as 6x13, 9x15, "
                        + "9x15bold, 10x20 or 12x24, or a full XLFD (list them with `xlsfonts`)")
            }
            loaded[name] = font
        }
        return loaded
    }

    /// Measures `text` in `font` and places its top-left corner at `origin`; only printable ASCII can be drawn.
    private static func place(_ text: String, font: UnsafeMutablePointer<XFontStruct>, at origin: Point, color: RGB)
        throws -> PlacedString
    {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x20...0x7e).contains($0) }) else {
            throw ScreenError.invalidArgument(
                "text \"\(text)\" must be non-empty printable ASCII (core fonts draw bytes)")
        }
        let bytes = text.utf8.map { CChar(bitPattern: $0) }
        let width = Int(XTextWidth(font, bytes, Int32(bytes.count)))
        let height = Int(font.pointee.ascent + font.pointee.descent)
        return PlacedString(
            font: font, bytes: bytes, box: Rect(x: origin.x, y: origin.y, width: width, height: height),
            color: color)
    }

    /// Places a text; its clear box is its box padded by `ProbeText.padding`, which covers its background.
    private static func place(_ text: ProbeText, fonts: [String: UnsafeMutablePointer<XFontStruct>]) throws
        -> PlacedText
    {
        guard let font = fonts[text.font] else { throw ScreenError.invalidArgument("font \"\(text.font)\" not loaded") }
        let string = try place(text.text, font: font, at: text.origin, color: text.foreground)
        let p = ProbeText.padding
        let box = string.box
        return PlacedText(
            spec: text, string: string,
            clearBox: Rect(x: box.x - p, y: box.y - p, width: box.width + 2 * p, height: box.height + 2 * p))
    }

    /// Places a widget's label and works out the box presses on it are reported for.
    private static func place(_ widget: ProbeWidget, fonts: [String: UnsafeMutablePointer<XFontStruct>]) throws
        -> PlacedWidget
    {
        guard let font = fonts[ProbeWidget.labelFont] else {
            throw ScreenError.invalidArgument("font \"\(ProbeWidget.labelFont)\" not loaded")
        }
        let lineHeight = Int(font.pointee.ascent + font.pointee.descent)
        let black = RGB(r: 0, g: 0, b: 0)
        switch widget {
        case .button(let rect, let label):
            var string = try place(label, font: font, at: Point(x: 0, y: 0), color: black)
            string.box.x = rect.x + (rect.width - string.box.width) / 2
            string.box.y = rect.y + (rect.height - lineHeight) / 2
            return PlacedWidget(widget: widget, hitBox: rect, label: string, name: label)
        case .field(let rect):
            return PlacedWidget(widget: widget, hitBox: rect, label: nil, name: "field@\(rect.x),\(rect.y)")
        case .checkbox(let point, let label):
            let side = ProbeWidget.checkboxSide
            let origin = Point(x: point.x + side + 8, y: point.y + (side - lineHeight) / 2)
            let string = try place(label, font: font, at: origin, color: black)
            let top = min(point.y, string.box.y)
            let bottom = max(point.y + side, string.box.y + string.box.height)
            let hitBox = Rect(
                x: point.x, y: top, width: string.box.x + string.box.width - point.x, height: bottom - top)
            return PlacedWidget(widget: widget, hitBox: hitBox, label: string, name: label)
        }
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

import XclawBase

/// Everything the screen layer can fail with. Messages say what happened and what to do about it.
public enum ScreenError: ClassifiedError, Equatable {
    /// Neither `--display` nor `$DISPLAY` names a display.
    case noDisplay
    /// XOpenDisplay failed for this display name.
    case cannotOpen(String)
    /// The X server went away (it died or the connection broke); reconnect when it is back.
    case displayLost(String)
    /// The server answered a request with a protocol error (BadWindow, BadMatch…).
    case protocolError(code: Int, request: Int, resource: UInt, text: String)
    /// A required X extension is missing on this server.
    case extensionMissing(String)
    /// The screen's pixel format cannot be converted (e.g. an 8-bit palette visual).
    case unsupportedPixelFormat(String)
    /// A point lies outside the screen.
    case outOfBounds(x: Int, y: Int, width: Int, height: Int)
    /// A region is empty or lies (partly) outside the screen.
    case invalidRegion(String)
    /// No window matches the query.
    case windowNotFound(String)
    /// The window did not become viewable and active in time (a window manager may refuse focus stealing).
    case notActivated(String)
    /// Several windows match the query and none of them exactly.
    case ambiguousWindow(String, candidates: [String])
    /// A key name is not a known keysym.
    case unknownKey(String, suggestion: String?)
    /// Text contains a character that cannot be typed (a control character other than tab and newline).
    case untypeable(String)
    /// The keyboard has no free keycode left to bind a character to.
    case noSpareKeycode
    /// Starting, finding or stopping a virtual display failed.
    case virtualDisplay(String)
    /// Encoding or decoding an image failed.
    case image(String)
    /// Bad input that fits no other case.
    case invalidArgument(String)
    /// A window action had no effect before its deadline: the window manager (or the app) ignored or refused it.
    case ignored(String)
    /// The action needs a window manager and none runs on the display.
    case needsWindowManager(String)
    /// No window has the keyboard focus.
    case noActiveWindow
    /// The selection (clipboard) has no owner, or its owner does not offer the type asked for.
    case selectionEmpty(selection: String, type: String, offered: [String])
    /// The selection's owner did not answer (or finish a transfer) in time.
    case selectionTimeout(String)
    /// A key cannot be held down across commands (`keydown`) because the keymap lacks it.
    case notHoldable(String)
    /// A display name from a caller (an MCP client) that is not a display of this machine (`:N`): opening it would
    /// connect to another host's X server.
    case notLocal(String)

    /// A lost display ends an agent's run: no later action on this connection can work.
    public var endsRun: Bool {
        if case .displayLost = self { return true }
        return false
    }

    /// Which exit status the error ends a command with.
    public var exitStatus: ExitStatus {
        switch self {
        case .noDisplay, .cannotOpen, .displayLost, .protocolError, .extensionMissing, .unsupportedPixelFormat,
            .virtualDisplay:
            return .display
        case .outOfBounds, .invalidRegion, .unknownKey, .untypeable, .invalidArgument:
            return .usage
        case .windowNotFound, .ambiguousWindow, .notActivated, .ignored, .needsWindowManager, .noActiveWindow,
            .selectionEmpty, .selectionTimeout:
            return .notFound
        case .notHoldable, .notLocal:
            return .usage
        case .noSpareKeycode, .image:
            return .internal
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .noDisplay:
            return "no display: pass --display :N or set DISPLAY, or start a private one with `xclaw display start`"
        case .cannotOpen(let name):
            return "cannot open display \(name): is an X server running there? "
                + "Start a private one with `xclaw display start`"
        case .displayLost(let name):
            return "lost the connection to display \(name): the X server died or went away; "
                + "restart it (e.g. `xclaw display start`) and try again"
        case .protocolError(let code, let request, let resource, let text):
            return
                "X protocol error \(text) (code \(code)) on request \(request), resource 0x\(String(resource, radix: 16))"
                + ": the window may have closed; list windows with `xclaw windows`"
        case .extensionMissing(let name):
            return "the X server lacks the \(name) extension; xclaw needs it (Xvfb and Xorg have it unless disabled)"
        case .unsupportedPixelFormat(let what):
            return "unsupported pixel format: \(what); run the display at depth 16, 24 or 32"
        case .outOfBounds(let x, let y, let width, let height):
            return "point (\(x), \(y)) is outside the screen (\(width)x\(height)); "
                + "x must be in 0..<\(width) and y in 0..<\(height)"
        case .invalidRegion(let why):
            return "invalid region: \(why)"
        case .windowNotFound(let query):
            return "no window matches \"\(query)\"; list them with `xclaw windows`"
        case .notActivated(let id):
            return "window \(id) did not become active within 2 s (is it minimised, or does the window manager "
                + "refuse focus changes?)"
        case .ambiguousWindow(let query, let candidates):
            return "\"\(query)\" matches \(candidates.count) windows; pass an id or a longer title:\n  "
                + candidates.joined(separator: "\n  ")
        case .unknownKey(let name, let suggestion):
            let hint = suggestion.map { "; did you mean \"\($0)\"?" } ?? ""
            return "unknown key name \"\(name)\"\(hint) (names are X keysyms as in xdotool: Return, ctrl+s, F5, KP_0)"
        case .untypeable(let what):
            return "cannot type \(what): only printable characters, tab and newline can be typed; "
                + "send other keys with `xclaw key`"
        case .noSpareKeycode:
            return "the keyboard map has no free keycode to bind a missing character to"
        case .virtualDisplay(let why):
            return why
        case .image(let why):
            return "image error: \(why)"
        case .invalidArgument(let why):
            return why
        case .ignored(let what):
            return "\(what): no effect within 2 s; the window manager or the app ignored the request"
        case .needsWindowManager(let what):
            return "\(what) needs a window manager and none runs on this display (start one, e.g. `openbox &`)"
        case .noActiveWindow:
            return "no window is active (nothing has the keyboard focus); activate one with `xclaw activate`"
        case .selectionEmpty(let selection, let type, let offered):
            let has = offered.isEmpty ? "it has no owner" : "its owner offers " + offered.joined(separator: ", ")
            return "the \(selection) selection holds no \(type): \(has); set it with `xclaw clipboard set`"
        case .selectionTimeout(let selection):
            return "the owner of the \(selection) selection did not answer within 5 s; the app holding it may hang"
        case .notHoldable(let key):
            return "cannot hold \"\(key)\" down across commands: the keymap has no key for it; "
                + "use `xclaw key` (which binds a spare keycode for one press) or a key the layout has"
        case .notLocal(let name):
            return "\(Self.quoted(name)) is not a display of this machine: name a local one such as \":1\" "
                + "(a display on another host is for your own command line only: `xclaw windows --display HOST:N`)"
        }
    }

    /// `text` in quotes, cut at 200 characters: a caller's word never comes back whole.
    static func quoted(_ text: String) -> String {
        "\"" + (text.count > 200 ? String(text.prefix(200)) + "…" : text) + "\""
    }
}

import Foundation

/// What one input action did, as its records name it (`ActionRecord`, `RecordedStep`, a replay's outcome): typed so
/// the replayer, the report and the script export switch on cases, and coded as exactly the strings xclaw always
/// wrote, so stored runs, scripts and `--json` outputs read the same. A name no case knows (a tool's name in the
/// runner's own records, a log of another xclaw) is kept as `other`, and a replay refuses it with its name.
public enum RecordedAction: Sendable {
    /// A left click (the computer tool).
    case leftClick
    /// A tap on an element or a point (`tap_element`, `find_and_tap`, `tap_xy`).
    case tap
    /// An element pressed through its accessibility action (`tap_element`).
    case press
    /// A click, as older records named it.
    case click
    /// A right click (the computer tool; `tap_element`, `tap_xy` with `button: right`).
    case rightClick
    /// A middle click (the computer tool; `tap_element`, `tap_xy` with `button: middle`).
    case middleClick
    /// A double click (the computer tool).
    case doubleClick
    /// A double tap on an element (`tap_element`, `find_and_tap`).
    case doubleTap
    /// A triple click (the computer tool).
    case tripleClick
    /// Text typed into whatever has the focus (the computer tool, `type_text`).
    case type
    /// Text typed, then Return (`type_text` with `submit`).
    case typeSubmit
    /// Text typed, as `type_text` calls are named in the runner's records.
    case typeText
    /// Key combinations pressed (the computer tool, `press_button`).
    case key
    /// A `press_button` call, as the runner's records name it.
    case pressButton
    /// Keys held for a while (the computer tool).
    case holdKey
    /// Wheel clicks (the computer tool, `scroll`).
    case scroll
    /// A drag with the left button (the computer tool).
    case leftClickDrag
    /// A drag between two points (`swipe`).
    case swipe
    /// The pointer moved (the computer tool).
    case mouseMove
    /// The left button pressed and held (the computer tool).
    case leftMouseDown
    /// The left button released (the computer tool).
    case leftMouseUp
    /// An application started (`launch_app`).
    case launch
    /// A region looked at closely (the computer tool).
    case zoom
    /// A screenshot taken (the computer tool).
    case screenshot
    /// The pointer's position read (the computer tool).
    case cursorPosition
    /// A pause (the computer tool).
    case wait
    /// Any other name, kept as written. Built from a known name it still equals that name's case (equality and
    /// hashing go by the name, as the records do), so `.other("tap") == .tap`.
    case other(String)

    /// Every named case, in the order above: the names xclaw writes.
    public static let known: [RecordedAction] = [
        .leftClick, .tap, .press, .click, .rightClick, .middleClick, .doubleClick, .doubleTap, .tripleClick, .type,
        .typeSubmit, .typeText, .key, .pressButton, .holdKey, .scroll, .leftClickDrag, .swipe, .mouseMove,
        .leftMouseDown, .leftMouseUp, .launch, .zoom, .screenshot, .cursorPosition, .wait,
    ]

    /// The known cases by their names, for decoding.
    private static let byName: [String: RecordedAction] = Dictionary(
        uniqueKeysWithValues: known.map { ($0.rawValue, $0) })
}

extension RecordedAction: RawRepresentable {
    /// The case a stored name stands for; any other name is `other`, so no record ever fails to read.
    public init(rawValue: String) { self = Self.byName[rawValue] ?? .other(rawValue) }

    /// The name as records and outputs spell it.
    public var rawValue: String {
        switch self {
        case .leftClick: "left_click"
        case .tap: "tap"
        case .press: "press"
        case .click: "click"
        case .rightClick: "right_click"
        case .middleClick: "middle_click"
        case .doubleClick: "double_click"
        case .doubleTap: "double_tap"
        case .tripleClick: "triple_click"
        case .type: "type"
        case .typeSubmit: "type_submit"
        case .typeText: "type_text"
        case .key: "key"
        case .pressButton: "press_button"
        case .holdKey: "hold_key"
        case .scroll: "scroll"
        case .leftClickDrag: "left_click_drag"
        case .swipe: "swipe"
        case .mouseMove: "mouse_move"
        case .leftMouseDown: "left_mouse_down"
        case .leftMouseUp: "left_mouse_up"
        case .launch: "launch"
        case .zoom: "zoom"
        case .screenshot: "screenshot"
        case .cursorPosition: "cursor_position"
        case .wait: "wait"
        case .other(let name): name
        }
    }
}

extension RecordedAction: Codable {
    /// Reads the name as a plain string, whatever it is.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Writes the name as a plain string, byte for byte what xclaw wrote before the enum.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension RecordedAction: CustomStringConvertible {
    /// The name, so messages and lines that interpolate an action read as before.
    public var description: String { rawValue }
}

extension RecordedAction: Hashable {
    /// Two actions are the same when their records spell them the same: an `other` holding a known name is that case.
    public static func == (lhs: RecordedAction, rhs: RecordedAction) -> Bool { lhs.rawValue == rhs.rawValue }

    /// Hashes the name, consistently with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

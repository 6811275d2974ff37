import Foundation

/// One input action of a run as a replay needs it: what was done, to what (anchored several ways at once, so a
/// replay can find it again when one way fails), what had to hold before, and what the action changed.
public struct RecordedStep: Codable, Sendable, Hashable {
    /// The tool that acted (`computer`, `tap_element`, ...).
    public var tool: String
    /// The action (`left_click`, `type`, `key`, `scroll`, `left_click_drag`, ...).
    public var action: RecordedAction
    /// The screen point acted on, the last-resort anchor.
    public var x: Int?
    /// The screen point acted on, the last-resort anchor.
    public var y: Int?
    /// Text typed, keys pressed, or a drag's end (`to X,Y`).
    public var text: String?
    /// The screen's size when it was recorded, `[width, height]`.
    public var screen: [Int]?
    /// What the action acted on; nil for actions on no point (typing into whatever had the focus).
    public var target: StepAnchor?
    /// What held before the action.
    public var pre: StepPrecondition
    /// What the action changed, observed on the settled screen.
    public var post: StepPostcondition
    /// The name of the task parameter `text` came from (typed text found in the prompt), else nil.
    public var parameter: String?
    /// Milliseconds the action took, settling included.
    public var ms: Double?
    /// Modifier keys a click held (`shift`, `ctrl+shift`).
    public var modifiers: String? = nil
    /// The text was typed into `target`, which the run focused first (`type_text into:`): a replay clicks it too.
    public var focus: Bool? = nil

    /// Creates a step.
    public init(
        tool: String, action: RecordedAction, x: Int? = nil, y: Int? = nil, text: String? = nil, screen: [Int]? = nil,
        target: StepAnchor? = nil, pre: StepPrecondition = StepPrecondition(),
        post: StepPostcondition = StepPostcondition(), parameter: String? = nil, ms: Double? = nil
    ) {
        self.tool = tool
        self.action = action
        self.x = x
        self.y = y
        self.text = text
        self.screen = screen
        self.target = target
        self.pre = pre
        self.post = post
        self.parameter = parameter
        self.ms = ms
    }
}

/// A target anchored every way the snapshot allowed: by the accessibility tree, by its label, role and window, by
/// its place in that window and among its look-alikes, and by a small image of it.
public struct StepAnchor: Codable, Sendable, Hashable {
    /// `atspi` when the tree served the element, `ocr` when OCR did.
    public var source: String?
    /// Its label.
    public var label: String
    /// Its role (`button`, `field`, ...).
    public var role: String
    /// The toolkit's role name, from the tree.
    public var toolkitRole: String?
    /// The tree object's path when the tree served it (valid while the app runs).
    public var treePath: String?
    /// Its box on the screen, `[x, y, width, height]`.
    public var box: [Int]
    /// Its window's class (`XTerm`, `Zenity`).
    public var windowClass: String?
    /// Its window's title.
    public var windowTitle: String?
    /// Its window's frame, `[x, y, width, height]`.
    public var windowBox: [Int]?
    /// The point relative to the window's top-left corner, `[dx, dy]`: found again after the window moved.
    public var relative: [Int]?
    /// 1-based place among elements of its label and role in its window, in reading order.
    public var nth: Int?
    /// How many elements of its label and role its window had: a replay that finds another number stops.
    public var alikes: Int? = nil
    /// The screen point of the patch's top-left corner, `[x, y]`: the point lies at the same offset in a match.
    public var patchOrigin: [Int]? = nil
    /// A small PNG around the point (base64), for an image search when labels fail.
    public var patch: String?

    /// snake_case, as every xclaw JSON output (older records are read with `JSONDecoder.xclawRecords`).
    enum CodingKeys: String, CodingKey {
        case source, label, role, box, relative, nth, alikes, patch
        case toolkitRole = "toolkit_role"
        case treePath = "tree_path"
        case windowClass = "window_class"
        case windowTitle = "window_title"
        case windowBox = "window_box"
        case patchOrigin = "patch_origin"
    }

    /// Creates an anchor.
    public init(
        source: String? = nil, label: String, role: String, toolkitRole: String? = nil, treePath: String? = nil,
        box: [Int], windowClass: String? = nil, windowTitle: String? = nil, windowBox: [Int]? = nil,
        relative: [Int]? = nil, nth: Int? = nil, patch: String? = nil
    ) {
        self.source = source
        self.label = label
        self.role = role
        self.toolkitRole = toolkitRole
        self.treePath = treePath
        self.box = box
        self.windowClass = windowClass
        self.windowTitle = windowTitle
        self.windowBox = windowBox
        self.relative = relative
        self.nth = nth
        self.patch = patch
    }
}

/// What must hold before a step acts.
public struct StepPrecondition: Codable, Sendable, Hashable {
    /// The target's anchor was visible.
    public var anchorVisible: Bool
    /// The title of the window that was active.
    public var activeWindow: String?
    /// Its class (a retitled window is still the one when it is the only one of its class).
    public var activeClass: String? = nil

    /// snake_case, as every xclaw JSON output (older records are read with `JSONDecoder.xclawRecords`).
    enum CodingKeys: String, CodingKey {
        case anchorVisible = "anchor_visible"
        case activeWindow = "active_window"
        case activeClass = "active_class"
    }

    /// Creates a precondition.
    public init(anchorVisible: Bool = false, activeWindow: String? = nil) {
        (self.anchorVisible, self.activeWindow) = (anchorVisible, activeWindow)
    }
}

/// What a step changed, by the elements of the screen before and after it.
public struct StepPostcondition: Codable, Sendable, Hashable {
    /// Labels that appeared (at most 20).
    public var appeared: [String]
    /// Labels that vanished (at most 20).
    public var vanished: [String]
    /// Whether the screen changed at all while it settled.
    public var changed: Bool

    /// Creates a postcondition.
    public init(appeared: [String] = [], vanished: [String] = [], changed: Bool = false) {
        (self.appeared, self.vanished, self.changed) = (appeared, vanished, changed)
    }
}

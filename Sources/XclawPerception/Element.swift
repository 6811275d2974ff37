import Foundation
import XclawBase
import XclawScreen

/// What an element on screen is: from the accessibility tree when the app exposes one, else as far as pixels and
/// text can tell (OCR gives window, button, field, checkbox, menuitem and text).
public enum Role: String, Codable, Sendable, CaseIterable {
    /// A top-level window.
    case window
    /// Something to press: a push or toggle button (OCR: a short label centred in a box of its own).
    case button
    /// A text entry (OCR: a box holding left-aligned text, wider than it needs).
    case field
    /// A check box or switch (OCR: a label with a small square just left of it).
    case checkbox
    /// A radio button.
    case radio
    /// A drop-down list.
    case combobox
    /// A slider or scroll bar.
    case slider
    /// A number field with up/down buttons.
    case spinbutton
    /// A tab of a notebook.
    case tab
    /// An entry of a list, tree or table.
    case item
    /// A hyperlink.
    case link
    /// An entry of a menu or menu bar (OCR: a short label in a popup window).
    case menuitem
    /// An icon or picture with a name.
    case image
    /// Text that is not inside a control.
    case text

    /// True for what can be operated (everything but windows, text and images).
    public var isInteractive: Bool { self != .window && self != .text && self != .image }
}

/// Where an element's facts come from.
public enum ElementSource: String, Codable, Sendable {
    /// The X window tree (windows).
    case x11
    /// The application's accessibility tree (AT-SPI2): exact role, name, states and extents.
    case atspi
    /// Text recognition plus pixel evidence.
    case ocr
}

/// One element of a snapshot.
public struct Element: Codable, Sendable, Hashable {
    /// A short name that stays the same while the element stays put (`e12`; windows `w3`).
    public var ref: String
    /// What it is.
    public var role: Role
    /// Its text (a window's title).
    public var label: String
    /// Where it is on screen; a control's box is the control's outline, not just its text.
    public var box: Rect
    /// The ref of the window it is in, if any.
    public var window: String?
    /// The X id of that window (or of the window itself).
    public var windowID: UInt?
    /// New or changed (moved, resized) since the previous snapshot of this display.
    public var changed: Bool
    /// For windows: whether it has the input focus.
    public var active: Bool?
    /// For windows: its WM_CLASS class.
    public var className: String?
    /// OCR confidence of the label (0–100), for text-derived elements.
    public var confidence: Double?
    /// The words of the label, for find/tap matching on part of it.
    public var words: [TextWord]?
    /// Where the element was seen (windows: where their contents come from).
    public var source: ElementSource? = nil
    /// States that matter for acting: focused, checked, selected, pressed, expanded, disabled, readonly…
    public var states: [String]? = nil
    /// A field's text, a slider's value (never a password's).
    public var value: String? = nil
    /// Its centre is hidden by a window higher in the stacking order: a click there would hit that window.
    public var covered: Bool? = nil
    /// The toolkit's role name, for elements from the accessibility tree ("push button", "toggle button").
    public var toolkitRole: String? = nil
    /// Where to find it on the accessibility bus, to press it or focus it without the mouse.
    public var node: AccessibleHandle? = nil
    /// Its row and column (1-based) in a grid of like boxes (a keypad), for controls read from pixels: what names a
    /// key whose label could not be read.
    public var cell: GridCell? = nil

    /// snake_case, as every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case ref, role, label, box, window, changed, active, confidence, words, source, states, value, covered, node
        case cell
        case windowID = "window_id"
        case className = "class_name"
        case toolkitRole = "toolkit_role"
    }

    /// The compact one-line form: `e7 button "Save" @1720,62 80x32 in w3` (position = centre).
    public func line(maxLabel: Int = 72) -> String {
        // Every string here comes from the screen: one quoted, escaped token each, so a title or a label can never
        // start a line of its own (a forged element, a "SYSTEM:" line) or close its quotes.
        let c = box.center
        var out = "\(changed ? "+" : "")\(ref) \(role.rawValue) \(UntrustedText.quoted(label, limit: maxLabel - 1))"
        if let value, !value.isEmpty { out += " = " + UntrustedText.quoted(value, limit: 39) }
        out += " @\(c.x),\(c.y) \(box.width)x\(box.height)"
        if label.isEmpty, let cell { out += " cell \(cell.row),\(cell.column)" }
        if let className, !className.isEmpty { out += " (\(UntrustedText.quoted(className, limit: 40)))" }
        if active == true { out += " active" }
        if role == .window, let source, source != .x11 { out += " [\(source.rawValue)]" }
        var marks = states ?? []
        if covered == true { marks.append("covered") }
        if !marks.isEmpty { out += " [" + marks.joined(separator: ",") + "]" }
        if let window { out += " in \(window)" }
        return out
    }
}

/// A position in a grid of like controls, 1-based from the top left.
public struct GridCell: Codable, Sendable, Hashable {
    /// The row, from the top.
    public var row: Int
    /// The column, from the left.
    public var column: Int

    /// A cell.
    public init(row: Int, column: Int) { (self.row, self.column) = (row, column) }
}

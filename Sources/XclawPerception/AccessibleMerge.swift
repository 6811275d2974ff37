import Foundation
import XclawScreen

/// Turns an accessibility tree into snapshot elements, window by window: each X window is tied to the top-level node
/// of its application (same process, matching extents), and that node's visible descendants become elements with
/// the toolkit's exact role, name, states and extents. Containers are skipped, text inside a control names the
/// control, and elements hidden behind higher windows are marked covered.
struct AccessibleMerge {
    /// The tree read for this snapshot.
    let tree: AccessibleTree
    /// The X windows, top-most first.
    let windows: [WindowInfo]
    /// The screen, for clipping extents that run past its edge.
    let screen: Rect
    /// The snapshot's area.
    let area: Rect
    /// For each X window served by the tree: the index (in `tree.nodes`) of its top-level node.
    let matched: [UInt: Int]
    private let children: [Int: [Int]]

    init(tree: AccessibleTree, windows: [WindowInfo], screen: Rect, area: Rect) {
        self.tree = tree
        self.windows = windows
        self.screen = screen
        self.area = area
        var children: [Int: [Int]] = [:]
        for (index, node) in tree.nodes.enumerated() where node.parent >= 0 {
            children[node.parent, default: []].append(index)
        }
        self.children = children
        let roots = Set(tree.apps.map(\.root))
        let pids = Dictionary(tree.apps.map { ($0.id, $0.pid) }, uniquingKeysWith: { a, _ in a })
        // Top-levels: the showing children of the application roots.
        var tops = tree.nodes.indices.filter { roots.contains(tree.nodes[$0].parent) && tree.nodes[$0].rect != nil }
        var matched: [UInt: Int] = [:]
        // A popup that names no process is no app's top level (a screen locker's overlay over a window).
        for window in windows where !(window.popup && window.pid == nil) {
            let scored = tops.compactMap { index -> (Int, Double)? in
                let node = tree.nodes[index]
                guard let rect = node.rect else { return nil }
                let pid = pids[node.app] ?? 0
                if let windowPID = window.pid, pid > 0, windowPID != pid { return nil }
                return (index, Self.overlap(rect, window.frame))
            }.filter { $0.1 >= 0.6 }
            guard let best = scored.max(by: { $0.1 < $1.1 }) else { continue }
            matched[window.id] = best.0
            tops.removeAll { $0 == best.0 }
        }
        self.matched = matched
    }

    /// Intersection over union of two rectangles: 1 when equal, lower as they differ (a window manager's frame
    /// around a dialog still scores ~0.8).
    static func overlap(_ a: Rect, _ b: Rect) -> Double {
        let common = a.intersection(b)
        guard !common.isEmpty else { return 0 }
        let inter = Double(common.width * common.height)
        return inter / (Double(a.width * a.height) + Double(b.width * b.height) - inter)
    }

    /// Whether no window above `window` overlaps `box`.
    func unobstructed(_ box: Rect, in window: UInt?) -> Bool {
        windows.prefix { $0.id != window }.allSatisfy { $0.frame.intersection(box).isEmpty }
    }

    /// The visible boxes of a served window's multi-line text areas (editors, documents): the tree gives their
    /// text only as one long value, so OCR reads their lines where they show.
    func documentBoxes(of window: WindowInfo, top: Int) -> [Rect] {
        var boxes: [Rect] = []
        func visit(_ index: Int) {
            let node = tree.nodes[index]
            if index != top, Self.role(of: node, parent: nil) == .field, node.has("multi-line"),
                let rect = node.rect?.intersection(screen).intersection(area), !rect.isEmpty
            {
                var pieces = [rect]
                for higher in windows.prefix(while: { $0.id != window.id }) {
                    pieces = pieces.flatMap { $0.subtracting(higher.frame) }
                }
                boxes += pieces
                return
            }
            for child in children[node.id] ?? [] { visit(child) }
        }
        visit(top)
        return boxes
    }

    /// The elements of one served window, in reading order. A subtree whose node has the extents of a popup stacked
    /// above the window (a combo box's open list, an open menu: override-redirect X windows the app places itself)
    /// belongs to that popup, which then does not cover it; any other window above covers what lies under it, a
    /// modal dialog of the same app included (a Qt main window's toolbar is not the dialog's, however alike their
    /// extents).
    func elements(of window: WindowInfo, top: Int, windowRef: (UInt) -> String) -> [Element] {
        let position = windows.firstIndex { $0.id == window.id } ?? 0
        // GTK also gives such a popup an empty top-level node of its own, so matched windows count too. A popup of
        // another process is never the app's; one that names no process (no _NET_WM_PID) is taken only for the
        // items of an open menu inside it, never on extents alone (a screen locker's overlay of another process
        // would take a whole window, which it covers).
        let above = windows.prefix(position).filter(\.popup)
        let popups = above.filter { $0.pid != nil && $0.pid == window.pid }
        let menuPopups = above.filter { $0.pid == nil || $0.pid == window.pid }
        var out: [Element] = []
        func visit(_ index: Int, parent: AccessibleNode?, owner: WindowInfo, insideControl: Bool) {
            let node = tree.nodes[index]
            var inside = insideControl
            var owner = owner
            // GTK gives a submenu no node of its own: its items are children of the menu bar's entry (role
            // "menu"), so an item of a menu inside a popup is that popup's.
            let ofMenu = parent?.role == "menu"
            if index != top, let rect = node.rect,
                let popup = popups.first(where: { Self.overlap(rect, $0.frame) >= 0.6 })
                    ?? (ofMenu ? menuPopups.first(where: { $0.frame.contains(rect) }) : nil)
            {
                owner = popup
            }
            if index != top, let role = Self.role(of: node, parent: parent) {
                let box =
                    node.rect.map { $0.intersection(screen).intersection(area) }
                    ?? Rect(x: 0, y: 0, width: 0, height: 0)
                // Text inside a control is the control's label, not an element of its own.
                if !box.isEmpty, !(insideControl && !role.isInteractive) {
                    let label = self.label(index, role: role)
                    if role.isInteractive || !label.isEmpty {
                        let higher = windows.prefix { $0.id != owner.id }
                        out.append(
                            Element(
                                ref: "", role: role, label: label, box: box, window: windowRef(owner.id),
                                windowID: owner.id,
                                changed: false, active: nil, className: nil, confidence: nil, words: nil,
                                source: .atspi,
                                states: Self.marks(node, role: role).nilIfEmpty,
                                value: role == .text ? nil : node.value,
                                covered: higher.contains { $0.frame.contains(box.center) } ? true : nil,
                                toolkitRole: node.role, node: node.handle))
                    }
                }
                if role.isInteractive { inside = true }
            }
            for child in children[node.id] ?? [] { visit(child, parent: node, owner: owner, insideControl: inside) }
        }
        visit(top, parent: nil, owner: window, insideControl: false)
        return Self.readingOrder(Self.nameFields(out))
    }

    /// Rows top to bottom (elements whose centres lie within half a height of the row's first one), each left to
    /// right: the order `--nth` counts in, whatever order the toolkit keeps its children in.
    static func readingOrder(_ elements: [Element]) -> [Element] {
        let byTop = elements.sorted { ($0.box.center.y, $0.box.x) < ($1.box.center.y, $1.box.x) }
        var rows: [[Element]] = []
        for element in byTop {
            if let first = rows.last?.first,
                abs(element.box.center.y - first.box.center.y) <= max(4, min(first.box.height, element.box.height) / 2)
            {
                rows[rows.count - 1].append(element)
            } else {
                rows.append([element])
            }
        }
        return rows.flatMap { $0.sorted { $0.box.x < $1.box.x } }
    }

    /// The element's label: its accessible name; a control without one is named by the text inside it, plain text
    /// without a name by its content.
    private func label(_ index: Int, role: Role) -> String {
        let node = tree.nodes[index]
        let name = Self.clean(node.name)
        if !name.isEmpty { return name }
        if role == .text, let value = node.value { return Self.clean(value) }
        guard role.isInteractive else { return "" }
        var texts: [String] = []
        func collect(_ i: Int, depth: Int) {
            guard depth < 4, texts.count < 3 else { return }
            for child in children[tree.nodes[i].id] ?? [] {
                let node = tree.nodes[child]
                if Self.role(of: node, parent: nil) == .text {
                    let text = Self.clean(node.name.isEmpty ? node.value ?? "" : node.name)
                    if !text.isEmpty && !texts.contains(text) { texts.append(text) }
                }
                collect(child, depth: depth + 1)
            }
        }
        collect(index, depth: 0)
        return texts.joined(separator: " ")
    }

    /// Fields, lists, sliders and spin buttons without a name take the text just left of them (or, failing that,
    /// just above and aligned with them), as a form reads ("Name: [      ]").
    static func nameFields(_ elements: [Element]) -> [Element] {
        var out = elements
        let texts = elements.filter { $0.role == .text }
        for i in out.indices
        where out[i].label.isEmpty
            && [.field, .combobox, .spinbutton, .slider].contains(out[i].role)
        {
            let f = out[i].box
            let candidates = texts.compactMap { t -> (Element, Int)? in
                let b = t.box
                let leftGap = f.x - (b.x + b.width)
                if (-4...250).contains(leftGap), b.center.y >= f.y, b.center.y < f.y + f.height { return (t, leftGap) }
                let upGap = f.y - (b.y + b.height)
                // A label above counts only when nothing is on the left, and only when it starts where the field does.
                if (-2...30).contains(upGap), abs(b.x - f.x) <= 40 { return (t, 1_000 + upGap) }
                return nil
            }
            if let best = candidates.min(by: { $0.1 < $1.1 }) {
                out[i].label = best.0.label.trimmingCharacters(in: CharacterSet(charactersIn: ": "))
            }
        }
        return out
    }

    /// Newlines and runs of spaces folded, for one-line rendering and matching.
    static func clean(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The snapshot role of a toolkit role; nil for containers and window-level nodes, which are not elements. A
    /// "menu" is an entry only inside a menu bar or another menu (a submenu); elsewhere it is a popup's container.
    static func role(of node: AccessibleNode, parent: AccessibleNode?) -> Role? {
        if node.role == "menu", let parent, !["menu bar", "menu"].contains(parent.role) { return nil }
        switch node.role {
        case "push button", "toggle button", "button", "push button menu": return .button
        case "check box", "switch", "toggle switch": return .checkbox
        case "radio button": return .radio
        case "combo box": return .combobox
        case "slider", "scroll bar", "dial": return .slider
        case "spin button": return .spinbutton
        case "page tab": return .tab
        case "list item", "tree item", "table cell", "description value": return .item
        case "link": return .link
        case "menu item", "menu", "check menu item", "radio menu item", "tearoff menu item": return .menuitem
        case "entry", "password text", "editbar", "terminal", "date editor": return .field
        case "text", "document text", "paragraph":
            return node.has("editable") || node.editable == true ? .field : .text
        case "label", "static", "heading", "caption", "status bar", "tool tip", "accelerator label", "description term",
            "notification", "info bar", "footnote", "comment", "mark", "title bar":
            return .text
        case "icon", "image", "animation": return .image
        default: return nil
        }
    }

    /// The states worth showing: what a reader needs before acting.
    static func marks(_ node: AccessibleNode, role: Role) -> [String] {
        var marks: [String] = []
        if node.has("focused") { marks.append("focused") }
        guard role.isInteractive else { return marks }
        if node.has("checked") { marks.append("checked") }
        if node.has("indeterminate") { marks.append("mixed") }
        if node.has("pressed") { marks.append("pressed") }
        if node.has("selected") { marks.append("selected") }
        if node.has("expanded") { marks.append("expanded") }
        if !node.has("enabled") { marks.append("disabled") }
        if role == .field && node.has("read-only") { marks.append("readonly") }
        return marks
    }
}

extension AccessibleTree {
    /// The top-level node that shows `window` (same process, matching extents), if its app exposes a tree.
    public func topLevel(of window: WindowInfo) -> AccessibleNode? {
        let merge = AccessibleMerge(tree: self, windows: [window], screen: window.frame, area: window.frame)
        return merge.matched[window.id].map { nodes[$0] }
    }
}

extension Array {
    /// nil for an empty array, so optional fields stay out of the JSON.
    var nilIfEmpty: [Element]? { isEmpty ? nil : self }
}

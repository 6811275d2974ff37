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

/// Which sources a snapshot may use.
public enum SnapshotSource: String, Codable, Sendable, CaseIterable {
    /// The accessibility tree for windows whose app exposes one, OCR for the rest.
    case auto
    /// OCR only, even where a tree exists.
    case ocr
    /// The accessibility tree only; windows without one contribute no elements.
    case atspi
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

/// What is on screen, as elements with stable refs; the model's compact view of the screen.
public struct Snapshot: Codable, Sendable {
    /// The screen size.
    public var screen: Size
    /// The monitors.
    public var monitors: [Monitor]
    /// The ref of the active window.
    public var activeWindow: String?
    /// The area the elements were taken from.
    public var area: Rect
    /// Windows first (top-most first), then the elements in reading order.
    public var elements: [Element]
    /// OCR work done for this snapshot.
    public var ocr: TextReading.Stats
    /// What the accessibility tree gave, when it was read.
    public var accessibility: AccessibilityStats? = nil
    /// What went wrong on the way without stopping the snapshot (the accessibility tree was unreadable, so OCR
    /// stood in); the CLI prints them on stderr.
    public var warnings: [String]? = nil

    /// snake_case, as every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case screen, monitors, area, elements, ocr, accessibility, warnings
        case activeWindow = "active_window"
    }

    /// The element a point acts on: the smallest interactive one containing it, else the smallest of any kind
    /// (windows aside). The approval gate, the step recorder and a replay's checks all judge a point by it.
    public func element(at p: Point) -> Element? {
        elements.filter { $0.role != .window && $0.box.contains(p) }
            .min { a, b in
                (a.role.isInteractive ? 0 : 1, a.box.width * a.box.height)
                    < (b.role.isInteractive ? 0 : 1, b.box.width * b.box.height)
            }
    }

    /// What reading the accessibility tree cost and gave.
    public struct AccessibilityStats: Codable, Sendable, Equatable {
        /// Applications on the bus.
        public var apps: Int
        /// Nodes the helper reported (visible ones and their containers).
        public var nodes: Int
        /// Windows whose contents came from the tree.
        public var windows: Int
        /// Elements taken from the tree.
        public var elements: Int
        /// Wall time of the helper run, in milliseconds.
        public var milliseconds: Double
    }

    /// The text rendering: a header, then one element per line. Windows and controls are always listed; text lines
    /// are listed in reading order until the rendering reaches `budget` characters (~4 per token), and the rest are
    /// counted per window, so a screen full of text still fits a model's context (`xclaw ocr` reads it all).
    public func render(interactiveOnly: Bool = false, budget: Int = 7_500) -> String {
        var lines: [String] = []
        let monitorText = monitors.map { "\($0.name) \($0.frame.width)x\($0.frame.height)+\($0.frame.x)+\($0.frame.y)" }
            .joined(separator: ", ")
        lines.append(
            "screen \(screen.width)x\(screen.height); monitors: \(monitorText); active: \(activeWindow ?? "none")")
        lines.append(
            "# ref role \"label\" [= value] @centre WxH [states] in window; + = new or moved since the last "
                + "snapshot; a window's [atspi] or [ocr] says where its elements come from")
        let fixed = elements.filter { $0.role == .window || $0.role.isInteractive }
        var used = (lines + fixed.map { $0.line() }).reduce(0) { $0 + $1.count + 1 }
        var omitted: [String: Int] = [:]
        for element in elements {
            if element.role == .window || element.role.isInteractive {
                lines.append(element.line())
            } else if !interactiveOnly {
                let line = element.line()
                if used + line.count + 1 <= budget {
                    lines.append(line)
                    used += line.count + 1
                } else {
                    omitted[element.window ?? "the desktop", default: 0] += 1
                }
            }
        }
        for (window, count) in omitted.sorted(by: { $0.key < $1.key }) {
            lines.append("… \(count) more text lines in \(window) (read them with `xclaw ocr`)")
        }
        return lines.joined(separator: "\n")
    }
}

/// Builds snapshots: windows from the window tree, text from OCR, controls from OCR plus pixel evidence (a box
/// around a short label, a square beside one), refs kept stable across snapshots through a per-display record.
public struct Snapshotter {
    /// The perception objects of the display.
    public let perceiver: Perceiver

    /// Whether boxes the pixels show to be controls have their labels read on their own (`readControls`); off only
    /// to measure what that reading costs.
    public var readsControls = true

    /// Whether per-control reading is on: always, unless `XCLAW_CONTROL_READING=0` switches it off to measure what it
    /// costs (`xclaw bench grounding` compares whole processes that way).
    public static func readsControlsByDefault(_ environment: [String: String] = Invocation.current.environment) -> Bool
    {
        environment["XCLAW_CONTROL_READING"] != "0"
    }

    /// Creates a snapshotter over `perceiver`.
    public init(perceiver: Perceiver, readsControls: Bool = Snapshotter.readsControlsByDefault()) {
        self.perceiver = perceiver
        self.readsControls = readsControls
    }

    /// Takes a snapshot of `area` (default: the screen). `refs` carries refs over from the previous snapshot and
    /// is updated; pass nil for throwaway refs. `source` picks the accessibility tree, OCR, or each where it serves
    /// (`auto`): windows whose app exposes a tree take their elements from it, the rest are read by OCR.
    /// The work is done in stages (`SnapshotStages`): capture → tree → tree elements → OCR partitions → OCR →
    /// naming → elements → refs.
    public func snapshot(area: Rect? = nil, refs: RefStore?, source: SnapshotSource = .auto) throws -> Snapshot {
        let scene = try capture(area)
        let store = refs ?? RefStore()
        let tree = try readTree(source: source, windows: scene.windows)
        var fromTree = SnapshotStages.treeElements(scene, tree: tree.tree, refs: store)
        let plan = SnapshotStages.partitions(scene, fromTree, source: source)
        var reading = TextReading(
            region: scene.area, lines: [],
            stats: .init(
                blocks: 0, recognized: 0, cached: 0,
                unchanged: false, milliseconds: 0))
        if !plan.parts.isEmpty {
            reading = try perceiver.recognizer.read(
                scene.frame, origin: Point(x: scene.area.x, y: scene.area.y),
                partitions: plan.parts)
        }
        var controls: [ControlReading] = []
        if readsControls && !plan.parts.isEmpty {
            controls = try perceiver.recognizer.readControls(
                scene.frame, origin: Point(x: scene.area.x, y: scene.area.y), partitions: plan.parts,
                pageLines: reading.lines)
        }
        let lines = SnapshotStages.nameUnnamed(&fromTree.elements, plan.unnamed, lines: reading.lines)
        let elements = store.assign(
            SnapshotStages.elements(
                scene, fromTree, lines: lines, controls: controls, source: source,
                refs: store))
        return SnapshotStages.assemble(scene, elements: elements, ocr: reading.stats, tree: tree, fromTree: fromTree)
    }

    /// Stage 1: the frame of `area` (default: the screen), with the visible windows over it and the monitors.
    public func capture(_ area: Rect? = nil) throws -> SnapshotScene {
        let connection = perceiver.connection
        let screen = try connection.screenSize()
        let area = try area ?? connection.screenRect()
        let frame = try perceiver.capturer.capture(area)
        let windows = try perceiver.windows.list().filter { !$0.frame.intersection(area).isEmpty && $0.visible }
        return SnapshotScene(
            screen: screen, area: area, frame: frame, windows: windows,
            monitors: (try? connection.monitors()) ?? [])
    }

    /// Stage 2: the accessibility tree, where the display has one; any failure falls back to OCR with a warning
    /// (`source == .atspi` throws instead). A perceiver with a tree cache reads it again only when an event or a
    /// change of `windows` says it changed.
    public func readTree(source: SnapshotSource, windows: [WindowInfo] = []) throws -> TreeReading {
        var result = TreeReading()
        guard source != .ocr else { return result }
        let connection = perceiver.connection
        guard let location = AccessibilityReader.locate(display: connection.name, windows: perceiver.windows) else {
            // Silent when the display never had a bus; a bus xclaw started and lost is worth a warning.
            let missing = AccessibilityReader.missingBus(display: connection.name)
            if source == .atspi { throw missing }
            if case .busGone = missing { result.warnings.append("\(missing); using OCR instead") }
            return result
        }
        let start = ContinuousClock.now
        do {
            if let cache = perceiver.treeCache {
                result.tree = try cache.tree(at: location, windows: windows, reader: perceiver.accessibility)
            } else {
                result.tree = try perceiver.accessibility.tree(at: location)
            }
            for app in result.tree?.apps ?? [] where app.route == "unresponsive" {
                result.warnings.append(
                    "pid \(app.pid) did not answer on the accessibility bus; its windows are "
                        + "read by OCR")
            }
        } catch AccessibilityError.unreachable(_) where location.isSessionOnly && source != .atspi {
            // The session bus has no accessibility bus: the same as having none, so no warning, unless xclaw
            // started this display with one.
            let missing = AccessibilityReader.missingBus(display: connection.name)
            if case .busGone = missing { result.warnings.append("\(missing); using OCR instead") }
        } catch {
            if source == .atspi { throw error }
            result.warnings.append("\(error); using OCR instead")
        }
        result.milliseconds = (ContinuousClock.now - start).milliseconds
        return result
    }
}

/// What a snapshot is taken of: one captured frame and the window tree at that moment.
public struct SnapshotScene: Sendable {
    /// The whole screen's size.
    public var screen: Size
    /// The area captured, in screen coordinates.
    public var area: Rect
    /// Its pixels.
    public var frame: Frame
    /// The visible windows over the area, top-most first.
    public var windows: [WindowInfo]
    /// The monitors.
    public var monitors: [Monitor]

    /// A scene from parts, for stages run on a fixed frame.
    public init(screen: Size, area: Rect, frame: Frame, windows: [WindowInfo], monitors: [Monitor] = []) {
        (self.screen, self.area, self.frame) = (screen, area, frame)
        (self.windows, self.monitors) = (windows, monitors)
    }
}

/// Stage 2's result: the tree (nil when there is none or it failed), how long it took, and what to tell the user.
public struct TreeReading: Sendable {
    /// The tree.
    public var tree: AccessibleTree?
    /// How long reading it took.
    public var milliseconds = 0.0
    /// Why some or all windows are read by OCR instead.
    public var warnings: [String] = []

    /// No tree.
    public init(tree: AccessibleTree? = nil) { self.tree = tree }
}

/// Stage 3's result: the windows the tree serves and the elements it gives them.
public struct TreeElements {
    /// The windows the tree covers, by X window id, with their top-level node.
    public var served: [UInt: Int] = [:]
    /// Elements from the tree.
    public var elements: [Element] = []
    /// Multi-line editors and documents: OCR reads their lines.
    public var documents: [Rect] = []
    /// Windows whose elements come from the tree (the served ones and popups that belong to them).
    public var windows: Set<UInt> = []
    let merge: AccessibleMerge?
}

/// Stage 4's result: the regions OCR must read, and which tree elements it should name.
public struct OCRPlan: Equatable {
    /// Screen regions to recognise.
    public var parts: [Rect]
    /// Indices into the tree elements of unnamed small controls whose caption OCR may read.
    public var unnamed: [Int]
}

/// The stages of a snapshot after capture, each a function of its inputs, so each is tested on a fixed frame.
public enum SnapshotStages {
    /// Stage 3: the tree merged with the window list: which windows it serves and their elements.
    public static func treeElements(_ scene: SnapshotScene, tree: AccessibleTree?, refs: RefStore) -> TreeElements {
        guard let tree else { return TreeElements(merge: nil) }
        let merge = AccessibleMerge(
            tree: tree, windows: scene.windows, screen: Rect(size: scene.screen), area: scene.area)
        var result = TreeElements(served: merge.matched, merge: merge)
        for window in scene.windows {
            guard let top = merge.matched[window.id] else { continue }
            result.elements += merge.elements(of: window, top: top, windowRef: { refs.windowRef($0) })
            result.documents += merge.documentBoxes(of: window, top: top)
        }
        // Popups whose entries the tree gave (an open combo box list) need no OCR either.
        result.windows = Set(merge.matched.keys).union(result.elements.compactMap(\.windowID))
        return result
    }

    /// Stage 4: OCR reads what no tree covers: the visible parts of the other windows and of the desktop, the parts
    /// of served windows where the tree has no element, the documents, plus the boxes of small controls the tree left unnamed (icon buttons with a caption drawn as
    /// pixels) when nothing covers them. `.atspi` reads nothing.
    public static func partitions(_ scene: SnapshotScene, _ fromTree: TreeElements, source: SnapshotSource) -> OCRPlan {
        guard source != .atspi else { return OCRPlan(parts: [], unnamed: []) }
        var parts: [Rect] = []
        var above: [Rect] = []
        for window in scene.windows {
            var pieces = [window.frame.intersection(scene.area)].filter { !$0.isEmpty }
            for higher in above { pieces = pieces.flatMap { $0.subtracting(higher) } }
            if !fromTree.windows.contains(window.id) {
                parts += pieces
            } else {
                // What the tree leaves out of a window it serves (list rows, calendar days, file-chooser rows are
                // often no elements of their own): OCR reads the window where no tree element is.
                var gaps = pieces
                let boxes = fromTree.elements.filter { $0.windowID == window.id }.map(\.box)
                for box in boxes { gaps = gaps.flatMap { $0.subtracting(box) } }
                parts += Rect.coalesced(gaps).filter { $0.width >= 24 && $0.height >= 10 }
            }
            above.append(window.frame)
        }
        var desktop = [scene.area]
        for higher in above { desktop = desktop.flatMap { $0.subtracting(higher) } }
        parts += desktop + fromTree.documents
        // Only small controls whose caption may be drawn as pixels (icon buttons, tabs), and only when nothing
        // covers any of them: OCR of a big text area or of a window above would name them wrongly.
        let captioned: Set<Role> = [.button, .checkbox, .radio, .tab, .menuitem, .link, .item]
        let elements = fromTree.elements
        let unnamed = elements.indices.filter { index in
            let e = elements[index]
            return e.label.isEmpty && captioned.contains(e.role) && e.box.width <= 320 && e.box.height <= 80
                && fromTree.merge?.unobstructed(e.box, in: e.windowID) == true
        }
        parts += unnamed.map { elements[$0].box.intersection(scene.area) }.filter { !$0.isEmpty }
        return OCRPlan(parts: parts, unnamed: unnamed)
    }

    /// Stage 6: names the unnamed controls by the confident words OCR read inside them, and returns the lines left
    /// for elements of their own.
    public static func nameUnnamed(_ elements: inout [Element], _ unnamed: [Int], lines: [TextLine]) -> [TextLine] {
        for index in unnamed {
            let box = elements[index].box
            // An icon read as letters is noise: only confident words name a control.
            let inside = lines.filter {
                box.contains($0.box.center) && $0.confidence >= 80
                    && $0.text.filter(\.isLetter).count >= 2
            }
            guard !inside.isEmpty else { continue }
            elements[index].label = inside.map(\.text).joined(separator: " ")
            elements[index].confidence = inside.map(\.confidence).min()
        }
        let claimed = unnamed.map { elements[$0].box }
        return lines.filter { line in !claimed.contains { $0.contains(line.box.center) } }
    }

    /// Stage 7: the elements without refs: the windows, the tree's elements, and the OCR lines as text or controls
    /// by the pixels around them (a box, a square beside), with empty fields named by the label on their left.
    public static func elements(
        _ scene: SnapshotScene, _ fromTree: TreeElements, lines: [TextLine], controls: [ControlReading] = [],
        source: SnapshotSource, refs: RefStore
    ) -> [Element] {
        var elements: [Element] = []
        for window in scene.windows {
            let windowSource: ElementSource =
                fromTree.windows.contains(window.id) ? .atspi : (source == .atspi ? .x11 : .ocr)
            elements.append(
                Element(
                    ref: refs.windowRef(window.id), role: .window, label: window.title,
                    box: window.frame, window: nil, windowID: window.id, changed: false,
                    active: window.active, className: window.className, confidence: nil, words: nil,
                    source: windowSource))
        }
        elements += fromTree.elements
        let pixels = PixelEvidence(frame: scene.frame, origin: Point(x: scene.area.x, y: scene.area.y))
        let owned = { (box: Rect) in scene.windows.first { $0.frame.contains(box.center) } }
        // Controls in windows the tree serves are the tree's; a checked box's square is its check box's, which the
        // line beside it finds.
        let boxes = controls.filter { control in
            !(owned(control.box).map { fromTree.windows.contains($0.id) } ?? false)
                && !lines.contains { Self.isSquare(control.box, leftOf: $0.box) }
        }
        // Page words inside a control are the control's: its own reading replaces them, and what is left of a line
        // (a label beside a field, a row merged across buttons) stays text of its own.
        var remaining: [TextLine] = []
        for line in lines {
            var run: [TextWord] = []
            for word in line.words {
                if boxes.contains(where: { $0.box.contains(word.box.center) }) {
                    if !run.isEmpty { remaining.append(TextLine(words: run)) }
                    run = []
                } else {
                    run.append(word)
                }
            }
            if !run.isEmpty { remaining.append(TextLine(words: run)) }
        }
        var recognized: [Element] = []
        for control in boxes {
            let owner = owned(control.box)
            let b = control.box, ink = control.ink
            let left = ink.x - b.x, right = b.x + b.width - (ink.x + ink.width)
            var role: Role = left <= 16 && right > 2 * left + 8 && b.width >= 3 * b.height ? .field : .button
            if owner?.popup == true { role = .menuitem }
            var line = control.line
            // A check or radio button drawn inside a ring of its own: its indicator is not part of its label.
            if let read = line, case (let found, _, let rest) = pixels.classify(read),
                found == .checkbox || found == .radio
            {
                role = found
                line = rest
            }
            recognized.append(
                Element(
                    ref: "", role: role, label: line?.text ?? "", box: b,
                    window: owner.map { refs.windowRef($0.id) }, windowID: owner?.id, changed: false, active: nil,
                    className: nil, confidence: line?.confidence ?? 0, words: line?.words ?? [],
                    source: .ocr))
        }
        for read in remaining.flatMap(pixels.splitAtSquares) {
            var (role, box, line) = pixels.classify(read)
            // A box that holds other lines too is a list or a panel, not this line's control: clicking its centre
            // would press another row ("Apple" in a list box pressed "Lemon").
            if box != line.box,
                remaining.contains(where: {
                    $0 != read && box.contains($0.box.center) && !line.box.contains($0.box.center)
                })
            {
                (role, box) = (.text, line.box)
            }
            let owner = scene.windows.first { $0.frame.contains(box.center) }
            // Menus are popups placed by the application: their short lines are its entries.
            if role == .text, owner?.popup == true, line.words.count <= 4 { role = .menuitem }
            recognized.append(
                Element(
                    ref: "", role: role, label: line.text, box: box,
                    window: owner.map { refs.windowRef($0.id) }, windowID: owner?.id,
                    changed: false, active: nil, className: nil, confidence: line.confidence,
                    words: line.words, source: .ocr))
        }
        // Empty fields have no text of their own: name them by the label on their left, as a form reads.
        recognized = recognized.flatMap { label -> [Element] in
            guard label.role == .text, (label.words?.count ?? 0) <= 4,
                let field = pixels.emptyField(rightOf: label.box),
                !lines.contains(where: { field.contains($0.box.center) })
            else { return [label] }
            return [
                label,
                Element(
                    ref: "", role: .field, label: label.label, box: field, window: label.window,
                    windowID: label.windowID, changed: false, active: nil, className: nil,
                    confidence: nil, words: nil, source: .ocr),
            ]
        }
        return elements + readingOrder(Self.placeInGrids(recognized, from: boxes.count))
    }

    /// Gives the controls read from boxes (the first `count` of `elements`) their cells in grids of like boxes: four
    /// or more of one window and one size (within 3 px) make a grid, whose rows and columns are their centres'
    /// clusters.
    static func placeInGrids(_ elements: [Element], from count: Int) -> [Element] {
        var out = elements
        let controls = Array(0..<min(count, elements.count))
        var grouped: [[Int]] = []
        for index in controls {
            let box = elements[index].box
            if let g = grouped.firstIndex(where: { group in
                let first = elements[group[0]]
                return first.windowID == elements[index].windowID && abs(first.box.width - box.width) <= 3
                    && abs(first.box.height - box.height) <= 3
            }) {
                grouped[g].append(index)
            } else {
                grouped.append([index])
            }
        }
        for group in grouped where group.count >= 4 {
            let boxes = group.map { elements[$0].box }
            let height = boxes[0].height, width = boxes[0].width
            let rows = clusters(boxes.map(\.center.y), within: height / 2)
            let columns = clusters(boxes.map(\.center.x), within: width / 2)
            for (index, box) in zip(group, boxes) {
                guard let row = rows.firstIndex(where: { abs($0 - box.center.y) <= height / 2 }),
                    let column = columns.firstIndex(where: { abs($0 - box.center.x) <= width / 2 })
                else { continue }
                out[index].cell = GridCell(row: row + 1, column: column + 1)
            }
        }
        return out
    }

    /// The centres of runs of close values (each within `within` of its run's first), ascending.
    private static func clusters(_ values: [Int], within: Int) -> [Int] {
        var centres: [Int] = []
        for value in values.sorted() where centres.last.map({ value - $0 > within }) ?? true {
            centres.append(value)
        }
        return centres
    }

    /// A small square ending just left of a line, centred on it: a check box's square, not a control of its own.
    static func isSquare(_ box: Rect, leftOf line: Rect) -> Bool {
        box.width <= 26 && abs(box.width - box.height) <= 3 && line.x >= box.x + box.width
            && line.x - (box.x + box.width) <= 16 && abs(box.center.y - line.center.y) <= max(3, line.height / 2)
    }

    /// Elements in reading order: rows by vertical centre (an element joins a row while its centre is above the
    /// row's first element's bottom), left to right within a row.
    static func readingOrder(_ elements: [Element]) -> [Element] {
        let sorted = elements.sorted { ($0.box.center.y, $0.box.x) < ($1.box.center.y, $1.box.x) }
        var rows: [[Element]] = []
        var bottom = Int.min
        for element in sorted {
            if !rows.isEmpty, element.box.center.y <= bottom {
                rows[rows.count - 1].append(element)
            } else {
                rows.append([element])
                bottom = element.box.y + element.box.height
            }
        }
        return rows.flatMap { $0.sorted { $0.box.x < $1.box.x } }
    }

    /// Stage 8: the snapshot from the elements (refs assigned), with the OCR and tree figures and the warnings.
    public static func assemble(
        _ scene: SnapshotScene, elements: [Element], ocr: TextReading.Stats,
        tree: TreeReading, fromTree: TreeElements
    ) -> Snapshot {
        let active = elements.first { $0.role == .window && $0.active == true }?.ref
        var snapshot = Snapshot(
            screen: scene.screen, monitors: scene.monitors, activeWindow: active, area: scene.area,
            elements: elements, ocr: ocr)
        if let full = tree.tree {
            snapshot.accessibility = Snapshot.AccessibilityStats(
                apps: full.apps.count, nodes: full.nodes.count, windows: fromTree.served.count,
                elements: fromTree.elements.count, milliseconds: tree.milliseconds)
        }
        snapshot.warnings = tree.warnings.isEmpty ? nil : tree.warnings
        return snapshot
    }
}

/// Pixel evidence around a text line: is it inside a box (button, field) or beside a small square (checkbox)?
struct PixelEvidence {
    let frame: Frame
    let origin: Point

    private func rgb(_ x: Int, _ y: Int) -> RGB? { frame.pixel(x: x - origin.x, y: y - origin.y) }

    private static func differs(_ a: RGB, _ b: RGB) -> Bool {
        abs(Int(a.r) - Int(b.r)) + abs(Int(a.g) - Int(b.g)) + abs(Int(a.b) - Int(b.b)) > 30
    }

    /// The role of a line, the box to report for it, and its label's words (a check box's square, when OCR read
    /// it as a glyph such as "O" or "[]", is not part of the label).
    func classify(_ line: TextLine) -> (Role, Rect, TextLine) {
        if line.words.count >= 2, let first = line.words.first, first.text.count <= 2,
            abs(first.box.width - first.box.height) <= 5, (7...24).contains(first.box.height)
        {
            let rest = TextLine(words: Array(line.words.dropFirst()))
            if let background = ringColour(rest.box),
                let square = checkboxSquare(left: rest.box, background: background),
                square.intersection(first.box).width * 2 >= first.box.width
            {
                return (.checkbox, square.union(rest.box), rest)
            }
        }
        // A radio button's circle, read as a round glyph before its label ("© Small", "O Medium").
        if line.words.count >= 2, let first = line.words.first, Self.circles.contains(first.text),
            abs(first.box.width - first.box.height) <= 4, (7...24).contains(first.box.height),
            let second = line.words.dropFirst().first, second.box.x - (first.box.x + first.box.width) <= 16
        {
            let rest = TextLine(words: Array(line.words.dropFirst()))
            return (.radio, first.box.union(rest.box), rest)
        }
        let (role, box) = classify(box: line.box, words: line.words.count)
        return (role, box, line)
    }

    /// A line cut before each check box square inside it: check boxes side by side read as one line ("Remember me |
    /// | Bold", the square read as strokes) are each their own control, the square starting the next one's line.
    func splitAtSquares(_ line: TextLine) -> [TextLine] {
        let words = line.words
        var lines: [TextLine] = [], start = 0
        for k in words.indices.dropFirst(2) {
            guard let background = ringColour(words[k].box),
                let square = checkboxSquare(left: words[k].box, background: background)
            else { continue }
            // The words OCR made of the square: those whose centre it holds, just before the label.
            var first = k
            while first > start + 1, square.contains(words[first - 1].box.center) { first -= 1 }
            guard first < k else { continue }
            lines.append(TextLine(words: Array(words[start..<first])))
            start = first
        }
        return lines + [TextLine(words: Array(words[start...]))]
    }

    /// What OCR makes of a radio button's circle, empty or chosen.
    static let circles: Set<String> = [
        "©", "®", "O", "o", "0", "@", "◉", "○", "●", "©)", "(o)", "()", "(@)", "e", "@)",
    ]

    /// The role of a line's box by what surrounds it.
    private func classify(box b: Rect, words: Int) -> (Role, Rect) {
        // Controls have short labels; long lines are text whatever surrounds them.
        guard words <= 4, b.width < 400, let background = ringColour(b) else { return (.text, b) }
        if let square = checkboxSquare(left: b, background: background) {
            return (.checkbox, square.union(b))
        }
        let vertical = min(b.height + 14, 40), horizontal = min(3 * b.height + 60, 260)
        guard let left = edge(from: b, dx: -1, dy: 0, limit: horizontal, background: background),
            let right = edge(from: b, dx: 1, dy: 0, limit: horizontal * 3, background: background),
            let up = edge(from: b, dx: 0, dy: -1, limit: vertical, background: background),
            let down = edge(from: b, dx: 0, dy: 1, limit: vertical, background: background)
        else { return (.text, b) }
        let box = Rect(x: b.x - left, y: b.y - up, width: b.width + left + right + 1, height: b.height + up + down + 1)
        let balanced = abs(left - right) <= max(8, (left + right) * 3 / 10)
        if balanced && right <= horizontal { return (.button, box) }
        if left <= 16 && right > left * 2 { return (.field, box) }
        return (.text, b)
    }

    /// The most common colour on a ring 3 px outside the box: the label's own background.
    private func ringColour(_ b: Rect) -> RGB? {
        var counts: [RGB: Int] = [:]
        let x0 = b.x - 3, y0 = b.y - 3, x1 = b.x + b.width + 2, y1 = b.y + b.height + 2
        for x in stride(from: x0, through: x1, by: 2) {
            if let p = rgb(x, y0) { counts[p, default: 0] += 1 }
            if let p = rgb(x, y1) { counts[p, default: 0] += 1 }
        }
        for y in stride(from: y0, through: y1, by: 2) {
            if let p = rgb(x0, y) { counts[p, default: 0] += 1 }
            if let p = rgb(x1, y) { counts[p, default: 0] += 1 }
        }
        return counts.max { $0.value < $1.value }?.key
    }

    /// Distance from the box's side to the first line of pixels (parallel to that side, as long as it) that mostly
    /// differs from the background: an outline or a change of fill. Nil when none within `limit`.
    private func edge(from b: Rect, dx: Int, dy: Int, limit: Int, background: RGB) -> Int? {
        for d in 3...max(3, limit) {
            var differing = 0, total = 0
            if dx != 0 {
                let x = dx < 0 ? b.x - d : b.x + b.width - 1 + d
                for y in b.y..<(b.y + b.height) {
                    guard let p = rgb(x, y) else { return nil }
                    total += 1
                    if Self.differs(p, background) { differing += 1 }
                }
            } else {
                let y = dy < 0 ? b.y - d : b.y + b.height - 1 + d
                for x in stride(from: b.x, to: b.x + b.width, by: 1) {
                    guard let p = rgb(x, y) else { return nil }
                    total += 1
                    if Self.differs(p, background) { differing += 1 }
                }
            }
            if total > 0 && differing * 10 >= total * 8 { return d }
        }
        return nil
    }

    /// An empty input box just right of a short label ("Account name [          ]"): an outline 16–48 px tall and at
    /// least 40 px wide, starting within 60 px of the label, spanning the label's centre row, with nothing drawn
    /// inside; with square corners or rounded ones (GTK's). Fields with text in them are found from that text
    /// instead.
    func emptyField(rightOf b: Rect) -> Rect? { squareField(rightOf: b) ?? roundedField(rightOf: b) }

    /// An empty input box found from inside: its rounded corners (GTK's entries) leave its left side shorter than
    /// the box and its top side starting further in.
    private func roundedField(rightOf b: Rect) -> Rect? {
        guard b.width < 400, let background = ringColour(b) else { return nil }
        let isInk = { (x: Int, y: Int) in self.isInk(x, y, on: background) }
        let cy = b.y + b.height / 2, start = b.x + b.width + 3
        guard let x0 = (start..<(start + 60)).first(where: { isInk($0, cy) }) else { return nil }
        // The left side, then from a point inside it the other sides, each where the inside's colour ends going out
        // (a side drawn in the inside's colour, as a sunken relief's light edge, is the pixel before the
        // background): a rounded corner leaves the left side shorter than the box, the top side starting further in.
        let (sideTop, sideBottom) = column(x: x0, through: cy, reach: 48, background: background)
        let probe = x0 + 6
        guard sideBottom - sideTop + 1 >= 8, let fill = rgb(probe, cy) else { return nil }
        let ends = { (x: Int, y: Int) in self.rgb(x, y).map { Self.differs($0, fill) } ?? true }
        let side = { (x: Int, y: Int, back: (Int, Int)) -> (Int, Int) in
            isInk(x, y) ? (x, y) : (x + back.0, y + back.1)
        }
        guard let up = (1...30).lazy.map({ cy - $0 }).first(where: { ends(probe, $0) }),
            let down = (1...30).lazy.map({ cy + $0 }).first(where: { ends(probe, $0) }),
            let across = (1...2000).lazy.map({ probe + $0 }).first(where: { ends($0, cy) })
        else { return nil }
        let top = side(probe, up, (0, 1)).1, bottom = side(probe, down, (0, -1)).1
        let x1 = side(across, cy, (-1, 0)).0
        let height = bottom - top + 1, width = x1 - x0 + 1
        guard (16...48).contains(height), width >= 40, sideTop >= top, sideBottom <= bottom else { return nil }
        // The other sides are there too, but for their corners.
        let corner = min(8, height / 3)
        let span = (x0 + corner)...(x1 - corner)
        let topInk = span.filter { isInk($0, top) }.count, bottomInk = span.filter { isInk($0, bottom) }.count
        let rightInk = ((top + corner)...(bottom - corner)).filter { isInk(x1, $0) }.count
        guard topInk * 10 >= span.count * 9, bottomInk * 10 >= span.count * 9,
            rightInk * 10 >= (height - 2 * corner) * 9
        else { return nil }
        guard isBlank(x: (x0 + corner)...(x1 - corner), y: (top + 3)...(bottom - 3), fill: fill) else { return nil }
        return Rect(x: x0, y: top, width: width, height: height)
    }

    /// An empty input box with square corners, found along its sides from the left side's ends.
    private func squareField(rightOf b: Rect) -> Rect? {
        guard b.width < 400, let background = ringColour(b) else { return nil }
        let isInk = { (x: Int, y: Int) in self.isInk(x, y, on: background) }
        let cy = b.y + b.height / 2, start = b.x + b.width + 3
        guard let x0 = (start..<(start + 60)).first(where: { isInk($0, cy) }) else { return nil }
        let (top, bottom) = column(x: x0, through: cy, reach: 48, background: background)
        let height = bottom - top + 1
        guard (16...48).contains(height) else { return nil }
        var x1 = x0
        while x1 - x0 < 2000 && isInk(x1 + 1, top) { x1 += 1 }
        let width = x1 - x0 + 1
        guard width >= 40 else { return nil }
        // The other two sides are there too.
        let bottomInk = (x0...x1).filter { isInk($0, bottom) }.count
        let rightInk = (top...bottom).filter { isInk(x1, $0) }.count
        guard bottomInk * 10 >= width * 9, rightInk * 10 >= height * 9 else { return nil }
        guard let fill = rgb(x0 + 3, cy), isBlank(x: (x0 + 3)...(x1 - 3), y: (top + 3)...(bottom - 3), fill: fill)
        else { return nil }
        return Rect(x: x0, y: top, width: width, height: height)
    }

    /// Whether a box's inside is one colour, `fill`, apart from a text cursor (at most 3 % of every other column's
    /// pixels differ): what makes an outlined box an empty field.
    private func isBlank(x: ClosedRange<Int>, y: ClosedRange<Int>, fill: RGB) -> Bool {
        var marks = 0, total = 0
        for row in y {
            for column in stride(from: x.lowerBound, through: x.upperBound, by: 2) {
                guard let p = rgb(column, row) else { continue }
                total += 1
                if Self.differs(p, fill) { marks += 1 }
            }
        }
        return total > 0 && marks * 100 <= total * 3
    }

    /// Whether the pixel differs from `background` (off-screen pixels do not).
    private func isInk(_ x: Int, _ y: Int, on background: RGB) -> Bool {
        rgb(x, y).map { Self.differs($0, background) } ?? false
    }

    /// The run of ink pixels in column `x` through row `y` (at most `reach` rows each way): a box's side.
    private func column(x: Int, through y: Int, reach: Int, background: RGB) -> (top: Int, bottom: Int) {
        var top = y, bottom = y
        while y - top < reach && isInk(x, top - 1, on: background) { top -= 1 }
        while bottom - y < reach && isInk(x, bottom + 1, on: background) { bottom += 1 }
        return (top, bottom)
    }

    /// A small square outline (9–22 px) ending just left of the label, vertically centred on it.
    private func checkboxSquare(left b: Rect, background: RGB) -> Rect? {
        let cy = b.y + b.height / 2
        // The square's right side: the first differing column within 16 px left of the label, on the centre row.
        guard let gap = (3...16).first(where: { rgb(b.x - $0, cy).map { Self.differs($0, background) } ?? false })
        else { return nil }
        let right = b.x - gap
        // Walk up and down the side to its length.
        let isInk = { (x: Int, y: Int) in self.isInk(x, y, on: background) }
        let (top, bottom) = column(x: right, through: cy, reach: 24, background: background)
        let side = bottom - top + 1
        guard (9...22).contains(side) else { return nil }
        let leftX = right - side + 1
        // An outline: all four sides are ink and the centre is not the same colour as the sides.
        for y in top...bottom where !isInk(leftX, y) { return nil }
        for x in leftX...right where !isInk(x, top) || !isInk(x, bottom) { return nil }
        return Rect(x: leftX, y: top, width: side, height: side)
    }
}

import Foundation
import XclawBase
import XclawScreen

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
        // The height of each window's text, once: the median of its confident words (an icon is judged against it).
        var heightsByWindow: [UInt: [Int]] = [:]
        for word in lines.flatMap(\.words) where word.confidence >= 80 && word.text.count >= 2 {
            if let window = owned(word.box) { heightsByWindow[window.id, default: []].append(word.box.height) }
        }
        let textHeights = heightsByWindow.mapValues { $0.sorted()[$0.count / 2] }
        // The icons found from letters: the seeds of the toolbar rows completed below.
        var iconSeeds: [Rect] = []
        for read in remaining.flatMap(pixels.splitAtSquares) {
            // A row of icons OCR made letters of ("RB" for FeatherPad's New and Open, without a bus): unsure, short,
            // and much taller than the window's text. They are controls with no label, one per icon, tapped by ref;
            // their "letters" are not text anyone could name. Two icons at least: one tall unsure glyph may be a
            // big "+" or a digit, and glyphs without letters stay text.
            if read.words.allSatisfy({ !Finder.isGlyph($0) }), let lineOwner = owned(read.box),
                let height = textHeights[lineOwner.id], read.words.allSatisfy({ Finder.isIcon($0, height) }),
                let icons = pixels.icons(
                    in: Rect(
                        x: read.box.x - 2, y: read.box.y - 2, width: read.box.width + 4, height: read.box.height + 4)),
                icons.count >= 2
            {
                iconSeeds += icons
                recognized += icons.map { Self.iconButton($0, in: lineOwner, refs: refs) }
                continue
            }
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
        recognized = Self.toolbarIcons(
            recognized, seeds: iconSeeds, boxes: boxes.map(\.box), pixels: pixels, refs: refs
        ) { owned($0).map { ($0, textHeights[$0.id]) } }
        // Empty fields have no text of their own: name them by the label on their left, as a form reads. A field the
        // box finder already holds as an unread control (Motif's text field, sunken in its shadow) is that control,
        // named: listed twice, "Name" tied with itself.
        let snapshotBoxes = recognized.prefix(boxes.count)
        var named: [Int: String] = [:]
        recognized = recognized.flatMap { label -> [Element] in
            guard label.role == .text, (label.words?.count ?? 0) <= 4,
                let field = pixels.emptyField(rightOf: label.box),
                !lines.contains(where: { field.contains($0.box.center) })
            else { return [label] }
            if let same = snapshotBoxes.indices.first(where: {
                let other = snapshotBoxes[$0]
                let common = other.box.intersection(field)
                return other.label.isEmpty && common.width * common.height * 10 >= field.width * field.height * 8
                    && common.width * common.height * 10 >= other.box.width * other.box.height * 8
            }) {
                named[same] = label.label
                return [label]
            }
            return [
                label,
                Element(
                    ref: "", role: .field, label: label.label, box: field, window: label.window,
                    windowID: label.windowID, changed: false, active: nil, className: nil,
                    confidence: nil, words: nil, source: .ocr),
            ]
        }
        for (index, caption) in named {
            // Named by its caption's words, as an empty field is: no reading of its own to doubt.
            (recognized[index].role, recognized[index].label, recognized[index].confidence) = (.field, caption, nil)
        }
        return elements + readingOrder(Self.placeInGrids(recognized, from: boxes.count))
    }

    /// A toolbar whose icons OCR partly made letters of, completed: along the row of two or more icons found from
    /// those letters (`seeds`), a short word much taller than the window's text and not sure of itself is an icon too
    /// (FeatherPad's Undo, read "9S" at 73 %), and each run of ink about the icons' size that no element covers is one
    /// more (its Find and Replace, which OCR read as nothing). Only seeds start a row: two unread boxed buttons side
    /// by side are no toolbar. `owner` gives a box's window and the height of that window's text.
    static func toolbarIcons(
        _ recognized: [Element], seeds: [Rect], boxes: [Rect], pixels: PixelEvidence, refs: RefStore,
        owner: (Rect) -> (WindowInfo, Int?)?
    ) -> [Element] {
        var out = recognized
        var done: [Rect] = []
        for seed in seeds where !done.contains(where: { $0.contains(seed.center) }) {
            guard let (window, height) = owner(seed) else { continue }
            let row = seeds.filter { abs($0.center.y - seed.center.y) <= 3 && window.frame.contains($0.center) }
            guard row.count >= 2 else { continue }
            let top = row.map(\.y).min() ?? seed.y
            let bottom = row.map { $0.y + $0.height }.max() ?? seed.y
            let band = Rect(x: window.frame.x, y: top - 1, width: window.frame.width, height: bottom - top + 2)
            done.append(band)
            let sizes = row.map { max($0.width, $0.height) }.sorted()
            let typical = sizes[sizes.count / 2]
            let makeIcon = { (box: Rect) in Self.iconButton(box, in: window, refs: refs) }
            // Words on the row that are icons read with some confidence.
            if let height {
                out = out.flatMap { e -> [Element] in
                    guard e.role == .text, e.windowID == window.id, band.contains(e.box.center),
                        let words = e.words,
                        words.allSatisfy({
                            !Finder.isGlyph($0) && $0.confidence < 90 && $0.text.count <= 3
                                && $0.box.height * 2 >= height * 3
                        }),
                        let found = pixels.icons(in: e.box), !found.isEmpty
                    else { return [e] }
                    return found.map(makeIcon)
                }
            }
            let taken = out.map(\.box) + boxes
            for found in pixels.icons(in: band) ?? []
            where (typical * 2 / 3...typical * 3 / 2).contains(max(found.width, found.height))
                && found.height * 3 >= typical * 2
                && !taken.contains(where: { !$0.intersection(found).isEmpty })
            {
                out.append(makeIcon(found))
            }
        }
        return out
    }

    /// An icon OCR cannot name, as an element: an unlabelled button of `window`, tapped by its ref.
    static func iconButton(_ box: Rect, in window: WindowInfo, refs: RefStore) -> Element {
        Element(
            ref: "", role: .button, label: "", box: box, window: refs.windowRef(window.id), windowID: window.id,
            changed: false, active: nil, className: nil, confidence: 0, words: [], source: .ocr)
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

import Foundation
import XclawBase
import XclawScreen

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
        let (role, box, unread) = classify(box: line.box, words: line.words.count)
        guard let unread else { return (role, box, line) }
        // Ink no word was read from beside the words, inside their control: its place is kept in the label as
        // `PixelEvidence.unreadMark`, so the label says it is partial and a tap on its words is refused.
        let mark = TextWord(text: Self.unreadMark, box: unread, confidence: 0)
        let words = unread.x < line.box.x ? [mark] + line.words : line.words + [mark]
        return (role, box, TextLine(words: words))
    }

    /// What stands in a label for ink inside its control that OCR did not read ("� changes": Qt's "Discard changes"
    /// with "Discard" and its icon unread).
    static let unreadMark = "\u{FFFD}"

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

    /// The role of a line's box by what surrounds it, and the ink inside that box that is no part of the line (a
    /// control's label read in part), if any.
    private func classify(box b: Rect, words: Int) -> (Role, Rect, Rect?) {
        // Controls have short labels; long lines are text whatever surrounds them.
        guard words <= 4, b.width < 400, let background = ringColour(b) else { return (.text, b, nil) }
        if let square = checkboxSquare(left: b, background: background) {
            return (.checkbox, square.union(b), nil)
        }
        let vertical = min(b.height + 14, 40), horizontal = min(3 * b.height + 60, 260)
        guard let left = edge(from: b, dx: -1, dy: 0, limit: horizontal, background: background),
            let right = edge(from: b, dx: 1, dy: 0, limit: horizontal * 3, background: background),
            let up = edge(from: b, dx: 0, dy: -1, limit: vertical, background: background),
            let down = edge(from: b, dx: 0, dy: 1, limit: vertical, background: background)
        else { return (.text, b, nil) }
        let box = Rect(x: b.x - left, y: b.y - up, width: b.width + left + right + 1, height: b.height + up + down + 1)
        let balanced = abs(left - right) <= max(8, (left + right) * 3 / 10)
        if balanced && right <= horizontal { return (.button, box, nil) }
        if left <= 16 && right > left * 2 { return (.field, box, nil) }
        // Off-centre in a box of its own, with ink beside it that was not read: a button whose label was read in
        // part (Qt's "Discard changes" read as "changes"). Pressing "changes" would press a control nobody named.
        if right <= horizontal, box.height <= 40 {
            let gap =
                left > right
                ? Rect(x: box.x + 2, y: b.y, width: left - 4, height: b.height)
                : Rect(x: b.x + b.width + 2, y: b.y, width: right - 4, height: b.height)
            if let ink = inkBox(in: gap, background: background) { return (.button, box, ink) }
        }
        return (.text, b, nil)
    }

    /// The bounding box of the pixels of `rect` that differ from `background`, when there are enough of them to be
    /// a glyph or an icon (a few columns, a dozen pixels), else nil.
    private func inkBox(in rect: Rect, background: RGB) -> Rect? {
        guard rect.width >= 3, rect.height >= 3 else { return nil }
        var x0 = Int.max, y0 = Int.max, x1 = Int.min, y1 = Int.min, count = 0
        var columns = Set<Int>()
        for y in rect.y..<(rect.y + rect.height) {
            for x in rect.x..<(rect.x + rect.width) where isInk(x, y, on: background) {
                count += 1
                columns.insert(x)
                (x0, y0, x1, y1) = (min(x0, x), min(y0, y), max(x1, x), max(y1, y))
            }
        }
        guard count >= 12, columns.count >= 3 else { return nil }
        return Rect(x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1)
    }

    /// The icons side by side in `box` (a word OCR made of a row of them, "RB" for FeatherPad's New and Open): its
    /// runs of inked columns split at 3 or more blank ones, each the box of its ink; nil when its surroundings have no
    /// colour of their own.
    func icons(in box: Rect) -> [Rect]? {
        guard let background = ringColour(box) else { return nil }
        var out: [Rect] = []
        var run: Rect?
        var blank = 0
        for x in box.x..<(box.x + box.width) {
            let inked = (box.y..<(box.y + box.height)).filter { isInk(x, $0, on: background) }
            if let top = inked.first, let bottom = inked.last {
                let ink = Rect(x: x, y: top, width: 1, height: bottom - top + 1)
                run = run.map { $0.union(ink) } ?? ink
                blank = 0
            } else {
                blank += 1
                if blank >= 3, let done = run {
                    out.append(done)
                    run = nil
                }
            }
        }
        if let done = run { out.append(done) }
        return out.filter { $0.width >= 3 && $0.height >= 3 }
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
                // A side runs past the words' rows, a letter's stem does not: Qt's "Discard changes" read as
                // "changes" took the "d" of "Discard" for its button's left side and became a button of its own.
                let past = [b.y - 1, b.y + b.height].allSatisfy { y in
                    rgb(x, y).map { Self.differs($0, background) } ?? false
                }
                if !past {
                    // Off the frame ends the search, as it does below.
                    if rgb(x, b.y) == nil { return nil }
                    continue
                }
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
        // The inside's colour is what most of the row right of the side has, and the probe a column of it: a caret
        // drawn a few pixels in (a focused empty entry) is neither.
        guard sideBottom - sideTop + 1 >= 8, let (fill, _) = dominant(row: cy, (x0 + 3)...(x0 + 40)),
            let probe = ((x0 + 6)...(x0 + 40)).first(where: { rgb($0, cy).map { !Self.differs($0, fill) } ?? false })
        else { return nil }
        let ends = { (x: Int, y: Int) in self.rgb(x, y).map { Self.differs($0, fill) } ?? true }
        // Where the inside ends is the side, or a light bevel just inside it (Qt's focused entry: a pale line, then
        // its blue frame), or the inside's last row when the side is drawn in the background's colour.
        let side = { (x: Int, y: Int, back: (Int, Int)) -> (Int, Int) in
            if isInk(x, y) { return (x, y) }
            if isInk(x - back.0, y - back.1) { return (x - back.0, y - back.1) }
            return (x + back.0, y + back.1)
        }
        guard let up = (1...30).lazy.map({ cy - $0 }).first(where: { ends(probe, $0) }),
            let down = (1...30).lazy.map({ cy + $0 }).first(where: { ends(probe, $0) }),
            let across = (1...2000).lazy.map({ probe + $0 }).first(where: { ends($0, cy) })
        else { return nil }
        let top = side(probe, up, (0, 1)).1, bottom = side(probe, down, (0, -1)).1
        let x1 = side(across, cy, (-1, 0)).0
        let height = bottom - top + 1, width = x1 - x0 + 1
        guard (16...48).contains(height), width >= 40, sideTop >= top, sideBottom <= bottom else { return nil }
        guard !sideRunsOn(left: x0, top: top, bottom: bottom, background: background) else { return nil }
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
        guard !sideRunsOn(left: x0, top: top, bottom: bottom, background: background) else { return nil }
        // The inside's colour is what most of its middle row has: a focused entry's caret, drawn right inside its
        // border (where the third column from a focus ring is), is a mark on it, not its colour.
        guard let (fill, _) = dominant(row: cy, (x0 + 1)...(x1 - 1)),
            isBlank(x: (x0 + 3)...(x1 - 3), y: (top + 3)...(bottom - 3), fill: fill)
        else { return nil }
        return Rect(x: x0, y: top, width: width, height: height)
    }

    /// The colour most pixels of row `y` over `xs` share (within `differs`'s tolerance of the first of its kind),
    /// and the first column of it, or nil when no colour has half of them.
    private func dominant(row y: Int, _ xs: ClosedRange<Int>) -> (colour: RGB, x: Int)? {
        var kinds: [(colour: RGB, count: Int, first: Int)] = []
        var total = 0
        for x in xs {
            guard let p = rgb(x, y) else { continue }
            total += 1
            if let k = kinds.firstIndex(where: { !Self.differs($0.colour, p) }) {
                kinds[k].count += 1
            } else {
                kinds.append((p, 1, x))
            }
        }
        guard let best = kinds.max(by: { $0.count < $1.count }), best.count * 2 > total else { return nil }
        return (best.colour, best.first)
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

    /// Whether a box's top or bottom side runs on past its left side at `left`: then its left corners are no corners,
    /// and the box is the empty rest of a strip (FeatherPad's tab bar beside the tab "Untitled", its toolbar beside an
    /// icon), not a field.
    private func sideRunsOn(left: Int, top: Int, bottom: Int, background: RGB) -> Bool {
        [top, bottom].contains { isInk(left - 3, $0, on: background) && isInk(left - 6, $0, on: background) }
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

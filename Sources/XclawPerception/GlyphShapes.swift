import XclawScreen

/// Recognises the simplest label symbols by their strokes: `-`, `=`, `.`, `+`, `*`, `÷`, `×`, `(` and `)` are one to
/// three bars, dots or arcs, which tesseract reads wrong or not at all when they stand alone on a key ("." read as "+", "=" unread), while
/// their geometry is unmistakable at any font size.
enum GlyphShapes {
    /// A label's pixels as ink/no ink, thresholded halfway between the fill and the strongest ink.
    struct Mask {
        let width: Int
        let height: Int
        let bits: [Bool]
        /// Whether the ink is lighter than the fill (a dark theme): the image is inverted for tesseract.
        let inkIsLighter: Bool
        /// Whether the glyphs are anti-aliased (many levels between fill and ink) rather than a bitmap font's.
        let isSmoothed: Bool
        /// The box of all ink, pale pixels too (a quarter of the strongest ink from the fill): a small glyph's shape
        /// is in its pale pixels as much as in its dark ones.
        let faintBox: Rect?

        /// The mask of `rect` of a gray image whose fill level is `fill`.
        init(gray: [UInt8], stride: Int, rect: Rect, fill: Int) {
            width = rect.width
            height = rect.height
            var strongest = 0, lighter = 0, darker = 0
            for y in rect.y..<(rect.y + rect.height) {
                for x in rect.x..<(rect.x + rect.width) {
                    let d = Int(gray[y * stride + x]) - fill
                    strongest = max(strongest, abs(d))
                    if d > 20 { lighter += 1 } else if d < -20 { darker += 1 }
                }
            }
            let cut = max(20, strongest / 2)
            var between = 0, inked = 0
            for y in rect.y..<(rect.y + rect.height) {
                for x in rect.x..<(rect.x + rect.width) {
                    let d = abs(Int(gray[y * stride + x]) - fill)
                    if d > strongest / 6 { inked += 1 }
                    if d > strongest / 6 && d < strongest * 5 / 6 { between += 1 }
                }
            }
            isSmoothed = between * 5 >= inked
            var bits = [Bool](repeating: false, count: rect.width * rect.height)
            let pale = max(20, strongest / 4)
            var faint: Rect?
            for y in 0..<rect.height {
                for x in 0..<rect.width {
                    let d = abs(Int(gray[(rect.y + y) * stride + rect.x + x]) - fill)
                    bits[y * rect.width + x] = d > cut
                    if d > pale {
                        let pixel = Rect(x: x, y: y, width: 1, height: 1)
                        faint = faint.map { $0.union(pixel) } ?? pixel
                    }
                }
            }
            self.bits = bits
            faintBox = faint
            inkIsLighter = lighter > darker
        }

        /// Whether the pixel is ink (outside the mask: no).
        subscript(x: Int, y: Int) -> Bool {
            x >= 0 && y >= 0 && x < width && y < height && bits[y * width + x]
        }

        /// The median length of horizontal runs of ink: 1 for a bitmap font's strokes, 2 or more for smoothed ones.
        var strokeWidth: Int {
            var runs: [Int] = []
            for y in 0..<height {
                var run = 0
                for x in 0...width {
                    if self[x, y] {
                        run += 1
                    } else if run > 0 {
                        runs.append(run)
                        run = 0
                    }
                }
            }
            return runs.sorted().dropFirst(runs.count / 2).first ?? 0
        }

        /// The 8-connected blobs of ink, as boxes (relative to the mask) with their pixel counts, top to bottom.
        var blobs: [(box: Rect, pixels: Int)] {
            var seen = [Bool](repeating: false, count: bits.count)
            var out: [(Rect, Int)] = []
            for start in bits.indices where bits[start] && !seen[start] {
                var stack = [start]
                seen[start] = true
                var x0 = width, y0 = height, x1 = 0, y1 = 0, count = 0
                while let p = stack.popLast() {
                    let x = p % width, y = p / width
                    count += 1
                    (x0, x1, y0, y1) = (min(x0, x), max(x1, x), min(y0, y), max(y1, y))
                    for dy in -1...1 {
                        for dx in -1...1 where self[x + dx, y + dy] {
                            let q = (y + dy) * width + x + dx
                            if !seen[q] {
                                seen[q] = true
                                stack.append(q)
                            }
                        }
                    }
                }
                out.append((Rect(x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1), count))
            }
            return out.sorted { ($0.0.y, $0.0.x) < ($1.0.y, $1.0.x) }
        }
    }

    /// How many side-by-side glyphs the blobs make: blobs whose columns overlap are one glyph ("=", "÷", "%", "i").
    static func columns(_ blobs: [(box: Rect, pixels: Int)]) -> Int { columnBoxes(blobs).count }

    /// The side-by-side glyphs the blobs make, left to right, each the union of the blobs whose columns overlap.
    static func columnBoxes(_ blobs: [(box: Rect, pixels: Int)]) -> [Rect] {
        var out: [Rect] = []
        for blob in blobs.sorted(by: { $0.box.x < $1.box.x }) {
            if let last = out.last, blob.box.x < last.x + last.width {
                out[out.count - 1] = last.union(blob.box)
            } else {
                out.append(blob.box)
            }
        }
        return out
    }

    /// "(" or ")": one tall thin stroke whose middle bows away from its ends, which are single pixels wide (a
    /// bracket's ends are bars).
    static func parenthesis(_ mask: Mask, _ box: Rect, lineHeight: Int) -> String? {
        let w = box.width, h = box.height
        guard h >= 2 * w, h * 3 >= lineHeight, w >= 2 else { return nil }
        let inkCount = { (y: Int) in (box.x..<(box.x + w)).filter { mask[$0, y] }.count }
        guard inkCount(box.y) * 2 <= max(2, w), inkCount(box.y + h - 1) * 2 <= max(2, w) else { return nil }
        // Mean ink column of the top quarter, the middle half and the bottom quarter, in quarter pixels.
        func centre(_ rows: Range<Int>) -> Int? {
            var sum = 0, count = 0
            for y in rows {
                for x in box.x..<(box.x + w) where mask[x, y] {
                    sum += x - box.x
                    count += 1
                }
            }
            return count == 0 ? nil : sum * 4 / count
        }
        let quarter = max(1, h / 4)
        guard let top = centre(box.y..<(box.y + quarter)),
            let middle = centre((box.y + quarter)..<(box.y + h - quarter)),
            let bottom = centre((box.y + h - quarter)..<(box.y + h))
        else { return nil }
        let bow = max(2, w)  // at least a quarter of the width in each direction, in quarter pixels
        if top - middle >= bow, bottom - middle >= bow { return "(" }
        if middle - top >= bow, middle - bottom >= bow { return ")" }
        return nil
    }

    /// The symbol the mask shows, or nil to let tesseract read it. `lineHeight` is the box's interior height: it says
    /// what counts as a thin bar or a dot at this size.
    static func classify(_ mask: Mask, lineHeight: Int) -> String? {
        let blobs = mask.blobs
        let thin = max(2, lineHeight / 7)
        // A solid bar: at least twice as wide as tall, thin, nearly all ink.
        func isBar(_ b: (box: Rect, pixels: Int)) -> Bool {
            b.box.width >= 3 && b.box.width >= 2 * b.box.height && b.box.height <= thin
                && b.pixels * 10 >= b.box.width * b.box.height * 8
        }
        // A dot: small, about as wide as tall, solid.
        func isDot(_ b: (box: Rect, pixels: Int)) -> Bool {
            let side = max(b.box.width, b.box.height)
            return side <= max(3, lineHeight / 5) && abs(b.box.width - b.box.height) <= 1
                && b.pixels * 2 >= b.box.width * b.box.height
        }
        switch blobs.count {
        case 1:
            let b = blobs[0]
            if isBar(b) { return "-" }
            if isDot(b) {
                // A minus at 8 points is two dark pixels between two pale ones: a dot by its dark pixels only.
                // Its pale pixels reach past the dark ones on both sides, in the same rows: a dot's anti-aliasing
                // spreads it by a pixel, not into a bar twice its width.
                let dark = b.box
                if let all = mask.faintBox, all.width >= 4, all.width >= 2 * dark.width, all.height <= dark.height,
                    all.x < dark.x, all.x + all.width > dark.x + dark.width
                {
                    return "-"
                }
                return "."
            }
            let w = b.box.width, h = b.box.height
            if let paren = parenthesis(mask, b.box, lineHeight: lineHeight) { return paren }
            guard w >= 5, h >= 5, abs(w - h) * 4 <= max(w, h) else { return nil }
            let cx = b.box.x + w / 2, cy = b.box.y + h / 2
            let rowInk = (b.box.x..<(b.box.x + w)).filter { x in (cy - 1...cy + 1).contains { mask[x, $0] } }.count
            let columnInk = (b.box.y..<(b.box.y + h)).filter { y in (cx - 1...cx + 1).contains { mask[$0, y] } }.count
            let corners = [
                (b.box.x, b.box.y), (b.box.x + w - 1, b.box.y), (b.box.x, b.box.y + h - 1),
                (b.box.x + w - 1, b.box.y + h - 1),
            ]
            let cornerInk = corners.filter { mask[$0.0, $0.1] }.count
            // An asterisk: a full middle row, and arms that leave the top and bottom rows in two places each.
            let runs = { (y: Int) -> Int in
                (b.box.x..<(b.box.x + w)).filter { mask[$0, y] && !mask[$0 - 1, y] }.count
            }
            if rowInk * 10 >= w * 9, runs(b.box.y) >= 2, runs(b.box.y + h - 1) >= 2, b.pixels * 2 <= w * h {
                return "*"
            }
            // A plus: a full row and a full column through the centre, empty corners.
            // Nothing but the bar and the stem (a small "4" is a bar and a stem too, plus a diagonal).
            let barRows = Set(
                (b.box.y..<(b.box.y + h)).filter { y in
                    (b.box.x..<(b.box.x + w)).filter { mask[$0, y] }.count * 10 >= w * 7
                })
            let stemColumns = Set(
                (b.box.x..<(b.box.x + w)).filter { x in
                    (b.box.y..<(b.box.y + h)).filter { mask[x, $0] }.count * 10 >= h * 7
                })
            var stray = 0
            for y in b.box.y..<(b.box.y + h) {
                for x in b.box.x..<(b.box.x + w) where mask[x, y] && !barRows.contains(y) && !stemColumns.contains(x) {
                    stray += 1
                }
            }
            let symmetric = stray * 10 <= b.pixels
            if rowInk * 10 >= w * 9, columnInk * 10 >= h * 9, cornerInk == 0, b.pixels * 2 <= w * h, symmetric {
                return "+"
            }
            // A cross: the four corners and the centre inked, the middle row mostly empty.
            if cornerInk == 4, mask[cx, cy], rowInk * 10 <= w * 6, columnInk * 10 <= h * 6 { return "×" }
            return nil
        case 2:
            let (a, b) = (blobs[0], blobs[1])
            let overlap = min(a.box.x + a.box.width, b.box.x + b.box.width) - max(a.box.x, b.box.x)
            if isBar(a), isBar(b), abs(a.box.width - b.box.width) * 10 <= 3 * max(a.box.width, b.box.width),
                overlap * 10 >= 7 * max(a.box.width, b.box.width)
            {
                return "="
            }
            return nil
        case 3:
            let (top, middle, bottom) = (blobs[0], blobs[1], blobs[2])
            let span = middle.box.x...(middle.box.x + middle.box.width)
            if isBar(middle), isDot(top), isDot(bottom), span.contains(top.box.center.x),
                span.contains(bottom.box.center.x), top.box.y + top.box.height <= middle.box.y,
                bottom.box.y >= middle.box.y + middle.box.height
            {
                return "÷"
            }
            return nil
        default:
            return nil
        }
    }
}

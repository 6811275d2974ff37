import CXclawShim
import XclawScreen

/// Word-sized pieces of a text line, so that a word drawn many times on screen is recognised once.
///
/// Tesseract's cost is its LSTM, which pays per column of text; terminal pages and logs repeat most of their words.
/// A one-line block is cut at blank column runs wider than any gap inside a word; each piece is keyed by its pixels.
/// Pieces not seen before are packed side by side into one synthetic line per block and recognised together; the words
/// read are mapped back to the pieces they fall in. Seen pieces (earlier on the page, or in an earlier reading — text
/// that scrolled) come from the cache. On the dense 6x13 bench page this reads about half the columns.
enum WordAtlas {
    /// A run of ink between word gaps, in frame coordinates, tight to its ink.
    struct Segment: Sendable {
        /// Tight ink box of the segment.
        var box: Rect
        /// Hash of its pixels (plus how the block is prepared), for the cache and for duplicates on the page.
        var key: UInt64
    }

    /// How a one-line block is drawn: what its pixels are compared against and how it is prepared.
    struct Style: Sendable {
        /// The block's background level (most common gray).
        var background: Int
        /// Integer upscale factor for tesseract.
        var scale: Int
        /// Whether the block is light text on a dark background.
        var invert: Bool { background < 128 }
    }

    /// Blank columns a word gap needs: more than any gap inside a word. Inside a word a gap is at most the two side
    /// bearings of narrow glyphs ("l.", "i,"), about a third of the line's ink height in monospace fonts; a space is
    /// a whole cell plus bearings. Merging two words into one piece costs only a missed repeat, while cutting a word
    /// would misread it, so the threshold errs high.
    static func gapThreshold(inkHeight: Int) -> Int { max(6, (inkHeight * 6 + 5) / 10) }

    /// Pieces of a block must be at least this tall for the cut to be trusted (and lower ones are rare and cheap).
    static let minimumInkHeight = 8

    /// Cuts a one-line block (its tight ink box `ink`) into word-sized segments; nil when it is not worth it (one
    /// piece, or a block too small to cut safely).
    static func segments(ink: Rect, style: Style, gray: UnsafeBufferPointer<UInt8>, stride: Int) -> [Segment]? {
        guard ink.height >= minimumInkHeight, ink.width > 0, let base = gray.baseAddress else { return nil }
        let threshold = 40
        func inked(_ x: Int, _ y: Int) -> Bool { abs(Int(base[y * stride + x]) - style.background) > threshold }
        // Columns with ink anywhere in the line.
        var column = [Bool](repeating: false, count: ink.width)
        for x in 0..<ink.width {
            for y in ink.y..<(ink.y + ink.height) where inked(ink.x + x, y) {
                column[x] = true
                break
            }
        }
        let gap = gapThreshold(inkHeight: ink.height)
        var runs: [(start: Int, end: Int)] = []  // end exclusive, in columns of the block
        var x = 0
        while x < ink.width {
            guard column[x] else { x += 1; continue }
            var end = x + 1, blank = 0
            while end + blank < ink.width {
                if column[end + blank] {
                    end += blank + 1
                    blank = 0
                } else {
                    blank += 1
                    if blank >= gap { break }
                }
            }
            runs.append((x, end))
            x = end + blank
        }
        guard runs.count >= 2 else { return nil }
        return runs.map { run in
            // Tight rows of the run, so the same word keys the same in lines with and without descenders.
            var top = ink.y + ink.height, bottom = ink.y
            for y in ink.y..<(ink.y + ink.height) {
                for cx in run.start..<run.end where inked(ink.x + cx, y) {
                    top = min(top, y)
                    bottom = max(bottom, y + 1)
                    break
                }
            }
            if top >= bottom { top = ink.y; bottom = ink.y + ink.height }
            let box = Rect(x: ink.x + run.start, y: top, width: run.end - run.start, height: bottom - top)
            let key =
                xclaw_hash_gray(
                    base, Int32(stride), Int32(box.x), Int32(box.y), Int32(box.width),
                    Int32(box.height))
                ^ UInt64(style.scale) << 52 ^ (style.invert ? 1 << 51 : 0) ^ 0x5345_474d_454e_5400  // "SEGMENT"
            return Segment(box: box, key: key)
        }
    }

    /// A synthetic line: segments copied side by side with word gaps between them, where each one landed.
    struct Line {
        /// The prepared image (scaled, inverted as needed), `width` x `height`.
        var image: [UInt8]
        var width: Int
        var height: Int
        /// Each segment's box in the unscaled synthetic line.
        var slots: [Rect]
    }

    /// Margin around the packed segments, and the rows above and below them, in unscaled pixels.
    static let margin = 4

    /// Packs `segments` of one block (which share its rows `rows`) into a synthetic line prepared for tesseract.
    /// `positions` are the segments' indices among all of the block's segments: neighbours on screen keep their gap,
    /// so a run of fresh words is read with its context ("[run 2]" stays one phrase); where words already known were
    /// left out, a word gap separates the rest.
    static func pack(
        _ segments: [Segment], positions: [Int], rows: Range<Int>, style: Style,
        gray: UnsafeBufferPointer<UInt8>, stride: Int
    ) -> Line {
        let spacing = gapThreshold(inkHeight: rows.count) + 4
        let height = rows.count + 2 * margin
        var slots: [Rect] = []
        var x = margin
        for (i, segment) in segments.enumerated() {
            if i > 0 {
                let previous = segments[i - 1].box
                let adjacent = positions[i] == positions[i - 1] + 1
                x += adjacent ? segment.box.x - (previous.x + previous.width) : spacing
            }
            slots.append(
                Rect(
                    x: x, y: margin + segment.box.y - rows.lowerBound, width: segment.box.width,
                    height: segment.box.height))
            x += segment.box.width
        }
        let width = x + margin
        var plain = [UInt8](repeating: UInt8(clamping: style.background), count: width * height)
        if let base = gray.baseAddress {
            for (segment, slot) in zip(segments, slots) {
                for row in 0..<segment.box.height {
                    let from = (segment.box.y + row) * stride + segment.box.x
                    let to = (slot.y + row) * width + slot.x
                    for i in 0..<segment.box.width { plain[to + i] = base[from + i] }
                }
            }
        }
        var image = [UInt8](repeating: 255, count: width * style.scale * height * style.scale)
        plain.withUnsafeBufferPointer { p in
            image.withUnsafeMutableBufferPointer {
                xclaw_prepare_block(
                    p.baseAddress, Int32(width), 0, 0, Int32(width), Int32(height), 0, 0, Int32(width),
                    Int32(height), Int32(style.background), Int32(style.scale), style.invert ? 1 : 0,
                    $0.baseAddress)
            }
        }
        return Line(image: image, width: width * style.scale, height: height * style.scale, slots: slots)
    }

    /// Assigns words read on a synthetic line (unscaled coordinates) to the slots their centres fall in (the nearest
    /// slot otherwise), each relative to its segment's top-left.
    static func unpack(_ words: [TextWord], slots: [Rect]) -> [[TextWord]] {
        var result = [[TextWord]](repeating: [], count: slots.count)
        for word in words {
            let cx = word.box.x + word.box.width / 2
            let distance = { (slot: Rect) in cx < slot.x ? slot.x - cx : max(0, cx - (slot.x + slot.width - 1)) }
            guard let index = slots.indices.min(by: { distance(slots[$0]) < distance(slots[$1]) }) else { continue }
            let slot = slots[index]
            result[index].append(
                TextWord(
                    text: word.text, box: word.box.offset(dx: -slot.x, dy: -slot.y),
                    confidence: word.confidence))
        }
        return result
    }
}

import CXclawShim
import XclawScreen

/// Reads words drawn in X's bitmap fonts exactly. Xaw and Motif draw their labels in misc-fixed by default, whose
/// capitals differ by a few pixels at 13 rows ("M", "N", "W" and "H"): tesseract, reading them upscaled, takes "Move"
/// for "Hove" and "Name" for "Hane". A bitmap font draws a character the same way every time, so a word whose glyphs
/// stand apart is looked up glyph by glyph in the fonts' own bitmaps, and when every glyph is found, in one font and
/// one way, that reading replaces tesseract's. Anti-aliased text, ink no font draws exactly, and glyphs that touch are
/// left as read: this never guesses, it only replaces a reading with a certainty.
enum BitmapText {
    /// The words of `lines` (relative to `rect`, a piece of the gray frame), each read exactly where it can be.
    static func reread(_ lines: [TextLine], gray: [UInt8], stride: Int, rect: Rect) -> [TextLine] {
        lines.map { line in
            TextLine(
                words: line.words.map { reread($0, gray: gray, stride: stride, origin: Point(x: rect.x, y: rect.y)) })
        }
    }

    /// `word` (its box relative to `origin` in the gray frame) read exactly, and trusted so (confidence 95 at
    /// least), or as it was.
    static func reread(_ word: TextWord, gray: [UInt8], stride: Int, origin: Point = Point(x: 0, y: 0)) -> TextWord {
        let letters = Array(word.text)
        guard !letters.isEmpty, letters.count <= 80, !letters.contains(" ") else { return word }
        let frame = Rect(x: 0, y: 0, width: stride, height: gray.count / max(1, stride))
        // Tesseract's box first; then a little taller, for an accent above a capital or a descender it left out.
        for (up, down) in [(0, 0), (3, 1)] {
            let box = Rect(
                x: word.box.x + origin.x - 1, y: word.box.y + origin.y - up, width: word.box.width + 2,
                height: word.box.height + up + down
            )
            .intersection(frame)
            guard box.width >= 2, box.height >= 4 else { return word }
            if let text = read(box, letters: letters, gray: gray, stride: stride) {
                return TextWord(text: text, box: word.box, confidence: max(word.confidence, 95))
            }
        }
        return word
    }

    /// The text of the glyphs in `box`, one per letter tesseract read, when every glyph is a bitmap font's exactly.
    private static func read(_ box: Rect, letters: [Character], gray: [UInt8], stride: Int) -> String? {
        let fill = gray.withUnsafeBufferPointer {
            Int(
                xclaw_background_level(
                    $0.baseAddress, Int32(stride), Int32(box.x), Int32(box.y), Int32(box.width), Int32(box.height)))
        }
        let mask = GlyphShapes.Mask(gray: gray, stride: stride, rect: box, fill: fill)
        guard !mask.isSmoothed else { return nil }
        let columns = GlyphShapes.columnBoxes(mask.blobs)
        guard columns.count == letters.count, let first = columns.first else { return nil }
        let line = columns.dropFirst().reduce(first) { $0.union($1) }
        let keys = columns.map { column in
            GlyphAtlas.InkKey(width: column.width, height: column.height) { mask[column.x + $0, column.y + $1] }
        }
        var readings: Set<String> = []
        for table in GlyphAtlas.shared.bitmapTables(forInkHeight: line.height) {
            guard line.height <= table.cellHeight, columns.allSatisfy({ $0.width <= table.cellWidth }) else { continue }
            var out: [Character] = []
            for (index, key) in keys.enumerated() {
                guard let drawn = table.glyphs[key] else { break }
                // Characters a font draws alike: the one tesseract read, if it is one of them; else no reading.
                if drawn.contains(letters[index]) {
                    out.append(letters[index])
                } else if drawn.count == 1 {
                    out.append(drawn[0])
                } else {
                    break
                }
            }
            if out.count == letters.count { readings.insert(String(out)) }
        }
        // Two fonts that read the ink differently: no certainty.
        return readings.count == 1 ? readings.first : nil
    }
}

import XclawScreen

/// Restores check marks tesseract reads as letters: a "✓" standing alone after a word reads "v" or "¥" in anti-aliased
/// fonts (and `watch --text "✓"` then never fires). A lone glyph read as one of those is compared with the fonts'
/// "v", "V", "✓" and "✔" and the symbol it was read as; a clear check mark replaces it. Only words of one glyph: a check
/// mark is a word of its own.
enum CheckMarks {
    /// What tesseract reads a lone check mark as (a real "√" is left alone: the fonts may lack it to compete).
    static let readings: Set<Character> = ["v", "V", "¥", "y", "Y"]
    /// The glyphs a lone check-mark-like glyph is compared with.
    static let candidates: [Character] = ["v", "V", "✓", "✔"]

    /// The words of `lines` (relative to `rect`, a piece of the gray frame) with lone check marks read as such.
    static func restore(_ lines: [TextLine], gray: [UInt8], stride: Int, rect: Rect) -> [TextLine] {
        lines.map { line in
            TextLine(words: line.words.map { restore($0, gray: gray, stride: stride, rect: rect) })
        }
    }

    private static func restore(_ word: TextWord, gray: [UInt8], stride: Int, rect: Rect) -> TextWord {
        guard word.text.count == 1, let read = word.text.first, readings.contains(read) else { return word }
        let box = Rect(x: word.box.x + rect.x, y: word.box.y + rect.y, width: word.box.width, height: word.box.height)
            .intersection(Rect(x: 0, y: 0, width: stride, height: gray.count / max(1, stride)))
        guard box.width >= 3, box.height >= 5 else { return word }
        let fill = GrayInk.background(gray, stride: stride, rect: box)
        let mask = GlyphShapes.Mask(gray: gray, stride: stride, rect: box, fill: fill)
        // One glyph: its blobs make one column.
        let columns = GlyphShapes.columnBoxes(mask.blobs)
        guard columns.count == 1, let ink = columns.first else { return word }
        let glyph = ink.offset(dx: box.x, dy: box.y)
        let coverage = TextRecognizer.coverage(gray: gray, stride: stride, rect: glyph, fill: fill)
        let family = candidates.contains(read) ? candidates : [read] + candidates
        guard
            let best = GlyphAtlas.shared.best(
                among: family, coverage: coverage, width: glyph.width, height: glyph.height),
            best != read, best == "✓" || best == "✔"
        else { return word }
        return TextWord(text: String(best), box: word.box, confidence: word.confidence)
    }
}

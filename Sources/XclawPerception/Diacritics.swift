import XclawScreen

/// Restores accents tesseract drops or swaps ("Héllo" read "Hello", "ünïcödé" read "ünicöde"), for reads in languages
/// that have them. Tesseract reads the base letters of small screen text well and their marks poorly, while a mark
/// is plain to see in the pixels: so each letter of a word whose glyphs stand apart (a letter and its accent share a
/// column) is compared with the fonts in the family of its base letter only ("e", "é", "è", "ê", "ë"), and a clear
/// winner replaces it. Only the mark can change: never the letter, never the word's length.
enum Diacritics {
    /// Each base letter and the accented letters built on it, as the Latin-script languages write them.
    static let families: [Character: [Character]] = {
        let groups = [
            "aàáâäãå", "AÀÁÂÄÃÅ", "eèéêë", "EÈÉÊË", "iìíîï", "IÌÍÎÏ", "oòóôöõ", "OÒÓÔÖÕ", "uùúûü", "UÙÚÛÜ", "cç",
            "CÇ", "nñ", "NÑ", "yýÿ", "YÝ",
        ]
        var out: [Character: [Character]] = [:]
        for group in groups {
            let members = Array(group)
            for member in members { out[member] = members }
        }
        return out
    }()

    /// The words of `lines` (relative to `rect`, a piece of the gray frame) with their marks checked against the pixels.
    static func restore(_ lines: [TextLine], gray: [UInt8], stride: Int, rect: Rect) -> [TextLine] {
        lines.map { line in
            TextLine(words: line.words.map { restore($0, gray: gray, stride: stride, rect: rect) })
        }
    }

    private static func restore(_ word: TextWord, gray: [UInt8], stride: Int, rect: Rect) -> TextWord {
        let letters = Array(word.text)
        guard letters.contains(where: { families[$0] != nil }) else { return word }
        // Up a few rows: a capital's accent can stand above the box tesseract gives the word.
        let box = Rect(
            x: word.box.x + rect.x, y: word.box.y + rect.y - 3, width: word.box.width, height: word.box.height + 3
        )
        .intersection(Rect(x: 0, y: 0, width: stride, height: gray.count / max(1, stride)))
        guard box.width >= 3, box.height >= 6 else { return word }
        let fill = GrayInk.background(gray, stride: stride, rect: box)
        let mask = GlyphShapes.Mask(gray: gray, stride: stride, rect: box, fill: fill)
        let columns = GlyphShapes.columnBoxes(mask.blobs)
        // One column a letter, or the letters cannot be told apart: leave the word as read.
        guard columns.count == letters.count else { return word }
        var changed = false
        var out = letters
        for (index, column) in columns.enumerated() {
            guard let family = families[letters[index]] else { continue }
            let glyph = column.offset(dx: box.x, dy: box.y)
            let coverage = TextRecognizer.coverage(gray: gray, stride: stride, rect: glyph, fill: fill)
            guard
                let best = GlyphAtlas.shared.best(
                    among: family, coverage: coverage, width: glyph.width, height: glyph.height)
            else { continue }
            if best != letters[index] {
                out[index] = best
                changed = true
            }
        }
        return changed ? TextWord(text: String(out), box: word.box, confidence: word.confidence) : word
    }
}

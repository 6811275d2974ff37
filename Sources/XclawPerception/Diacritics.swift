import Foundation
import XclawScreen

/// Restores accents tesseract drops or swaps ("Héllo" read "Hello", "ünïcödé" read "ünicöde"), for reads in languages
/// that have them. Tesseract reads the base letters of small screen text well and their marks poorly, while a mark
/// is plain to see in the pixels: so each letter of a word whose glyphs stand apart (a letter and its accent share a
/// column) is compared with the fonts in the family of its base letter only ("e", "é", "è", "ê", "ë"), and a clear
/// winner replaces it. Only the mark can change: never the letter, never the word's length. The fonts alone are not
/// trusted with the mark (a 3-pixel acute matched "Ë" better than "É" in DejaVu Sans Mono at 13 px): the ink above
/// the letter's body decides which marks are possible (two dots, one stroke and which way it leans, or none).
/// A symbol read in a word of letters where an accented letter stands ("Zoë" read "Zo&") competes with the accented
/// letters whose mark the ink shows, itself included: it stays unless one of them matches clearly better.
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

    /// Symbols tesseract puts where it has no letter for an accented glyph ("ë" read "&").
    static let strays: Set<Character> = ["&", "@", "%", "$", "#", "§", "¢", "£", "¥", "*", "€"]

    /// Every accented letter of the families: what a stray symbol may stand for.
    static let accented: [Character] = families.keys.filter {
        String($0).decomposedStringWithCanonicalMapping.unicodeScalars.count > 1
    }.sorted()

    /// The kind of mark a letter carries above its body, as far as the ink can tell them apart.
    enum Mark: Equatable {
        /// None above (a plain letter, or a mark below: "ç").
        case none
        /// Two dots side by side ("ë").
        case twoDots
        /// One stroke leaning right at the top ("é").
        case acute
        /// One stroke leaning left at the top ("è").
        case grave
        /// One mark of another shape: a circumflex, tilde or ring, or the dot of "i".
        case other
    }

    /// The mark `letter` carries above its body.
    static func mark(of letter: Character) -> Mark {
        let scalars = String(letter).decomposedStringWithCanonicalMapping.unicodeScalars.map(\.value)
        if scalars.contains(0x308) { return .twoDots }
        if scalars.contains(0x301) { return .acute }
        if scalars.contains(0x300) { return .grave }
        if scalars.contains(0x302) || scalars.contains(0x303) || scalars.contains(0x30A) { return .other }
        return letter == "i" || letter == "j" ? .other : .none
    }

    /// The marks the ink above the body of the glyph in `column` (mask coordinates, the mask of `box` of the gray
    /// image) allows: nil when the ink shows none apart from the body (a mark touching it, or no mark), which leaves the
    /// fonts to judge. A lone stroke that leans one way rules out the other way and the symmetric marks; its lean is
    /// weighed on the gray levels, pale pixels too, since a 3-pixel acute is half pale.
    static func marks(
        in column: Rect, of mask: GlyphShapes.Mask, gray: [UInt8], stride: Int, box: Rect, fill: Int
    ) -> Set<Mark>? {
        let blobs = mask.blobs.filter { $0.box.x >= column.x && $0.box.x + $0.box.width <= column.x + column.width }
        guard let body = blobs.max(by: { $0.pixels < $1.pixels }) else { return nil }
        let above = blobs.filter { $0.box.y + $0.box.height <= body.box.y }
        switch above.count {
        case 2:
            let (a, b) = (above[0].box, above[1].box)
            let sideBySide = a.y < b.y + b.height && b.y < a.y + a.height
            return sideBySide ? [.twoDots] : nil
        case 1:
            // A wide, flat mark is a tilde, or two dots run together at a small size: a lean says nothing of it (a
            // tilde's crest sits right of its trough), so the fonts judge.
            let stroke = above[0].box
            guard stroke.width <= stroke.height + 1 else { return nil }
            // The stroke's rows with a pixel of margin, never into the body.
            let x0 = max(0, stroke.x - 1), x1 = min(mask.width, stroke.x + stroke.width + 1)
            let y0 = max(0, stroke.y - 1), y1 = min(body.box.y, stroke.y + stroke.height + 1)
            let centre = { (rows: Range<Int>) -> Double? in
                var sum = 0, weight = 0
                for y in rows {
                    for x in x0..<x1 {
                        let ink = abs(Int(gray[(box.y + y) * stride + box.x + x]) - fill)
                        sum += ink * x
                        weight += ink
                    }
                }
                return weight > 0 ? Double(sum) / Double(weight) : nil
            }
            let middle = (y0 + y1) / 2
            guard y1 - y0 >= 2, let top = centre(y0..<middle),
                let foot = centre((y1 - y0) % 2 == 0 ? middle..<y1 : (middle + 1)..<y1)
            else { return [.acute, .grave, .other] }
            // A stroke whose top sits right of its foot is an acute; left, a grave.
            if top - foot >= 0.75 { return [.acute] }
            if foot - top >= 0.75 { return [.grave] }
            return [.acute, .grave, .other]
        default:
            return nil
        }
    }

    /// The words of `lines` (relative to `rect`, a piece of the gray frame) with their marks checked against the pixels.
    static func restore(_ lines: [TextLine], gray: [UInt8], stride: Int, rect: Rect) -> [TextLine] {
        lines.map { line in
            TextLine(words: line.words.map { restore($0, gray: gray, stride: stride, rect: rect) })
        }
    }

    private static func restore(_ word: TextWord, gray: [UInt8], stride: Int, rect: Rect) -> TextWord {
        let letters = Array(word.text)
        guard letters.contains(where: { families[$0] != nil || strays.contains($0) }) else { return word }
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
        let lettersBeside = letters.filter(\.isLetter).count
        for (index, column) in columns.enumerated() {
            let isStray = strays.contains(letters[index]) && index > 0 && lettersBeside >= 2
            guard families[letters[index]] != nil || isStray else { continue }
            let allowed = marks(in: column, of: mask, gray: gray, stride: stride, box: box, fill: fill)
            var family: [Character]
            if let members = families[letters[index]] {
                // The current reading stays a candidate whatever the ink shows: a mark fused to its body hides it.
                family = members.filter { $0 == letters[index] || allowed?.contains(mark(of: $0)) ?? true }
            } else if isStray, let allowed {
                family = [letters[index]] + accented.filter { allowed.contains(mark(of: $0)) }
            } else {
                continue
            }
            guard family.count >= 2 else { continue }
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

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
    /// least, unless a glyph the font draws like another was settled by tesseract's letter), or as it was.
    static func reread(_ word: TextWord, gray: [UInt8], stride: Int, origin: Point = Point(x: 0, y: 0)) -> TextWord {
        let letters = Array(word.text)
        guard !letters.isEmpty, letters.count <= 80, !letters.contains(" ") else { return word }
        let frame = Rect(x: 0, y: 0, width: stride, height: gray.count / max(1, stride))
        let box = Rect(
            x: word.box.x + origin.x - 1, y: word.box.y + origin.y, width: word.box.width + 2,
            height: word.box.height
        )
        guard box.intersection(frame) == box, box.width >= 2, box.height >= 4,
            let tight = inkColumns(box, gray: gray, stride: stride)
        else { return word }
        // Two rows more above and one below first, over the word's own columns (a button's rounded corner beside it
        // is not the word's): an accent or a descender tesseract's box left out would otherwise leave another real
        // glyph ("É" read as "E"; xmessage's "g" came a row below the box). Tesseract's box alone only when nothing
        // is in those rows (the taller box failed on a neighbouring line's ink, not on a mark).
        let tall = Rect(x: tight.x, y: tight.y - 2, width: tight.width, height: tight.height + 3).intersection(frame)
        var outcome = read(tall, letters: letters, gray: gray, stride: stride)
        if case .none = outcome, blank(tall, except: tight, gray: gray, stride: stride) {
            outcome = read(tight, letters: letters, gray: gray, stride: stride)
        }
        switch outcome {
        case .exact(let text): return TextWord(text: text, box: word.box, confidence: max(word.confidence, 95))
        case .settled(let text): return TextWord(text: text, box: word.box, confidence: word.confidence)
        case .none, .smoothed: return word
        }
    }

    /// What the glyphs of a box are.
    private enum Outcome {
        /// Every glyph one character of a bitmap font.
        case exact(String)
        /// Every glyph found, some among characters the font draws alike, where tesseract's letter decided.
        case settled(String)
        /// Anti-aliased ink: no bitmap font's.
        case smoothed
        /// No reading.
        case none
    }

    /// `box` narrowed to its columns with ink (more than 40 levels from its background), or nil when it has none.
    private static func inkColumns(_ box: Rect, gray: [UInt8], stride: Int) -> Rect? {
        let fill = GrayInk.background(gray, stride: stride, rect: box)
        let inked = GrayInk.columns(gray, stride: stride, rect: box, background: fill)
        guard let first = inked.firstIndex(of: true), let last = inked.lastIndex(of: true) else { return nil }
        return Rect(x: box.x + first, y: box.y, width: last - first + 1, height: box.height)
    }

    /// Whether the pixels of `outer` outside `inner` are all the background of `inner`.
    private static func blank(_ outer: Rect, except inner: Rect, gray: [UInt8], stride: Int) -> Bool {
        let fill = GrayInk.background(gray, stride: stride, rect: inner)
        for y in outer.y..<(outer.y + outer.height) where y < inner.y || y >= inner.y + inner.height {
            for x in outer.x..<(outer.x + outer.width) where abs(Int(gray[y * stride + x]) - fill) > 40 {
                return false
            }
        }
        return true
    }

    /// The text of the glyphs in `box`, one per letter tesseract read, when every glyph is a bitmap font's exactly.
    private static func read(_ box: Rect, letters: [Character], gray: [UInt8], stride: Int) -> Outcome {
        let fill = GrayInk.background(gray, stride: stride, rect: box)
        let mask = GlyphShapes.Mask(gray: gray, stride: stride, rect: box, fill: fill)
        guard !mask.isSmoothed else { return .smoothed }
        let columns = GlyphShapes.columnBoxes(mask.blobs)
        guard columns.count == letters.count, let first = columns.first else { return .none }
        let line = columns.dropFirst().reduce(first) { $0.union($1) }
        let keys = columns.map { column in
            GlyphAtlas.InkKey(width: column.width, height: column.height) { mask[column.x + $0, column.y + $1] }
        }
        var readings: Set<String> = []
        var settled = false
        for table in GlyphAtlas.shared.bitmapTables(forInkHeight: line.height) {
            guard line.height <= table.cellHeight, columns.allSatisfy({ $0.width <= table.cellWidth }) else { continue }
            var out: [Character] = []
            var alike = false
            for (index, key) in keys.enumerated() {
                guard let drawn = table.glyphs[key] else { break }
                // Characters a font draws alike: the one tesseract read, if it is one of them; else no reading.
                if drawn.count == 1 {
                    out.append(drawn[0])
                } else if drawn.contains(letters[index]) {
                    out.append(letters[index])
                    alike = true
                } else {
                    break
                }
            }
            // Only a font that read every glyph counts, look-alikes and all.
            if out.count == letters.count {
                readings.insert(String(out))
                settled = settled || alike
            }
        }
        // Two fonts that read the ink differently: no certainty. A lone glyph as simple as a bar or a dot can be
        // some character of some font by chance: it confirms a reading, never changes one; a larger one ("✓" read
        // "¥") is read.
        guard readings.count == 1, let reading = readings.first,
            letters.count > 1 || reading == String(letters) || (first.width >= 4 && first.height >= 4)
        else { return .none }
        return settled ? .settled(reading) : .exact(reading)
    }
}

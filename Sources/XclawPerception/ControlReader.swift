import CXclawShim
import Dispatch
import Foundation
import Synchronization
import XclawScreen

/// Geometry shared by the control reader and the finder.
enum ControlBoxes {
    /// Whether two neighbouring words of a line stand further apart than words of one phrase: a gap of at least 0.8 of
    /// the line's median word height (a space is about a third). Menu bars and toolbars read as one line are rows of
    /// labels of their own.
    static func apart(_ a: TextWord, _ b: TextWord, in words: [TextWord]) -> Bool {
        let heights = words.map(\.box.height).sorted()
        let median = heights.isEmpty ? 0 : heights[heights.count / 2]
        return b.box.x - (a.box.x + a.box.width) >= max(8, median * 4 / 5)
    }
}

/// A box the layout takes for a control (a button, a key, a tab, a row) and what was read inside it on its own.
public struct ControlReading: Codable, Sendable, Hashable {
    /// The control's box on screen: its interior plus the outline around it.
    public var box: Rect
    /// Where its label's pixels are (never empty: boxes with nothing inside are not controls).
    public var ink: Rect
    /// The label as read inside the box (nil when nothing could be read: an icon, an unknown glyph).
    public var line: TextLine?
    /// Whether the label was read on its own (false: the page reading was confident and is used as it is).
    public var reread: Bool
}

/// Single glyphs and short words in tight boxes are exactly what UI labels are, and a page-level read loses them
/// ("=" and "-" unread, "." read as "+", "7" as "?"). So every box the pixels show to be a control has its interior read
/// on its own, upscaled, in the segmentation mode its size calls for (one character, one word, one line); the
/// simplest symbols (`- = . + ÷ ×`) are recognised by their shape, which tesseract cannot do reliably alone.
extension TextRecognizer {
    /// Tolerance (gray levels) between neighbouring pixels of one fill: gradients stay one region, strokes do not.
    static let fillTolerance: Int32 = 8
    /// Mixed into the cache key of a control's reading: distinct from page blocks of the same pixels, and changed
    /// whenever the way controls are read changes, so a cache file saved by an older xclaw is not taken at its word.
    static let controlKeyTag: UInt64 = 0x434f_4e54_524f_4c32  // "CONTROL2"

    /// How many times wider than tall a line of three words or more must be to be text, not a control's label.
    static let longLine = 15

    /// A page-read label this confident, two characters or more, inside a box is used without reading it again.
    static let trustedConfidence = 90.0

    /// Finds the control boxes in `partitions` of `frame` (screen coordinates; nil: the whole frame) and reads each
    /// one's label: from `pageLines` when the page reading of it is confident, else on its own (cached by pixels).
    public func readControls(
        _ frame: Frame, origin: Point = Point(x: 0, y: 0), partitions: [Rect]? = nil, pageLines: [TextLine]
    ) throws -> [ControlReading] {
        let languages = self.languages
        let cache = Salted(cache: self.cache, salt: languages.cacheSalt)
        if let previous = lastControls.withLock({ $0 }), previous.origin == origin,
            previous.partitions == partitions, previous.languages == languages, previous.frame.hasSameBytes(as: frame)
        {
            return previous.controls
        }
        let width = frame.width, height = frame.height
        var gray = [UInt8](repeating: 0, count: width * height)
        frame.bgrx.withUnsafeBufferPointer { src in
            gray.withUnsafeMutableBufferPointer {
                xclaw_bgrx_to_gray(src.baseAddress, Int32(width), 0, 0, Int32(width), Int32(height), $0.baseAddress)
            }
        }
        let frameRect = Rect(x: 0, y: 0, width: width, height: height)
        let parts =
            (partitions?.map { $0.offset(dx: -origin.x, dy: -origin.y).intersection(frameRect) }
                .filter { !$0.isEmpty }) ?? [frameRect]
        let boxes = parts.flatMap { Self.controlBoxes(gray: gray, width: width, part: $0) }
        // Page words in frame coordinates, to decide which boxes need a reading of their own.
        let words = pageLines.flatMap(\.words).map {
            TextWord(text: $0.text, box: $0.box.offset(dx: -origin.x, dy: -origin.y), confidence: $0.confidence)
        }
        var controls: [ControlReading?] = Array(repeating: nil, count: boxes.count)
        var pending: [(index: Int, key: UInt64)] = []
        gray.withUnsafeBufferPointer { g in
            for (index, box) in boxes.enumerated() {
                let inside = words.filter { box.interior.contains($0.box.center) }
                let letters = inside.reduce(0) { $0 + $1.text.count }
                // A line far longer than a label (a dialog's message in its frame) is the page's: read in context
                // there, not again on its own (xmessage's message line cost ~19 ms a snapshot).
                let long = inside.count >= 3 && box.ink.width > Self.longLine * box.ink.height
                // The words must reach the end of the label's ink too: xcalc's "y^x" read "y^" (exactly, by the
                // font) left its "x" out. (Ink before them is a radio's circle or an icon, which page words never
                // include.)
                let span = inside.map(\.box).reduce(inside.first?.box ?? box.ink) { $0.union($1) }
                let spanned = span.x + span.width >= box.ink.x + box.ink.width - 2
                if !inside.isEmpty, letters >= 2,
                    long
                        || (inside.allSatisfy({ $0.confidence >= Self.trustedConfidence })
                            && inside.allSatisfy({ box.interior.contains($0.box) }) && spanned)
                {
                    controls[index] = ControlReading(
                        box: box.outline, ink: box.ink, line: TextLine(words: inside), reread: false)
                    continue
                }
                let key =
                    xclaw_hash_gray(
                        g.baseAddress, Int32(width), Int32(box.interior.x), Int32(box.interior.y),
                        Int32(box.interior.width), Int32(box.interior.height)) ^ Self.controlKeyTag
                if let cached = cache.lookup(key) {
                    controls[index] = ControlReading(
                        box: box.outline, ink: box.ink, line: cached.first, reread: true)
                } else {
                    pending.append((index, key))
                }
            }
        }
        if !pending.isEmpty {
            let engines = try engines(count: min(workers, pending.count), languages: languages)
            let next = Atomic<Int>(0)
            let collected = Mutex<[Int: Result<LabelRead, Error>]>([:])
            let minimum = minimumConfidence
            let jobs = pending
            let pixels = gray
            DispatchQueue.concurrentPerform(iterations: engines.count) { worker in
                while true {
                    let n = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard n < jobs.count else { return }
                    let box = boxes[jobs[n].index]
                    let result = Result {
                        try Self.readLabel(
                            of: box, gray: pixels, stride: width, engine: engines[worker], minimumConfidence: minimum)
                    }
                    collected.withLock { $0[n] = result }
                }
            }
            let outcomes = collected.withLock { $0 }
            var reads: [LabelRead] = []
            for n in jobs.indices { reads.append(try outcomes[n]?.get() ?? .line(nil)) }
            // The font size most lone glyphs were read at: it tells "c" from "C" in the same font.
            let sizes = reads.compactMap { read -> Int? in
                if case .glyph(let candidate, _) = read, candidate.size > 0 { return candidate.size }
                return nil
            }.sorted()
            let typical = sizes.isEmpty ? nil : sizes[sizes.count / 2]
            let glyphs = reads.compactMap { read -> Character? in
                if case .glyph(let candidate, _) = read { return candidate.text.first }
                return nil
            }
            let mostlyDigits = glyphs.filter(\.isNumber).count > glyphs.filter(\.isLetter).count
            for (n, job) in jobs.enumerated() {
                let line: TextLine?
                switch reads[n] {
                case .line(let read): line = read
                case .glyph(let candidate, let ink): line = Self.line(candidate, ink: ink)
                case .lookAlikes(let candidates, let ink):
                    line = GlyphAtlas.decide(candidates, typicalSize: typical, mostlyDigits: mostlyDigits).map {
                        Self.line($0, ink: ink)
                    }
                }
                cache.store(job.key, line.map { [$0] } ?? [])
                let box = boxes[job.index]
                controls[job.index] = ControlReading(box: box.outline, ink: box.ink, line: line, reread: true)
            }
        }
        // A row of words far apart in one box is a menu bar or a toolbar, not one control: its words are the page's.
        let result = controls.compactMap { $0 }.filter { !Self.isRow($0.line) }.map { control -> ControlReading in
            var moved = control
            moved.box = control.box.offset(dx: origin.x, dy: origin.y)
            moved.ink = control.ink.offset(dx: origin.x, dy: origin.y)
            moved.line = control.line?.offset(dx: origin.x, dy: origin.y)
            return moved
        }
        lastControls.withLock { $0 = (frame, origin, partitions, languages, result) }
        GlyphAtlas.shared.saveIfChanged()
        return result
    }

    /// Whether a label's words stand further apart than a phrase's (a gap wider than the text is tall).
    static func isRow(_ line: TextLine?) -> Bool {
        guard let words = line?.words, words.count > 1 else { return false }
        return zip(words, words.dropFirst()).contains { ControlBoxes.apart($0, $1, in: words) }
    }

    /// A control box found by the pixel kernel, in frame coordinates.
    struct ControlBox {
        /// The region of one fill inside the outline.
        var interior: Rect
        /// The label's pixels.
        var ink: Rect
        /// The fill's mean gray level.
        var fill: Int
        /// The interior with the outline around it: what a user sees as the control.
        var outline: Rect {
            Rect(x: interior.x - 1, y: interior.y - 1, width: interior.width + 2, height: interior.height + 2)
        }
    }

    /// The control boxes of one part of a gray frame: one label line inside (a multi-line area is the page's to
    /// read), not an empty square (a check box's), and not holding other boxes (a group frame around a row of
    /// buttons is a container, not a control).
    static func controlBoxes(gray: [UInt8], width: Int, part: Rect) -> [ControlBox] {
        let boxes = regions(gray: gray, width: width, part: part, maximum: Size(width: 700, height: 100))
            .filter { $0.bands <= 1 && !$0.box.ink.isEmpty }.map(\.box)
        return boxes.filter { outer in
            !boxes.contains { inner in inner.interior != outer.interior && outer.interior.contains(inner.interior) }
        }
    }

    /// Boxes holding several lines of text (a list, a text area, a framed panel) in one part of a gray frame, the
    /// outermost ones: the page reading lays each out on its own, so a list's rows never merge with the labels beside
    /// the list ("Lemon" and "Large" at one height read as one line lost "Lemon").
    static func containers(gray: [UInt8], width: Int, part: Rect) -> [Rect] {
        let boxes = regions(gray: gray, width: width, part: part, maximum: part.size)
            .filter { $0.bands >= 2 && $0.box.interior.width >= 40 && $0.box.interior.height >= 24 }
            .map(\.box.interior)
        return boxes.filter { inner in !boxes.contains { $0 != inner && $0.contains(inner) } }
    }

    /// The regions of one fill the kernel finds in a part (at least 10x10, at most `maximum`), with the number of
    /// text bands inside each.
    private static func regions(gray: [UInt8], width: Int, part: Rect, maximum: Size) -> [(box: ControlBox, bands: Int)]
    {
        var sub: [UInt8] = []
        sub.reserveCapacity(part.width * part.height)
        for row in part.y..<(part.y + part.height) {
            sub += gray[(row * width + part.x)..<(row * width + part.x + part.width)]
        }
        var capacity = 512
        var records = [Int32](repeating: 0, count: capacity * 10)
        func run() -> Int {
            Int(
                sub.withUnsafeBufferPointer { g in
                    records.withUnsafeMutableBufferPointer {
                        xclaw_control_boxes(
                            g.baseAddress, Int32(part.width), Int32(part.height), fillTolerance, 10, 10,
                            Int32(maximum.width), Int32(maximum.height), $0.baseAddress, Int32(capacity))
                    }
                })
        }
        var count = run()
        if count > capacity {
            capacity = count
            records = [Int32](repeating: 0, count: capacity * 10)
            count = run()
        }
        return (0..<max(0, min(count, capacity))).map { i in
            let r = records[(i * 10)..<(i * 10 + 10)].map(Int.init)
            let interior = Rect(x: r[0] + part.x, y: r[1] + part.y, width: r[2], height: r[3])
            let ink = Rect(x: r[4] + part.x, y: r[5] + part.y, width: r[6], height: r[7])
            return (ControlBox(interior: interior, ink: ink, fill: r[8]), r[9])
        }
    }

    /// What reading one control's label gave.
    enum LabelRead {
        /// A label (or nothing readable).
        case line(TextLine?)
        /// A lone glyph matched in a font.
        case glyph(GlyphAtlas.Candidate, ink: Rect)
        /// A lone glyph that is one of several look-alikes; the window's font size decides.
        case lookAlikes([GlyphAtlas.Candidate], ink: Rect)
    }

    /// A one-glyph label from a font match, its similarity as the confidence.
    static func line(_ candidate: GlyphAtlas.Candidate, ink: Rect) -> TextLine {
        TextLine(words: [TextWord(text: candidate.text, box: ink, confidence: (candidate.similarity * 100).rounded())])
    }

    /// Reads one control's label: by shape for the simplest symbols, by comparison with fonts for other lone glyphs,
    /// else by tesseract.
    static func readLabel(
        of box: ControlBox, gray: [UInt8], stride: Int, engine: OCREngine, minimumConfidence: Double
    ) throws -> LabelRead {
        let ink = box.ink
        let mask = GlyphShapes.Mask(gray: gray, stride: stride, rect: ink, fill: box.fill)
        if let symbol = GlyphShapes.classify(mask, lineHeight: box.interior.height) {
            return .line(TextLine(words: [TextWord(text: symbol, box: ink, confidence: 95)]))
        }
        // A lone glyph is where tesseract guesses ("3" read "5", "←" read "e", at confidences right reads also
        // have): it is read by comparison with the fonts labels are drawn in, and left unread when that is unsure.
        // One glyph, or pieces that may be one glyph whose faint strokes fell apart ("√" at 10 px is three, on a
        // dark key four).
        let columns = GlyphShapes.columns(mask.blobs)
        // Wide single strokes too: an arrow ("←" at 11x5).
        if (ink.width <= 2 * ink.height || (columns == 1 && ink.width <= 3 * ink.height))
            && (columns == 1 || (columns <= 4 && ink.width * 2 <= ink.height * 3))
        {
            let coverage = Self.coverage(gray: gray, stride: stride, rect: ink, fill: box.fill)
            switch GlyphAtlas.shared.read(coverage: coverage, width: ink.width, height: ink.height) {
            case .sure(let candidate): return .glyph(candidate, ink: ink)
            case .sizeDependent(let candidates): return .lookAlikes(candidates, ink: ink)
            case nil: if columns == 1 { return .line(nil) }
            }
        }
        // Tesseract reads glyphs best at ~30-40 px; UI labels are 8-16.
        let height = max(ink.height, box.interior.height * 3 / 5)
        let scale = max(1, min(4, (40 + height / 2) / max(1, height)))
        let thicken = !mask.isSmoothed && mask.strokeWidth <= 1
        let first = try recognize(box, gray: gray, stride: stride, scale: scale, thicken: thicken, engine: engine)
            .map { mask.isSmoothed ? $0 : BitmapText.reread($0, gray: gray, stride: stride) }
            .filter { $0.confidence >= minimumConfidence }
        // A few glyphs apart that tesseract is unsure of ("x!" read "xl", "√‾" unread) or left out (xcalc's "y^x"
        // read "y*", which the font then reads exactly as "y^"): each read as a lone glyph, when every one of them
        // reads.
        if first.isEmpty || first.contains(where: { $0.confidence < 85 })
            || first.reduce(0, { $0 + $1.text.count }) < columns,
            let glyphs = readGlyphs(mask: mask, box: box, gray: gray, stride: stride)
        {
            return .line(glyphs)
        }
        return .line(first.isEmpty ? nil : TextLine(words: first))
    }

    /// A label of two to five glyphs that stand apart, read glyph by glyph (symbols by shape, the rest by font):
    /// nil unless every glyph reads, with look-alikes decided by the font size of the others.
    static func readGlyphs(mask: GlyphShapes.Mask, box: ControlBox, gray: [UInt8], stride: Int) -> TextLine? {
        let ink = box.ink
        let columns = GlyphShapes.columnBoxes(mask.blobs)
        // Glyphs, not the pieces of one broken by a faint stroke ("√" at 7 pt fell apart into three dots).
        guard (2...5).contains(columns.count), columns.filter({ $0.height * 5 < ink.height * 2 }).count <= 1 else {
            return nil
        }
        var reads: [(rect: Rect, sure: GlyphAtlas.Candidate?, twins: [GlyphAtlas.Candidate])] = []
        for column in columns {
            let rect = column.offset(dx: ink.x, dy: ink.y)
            let sub = GlyphShapes.Mask(gray: gray, stride: stride, rect: rect, fill: box.fill)
            if let symbol = GlyphShapes.classify(sub, lineHeight: box.interior.height) {
                reads.append((rect, GlyphAtlas.Candidate(text: symbol, similarity: 0.95, size: 0), []))
                continue
            }
            let coverage = Self.coverage(gray: gray, stride: stride, rect: rect, fill: box.fill)
            switch GlyphAtlas.shared.read(coverage: coverage, width: rect.width, height: rect.height) {
            case .sure(let candidate): reads.append((rect, candidate, []))
            case .sizeDependent(let candidates): reads.append((rect, nil, candidates))
            case nil: return nil
            }
        }
        let sizes = reads.compactMap { $0.sure?.size }.filter { $0 > 0 }.sorted()
        let typical = sizes.isEmpty ? nil : sizes[sizes.count / 2]
        var words: [TextWord] = []
        var text = "", rect = reads[0].rect, confidence = 100.0, previous: Rect?
        for read in reads {
            guard let candidate = read.sure ?? GlyphAtlas.decide(read.twins, typicalSize: typical) else { return nil }
            // A gap wider than half the label's height separates words.
            if let previous, read.rect.x - (previous.x + previous.width) > ink.height / 2 {
                words.append(TextWord(text: text, box: rect, confidence: confidence))
                (text, rect, confidence) = ("", read.rect, 100)
            }
            text += candidate.text
            rect = rect.union(read.rect)
            confidence = min(confidence, (candidate.similarity * 100).rounded())
            previous = read.rect
        }
        words.append(TextWord(text: text, box: rect, confidence: confidence))
        return TextLine(words: words)
    }

    /// A rectangle's ink as coverage 0–255: how far each pixel is from the fill, relative to the strongest.
    static func coverage(gray: [UInt8], stride: Int, rect: Rect, fill: Int) -> [UInt8] {
        var strongest = 1
        for y in rect.y..<(rect.y + rect.height) {
            for x in rect.x..<(rect.x + rect.width) {
                strongest = max(strongest, abs(Int(gray[y * stride + x]) - fill))
            }
        }
        var out = [UInt8](repeating: 0, count: rect.width * rect.height)
        for y in 0..<rect.height {
            for x in 0..<rect.width {
                let d = abs(Int(gray[(rect.y + y) * stride + rect.x + x]) - fill)
                out[y * rect.width + x] = UInt8(min(255, d * 255 / strongest))
            }
        }
        return out
    }

    /// One tesseract reading of a control's label, upscaled by `scale`, in screen coordinates.
    private static func recognize(
        _ box: ControlBox, gray: [UInt8], stride: Int, scale: Int, thicken: Bool, engine: OCREngine
    ) throws -> [TextWord] {
        let ink = box.ink
        let pad = max(6, ink.height / 2)
        let rect = Rect(x: ink.x - pad, y: ink.y - pad, width: ink.width + 2 * pad, height: ink.height + 2 * pad)
        let inner = ink.intersection(box.interior)
        let w = rect.width * scale, h = rect.height * scale
        let lighter = GlyphShapes.Mask(gray: gray, stride: stride, rect: ink, fill: box.fill).inkIsLighter
        var raw = [UInt8](repeating: 255, count: rect.width * rect.height)
        gray.withUnsafeBufferPointer { g in
            raw.withUnsafeMutableBufferPointer {
                xclaw_prepare_block(
                    g.baseAddress, Int32(stride), Int32(rect.x), Int32(rect.y), Int32(rect.width),
                    Int32(rect.height), Int32(inner.x - rect.x), Int32(inner.y - rect.y),
                    Int32(inner.width), Int32(inner.height), Int32(box.fill), 1, lighter ? 1 : 0,
                    $0.baseAddress)
            }
        }
        var image = [UInt8](repeating: 255, count: w * h)
        raw.withUnsafeBufferPointer { src in
            image.withUnsafeMutableBufferPointer {
                xclaw_upscale_label(
                    src.baseAddress, Int32(rect.width), Int32(rect.height), Int32(scale), thicken ? 1 : 0,
                    $0.baseAddress)
            }
        }
        // Single-line mode for every label: measured on xcalc's keys, tesseract's single-character mode read the same
        // and its single-word mode worse ("7" as "qe", "0" as "oO").
        return try engine.recognize(gray: image, width: w, height: h, mode: .singleLine).map { raw -> TextWord in
            let b = raw.box
            return TextWord(
                text: raw.text,
                box: Rect(
                    x: rect.x + b.x / scale, y: rect.y + b.y / scale, width: (b.width + scale - 1) / scale,
                    height: (b.height + scale - 1) / scale),
                confidence: raw.confidence)
        }
    }
}

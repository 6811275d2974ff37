import CXclawShim
import Dispatch
import Foundation
import Synchronization
import XclawScreen

/// Reads the text of screen frames. UI text is not a book page, so the frame is not handed to tesseract whole: a
/// layout pass (ruling lines removed, recursive XY-cut) splits it into text blocks; each block is normalised to dark
/// text on a light background (inverted when its background is dark) and small text is upscaled; blocks already
/// seen (same pixels, anywhere) come from the cache; the rest are recognised on one engine per core.
/// Safe because the engine pool is guarded by `engineLock`, each engine locks itself, the cache locks itself, and
/// `minimumConfidence` is a constant.
public final class TextRecognizer: @unchecked Sendable {
    /// The cache shared by every reading; save it to share it between processes.
    public let cache: OCRCache
    let workers: Int
    private let engineLock = NSLock()
    private var engines: [OCRLanguages: [OCREngine]] = [:]
    /// The languages reads use (`use(_:)`); English unless configured otherwise.
    private let chosen: Mutex<OCRLanguages>
    /// The last reading and the frame it was of: a long-lived reader (the daemon, an agent) asked again about the
    /// same pixels answers with one memory compare, before converting or hashing 8 MB of a 1080p frame.
    private let last = Mutex<
        (frame: Frame, origin: Point, partitions: [Rect]?, languages: OCRLanguages, reading: TextReading)?
    >(nil)

    /// The last control reading and the frame it was of (see `last`).
    let lastControls = Mutex<
        (frame: Frame, origin: Point, partitions: [Rect]?, languages: OCRLanguages, controls: [ControlReading])?
    >(nil)

    /// Words below this confidence (0–100) are dropped: ruling-line remnants and icons read as letters.
    public let minimumConfidence: Double = 35

    /// Creates a recognizer; engines are created on first need (a fully cached screen needs none).
    /// - Parameter workers: tesseract engines run in parallel (default: `defaultWorkers`).
    public init(cache: OCRCache = OCRCache(), workers: Int? = nil, languages: OCRLanguages = .english) {
        self.cache = cache
        chosen = Mutex(languages)
        self.workers = max(1, workers ?? Self.defaultWorkers())
    }

    /// How many tesseract engines read in parallel unless told otherwise: `XCLAW_OCR_WORKERS` (1 to 16), else the
    /// number of cores, at most 4. Each engine holds about 30 MB, made when a snapshot first has that many blocks to
    /// read at once: a small machine, or a daemon whose memory must not step up, sets fewer.
    public static func defaultWorkers(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Int {
        environment["XCLAW_OCR_WORKERS"].flatMap { Int($0) }.map { min(16, max(1, $0)) }
            ?? min(4, ProcessInfo.processInfo.activeProcessorCount)
    }

    /// The languages reads use.
    public var languages: OCRLanguages { chosen.withLock { $0 } }

    /// Reads with `languages` from now on (each command sets its own; the daemon's kept recognizer serves many).
    /// Their data files are checked first, so a missing one is a clear error, not tesseract's.
    public func use(_ languages: OCRLanguages) throws {
        try languages.check()
        chosen.withLock { $0 = languages }
    }

    /// The shared cache seen through the current languages: the same pixels read in other languages are another
    /// entry.
    struct Salted {
        let cache: OCRCache
        let salt: UInt64

        func lookup(_ key: UInt64) -> [TextLine]? { cache.lookup(key ^ salt) }
        func store(_ key: UInt64, _ lines: [TextLine]) { cache.store(key ^ salt, lines) }
    }

    /// A block of the frame to recognise.
    private struct Piece {
        /// The padded block, in frame coordinates.
        var rect: Rect
        /// The block's ink, in frame coordinates.
        var ink: Rect
        var key: UInt64

        /// LSTM recognition is best with glyphs ~30 px tall; UI labels are 10-16. Measured on terminal pages: 6x13
        /// text (ink ~11 px) went from 98.8 % to 99.9 % of words at 2x; 16 px text gained nothing from 2x and cost
        /// 25 % more time. Tiny text gets 3x.
        var scale: Int { ink.height < 9 ? 3 : (ink.height < 14 ? 2 : 1) }
    }

    /// Reads `frame`, whose top-left pixel is at `origin` on screen; results are in screen coordinates.
    /// `partitions` (screen coordinates, disjoint) are laid out separately — give each window's visible part, so text
    /// of two windows that touch never merges into one block; nil lays out the frame as a whole.
    public func read(_ frame: Frame, origin: Point = Point(x: 0, y: 0), partitions: [Rect]? = nil) throws -> TextReading
    {
        let start = ContinuousClock.now
        let languages = self.languages
        if let previous = last.withLock({ $0 }), previous.origin == origin, previous.partitions == partitions,
            previous.languages == languages, previous.frame.hasSameBytes(as: frame)
        {
            var reading = previous.reading
            reading.stats = .init(
                blocks: 0, recognized: 0, cached: 0, unchanged: true,
                milliseconds: (ContinuousClock.now - start).milliseconds)
            return reading
        }
        let reading = try readAnew(frame, origin: origin, partitions: partitions, languages: languages, start: start)
        last.withLock { $0 = (frame, origin, partitions, languages, reading) }
        return reading
    }

    /// `read` once the frame is known to differ from the last one read.
    private func readAnew(
        _ frame: Frame, origin: Point, partitions: [Rect]?, languages: OCRLanguages, start: ContinuousClock.Instant
    ) throws -> TextReading {
        let cache = Salted(cache: self.cache, salt: languages.cacheSalt)
        let width = frame.width, height = frame.height
        var gray = [UInt8](repeating: 0, count: width * height)
        frame.bgrx.withUnsafeBufferPointer { src in
            gray.withUnsafeMutableBufferPointer {
                xclaw_bgrx_to_gray(src.baseAddress, Int32(width), 0, 0, Int32(width), Int32(height), $0.baseAddress)
            }
        }
        let region = Rect(x: origin.x, y: origin.y, width: width, height: height)
        func finish(_ lines: [TextLine], _ stats: TextReading.Stats) -> TextReading {
            var stats = stats
            stats.milliseconds = (ContinuousClock.now - start).milliseconds
            let ordered = TextReading.rows(of: lines.map { $0.offset(dx: origin.x, dy: origin.y) }).flatMap { $0 }
            return TextReading(region: region, lines: ordered, stats: stats)
        }

        let frameRect = Rect(x: 0, y: 0, width: width, height: height)
        let given =
            (partitions?.map { $0.offset(dx: -origin.x, dy: -origin.y).intersection(frameRect) }
                .filter { !$0.isEmpty }) ?? [frameRect]
        // Boxes of several lines (a list, a text area) are laid out on their own: their lines never merge with text
        // beside the box.
        let parts = given.flatMap { part -> [Rect] in
            let boxes = Self.containers(gray: gray, width: width, part: part)
            var rest = [part]
            for box in boxes { rest = rest.flatMap { $0.subtracting(box) } }
            return rest + boxes
        }

        // The whole frame unchanged since it was last read: no layout, no OCR. The partitions are part of the key:
        // the same pixels split differently read differently.
        var wholeKey =
            gray.withUnsafeBufferPointer {
                xclaw_hash_gray($0.baseAddress, Int32(width), 0, 0, Int32(width), Int32(height))
            } ^ 0x5748_4f4c_455f_5f5f  // distinct from block keys of the same pixels
        for part in parts {
            let packed = UInt64(part.x) | UInt64(part.y) << 16 | UInt64(part.width) << 32 | UInt64(part.height) << 48
            wholeKey = (wholeKey ^ packed) &* 0x100_0000_01b3  // FNV-1a step per part
        }
        if let lines = cache.lookup(wholeKey) {
            return finish(lines, .init(blocks: 0, recognized: 0, cached: 0, unchanged: true, milliseconds: 0))
        }

        let pieces = parts.flatMap { layout(gray: &gray, width: width, height: height, part: $0) }
        var lines: [TextLine] = []
        var pending: [Piece] = []
        for piece in pieces {
            if let cached = cache.lookup(piece.key) {
                lines += cached.map { $0.offset(dx: piece.rect.x, dy: piece.rect.y) }
            } else {
                pending.append(piece)
            }
        }
        var fresh = try recognize(pending, gray: gray, stride: width, languages: languages, cache: cache)
        // Small text tesseract left unread on a line ("Italic" beside its check box at 8 points, read as nothing):
        // each run of ink wider than the line is tall that no word covers is read again on its own, larger.
        if !pending.isEmpty, let engine = try engines(count: 1, languages: languages).first {
            for index in pending.indices where pending[index].ink.height < 14 {
                fresh[index] = try rereadUnread(
                    pending[index], lines: fresh[index], gray: gray, stride: width, engine: engine)
            }
        }
        // Words in X's bitmap fonts are read exactly from the fonts' own glyphs (tesseract confuses their capitals).
        fresh = zip(pending, fresh).map { BitmapText.reread($1, gray: gray, stride: width, rect: $0.rect) }
        // A lone check mark in an anti-aliased font is read "v" or "¥": the fonts say which it is.
        fresh = zip(pending, fresh).map { CheckMarks.restore($1, gray: gray, stride: width, rect: $0.rect) }
        // Languages with accents: the marks are checked against the pixels (tesseract drops and swaps them).
        if languages.hasAccents {
            fresh = zip(pending, fresh).map {
                Diacritics.restore($1, gray: gray, stride: width, rect: $0.rect)
            }
        }
        for (piece, pieceLines) in zip(pending, fresh) {
            cache.store(piece.key, pieceLines)
            lines += pieceLines.map { $0.offset(dx: piece.rect.x, dy: piece.rect.y) }
        }
        cache.store(wholeKey, lines)
        return finish(
            lines,
            .init(
                blocks: pieces.count, recognized: pending.count, cached: pieces.count - pending.count,
                unchanged: false, milliseconds: 0))
    }

    /// Finds the text blocks of one part of a gray frame and decides how each is to be recognised.
    private func layout(gray: inout [UInt8], width: Int, height: Int, part: Rect) -> [Piece] {
        var quads: [Int32]
        if part == Rect(x: 0, y: 0, width: width, height: height) {
            quads = Self.blocks(&gray, width: width, height: height)
        } else {
            // The layout works on a contiguous image: copy the part out, and its cleaned pixels back.
            var sub: [UInt8] = []
            sub.reserveCapacity(part.width * part.height)
            for row in part.y..<(part.y + part.height) {
                sub += gray[(row * width + part.x)..<(row * width + part.x + part.width)]
            }
            quads = Self.blocks(&sub, width: part.width, height: part.height)
            for row in 0..<part.height {
                let to = (part.y + row) * width + part.x
                gray[to..<(to + part.width)] = sub[(row * part.width)..<((row + 1) * part.width)]
            }
        }
        return gray.withUnsafeBufferPointer { g in
            stride(from: 0, to: quads.count - 3, by: 4).map { i -> Piece in
                let block = Rect(
                    x: Int(quads[i]) + part.x, y: Int(quads[i + 1]) + part.y,
                    width: Int(quads[i + 2]), height: Int(quads[i + 3]))
                // Tesseract needs a margin around glyphs; the layout's boxes are tight to the ink. The margin stays
                // inside the part: what lies beyond belongs to another window.
                let pad = 4
                let rect = Rect(
                    x: block.x - pad, y: block.y - pad, width: block.width + 2 * pad,
                    height: block.height + 2 * pad
                ).intersection(part)
                // The key covers the ink only (the margin is synthetic), plus where it sits in its margin.
                let key =
                    xclaw_hash_gray(
                        g.baseAddress, Int32(width), Int32(block.x), Int32(block.y),
                        Int32(block.width), Int32(block.height))
                    ^ UInt64(block.x - rect.x) << 56 ^ UInt64(block.y - rect.y) << 60
                return Piece(rect: rect, ink: block, key: key)
            }
        }
    }

    /// A one-line piece's lines with the runs of ink no word covers read again: each run (between gaps of three
    /// blank columns or more) wider than the line is tall, on its own, one scale larger. Narrower runs are a glyph,
    /// a check box's square or an icon, which alone read as letters; read with the word beside it, a square joined
    /// it ("{Italic"). At most eight runs a piece. Lines are relative to the piece's rect.
    private func rereadUnread(
        _ piece: Piece, lines: [TextLine], gray: [UInt8], stride: Int, engine: OCREngine
    ) throws -> [TextLine] {
        let ink = piece.ink
        let read = lines.flatMap(\.words).map { $0.box.offset(dx: piece.rect.x, dy: piece.rect.y) }
        let background = GrayInk.background(gray, stride: stride, rect: ink)
        let inked = GrayInk.columns(gray, stride: stride, rect: ink, background: background)
        var runs: [Rect] = []
        var x = 0
        while x < inked.count {
            guard inked[x] else { x += 1; continue }
            var end = x + 1
            while end < inked.count, inked[end..<min(inked.count, end + 3)].contains(true) { end += 1 }
            let run = Rect(x: ink.x + x, y: ink.y, width: end - x, height: ink.height)
            if run.width > ink.height,
                !read.contains(where: { $0.intersection(run).width * 2 >= min($0.width, run.width) })
            {
                runs.append(run)
            }
            x = end
        }
        guard !runs.isEmpty, runs.count <= 8 else { return lines }
        let style = WordAtlas.Style(background: background, scale: piece.scale + 1)
        var words: [TextWord] = []
        for run in runs {
            let pad = 4
            let rect = Rect(x: run.x - pad, y: run.y - pad, width: run.width + 2 * pad, height: run.height + 2 * pad)
                .intersection(piece.rect)
            words += try Self.recognize(
                Piece(rect: rect, ink: run, key: 0), style: style, gray: gray, stride: stride, engine: engine,
                minimumConfidence: minimumConfidence
            )
            .flatMap(\.words)
            .map {
                TextWord(
                    text: $0.text, box: $0.box.offset(dx: rect.x - piece.rect.x, dy: rect.y - piece.rect.y),
                    confidence: $0.confidence)
            }
        }
        // The lines read first stay as they were (a radio's circle and its label are one line); the new words make
        // lines of their own.
        return lines + Self.splitAtWideGaps(words)
    }

    /// The layout pass over a contiguous gray image: block quadruples x,y,w,h. It also paints ruling lines out.
    private static func blocks(_ gray: inout [UInt8], width: Int, height: Int) -> [Int32] {
        var capacity = 4096
        var quads = [Int32](repeating: 0, count: capacity * 4)
        var count = Int(
            gray.withUnsafeMutableBufferPointer { g in
                quads.withUnsafeMutableBufferPointer {
                    xclaw_text_blocks(
                        g.baseAddress, Int32(width), Int32(height), 40, 1, $0.baseAddress, Int32(capacity))
                }
            })
        if count > capacity {  // a very busy screen: ask again with room for all (the rules are already gone)
            capacity = count
            quads = [Int32](repeating: 0, count: capacity * 4)
            count = Int(
                gray.withUnsafeMutableBufferPointer { g in
                    quads.withUnsafeMutableBufferPointer {
                        xclaw_text_blocks(
                            g.baseAddress, Int32(width), Int32(height), 40, 0, $0.baseAddress, Int32(capacity))
                    }
                })
        }
        return Array(quads.prefix(max(0, min(count, capacity)) * 4))
    }

    /// How a piece missing from the cache is read.
    private enum Plan {
        /// Recognised as a whole block of lines.
        case whole(WordAtlas.Style)
        /// A one-line piece cut into word-sized segments; each segment's words come from the cache, from another
        /// piece's synthetic line, or from this piece's own: `fresh` are the indices of the segments read here,
        /// `packed` what goes into its synthetic line with each one's index among the segments — the fresh ones, and
        /// for very short ones their neighbours as context ("2]" alone reads "2)", after "[run" it reads right);
        /// what is read in the context is dropped.
        case atlas(
            segments: [WordAtlas.Segment], fresh: [Int], packed: [(index: Int, segment: WordAtlas.Segment)],
            style: WordAtlas.Style)
    }

    /// Recognises pieces on up to `workers` engines in parallel; lines come back per piece, relative to its rect.
    private func recognize(
        _ pieces: [Piece], gray: [UInt8], stride: Int, languages: OCRLanguages, cache: Salted
    ) throws -> [[TextLine]] {
        guard !pieces.isEmpty else { return [] }
        // Plan: one-line pieces are cut into words; words seen before (in the cache, or earlier on this page) are
        // not read again.
        var planned: [Plan] = []
        var known: [UInt64: [TextWord]] = [:]
        var claimed = Set<UInt64>()
        gray.withUnsafeBufferPointer { g in
            for piece in pieces {
                let ink = piece.ink
                // Only blocks missing from the cache get here, so the histogram is not paid for cached ones.
                let background = Int(
                    xclaw_background_level(
                        g.baseAddress, Int32(stride), Int32(ink.x), Int32(ink.y),
                        Int32(ink.width), Int32(ink.height)))
                let style = WordAtlas.Style(background: background, scale: piece.scale)
                guard ink.height * piece.scale < 28,
                    let segments = WordAtlas.segments(ink: ink, style: style, gray: g, stride: stride)
                else {
                    planned.append(.whole(style))
                    continue
                }
                var fresh: [Int] = []
                for (i, segment) in segments.enumerated()
                where known[segment.key] == nil && !claimed.contains(segment.key) {
                    if let cached = cache.lookup(segment.key) {
                        known[segment.key] = cached.flatMap(\.words)
                    } else {
                        claimed.insert(segment.key)
                        fresh.append(i)
                    }
                }
                // Whole neighbours: cut ones leave half glyphs that merge into the word ("non" read "anon").
                var context: [Int: WordAtlas.Segment] = [:]
                let isFresh = Set(fresh)
                for i in fresh where segments[i].box.width * 5 < 8 * ink.height {  // two or three glyphs
                    for j in [i - 1, i + 1] where segments.indices.contains(j) && !isFresh.contains(j) {
                        context[j] = segments[j]
                    }
                }
                let packed = (fresh.map { ($0, segments[$0]) } + context.map { ($0.key, $0.value) })
                    .sorted { $0.0 < $1.0 }.map { (index: $0.0, segment: $0.1) }
                planned.append(.atlas(segments: segments, fresh: fresh, packed: packed, style: style))
            }
        }
        let plans = planned  // fixed from here on; the workers read it concurrently
        let jobs = pieces.indices.filter {
            if case .atlas(_, let fresh, _, _) = plans[$0] { return !fresh.isEmpty }
            return true
        }
        var results: [Int: [TextLine]] = [:]
        var segmentWords: [UInt64: [TextWord]] = [:]
        if !jobs.isEmpty {
            let engines = try engines(count: min(workers, jobs.count), languages: languages)
            // Largest first, so the last job handed out is a small one and the engines finish together.
            let cost = { (i: Int) -> Int in
                if case .atlas(_, _, let packed, _) = plans[i] {
                    return packed.reduce(0) { $0 + $1.segment.box.width } * pieces[i].rect.height
                }
                return pieces[i].rect.width * pieces[i].rect.height
            }
            let order = jobs.sorted { cost($0) > cost($1) }
            let next = Atomic<Int>(0)
            let collected = Mutex<[Int: Result<[[TextWord]], Error>]>([:])
            let minimum = minimumConfidence
            DispatchQueue.concurrentPerform(iterations: engines.count) { worker in
                let engine = engines[worker]
                while true {
                    let n = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard n < order.count else { return }
                    let index = order[n]
                    let result = Result { () throws -> [[TextWord]] in
                        switch plans[index] {
                        case .whole(let style):
                            return try Self.recognize(
                                pieces[index], style: style, gray: gray, stride: stride,
                                engine: engine, minimumConfidence: minimum
                            ).map(\.words)
                        case .atlas(let segments, let fresh, let packed, let style):
                            guard fresh.count < segments.count else {
                                // Nothing on the line is known: read it as it is on screen (a synthetic copy
                                // read "Keep" as "keep"), then file its words under its segments.
                                let piece = pieces[index]
                                let words = try Self.recognize(
                                    piece, style: style, gray: gray, stride: stride,
                                    engine: engine, minimumConfidence: minimum
                                )
                                .flatMap(\.words)
                                .map {
                                    TextWord(
                                        text: $0.text, box: $0.box.offset(dx: piece.rect.x, dy: piece.rect.y),
                                        confidence: $0.confidence)
                                }
                                return WordAtlas.unpack(words, slots: segments.map(\.box))
                            }
                            return try Self.recognize(
                                packed, in: pieces[index], style: style, gray: gray,
                                stride: stride, engine: engine, minimumConfidence: minimum)
                        }
                    }
                    collected.withLock { $0[index] = result }
                }
            }
            let outcomes = collected.withLock { $0 }
            for index in jobs {
                guard let outcome = try outcomes[index]?.get() else { continue }
                switch plans[index] {
                case .whole(_):
                    results[index] = outcome.map { TextLine(words: $0) }
                case .atlas(let segments, let fresh, let packed, _):
                    let read = Dictionary(uniqueKeysWithValues: zip(packed.map(\.index), outcome))
                    for i in fresh {
                        let segment = segments[i], words = read[i] ?? []
                        segmentWords[segment.key] = words
                        cache.store(segment.key, words.isEmpty ? [] : [TextLine(words: words)])
                    }
                }
            }
        }
        return pieces.indices.map { index in
            switch plans[index] {
            case .whole(_):
                return results[index] ?? []
            case .atlas(let segments, _, _, _):
                let origin = pieces[index].rect
                let words = segments.flatMap { segment in
                    (segmentWords[segment.key] ?? known[segment.key] ?? []).map {
                        TextWord(
                            text: $0.text,
                            box: $0.box.offset(
                                dx: segment.box.x - origin.x,
                                dy: segment.box.y - origin.y),
                            confidence: $0.confidence)
                    }
                }
                return Self.splitAtWideGaps(words)
            }
        }
    }

    /// Reads segments of a one-line piece (`packed`, in order, with their indices among the piece's segments)
    /// packed into one synthetic line; words per packed segment, relative to the segment's top-left.
    private static func recognize(
        _ packed: [(index: Int, segment: WordAtlas.Segment)], in piece: Piece,
        style: WordAtlas.Style, gray: [UInt8], stride: Int, engine: OCREngine,
        minimumConfidence: Double
    ) throws -> [[TextWord]] {
        let line = gray.withUnsafeBufferPointer {
            WordAtlas.pack(
                packed.map(\.segment), positions: packed.map(\.index),
                rows: piece.ink.y..<(piece.ink.y + piece.ink.height), style: style, gray: $0, stride: stride)
        }
        let scale = style.scale
        let words = try engine.recognize(gray: line.image, width: line.width, height: line.height, mode: .block)
            .filter { $0.confidence >= minimumConfidence }
            .map { TextWord(text: $0.text, box: unscaled($0.box, by: scale), confidence: $0.confidence) }
        return WordAtlas.unpack(words, slots: line.slots)
    }

    /// Prepares one piece (crop, invert, upscale) and reads it as a block of lines.
    private static func recognize(
        _ piece: Piece, style: WordAtlas.Style, gray: [UInt8], stride: Int,
        engine: OCREngine, minimumConfidence: Double
    ) throws -> [TextLine] {
        let rect = piece.rect, ink = piece.ink, scale = style.scale
        let w = rect.width * scale, h = rect.height * scale
        var image = [UInt8](repeating: 255, count: w * h)
        gray.withUnsafeBufferPointer { g in
            image.withUnsafeMutableBufferPointer {
                xclaw_prepare_block(
                    g.baseAddress, Int32(stride), Int32(rect.x), Int32(rect.y), Int32(rect.width),
                    Int32(rect.height), Int32(ink.x - rect.x), Int32(ink.y - rect.y),
                    Int32(ink.width), Int32(ink.height), Int32(style.background),
                    Int32(scale), style.invert ? 1 : 0, $0.baseAddress)
            }
        }
        let words = try engine.recognize(gray: image, width: w, height: h, mode: .block)
        var byLine: [Int: [TextWord]] = [:]
        for word in words where word.confidence >= minimumConfidence {
            // Back to unscaled coordinates, relative to the piece.
            byLine[word.line, default: []].append(
                TextWord(
                    text: word.text, box: unscaled(word.box, by: scale),
                    confidence: word.confidence))
        }
        return byLine.keys.sorted().flatMap { key in splitAtWideGaps(byLine[key] ?? []) }
    }

    /// A box read on an image upscaled by `scale`, in the image's own pixels (rounded outwards).
    private static func unscaled(_ b: Rect, by scale: Int) -> Rect {
        Rect(
            x: b.x / scale, y: b.y / scale, width: (b.width + scale - 1) / scale, height: (b.height + scale - 1) / scale
        )
    }

    /// Splits a line where words are further apart than a phrase allows: side-by-side buttons ("Keep  Delete") and
    /// table columns are separate elements even when tesseract reads them as one line.
    static func splitAtWideGaps(_ words: [TextWord]) -> [TextLine] {
        let sorted = words.sorted { $0.box.x < $1.box.x }
        guard let first = sorted.first else { return [] }
        let height = sorted.map(\.box.height).sorted()[sorted.count / 2]
        var lines: [TextLine] = []
        var current = [first]
        for word in sorted.dropFirst() {
            let previous = current[current.count - 1]
            if word.box.x - (previous.box.x + previous.box.width) > max(2 * height, 12) {
                lines.append(TextLine(words: current))
                current = []
            }
            current.append(word)
        }
        lines.append(TextLine(words: current))
        return lines
    }

    /// The first `count` engines, created in parallel when missing (each costs ~50 ms to load its model).
    func engines(count: Int, languages: OCRLanguages) throws -> [OCREngine] {
        try engineLock.withLock {
            var pool = engines[languages] ?? []
            let missing = count - pool.count
            if missing > 0 {
                let made = Mutex<[Result<OCREngine, Error>]>([])
                DispatchQueue.concurrentPerform(iterations: missing) { _ in
                    let engine = Result { try OCREngine(languages: languages) }
                    made.withLock { $0.append(engine) }
                }
                for result in made.withLock({ $0 }) { pool.append(try result.get()) }
                engines[languages] = pool
            }
            return Array(pool.prefix(count))
        }
    }
}

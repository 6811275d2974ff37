import XclawScreen

/// A word read from the screen: its text, its box in screen coordinates and tesseract's confidence (0–100).
public struct TextWord: Codable, Sendable, Hashable {
    /// The word as read.
    public var text: String
    /// Where it is on screen.
    public var box: Rect
    /// Tesseract's confidence, 0–100.
    public var confidence: Double

    /// Creates a word.
    public init(text: String, box: Rect, confidence: Double) {
        self.text = text; self.box = box; self.confidence = confidence
    }
}

/// A line of words that belong together (one text line of one block), in screen coordinates.
public struct TextLine: Codable, Sendable, Hashable {
    /// The words joined by single spaces.
    public var text: String
    /// The union of the words' boxes.
    public var box: Rect
    /// The mean confidence of its words.
    public var confidence: Double
    /// Its words, left to right.
    public var words: [TextWord]

    /// Builds a line from its words (at least one), computing text, box and confidence.
    public init(words: [TextWord]) {
        self.words = words
        text = words.map(\.text).joined(separator: " ")
        box = words.dropFirst().reduce(words.first?.box ?? Rect(x: 0, y: 0, width: 0, height: 0)) { $0.union($1.box) }
        let mean = words.isEmpty ? 0 : words.map(\.confidence).reduce(0, +) / Double(words.count)
        confidence = (mean * 100).rounded() / 100
    }

    /// The same line moved by `dx`, `dy`.
    func offset(dx: Int, dy: Int) -> TextLine {
        TextLine(
            words: words.map { TextWord(text: $0.text, box: $0.box.offset(dx: dx, dy: dy), confidence: $0.confidence) })
    }
}

/// What OCR read in a region of the screen, in reading order, with how the work was done.
public struct TextReading: Codable, Sendable {
    /// The region read, in screen coordinates.
    public var region: Rect
    /// The lines, top to bottom and left to right within a row.
    public var lines: [TextLine]
    /// How many text blocks the region held, how many were recognised now and how many came from the cache.
    public var stats: Stats

    /// How a reading was produced; for benchmarks and `--json` users who tune their polling.
    public struct Stats: Codable, Sendable, Equatable {
        /// Text-like blocks the layout found.
        public var blocks: Int
        /// Blocks recognised by tesseract in this call.
        public var recognized: Int
        /// Blocks whose text came from the cache.
        public var cached: Int
        /// True when the whole region was unchanged and returned from the cache without layout.
        public var unchanged: Bool
        /// Wall time of the reading in milliseconds.
        public var milliseconds: Double
    }

    /// Every word, in reading order.
    public var words: [TextWord] { lines.flatMap(\.words) }

    /// The text, a line of output per visual row (lines on one row joined by two spaces).
    public var text: String {
        TextReading.rows(of: lines).map { $0.map(\.text).joined(separator: "  ") }.joined(separator: "\n")
    }

    /// Groups lines into visual rows (vertical centres within the first line's span), each sorted left to right.
    static func rows(of lines: [TextLine]) -> [[TextLine]] {
        let sorted = lines.sorted {
            ($0.box.y + $0.box.height / 2, $0.box.x) < ($1.box.y + $1.box.height / 2, $1.box.x)
        }
        var rows: [[TextLine]] = []
        var rowBottom = Int.min
        for line in sorted {
            let centre = line.box.y + line.box.height / 2
            if var last = rows.popLast() {
                if centre <= rowBottom {
                    last.append(line)
                    rows.append(last)
                    continue
                }
                rows.append(last)
            }
            rows.append([line])
            rowBottom = line.box.y + line.box.height
        }
        return rows.map { $0.sorted { $0.box.x < $1.box.x } }
    }
}

import CXclawGlyphs
import Foundation
import XclawBase
import XclawScreen

/// Reads a lone glyph by comparing it with the glyphs of the fonts toolkits draw labels in. Tesseract guesses on a
/// glyph without context ("3" read "5", "←" read "e", "7" read "?", confidently), but a key's glyph is drawn in one of
/// a few fonts, and rendered in the right one at its size it matches pixel for pixel. The fonts: DejaVu Sans (Tk and
/// GTK's default through fontconfig), X's misc-fixed bitmap fonts and its Symbol font (Xt apps such as xcalc).
/// Safe because the fonts and the render cache are used only under `lock`.
final class GlyphAtlas: @unchecked Sendable {
    /// The one atlas of the process: fonts are opened once, renders are cached by font, character and size.
    static let shared = GlyphAtlas()

    /// Where the fonts are on Debian (fonts-dejavu-core, xfonts-base, fonts-urw-base35); missing ones are skipped.
    static let fontPaths: [String] =
        [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
            "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
            "/usr/share/fonts/X11/Type1/StandardSymbolsPS.pfb",
        ]
        + [
            "6x10", "6x12", "6x13", "6x13B", "7x13", "7x13B", "7x14", "7x14B", "8x13", "8x13B", "9x15", "9x15B",
            "10x20",
        ]
        .map { "/usr/share/fonts/X11/misc/\($0).pcf.gz" }

    /// The characters a control's lone glyph is compared with: what keypads, toolbars and dialogs put on keys.
    static let alphabet: [Character] = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+-×÷=.,()[]{}%←→↑↓√π±*/\\^!?#@&<>:;~|✓✕")

    /// Characters the same shape at different sizes or in another font; a match among them is not a reading.
    static let lookAlikes: [Set<Character>] = [
        ["o", "O", "0"], ["l", "I", "1", "|", "i", "!"], ["c", "C"], ["s", "S"], ["v", "V", "✓"], ["w", "W"],
        ["x", "X", "×", "✕"], ["z", "Z"], ["u", "U"], ["p", "P"], ["k", "K"], ["y", "Y"], ["-", "~"],
        [".", ","], ["/", "\\"], ["8", "B"], ["9", "g"],
    ]

    private struct Font {
        let path: String
        /// A bitmap font (X's PCF fonts): one size, known from its name.
        let bitmap: Bool
        /// Drawn by X as a core font (Type 1 scaled by the server): in one bit, without anti-aliasing.
        let mono: Bool
        /// A bitmap font's character cell height ("8x13": 13), from its file name: ink taller than the cell, or
        /// under a third of it, is not this font's, and the font is not even opened for it.
        let cell: Int?
        /// A bitmap font's character cell width ("8x13": 8): a glyph of it is never wider.
        let cellWidth: Int?
    }

    private struct Rendered {
        let width: Int
        let height: Int
        let coverage: [UInt8]
    }

    private struct Key: Hashable {
        let font: Int
        let character: Character
        let size: Int
        let phase: Int
    }

    /// The size characters are rendered at to learn the size that draws them as tall as some ink.
    static let referenceSize = 40
    /// The size of the first, rough render: proportions only.
    static let sketchSize = 16

    private let lock = NSLock()
    private var fonts: [Font]?
    /// Open fonts by index; a font is opened the first time a glyph could be in it (nil: it could not be read).
    private var handles: [Int: UnsafeMutableRawPointer?] = [:]
    /// Renders made since the cache file was read or written.
    private var unsaved = 0
    private var renders: [Key: Rendered?] = [:]
    /// Exact lookups of the bitmap fonts, by font index, built the first time a line could be in the font.
    private var bitmapTables: [Int: BitmapTable] = [:]

    deinit {
        for case let handle? in handles.values { xclaw_font_close(handle) }
    }

    /// A character that matches an ink map: how well (0–1), and the font size (pixels per em) that drew it so tall;
    /// 0 for bitmap fonts, which have one size.
    struct Candidate: Sendable, Equatable {
        /// The character.
        var text: String
        /// Its similarity to the ink.
        var similarity: Double
        /// The font size it was rendered at.
        var size: Int
    }

    /// What an ink map reads as.
    enum Reading: Sendable, Equatable {
        /// One character, clearly.
        case sure(Candidate)
        /// Look-alikes of different sizes ("c" and "C"): the label's font size decides (see `decide`).
        case sizeDependent([Candidate])
    }

    /// Reads an ink map (coverage 0–255, `width` x `height`); nil when no character matches well, or two unalike
    /// ones match about as well.
    func read(coverage: [UInt8], width: Int, height: Int) -> Reading? {
        let (coverage, width, height) = Self.trimmed(coverage, width: width, height: height)
        guard width >= 2, height >= 4, width <= 200, height <= 200 else { return nil }
        do {
            // The lock guards FreeType and the cache only: two readers compare with renders side by side.
            let fonts = lock.withLock { openFonts() }
            var best: [Character: Candidate] = [:]
            /// Keeps a character's best score over the renders tried.
            func consider(_ character: Character, font index: Int, phase: Int, sizedFor sizing: Int?) {
                guard
                    let (score, size) = similarity(
                        coverage, width: width, height: height, to: character, font: index, phase: phase,
                        sizedFor: sizing),
                    score > best[character]?.similarity ?? -1
                else { return }
                best[character] = Candidate(text: String(character), similarity: score, size: size)
            }
            // Bitmap fonts first: a glyph one of them draws exactly (xcalc's, Motif's) is not looked for in the
            // scalable ones, whose four phases are most of the work.
            let order = fonts.indices.filter { fonts[$0].bitmap } + fonts.indices.filter { !fonts[$0].bitmap }
            let smoothed = Self.isSmoothed(coverage)
            for index in order {
                let font = fonts[index]
                // Anti-aliased ink is drawn by Xft (scalable fonts, smoothed); hard-edged ink by X's core fonts
                // (bitmaps, and Type 1 scaled by the server in one bit): the others need not be rendered at all.
                guard smoothed == !(font.bitmap || font.mono) else { continue }
                guard font.cell.map({ height <= $0 && height * 3 >= $0 }) ?? true else { continue }
                if !font.bitmap, best.values.contains(where: { $0.similarity >= 0.995 }) { break }
                for character in Self.alphabet {
                    for phase in font.bitmap || font.mono ? [0] : [0, 16, 32, 48] {
                        consider(character, font: index, phase: phase, sizedFor: nil)
                    }
                }
            }
            // A second look, only for ink no character matched closely or a letter and a digit matched alike ("o"
            // and "0"), at the best few characters again:
            // - drawn between pixel rows (a label at a fractional height, as GTK's dark theme draws its keys: a digit
            //   spread faintly over one row more): sized for one row shorter or as tall (hinting may have made it a
            //   row shorter still), at three phases down as well as across;
            // - drawn a size or two larger than its height says: hinting snaps a 13 px font's capitals to 9 rows, so
            //   the 9-row size draws them too narrow (GTK's "C" matched "G" better).
            let sorted = best.values.sorted { $0.similarity > $1.similarity }
            if smoothed, let first = sorted.first,
                first.similarity < 0.9
                    || (sorted.count > 1 && sorted[1].similarity >= first.similarity - 0.06
                        && sorted[1].text.first?.isNumber != first.text.first?.isNumber)
            {
                let contenders = sorted.prefix(8).compactMap(\.text.first)
                let down = [16, 32, 48].flatMap { down in [0, 16, 32, 48].map { down * 64 + $0 } }
                let looks =
                    [height - 1, height].flatMap { sizing in down.map { ($0, sizing) } }
                    + [height + 1, height + 2].flatMap { sizing in [0, 16, 32, 48].map { ($0, sizing) } }
                for index in fonts.indices where !(fonts[index].bitmap || fonts[index].mono) {
                    for character in contenders {
                        for (phase, sizing) in looks {
                            consider(character, font: index, phase: phase, sizedFor: sizing)
                        }
                    }
                }
            }
            let ranked = best.values.sorted { $0.similarity > $1.similarity }
            // A close match, or a fair one far ahead of any other (X scales its Type 1 Symbol font with a rasteriser
            // of its own: xcalc's "π" matches at 0.74, the next character at 0.44; its "√" at 0.54, the next at
            // 0.30). Letters and digits, which resemble each other more, need 0.65 for that; symbols 0.5.
            let ahead = { (margin: Double) in
                ranked.dropFirst().allSatisfy { $0.similarity <= (ranked.first?.similarity ?? 0) - margin }
            }
            guard let top = ranked.first, let first = top.text.first,
                top.similarity >= 0.8 || (top.similarity >= 0.65 && ahead(0.2))
                    || (top.similarity >= 0.5 && !first.isLetter && !first.isNumber && ahead(0.2))
            else { return nil }
            let group = Self.lookAlikes.first { $0.contains(first) } ?? [first]
            // An unalike character within reach makes it no reading.
            let close = ranked.dropFirst().filter { $0.similarity >= top.similarity - 0.06 }
            if close.contains(where: { !group.contains($0.text.first ?? " ") }) { return nil }
            // Look-alikes about as close, or a letter and a digit drawn the same size ("O" and "0", 0.947 and 0.900
            // on a dark key), are for the label's size and its neighbours to decide, not the closer score alone.
            let twins = close.filter {
                $0.similarity >= top.similarity - 0.02
                    || ($0.size > 0 && abs($0.size - top.size) * 100 <= top.size * 15
                        && ($0.text.first?.isNumber ?? false) != first.isNumber)
            }
            return twins.isEmpty ? .sure(top) : .sizeDependent([top] + twins)
        }
    }

    /// The one of `family` ("e", "é", "è", "ê", "ë") the ink map matches clearly best: at least 0.75 and 0.03 ahead of
    /// the next; nil otherwise. For restoring accents, where the base letter is known and only the mark is in doubt.
    func best(among family: [Character], coverage: [UInt8], width: Int, height: Int) -> Character? {
        let (coverage, width, height) = Self.trimmed(coverage, width: width, height: height)
        guard width >= 2, height >= 4, width <= 200, height <= 200 else { return nil }
        do {
            let fonts = lock.withLock { openFonts() }
            var best: [Character: Double] = [:]
            let smoothed = Self.isSmoothed(coverage)
            for (index, font) in fonts.enumerated() where smoothed == !(font.bitmap || font.mono) {
                for character in family {
                    for phase in font.bitmap || font.mono ? [0] : [0, 16, 32, 48] {
                        guard
                            let (score, _) = similarity(
                                coverage, width: width, height: height, to: character, font: index, phase: phase)
                        else { continue }
                        best[character] = max(best[character] ?? -1, score)
                    }
                }
            }
            let ranked = best.sorted { $0.value > $1.value }
            guard let top = ranked.first, top.value >= 0.75,
                ranked.count < 2 || ranked[1].value <= top.value - 0.03
            else { return nil }
            return top.key
        }
    }

    /// A glyph's tight ink, one bit a pixel. A bitmap font draws a character the same way every time, so its ink is
    /// the key of an exact lookup.
    struct InkKey: Hashable, Sendable {
        let width: Int
        let height: Int
        let bits: [UInt64]

        /// The key of the `width` x `height` ink whose pixels `inked` says.
        init(width: Int, height: Int, inked: (_ x: Int, _ y: Int) -> Bool) {
            self.width = width
            self.height = height
            var bits = [UInt64](repeating: 0, count: (width * height + 63) / 64)
            for y in 0..<height {
                for x in 0..<width where inked(x, y) {
                    let i = y * width + x
                    bits[i / 64] |= 1 << UInt64(i % 64)
                }
            }
            self.bits = bits
        }
    }

    /// One bitmap font's exact lookup: its cell, and the characters each tight ink is drawn by (several when the font
    /// draws them alike, "." and "·").
    struct BitmapTable: Sendable {
        let cellWidth: Int
        let cellHeight: Int
        let glyphs: [InkKey: [Character]]
    }

    /// The characters bitmap-font words are read in: printable ASCII, Latin-1's letters and signs, and the marks
    /// dialogs and terminals show.
    static let bitmapRepertoire: [Character] =
        (0x21...0x7e).compactMap { Unicode.Scalar($0).map(Character.init) }
        + (0xa1...0xff).compactMap { Unicode.Scalar($0).map(Character.init) } + Array("€✓✗•–—‘’“”…")

    /// The exact lookups of the bitmap fonts whose cell could hold a line of ink `height` rows tall (a third of the
    /// cell to all of it), each built once: about 200 renders a font, kept in the render cache file.
    func bitmapTables(forInkHeight height: Int) -> [BitmapTable] {
        lock.withLock {
            let fonts = openFonts()
            return fonts.indices.compactMap { index -> BitmapTable? in
                let font = fonts[index]
                guard font.bitmap, let cell = font.cell, let cellWidth = font.cellWidth, height <= cell,
                    height * 3 >= cell
                else { return nil }
                if let table = bitmapTables[index] { return table }
                var glyphs: [InkKey: [Character]] = [:]
                for character in Self.bitmapRepertoire {
                    guard let glyph = render(character, font: index, size: 0, phase: 0) else { continue }
                    let key = InkKey(width: glyph.width, height: glyph.height) {
                        glyph.coverage[$1 * glyph.width + $0] >= 128
                    }
                    glyphs[key, default: []].append(character)
                }
                let table = BitmapTable(cellWidth: cellWidth, cellHeight: cell, glyphs: glyphs)
                bitmapTables[index] = table
                return table
            }
        }
    }

    /// The ink map without its faint top and bottom rows (at most an eighth covered): a hinted horizontal stroke
    /// leaves a row of 5 % coverage under it (GTK's "2" and "4"), which made the ink a pixel taller than any render
    /// of the character, so the size was wrong and the match poor.
    static func trimmed(_ coverage: [UInt8], width: Int, height: Int) -> ([UInt8], Int, Int) {
        let faint: UInt8 = 32
        func rowFaint(_ y: Int) -> Bool { (0..<width).allSatisfy { coverage[y * width + $0] < faint } }
        var top = 0, bottom = height
        while bottom - top > 1, rowFaint(top) { top += 1 }
        while bottom - top > 1, rowFaint(bottom - 1) { bottom -= 1 }
        guard top > 0 || bottom < height else { return (coverage, width, height) }
        return (Array(coverage[(top * width)..<(bottom * width)]), width, bottom - top)
    }

    /// Whether ink is anti-aliased: many of its pixels are partly covered (a core font's are all or nothing).
    static func isSmoothed(_ coverage: [UInt8]) -> Bool {
        let inked = coverage.filter { $0 > 40 }.count
        let partial = coverage.filter { $0 > 40 && $0 < 215 }.count
        return partial * 100 >= inked * 15
    }

    /// The look-alike whose font size agrees with the size the other labels of the window were read at (within
    /// 20 %: hinting draws one font size at neighbouring sizes' heights), when exactly one does; among keys with more digits than letters, the one digit that does and matched best
    /// or within 0.04 of the best (`candidates` best first); nil otherwise.
    static func decide(_ candidates: [Candidate], typicalSize: Int?, mostlyDigits: Bool = false) -> Candidate? {
        guard let typical = typicalSize, typical > 0 else { return nil }
        let fitting = candidates.filter { $0.size > 0 && abs($0.size - typical) * 100 <= typical * 20 }
        if fitting.count == 1 { return fitting[0] }
        // "0" and "O" are drawn the same size: among keys with more digits than letters, it is the digit, when it
        // matched best or all but as well (GTK's "0" matched "O" 0.024 better; a "B" that matched clearly as a "B"
        // stays unread, never an "8").
        let digits = fitting.filter { $0.text.first?.isNumber == true }
        guard mostlyDigits, digits.count == 1, let top = candidates.first,
            digits[0].similarity >= top.similarity - 0.04
        else { return nil }
        return digits[0]
    }

    /// How alike the ink is to `character` of font `index` drawn as tall as it, or sized for `sizing` rows (at `phase`), and that size; nil when
    /// the character cannot be drawn that size (the font lacks it, or its proportions do not fit). FreeType and the
    /// cache under the lock, the comparison outside it.
    private func similarity(
        _ coverage: [UInt8], width: Int, height: Int, to character: Character, font index: Int, phase: Int,
        sizedFor sizing: Int? = nil
    ) -> (Double, Int)? {
        guard
            let (glyph, size) = lock.withLock({ () -> (Rendered, Int)? in
                guard let font = fonts?[index] else { return nil }
                return fit(
                    character, font: index, bitmap: font.bitmap, height: sizing ?? height, width: width,
                    phase: phase)
            }),
            abs(glyph.height - height) <= max(1, height / 8), abs(glyph.width - width) <= max(1, width / 5)
        else { return nil }
        let score = coverage.withUnsafeBufferPointer { a in
            glyph.coverage.withUnsafeBufferPointer { b in
                xclaw_glyph_similarity(
                    a.baseAddress, Int32(width), Int32(height), b.baseAddress, Int32(glyph.width),
                    Int32(glyph.height))
            }
        }
        return (score, size)
    }

    /// The glyph of `character` in font `index` rendered as tall as `height` (bitmap fonts: at their one size).
    private func fit(_ character: Character, font index: Int, bitmap: Bool, height: Int, width: Int, phase: Int)
        -> (Rendered, Int)?
    {
        if bitmap { return render(character, font: index, size: 0, phase: 0).map { ($0, 0) } }
        // A small render first, for the character's proportions: most characters cannot be as wide as the ink for
        // its height and are ruled out without the larger renders (a cold atlas's cost is rendering).
        guard let sketch = render(character, font: index, size: Self.sketchSize, phase: 0), sketch.height > 0,
            abs((sketch.width * height + sketch.height / 2) / sketch.height - width) <= max(3, width * 2 / 5)
        else { return nil }
        // Then the reference size, once, for the size that draws it as tall as the ink.
        guard let reference = render(character, font: index, size: Self.referenceSize, phase: 0), reference.height > 0
        else { return nil }
        let size = (Self.referenceSize * height + reference.height / 2) / reference.height
        guard (6...160).contains(size) else { return nil }
        let predicted = (reference.width * size + Self.referenceSize / 2) / Self.referenceSize
        guard abs(predicted - width) <= max(2, width / 3) else { return nil }
        return render(character, font: index, size: size, phase: phase).map { ($0, size) }
    }

    /// A render, cached (misses too: a font without the character is asked once).
    private func render(_ character: Character, font index: Int, size: Int, phase: Int) -> Rendered? {
        let key = Key(font: index, character: character, size: size, phase: phase)
        if let cached = renders[key] { return cached }
        guard let fonts, let scalar = character.unicodeScalars.first, let handle = handle(index) else { return nil }
        let capacity = 256
        var buffer = [UInt8](repeating: 0, count: capacity * capacity)
        var w: Int32 = 0, h: Int32 = 0
        let ok = buffer.withUnsafeMutableBufferPointer {
            xclaw_font_render(
                handle, Int32(size), Int32(phase), fonts[index].mono ? 1 : 0, scalar.value, $0.baseAddress,
                Int32(capacity),
                Int32(capacity), &w,
                &h)
        }
        let rendered =
            ok == 1 ? Rendered(width: Int(w), height: Int(h), coverage: Array(buffer.prefix(Int(w * h)))) : nil
        renders[key] = rendered
        unsaved += 1
        if renders.count > 200_000 { renders.removeAll() }  // a bound, far above any real screen's needs
        return rendered
    }

    /// The fonts present on this machine (a missing one is skipped: fewer glyphs are read, nothing fails).
    private func openFonts() -> [Font] {
        if let fonts { return fonts }
        let present = Self.fontPaths.filter { FileManager.default.fileExists(atPath: $0) }.map { path -> Font in
            let bitmap = path.hasSuffix(".pcf.gz")
            let name = (path as NSString).lastPathComponent
            let cell = name.split(separator: ".").first?.split(separator: "x").last.flatMap {
                Int($0.filter(\.isNumber))
            }
            let cellWidth = name.split(separator: "x").first.flatMap { Int($0) }
            return Font(
                path: path, bitmap: bitmap, mono: path.hasSuffix(".pfb"), cell: bitmap ? cell : nil,
                cellWidth: bitmap ? cellWidth : nil)
        }
        fonts = present
        loadRenders(fonts: present)
        return present
    }

    /// Where renders are kept between processes: they depend on the font files only, as fontconfig's cache does.
    static var cacheFile: String { XclawPaths.cacheDirectory() + "/glyphs.bin" }
    private static let cacheTag = Array("xclaw-glyphs 1\n".utf8)

    /// Each font file's size and modification time: a cache made from other files is not used.
    private static func stamp(_ path: String) -> (UInt64, UInt64) {
        var st = stat()
        guard stat(path, &st) == 0 else { return (0, 0) }
        return (UInt64(st.st_size), UInt64(st.st_mtim.tv_sec))
    }

    /// Saves the renders made by this process, when there are new ones (a cold process pays for rendering once; the
    /// next ones read the file). Errors are ignored: the cache is an optimisation.
    func saveIfChanged() {
        let data: Data? = lock.withLock {
            guard unsaved > 0, let fonts else { return nil }
            unsaved = 0
            var out = Self.cacheTag
            func u16(_ v: Int) { out += [UInt8(v & 0xff), UInt8((v >> 8) & 0xff)] }
            func u64(_ v: UInt64) { for i in 0..<8 { out.append(UInt8((v >> (8 * UInt64(i))) & 0xff)) } }
            u16(fonts.count)
            for font in fonts {
                let bytes = Array(font.path.utf8)
                u16(bytes.count)
                out += bytes
                let (size, time) = Self.stamp(font.path)
                u64(size)
                u64(time)
            }
            for (key, value) in renders {
                guard let scalar = key.character.unicodeScalars.first else { continue }
                u16(key.font)
                u64(UInt64(scalar.value))
                u16(key.size)
                u16(key.phase)
                if let value {
                    u16(value.width)
                    u16(value.height)
                    out += value.coverage
                } else {
                    u16(0)
                    u16(0)
                }
            }
            return Data(out)
        }
        guard let data else { return }
        let file = Self.cacheFile
        try? FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try? PrivateFiles.write(data, to: file)
    }

    /// Reads the renders a previous process saved for these same font files.
    private func loadRenders(fonts: [Font]) {
        guard let data = try? PrivateFiles.read(Self.cacheFile) else { return }
        let bytes = [UInt8](data)
        var at = 0
        func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, at + n <= bytes.count else { return nil }
            defer { at += n }
            return bytes[at..<(at + n)]
        }
        func u16() -> Int? { take(2).map { Int($0[$0.startIndex]) | Int($0[$0.startIndex + 1]) << 8 } }
        func u64() -> UInt64? {
            take(8).map { $0.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } }
        }
        guard take(Self.cacheTag.count).map(Array.init) == Self.cacheTag, let count = u16(), count == fonts.count else {
            return
        }
        for font in fonts {
            guard let length = u16(), let path = take(length), let size = u64(), let time = u64(),
                String(decoding: path, as: UTF8.self) == font.path, Self.stamp(font.path) == (size, time)
            else { return }
        }
        var loaded: [Key: Rendered?] = [:]
        while at < bytes.count {
            guard let font = u16(), let scalar = u64(), let size = u16(), let phase = u16(), let w = u16(),
                let h = u16(), font < fonts.count, let unicode = Unicode.Scalar(UInt32(truncatingIfNeeded: scalar))
            else { return }
            let key = Key(font: font, character: Character(unicode), size: size, phase: phase)
            if w == 0 || h == 0 {
                loaded[key] = .some(nil)
            } else {
                guard let pixels = take(w * h) else { return }
                loaded[key] = Rendered(width: w, height: h, coverage: Array(pixels))
            }
        }
        renders = loaded
    }

    /// The handle of font `index`, opening it on first use.
    private func handle(_ index: Int) -> UnsafeMutableRawPointer? {
        if let known = handles[index] { return known }
        let opened = fonts.flatMap { xclaw_font_open($0[index].path) }
        handles[index] = opened
        return opened
    }
}

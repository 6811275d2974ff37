import XCTest
import XclawScreen

@testable import XclawPerception

/// Exact reading of bitmap-font words, on words drawn from the font's own glyphs: it replaces a reading only when
/// every glyph is found, and never guesses.
final class BitmapTextTests: XCTestCase {
    private let fill: UInt8 = 217
    private let width = 120, height = 30

    /// The glyph inks of X's 7x13 bitmap fonts, by character (the first font that has all of `text`).
    private func glyphs(for text: String) throws -> [Character: GlyphAtlas.InkKey] {
        for table in GlyphAtlas.shared.bitmapTables(forInkHeight: 9) where table.cellWidth == 7 {
            var found: [Character: GlyphAtlas.InkKey] = [:]
            for (key, characters) in table.glyphs where characters.count == 1 { found[characters[0]] = key }
            if text.allSatisfy({ found[$0] != nil }) { return found }
        }
        return try XCTUnwrap(nil, "xfonts-base's 7x13 fonts are missing (scripts/install-deps.sh installs them)")
    }

    /// A gray frame with `text` drawn glyph by glyph on a common baseline, one blank column apart, and its ink box.
    /// `pale` draws every ink pixel's right neighbour half-way (anti-aliased ink).
    private func drawn(_ text: String, pale: Bool = false) throws -> ([UInt8], Rect) {
        let inks = try glyphs(for: text)
        var gray = [UInt8](repeating: fill, count: width * height)
        let baseline = 20
        var x = 10
        for character in text {
            let key = try XCTUnwrap(inks[character])
            for gy in 0..<key.height {
                for gx in 0..<key.width {
                    let i = gy * key.width + gx
                    guard (key.bits[i / 64] >> UInt64(i % 64)) & 1 == 1 else { continue }
                    let at = (baseline - key.height + gy) * width + x + gx
                    gray[at] = 0
                    if pale, gray[at + 1] == fill { gray[at + 1] = 110 }
                }
            }
            x += key.width + (pale ? 2 : 1)
        }
        var box: Rect?
        for y in 0..<height {
            for x in 0..<width where gray[y * width + x] != fill {
                let pixel = Rect(x: x, y: y, width: 1, height: 1)
                box = box.map { $0.union(pixel) } ?? pixel
            }
        }
        return (gray, try XCTUnwrap(box))
    }

    private func reread(_ text: String, as read: String, pale: Bool = false) throws -> TextWord {
        let (gray, box) = try drawn(text, pale: pale)
        return BitmapText.reread(TextWord(text: read, box: box, confidence: 60), gray: gray, stride: width)
    }

    func testCapitalsTesseractTakesForOthersAreReadFromTheFont() throws {
        let word = try reread("Move", as: "Hove")
        XCTAssertEqual(word.text, "Move")
        XCTAssertGreaterThanOrEqual(word.confidence, 95)
        XCTAssertEqual(try reread("Window", as: "Hindou").text, "Window")
    }

    func testARightReadingIsConfirmed() throws {
        let word = try reread("Name", as: "Name")
        XCTAssertEqual(word.text, "Name")
        XCTAssertGreaterThanOrEqual(word.confidence, 95, "exact, so trusted")
    }

    func testNothingIsGuessed() throws {
        // A lone glyph as simple as a bar may match some character of some font by chance: it is never changed; a
        // larger one is read.
        XCTAssertEqual(try reread("|", as: "l").text, "l")
        XCTAssertEqual(try reread(".", as: ",").text, ",")
        XCTAssertEqual(try reread("M", as: "H").text, "M")
        // Fewer letters read than glyphs drawn: which glyph is which is unknown.
        XCTAssertEqual(try reread("Move", as: "Hov").text, "Hov")
        // Anti-aliased ink is no bitmap font's.
        let smooth = try reread("Move", as: "Hove", pale: true)
        XCTAssertEqual(smooth.text, "Hove")
        XCTAssertEqual(smooth.confidence, 60)
    }
}

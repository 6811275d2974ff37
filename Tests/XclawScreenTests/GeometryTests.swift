import XCTest

@testable import XclawScreen

/// Model-space mapping, parsing, PNG and scaling: no display needed.
final class GeometryTests: XCTestCase {
    /// Screens of every common aspect ratio plus odd and portrait ones.
    let screens: [(String, Size)] = [
        ("4:3", Size(width: 1024, height: 768)), ("4:3 large", Size(width: 1600, height: 1200)),
        ("16:9", Size(width: 1920, height: 1080)), ("16:9 4K", Size(width: 3840, height: 2160)),
        ("16:10", Size(width: 1280, height: 800)), ("16:10 large", Size(width: 2560, height: 1600)),
        ("21:9", Size(width: 2560, height: 1080)), ("21:9 wide", Size(width: 3440, height: 1440)),
        ("5:4", Size(width: 1280, height: 1024)), ("portrait 9:16", Size(width: 1080, height: 1920)),
        ("portrait 3:4", Size(width: 768, height: 1024)), ("odd", Size(width: 1366, height: 768)),
        ("small", Size(width: 800, height: 600)),
    ]

    /// The API's reference rule, as Anthropic's `target_image_size` ports it: the largest width whose aspect-rounded
    /// height keeps the long edge ≤ 1568 and ceil(w/28)·ceil(h/28) ≤ 1568; one pixel wider would not fit.
    func testModelSizeFollowsTheReferenceRule() {
        let rule = ImageSizing.reference
        for (label, screen) in screens {
            let m = ScreenGeometry(screen: screen).model
            XCTAssertLessThanOrEqual(max(m.width, m.height), 1568, label)
            XCTAssertLessThanOrEqual(ImageSizing.tiles(m.width, m.height), 1568, label)
            if rule.fits(screen.width, screen.height) {
                XCTAssertEqual(m, screen, label)
                continue
            }
            // The largest: the next width up (height rounded from the aspect) breaks a limit.
            let landscape = screen.width >= screen.height
            let (long, short) = landscape ? (m.width, m.height) : (m.height, m.width)
            let aspect = Double(max(screen.width, screen.height)) / Double(min(screen.width, screen.height))
            let next = long + 1, nextShort = max(Int((Double(next) / aspect).rounded()), 1)
            XCTAssertFalse(rule.fits(next, nextShort), label)
            XCTAssertEqual(Double(short), (Double(long) / aspect).rounded(), accuracy: 0.5, label)
        }
        XCTAssertEqual(ScreenGeometry(screen: Size(width: 1920, height: 1080)).model, Size(width: 1456, height: 819))
        XCTAssertEqual(ScreenGeometry(screen: Size(width: 1024, height: 768)).model, Size(width: 1024, height: 768))
        // The reference tests' cases: long edge at the cap but too many tiles; portrait is landscape transposed.
        let capped = rule.target(for: Size(width: 1568, height: 1014))
        XCTAssertNotEqual(capped, Size(width: 1568, height: 1014))
        XCTAssertTrue(rule.fits(capped.width, capped.height))
        let (l, p) = (
            rule.target(for: Size(width: 3000, height: 2000)), rule.target(for: Size(width: 2000, height: 3000))
        )
        XCTAssertEqual(p, Size(width: l.height, height: l.width))
        let square = rule.target(for: Size(width: 4000, height: 4000))
        XCTAssertEqual(square.width, square.height)
    }

    /// High-resolution models see a 1080p or 1440p screen whole (1:1), and a 4K one within 2576 px and 3.75 MP; a cap
    /// (`--screenshot-size`) bounds either rule.
    func testHighResolutionAndCaps() throws {
        XCTAssertEqual(
            ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: .highRes).model,
            Size(width: 1920, height: 1080))
        XCTAssertTrue(ScreenGeometry(screen: Size(width: 2560, height: 1440), sizing: .highRes).isIdentity)
        let uhd = ScreenGeometry(screen: Size(width: 3840, height: 2160), sizing: .highRes).model
        XCTAssertLessThanOrEqual(max(uhd.width, uhd.height), 2576)
        XCTAssertLessThanOrEqual(uhd.width * uhd.height, 3_750_000)
        XCTAssertFalse(ImageSizing.highRes.fits(uhd.width + 1, Int((Double(uhd.width + 1) * 9 / 16).rounded())))
        let capped = ImageSizing.highRes.capped(try ImageSizing.cap(parsing: "720p"))
        XCTAssertEqual(
            ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: capped).model,
            Size(width: 1280, height: 720))
        XCTAssertEqual(try ImageSizing.cap(parsing: "1600x900"), Size(width: 1600, height: 900))
        XCTAssertNil(try ImageSizing.cap(parsing: "native"))
        XCTAssertThrowsError(try ImageSizing.cap(parsing: "huge"))
        XCTAssertThrowsError(try ImageSizing.cap(parsing: "10x10"))
    }

    func testEveryModelPixelRoundTripsExactly() {
        for (label, screen) in screens {
            let g = ScreenGeometry(screen: screen)
            for x in 0..<g.model.width {
                let s = g.toScreen(Point(x: x, y: 0))
                XCTAssertEqual(g.toModel(s).x, x, "\(label) x=\(x)")
                XCTAssertTrue(s.x >= 0 && s.x < screen.width, label)
            }
            for y in 0..<g.model.height {
                XCTAssertEqual(g.toModel(g.toScreen(Point(x: 0, y: y))).y, y, "\(label) y=\(y)")
            }
        }
    }

    func testScreenPixelsMapToTheModelPixelCoveringThem() {
        for (label, screen) in screens {
            let g = ScreenGeometry(screen: screen)
            let sx = Double(screen.width) / Double(g.model.width)
            for x in stride(from: 0, to: screen.width, by: 7) {
                let m = g.toModel(Point(x: x, y: 0)).x
                // The screen pixel's centre lies inside model pixel m.
                let centre = (Double(x) + 0.5) / sx
                XCTAssertTrue(Double(m) <= centre && centre < Double(m + 1), "\(label) x=\(x) → \(m)")
            }
            // Corners map into the corner pixels' footprints.
            let first = g.toScreen(Point(x: 0, y: 0))
            XCTAssertLessThan(first.x, Int(sx.rounded(.up)), label)
            let last = g.toScreen(Point(x: g.model.width - 1, y: g.model.height - 1))
            XCTAssertGreaterThanOrEqual(last.x, screen.width - Int(sx.rounded(.up)), label)
            XCTAssertLessThan(last.x, screen.width, label)
        }
    }

    func testModelBoundsAndZoomRegion() {
        let g = ScreenGeometry(screen: Size(width: 1920, height: 1080))
        XCTAssertTrue(g.modelContains(Point(x: 1455, y: 818)))
        XCTAssertFalse(g.modelContains(Point(x: 1456, y: 0)))
        XCTAssertFalse(g.modelContains(Point(x: 0, y: -1)))
        XCTAssertEqual(
            g.toScreen(Rect(x: 0, y: 0, width: 1456, height: 819)), Rect(x: 0, y: 0, width: 1920, height: 1080))
        // Model 100..300 x 100..200 covers screen 131.9..395.6 x 131.9..263.7 (factor 1920/1456 = 1080/819).
        let zoom = g.toScreen(Rect(x: 100, y: 100, width: 200, height: 100))
        XCTAssertTrue(zoom.contains(Rect(x: 132, y: 132, width: 263, height: 131)), "\(zoom)")
    }

    func testParsing() throws {
        XCTAssertEqual(try Rect(parsing: "1, 2,30,40"), Rect(x: 1, y: 2, width: 30, height: 40))
        XCTAssertThrowsError(try Rect(parsing: "1,2,0,40")) { XCTAssertEqual(($0 as? ScreenError)?.exitStatus, .usage) }
        XCTAssertThrowsError(try Rect(parsing: "1,2,3"))
        XCTAssertEqual(try Size(parsing: "1920x1080"), Size(width: 1920, height: 1080))
        XCTAssertThrowsError(try Size(parsing: "1920"))
        XCTAssertEqual(try RGB(hex: "#ff8000"), RGB(r: 255, g: 128, b: 0))
        XCTAssertThrowsError(try RGB(hex: "red"))
    }

    func testKeyCombosAndNames() throws {
        let combo = try KeyCombo.parse("ctrl+shift+t")
        XCTAssertEqual(combo.modifiers, [0xffe3, 0xffe1])
        XCTAssertEqual(combo.key, 0x74)
        XCTAssertEqual(try KeyCombo.parse("CTRL+ALT+Delete").modifiers, [0xffe3, 0xffe9])
        XCTAssertEqual(try KeyCombo.parse("Enter").key, 0xff0d)
        XCTAssertEqual(try KeyCombo.parse("return").key, 0xff0d)
        XCTAssertEqual(try KeyCombo.parse("alt+Tab").key, 0xff09)
        XCTAssertEqual(try KeyCombo.parse("super").key, 0xffeb)
        XCTAssertEqual(try KeyCombo.parse("KP_0").key, 0xffb0)
        XCTAssertEqual(try KeyCombo.parse("f5").key, 0xffc2)
        XCTAssertEqual(try KeyCombo.parse("ctrl++").key, 0x2b)
        XCTAssertEqual(try KeyCombo.parse("€").key, 0x0100_20ac)
        XCTAssertThrowsError(try KeyCombo.parse("ctrl+retrun")) { error in
            XCTAssertEqual(error as? ScreenError, .unknownKey("retrun", suggestion: "Return"))
        }
        XCTAssertThrowsError(try KeyCombo.parse("Escpe")) { error in
            XCTAssertEqual(error as? ScreenError, .unknownKey("Escpe", suggestion: "Escape"))
        }
        XCTAssertThrowsError(try KeyCombo.parse("ctrl+"))  // nothing after the +
        XCTAssertThrowsError(try KeyCombo.parse("zzqqxx")) { error in
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .usage)
        }
    }

    func testTextToKeysyms() throws {
        XCTAssertEqual(try Keyboard.keysyms(for: "a\nb\tc\r\nd"), [0x61, 0xff0d, 0x62, 0xff09, 0x63, 0xff0d, 0x64])
        XCTAssertEqual(try Keyboard.keysyms(for: "é€你"), [0xe9, 0x0100_20ac, 0x0100_4f60])
        XCTAssertThrowsError(try Keyboard.keysyms(for: "bell\u{07}")) { error in
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .usage)
            XCTAssertTrue("\(error)".contains("U+0007"))
        }
    }

    func testPNGRoundTripAndColourOrder() throws {
        var frame = Frame(size: Size(width: 64, height: 48), color: RGB(r: 10, g: 20, b: 30))
        // A red, a green and a blue pixel: a swapped channel order would show here.
        for (x, c) in [(1, RGB(r: 255, g: 0, b: 0)), (2, RGB(r: 0, g: 255, b: 0)), (3, RGB(r: 0, g: 0, b: 255))] {
            let i = (5 * 64 + x) * 4
            frame.bgrx[i] = c.b; frame.bgrx[i + 1] = c.g; frame.bgrx[i + 2] = c.r
        }
        for options in [
            PNG.Options.fast, .libpngDefault, PNG.Options(level: 1, strategy: 3, filters: 0x08),
            PNG.Options(encoder: .striped, level: 6),
        ] {
            let png = try PNG.encode(frame, options: options)
            XCTAssertEqual(Array(png.prefix(8)), [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
            let back = try PNG.decode(png)
            XCTAssertEqual(back.size, frame.size)
            XCTAssertEqual(back.rgb(), frame.rgb(), "\(options)")
            XCTAssertEqual(back.pixel(x: 1, y: 5), RGB(r: 255, g: 0, b: 0))
            XCTAssertEqual(back.pixel(x: 3, y: 5), RGB(r: 0, g: 0, b: 255))
        }
        // The padding byte is 0 in BGRX; RGBA must still be opaque.
        XCTAssertTrue(stride(from: 3, to: frame.rgba().count, by: 4).allSatisfy { frame.rgba()[$0] == 255 })
        XCTAssertThrowsError(try PNG.decode([1, 2, 3])) { XCTAssertEqual(($0 as? ScreenError)?.exitStatus, .internal) }
    }

    func testStripedEncoderJoinsStripesIntoOneValidStream() throws {
        // Noisy content of odd sizes, so every stripe emits real deflate blocks and the joins matter.
        var generator = SystemRandomNumberGenerator()
        for size in [Size(width: 301, height: 199), Size(width: 1, height: 500), Size(width: 777, height: 64)] {
            var frame = Frame(size: size, color: RGB(r: 0, g: 0, b: 0))
            for i in stride(from: 0, to: frame.bgrx.count, by: 4) {
                let v = UInt8.random(in: 0...255, using: &generator)
                frame.bgrx[i] = v; frame.bgrx[i + 1] = v &* 3; frame.bgrx[i + 2] = i % 7 == 0 ? 255 : v / 2
            }
            for threads in [1, 2, 3, 4] {
                let png = try PNG.encode(frame, options: PNG.Options(encoder: .striped, level: 1, threads: threads))
                XCTAssertEqual(try PNG.decode(png).rgb(), frame.rgb(), "\(size) ×\(threads)")
            }
        }
    }

    func testFreePiecesGrowIntoWholeColumnsAndStayDisjoint() {
        // A window with two stacked buttons on the left and a free column (a list) on the right: cutting the buttons
        // out leaves bands whose edges cross the column at the buttons' edges, where a row of the list stood.
        let window = Rect(x: 0, y: 0, width: 300, height: 100)
        let buttons = [Rect(x: 10, y: 10, width: 100, height: 30), Rect(x: 10, y: 45, width: 100, height: 30)]
        var pieces = [window]
        for button in buttons { pieces = pieces.flatMap { $0.subtracting(button) } }
        XCTAssertFalse(pieces.contains { $0.contains(Rect(x: 200, y: 35, width: 60, height: 15)) }, "\(pieces)")
        let grown = Rect.coalesced(pieces)
        // The row across the old cut at y 40-45 lies in one piece now.
        XCTAssertTrue(grown.contains { $0.contains(Rect(x: 200, y: 35, width: 60, height: 15)) }, "\(grown)")
        // The same free area: disjoint pieces, none on a button, covering what the cut pieces covered.
        let area = { (rects: [Rect]) in rects.reduce(0) { $0 + $1.width * $1.height } }
        XCTAssertEqual(area(grown), area(pieces))
        XCTAssertEqual(area(grown), 300 * 100 - 2 * 100 * 30)
        for (i, a) in grown.enumerated() {
            XCTAssertTrue(window.contains(a))
            XCTAssertTrue(buttons.allSatisfy { a.intersection($0).isEmpty }, "\(a)")
            for b in grown[(i + 1)...] { XCTAssertTrue(a.intersection(b).isEmpty, "\(a) overlaps \(b)") }
        }
        XCTAssertEqual(Rect.coalesced([]), [])
        XCTAssertEqual(Rect.coalesced([window]), [window])
    }

    func testAreaAveragingDownscale() throws {
        // A 4x2 checkerboard of black and white halves to mid grey: every source pixel counts.
        var frame = Frame(size: Size(width: 4, height: 2), color: RGB(r: 0, g: 0, b: 0))
        for (x, y) in [(0, 0), (2, 0), (1, 1), (3, 1)] {
            let i = (y * 4 + x) * 4
            frame.bgrx[i] = 255; frame.bgrx[i + 1] = 255; frame.bgrx[i + 2] = 255
        }
        let half = try frame.downscaled(to: Size(width: 2, height: 1))
        XCTAssertEqual(half.pixel(x: 0, y: 0), RGB(r: 128, g: 128, b: 128))
        XCTAssertEqual(half.pixel(x: 1, y: 0), RGB(r: 128, g: 128, b: 128))
        // Non-integer ratio: 3 → 2 pixels of [0, 90, 180]: (0*2 + 90*1)/3 = 30, (90*1 + 180*2)/3 = 150.
        var ramp = Frame(size: Size(width: 3, height: 1), color: RGB(r: 0, g: 0, b: 0))
        for x in 0..<3 { ramp.bgrx[x * 4 + 2] = UInt8(x * 90) }
        let two = try ramp.downscaled(to: Size(width: 2, height: 1))
        XCTAssertEqual(two.pixel(x: 0, y: 0)?.r, 30)
        XCTAssertEqual(two.pixel(x: 1, y: 0)?.r, 150)
        // A uniform 1080p frame stays uniform at the model size.
        let uniform = Frame(size: Size(width: 1920, height: 1080), color: RGB(r: 12, g: 200, b: 99))
        let small = try uniform.downscaled(to: ScreenGeometry(screen: uniform.size).model)
        XCTAssertEqual(Set(small.rgb()), [12, 200, 99])
        XCTAssertThrowsError(try uniform.downscaled(to: Size(width: 4000, height: 10)))
    }

    /// The exact area average in floating point, the reference the fixed-point scaler must stay within 1 of.
    private func referenceDownscale(_ frame: Frame, to target: Size) -> [Double] {
        let sx = Double(frame.width) / Double(target.width), sy = Double(frame.height) / Double(target.height)
        var out = [Double](repeating: 0, count: target.width * target.height * 3)
        for ty in 0..<target.height {
            let y0 = Double(ty) * sy, y1 = y0 + sy
            for tx in 0..<target.width {
                let x0 = Double(tx) * sx, x1 = x0 + sx
                var sum = [0.0, 0.0, 0.0]
                for y in Int(y0)..<min(frame.height, Int(y1.rounded(.up))) {
                    let wy = min(y1, Double(y + 1)) - max(y0, Double(y))
                    for x in Int(x0)..<min(frame.width, Int(x1.rounded(.up))) {
                        let w = wy * (min(x1, Double(x + 1)) - max(x0, Double(x)))
                        guard let p = frame.pixel(x: x, y: y) else { continue }
                        sum[0] += w * Double(p.r); sum[1] += w * Double(p.g); sum[2] += w * Double(p.b)
                    }
                }
                for c in 0..<3 { out[(ty * target.width + tx) * 3 + c] = sum[c] / (sx * sy) }
            }
        }
        return out
    }

    func testDownscaleMatchesTheExactAreaAverageAtAnyRatio() throws {
        var generator = SystemRandomNumberGenerator()
        // 700x500 → 300x230 runs on two threads; 1000x40 → 10x4 averages 100 columns per pixel.
        for (source, target) in [
            (Size(width: 700, height: 500), Size(width: 300, height: 230)),
            (Size(width: 1000, height: 40), Size(width: 10, height: 4)),
            (Size(width: 1920, height: 20), Size(width: 19, height: 3)),
        ] {
            var frame = Frame(size: source, color: RGB(r: 0, g: 0, b: 0))
            for i in stride(from: 0, to: frame.bgrx.count, by: 4) {
                let x = (i / 4) % source.width
                frame.bgrx[i] = UInt8.random(in: 0...255, using: &generator)
                frame.bgrx[i + 1] = x % 2 == 0 ? 255 : 0  // alternating columns
                frame.bgrx[i + 2] = x % 100 == 0 ? 255 : 0  // one red column in a hundred
            }
            let scaled = try frame.downscaled(to: target).rgb()
            let reference = referenceDownscale(frame, to: target)
            let worst = zip(scaled, reference).map { abs(Double($0) - $1) }.max() ?? 0
            // Weights are in 1/256: within one level at model ratios, within three at 100:1.
            let tolerance = source.width / target.width <= 4 ? 1.5 : 3
            XCTAssertLessThanOrEqual(worst, tolerance, "\(source) → \(target): off by \(worst)")
        }
    }

    func testSubtractingLeavesDisjointPiecesThatCoverTheRest() {
        let a = Rect(x: 0, y: 0, width: 100, height: 80)
        XCTAssertEqual(a.subtracting(Rect(x: 200, y: 0, width: 10, height: 10)), [a])
        XCTAssertEqual(a.subtracting(Rect(x: -5, y: -5, width: 200, height: 200)), [])
        let pieces = a.subtracting(Rect(x: 30, y: 20, width: 40, height: 30))
        // Bands above and below keep whole rows; the sides are only as tall as the cut.
        XCTAssertEqual(
            pieces,
            [
                Rect(x: 0, y: 0, width: 100, height: 20), Rect(x: 0, y: 50, width: 100, height: 30),
                Rect(x: 0, y: 20, width: 30, height: 30), Rect(x: 70, y: 20, width: 30, height: 30),
            ])
        XCTAssertEqual(pieces.reduce(0) { $0 + $1.width * $1.height }, 100 * 80 - 40 * 30)
    }

    func testVisiblePartsGiveEachPixelToTheTopWindow() {
        let screen = Rect(x: 0, y: 0, width: 200, height: 100)
        let top = Rect(x: 50, y: 10, width: 60, height: 40), below = Rect(x: 0, y: 0, width: 120, height: 80)
        let parts = Rect.visibleParts(of: [top, below], within: screen)
        XCTAssertEqual(parts.first, top)
        // Disjoint, and together exactly the screen.
        XCTAssertEqual(parts.reduce(0) { $0 + $1.width * $1.height }, 200 * 100)
        for (i, p) in parts.enumerated() {
            for q in parts[(i + 1)...] { XCTAssertTrue(p.intersection(q).isEmpty, "\(p) overlaps \(q)") }
        }
    }
}

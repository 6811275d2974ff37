import Foundation
import XCTest
import XclawScreen
import XclawTesting
import XclawTimeTesting

@testable import XclawPerception

/// The template matcher against its exhaustive reference on real captured frames: xterm pages in a light and a dark
/// theme beside a fixture window of coloured icons.
/// The scene is set up once for the class (class setUp and tearDown run on one thread, before and after the tests).
final class TemplateMatcherTests: XCTestCase {
    nonisolated(unsafe) private static var display: TestDisplay?
    nonisolated(unsafe) private static var apps: [Process] = []
    nonisolated(unsafe) private static var fixture: Fixture?
    nonisolated(unsafe) private static var frame: Frame?

    /// Where the fixture's icons are on screen.
    private static let icons = Rect(x: 40, y: 470, width: 300, height: 100)

    override class func setUp() {
        do {
            let display = try TestDisplay(size: Size(width: 1024, height: 600))
            Self.display = display
            // Lines of words in a seeded order, so no two stretches of text are alike.
            let vocabulary = ["window", "button", "screen", "capture", "display", "pointer", "terminal", "source"]
            var seed: UInt64 = 7
            let text = (0..<40).map { line in
                "\(line): "
                    + (0..<6).map { _ in
                        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        return vocabulary[Int(seed >> 33) % vocabulary.count]
                    }.joined(separator: " ")
            }.joined(separator: "\\n")
            for (geometry, colours) in [
                ("60x24+0+0", ["-bg", "white", "-fg", "black"]), ("60x24+520+0", ["-bg", "black", "-fg", "#d0d0d0"]),
            ] {
                let xterm = Process()
                xterm.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
                xterm.arguments =
                    ["-display", display.name, "-geometry", geometry] + colours
                    + ["-e", "sh", "-c", "printf '\(text)'; sleep 600"]
                try xterm.run()
                apps.append(xterm)
            }
            fixture = try Fixture(
                display: display.name, title: "icons", frame: icons, background: "#f0f0f0",
                rects: [
                    (Rect(x: 10, y: 10, width: 32, height: 32), "#1a73e8"),
                    (Rect(x: 18, y: 18, width: 16, height: 16), "#ffffff"),
                    (Rect(x: 22, y: 22, width: 8, height: 8), "#d93025"),
                    (Rect(x: 100, y: 20, width: 60, height: 40), "#fbbc04"),
                    (Rect(x: 120, y: 30, width: 20, height: 20), "#34a853"),
                ])
            let perceiver = try Perceiver(connection: display.connect())
            let watcher = Watcher(perceiver: perceiver, interval: .milliseconds(50))
            // Both pages must show text (xterm starts slowly on a busy machine), then the screen must be still.
            try poll(within: .seconds(30), every: .milliseconds(100)) {
                let shot = try perceiver.capturer.capture()
                return try [
                    Rect(x: 300, y: 30, width: 64, height: 24), Rect(x: 560, y: 60, width: 64, height: 24),
                ]
                .allSatisfy { !ImageTemplate.isFlat(try shot.cropped(to: $0)) }
            }
            _ = try watcher.waitUntilStable(quiet: .milliseconds(300), timeout: .seconds(10))
            frame = try perceiver.capturer.capture()
        } catch {
            print("TemplateMatcherTests: the scene did not start: \(error)")
        }
    }

    override class func tearDown() {
        fixture?.stop()
        for app in apps where app.isRunning { app.terminate() }
        apps = []
        display?.stop()
    }

    private func screen() throws -> Frame { try XCTUnwrap(Self.frame, "the scene did not start") }

    /// The same positions with bit-identical scores, as sets.
    private func assertSame(
        _ fast: [TemplateMatcher.Hit], _ reference: [TemplateMatcher.Hit], _ what: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let order = { (a: TemplateMatcher.Hit, b: TemplateMatcher.Hit) in (a.y, a.x) < (b.y, b.x) }
        XCTAssertEqual(fast.sorted(by: order), reference.sorted(by: order), what, file: file, line: line)
    }

    func testTheFastSearchFindsExactlyWhatTheExhaustiveSearchFinds() throws {
        let frame = try screen()
        // The text pages: light (left), dark (right), and the icons; the area searched spans both themes.
        let area = Rect(x: 250, y: 0, width: 460, height: 240)
        let image = try frame.cropped(to: area)
        XCTAssertFalse(ImageTemplate.isFlat(try frame.cropped(to: Rect(x: 0, y: 0, width: 200, height: 100))))
        let templates: [(String, Rect)] = [
            ("light text", Rect(x: 300, y: 30, width: 64, height: 24)),
            ("dark text", Rect(x: 560, y: 60, width: 64, height: 24)),
            ("a word and blank", Rect(x: 330, y: 100, width: 40, height: 13)),
            ("the icon, not in the area", Rect(x: 45, y: 475, width: 40, height: 40)),
        ]
        var hitsSeen = 0
        for (name, rect) in templates {
            let template = try frame.cropped(to: rect)
            for grayscale in [false, true] {
                let what = "\(name), \(grayscale ? "grey" : "colour")"
                let reference = try TemplateMatcher.search(
                    template, in: image, threshold: 0.3, grayscale: grayscale, exhaustive: true)
                XCTAssertEqual(reference.exact, (image.width - rect.width + 1) * (image.height - rect.height + 1))
                for threshold in [0.3, 0.6, 0.8, 0.9, 0.99] {
                    let fast = try TemplateMatcher.search(
                        template, in: image, threshold: threshold, grayscale: grayscale)
                    assertSame(fast.hits, reference.hits.filter { $0.score >= threshold }, "\(what) at \(threshold)")
                    hitsSeen += fast.hits.count
                    if threshold >= 0.8 {
                        XCTAssertLessThan(
                            fast.exact, reference.exact / 20, "\(what): the bounds rule most positions out")
                    }
                }
                if area.contains(rect) {
                    let own = try XCTUnwrap(reference.best, what)
                    XCTAssertEqual(own.score, 1, accuracy: 1e-9, what)
                }
            }
        }
        XCTAssertGreaterThan(hitsSeen, 20, "the comparison saw matches, not only empty lists")
    }

    func testAWholeScreenSearchFindsTheTemplateWhereItWasCaptured() throws {
        let frame = try screen()
        let rect = Rect(x: 600, y: 150, width: 200, height: 60)  // dark page text
        let template = try ImageTemplate(frame: frame.cropped(to: rect), path: "text.png")
        let matches = try TemplateMatcher.find(template, in: frame, origin: Point(x: 0, y: 0), options: .init())
        XCTAssertEqual(matches.first?.box, rect)
        XCTAssertEqual(matches.first?.score ?? 0, 1, accuracy: 1e-9)
        // Coordinates are on the screen when the frame is a part of it.
        let part = Rect(x: 500, y: 100, width: 400, height: 200)
        let inPart = try TemplateMatcher.find(
            template, in: frame.cropped(to: part), origin: Point(x: part.x, y: part.y), options: .init())
        XCTAssertEqual(inPart.first?.box, rect)
    }

    func testScalesFindATemplateCapturedAtAnotherSize() throws {
        let frame = try screen()
        let icon = Rect(x: Self.icons.x + 100, y: Self.icons.y + 20, width: 60, height: 40)
        let small = try frame.cropped(to: Rect(x: icon.x - 6, y: icon.y - 6, width: 72, height: 52))
            .downscaled(to: Size(width: 54, height: 39))
        let template = try ImageTemplate(frame: small, path: "small.png")
        let options = ImageSearchOptions(confidence: 0.85, scales: [1, 72.0 / 54.0])
        let found = try XCTUnwrap(
            TemplateMatcher.find(template, in: frame, origin: Point(x: 0, y: 0), options: options).first)
        XCTAssertEqual(found.scale, 72.0 / 54.0)
        XCTAssertEqual(Double(found.center.x), Double(icon.center.x), accuracy: 2)
        XCTAssertEqual(Double(found.center.y), Double(icon.center.y), accuracy: 2)
        XCTAssertEqual(found.box.size, Size(width: 72, height: 52))
    }

    func testOverlappingHitsAreSuppressedAndTiesAreRefused() throws {
        let a = ImageMatch(box: Rect(x: 10, y: 10, width: 20, height: 20), score: 0.95)
        let beside = ImageMatch(box: Rect(x: 11, y: 10, width: 20, height: 20), score: 0.97)
        let apart = ImageMatch(box: Rect(x: 100, y: 10, width: 20, height: 20), score: 0.9705)
        let below = ImageMatch(box: Rect(x: 10, y: 100, width: 20, height: 20), score: 0.92)
        let kept = TemplateMatcher.suppressed([a, beside, apart, below])
        XCTAssertEqual(kept, [apart, beside, below])
        let template = try ImageTemplate(
            frame: try screen().cropped(to: Rect(x: 0, y: 0, width: 40, height: 20)), path: "t.png")
        XCTAssertThrowsError(
            try TemplateMatcher.choose(kept, nth: nil, template: template, confidence: 0.9) { nil }
        ) { XCTAssertEqual($0 as? ImageSearchError, .ambiguous(path: "t.png", candidates: [beside, apart])) }
        XCTAssertEqual(try TemplateMatcher.choose(kept, nth: 2, template: template, confidence: 0.9) { nil }, apart)
        XCTAssertEqual(
            try TemplateMatcher.choose([apart, below], nth: nil, template: template, confidence: 0.9) { nil }, apart)
        XCTAssertThrowsError(try TemplateMatcher.choose([], nth: nil, template: template, confidence: 0.9) { below }) {
            XCTAssertEqual(($0 as? ImageSearchError)?.exitStatus, .notFound)
            XCTAssertTrue("\($0)".contains("the best is 0.9200 at @20,110"), "\($0)")
        }
    }

    func testFlatTemplatesAndColourSearch() throws {
        let frame = try screen()
        let background = try frame.cropped(to: Rect(x: Self.icons.x + 200, y: Self.icons.y + 60, width: 20, height: 20))
        XCTAssertThrowsError(try ImageTemplate(frame: background, path: "flat.png")) {
            XCTAssertEqual(
                $0 as? ImageSearchError, .flatTemplate(path: "flat.png", color: RGB(r: 0xf0, g: 0xf0, b: 0xf0)))
        }
        // The icon's red centre is the first #d93025 pixel in reading order; the search is scoped by its frame.
        let red = try RGB(hex: "#d93025")
        let (point, seen) = try XCTUnwrap(ColorSearch.first(red, tolerance: 0, in: frame, origin: Point(x: 0, y: 0)))
        XCTAssertEqual(point, Point(x: Self.icons.x + 22, y: Self.icons.y + 22))
        XCTAssertEqual(seen, red)
        let part = Rect(x: point.x + 1, y: point.y, width: 100, height: 100)
        let later = try XCTUnwrap(
            ColorSearch.first(red, tolerance: 0, in: frame.cropped(to: part), origin: Point(x: part.x, y: part.y)))
        XCTAssertEqual(later.0, Point(x: point.x + 1, y: point.y))
        XCTAssertNil(
            ColorSearch.first(RGB(r: 0xd9, g: 0x30, b: 0x30), tolerance: 4, in: frame, origin: Point(x: 0, y: 0)))
        XCTAssertNotNil(
            ColorSearch.first(RGB(r: 0xd9, g: 0x30, b: 0x30), tolerance: 11, in: frame, origin: Point(x: 0, y: 0)))
    }
}

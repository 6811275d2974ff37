import Foundation
import XCTest
import XclawPerception
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `find`/`tap`/`watch --image` and `find --color` through the `xclaw` binary, on fixture windows of a light and a
/// dark theme (real Xvfb; templates made by `xclaw capture --region`; clicks checked by the clicked window).
final class ImageCLITests: XCTestCase {
    private var display: TestDisplay!
    private var light: Fixture!
    private var dark: Fixture!
    private var folder: URL!
    private var d: [String] { ["--display", display.name] }

    /// The light window's top-left corner; its icons are at fixed window coordinates below.
    private static let lightOrigin = Point(x: 100, y: 80)
    /// The dark window's top-left corner.
    private static let darkOrigin = Point(x: 100, y: 420)
    /// An icon: blue square, white inset, red centre (light theme); the dark theme's has the colours of a dark UI.
    private static func icon(at x: Int, _ y: Int, dark: Bool) -> [(Rect, String)] {
        [
            (Rect(x: x, y: y, width: 32, height: 32), dark ? "#8ab4f8" : "#1a73e8"),
            (Rect(x: x + 8, y: y + 8, width: 16, height: 16), dark ? "#202124" : "#ffffff"),
            (Rect(x: x + 12, y: y + 12, width: 8, height: 8), dark ? "#f28b82" : "#d93025"),
        ]
    }
    /// A small green badge, painted twice: equal matches that a tap must refuse to choose between.
    private static func badge(at x: Int, _ y: Int) -> [(Rect, String)] {
        [
            (Rect(x: x, y: y, width: 24, height: 24), "#34a853"),
            (Rect(x: x + 6, y: y + 6, width: 6, height: 12), "#202124"),
        ]
    }
    /// Two icons alike in grey levels but not in colour: a red and a green square, each with a white centre.
    private static let twoTone: [(Rect, String)] = [
        (Rect(x: 400, y: 40, width: 30, height: 30), "#c00000"),
        (Rect(x: 410, y: 50, width: 10, height: 10), "#ffffff"),
        (Rect(x: 480, y: 40, width: 30, height: 30), "#00a000"),
        (Rect(x: 490, y: 50, width: 10, height: 10), "#ffffff"),
    ]

    /// A rectangle of the light window, in screen coordinates.
    private func onLight(_ x: Int, _ y: Int, _ w: Int, _ h: Int) -> Rect {
        Rect(x: Self.lightOrigin.x + x, y: Self.lightOrigin.y + y, width: w, height: h)
    }

    override func setUpWithError() throws {
        display = try TestDisplay(size: Size(width: 1280, height: 800))
        light = try Fixture(
            display: display.name, title: "images light",
            frame: Rect(origin: Self.lightOrigin, size: Size(width: 760, height: 300)), background: "#f0f0f0",
            rects: Self.icon(at: 40, 40, dark: false) + Self.badge(at: 200, 40) + Self.badge(at: 300, 40)
                + Self.twoTone,
            extra: ["--button", "40,120,100,30:Save"])
        dark = try Fixture(
            display: display.name, title: "images dark",
            frame: Rect(origin: Self.darkOrigin, size: Size(width: 760, height: 200)), background: "#202124",
            rects: Self.icon(at: 40, 40, dark: true))
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-images-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // First paint: both icons' centres show their colours (a busy machine paints late).
        let capturer = try ScreenCapturer(connection: display.connect())
        let marks = [
            (Point(x: Self.lightOrigin.x + 52, y: Self.lightOrigin.y + 52), RGB(r: 0xd9, g: 0x30, b: 0x25)),
            (Point(x: Self.darkOrigin.x + 52, y: Self.darkOrigin.y + 52), RGB(r: 0xf2, g: 0x8b, b: 0x82)),
        ]
        try eventually("both icons painted", within: .seconds(20)) {
            try marks.allSatisfy {
                try capturer.capture(Rect(origin: $0.0, size: Size(width: 1, height: 1))).pixel(x: 0, y: 0) == $0.1
            }
        }
    }

    override func tearDown() {
        light?.stop()
        dark?.stop()
        display?.stop()
        if let folder { try? FileManager.default.removeItem(at: folder) }
    }

    /// Saves `region` of the screen as a template through `xclaw capture --region … -o`.
    private func template(_ name: String, _ region: Rect) throws -> String {
        let path = folder.appendingPathComponent(name).path
        let result = try runCLI(["capture", "--region", "\(region)", "-o", path] + d)
        XCTAssertEqual(result.status, 0, result.stderr)
        return path
    }

    /// Runs `find` with `--json` and decodes the matches.
    private func findJSON(_ arguments: [String]) throws -> [ImageMatch] {
        let result = try runCLI(["find"] + arguments + ["--json"] + d)
        XCTAssertEqual(result.status, 0, result.stderr)
        return try JSONDecoder().decode([ImageMatch].self, from: result.stdout)
    }

    func testACapturedRegionIsFoundAtItsBoxInALightAndADarkTheme() throws {
        for (name, region, window) in [
            ("light.png", onLight(40, 40, 32, 32), "images light"),
            (
                "dark.png", Rect(x: Self.darkOrigin.x + 40, y: Self.darkOrigin.y + 40, width: 32, height: 32),
                "images dark"
            ),
        ] {
            let path = try template(name, region)
            let text = try runCLI(["find", "--image", path] + d)
            XCTAssertEqual(text.status, 0, text.stderr)
            XCTAssertEqual(
                text.text,
                "@\(region.center.x),\(region.center.y) 32x32 at \(region.x),\(region.y) score 1.0000\n")
            let matches = try findJSON(["--image", path, "--window", window])
            XCTAssertEqual(matches.map(\.box), [region])
            XCTAssertEqual(matches.first?.center, region.center)
            XCTAssertEqual(matches.first?.score ?? 0, 1, accuracy: 1e-9)
        }
        // Relative paths are the caller's, also when a daemon serves the command.
        let saved = try runCLI(
            ["capture", "--region", "\(onLight(40, 40, 32, 32))", "-o", "relative.png"] + d, directory: folder)
        XCTAssertEqual(saved.status, 0, saved.stderr)
        let relative = try runCLI(["find", "--image", "relative.png"] + d, directory: folder)
        XCTAssertEqual(relative.status, 0, relative.stderr)
        XCTAssertTrue(relative.text.hasSuffix("at 140,120 score 1.0000\n"), relative.text)
        // The light theme's icon is not the dark theme's: below the confidence, exit 1 naming the best place.
        let lightIcon = folder.appendingPathComponent("light.png").path
        let other = try runCLI(["find", "--image", lightIcon, "--window", "images dark"] + d)
        XCTAssertEqual(other.status, 1, other.stderr)
        XCTAssertTrue(
            other.stderr.contains("nothing on screen matches \(lightIcon) with --confidence 0.9"), other.stderr)
        XCTAssertEqual(other.stdout.count, 0)
    }

    func testGrayscaleMatchesARecolouredIconAndTheBestScoreIsNamedBelowTheConfidence() throws {
        let red = try template("red.png", onLight(400, 40, 30, 30))
        let green = onLight(480, 40, 30, 30)
        let area = ["--region", "\(onLight(470, 30, 60, 60))"]  // only the green icon
        // In colour the two differ (the score is the cosine of their colour differences, 0.77): exit 1, with it.
        let colour = try runCLI(["find", "--image", red] + area + d)
        XCTAssertEqual(colour.status, 1, colour.stderr)
        XCTAssertTrue(colour.stderr.contains("the best is 0.77"), colour.stderr)
        XCTAssertTrue(colour.stderr.contains("at @\(green.center.x),\(green.center.y) 30x30"), colour.stderr)
        // In grey levels they are the same picture.
        let grey = try findJSON(["--image", red, "--grayscale"] + area)
        XCTAssertEqual(grey.map(\.box), [green])
        XCTAssertEqual(grey.first?.score ?? 0, 1, accuracy: 1e-6)
        // A lower --confidence accepts the colour match too.
        XCTAssertEqual(try findJSON(["--image", red, "--confidence", "0.7"] + area).map(\.box), [green])
        XCTAssertEqual(try runCLI(["find", "--image", red, "--confidence", "1.5"] + d).status, 2)
        XCTAssertEqual(try runCLI(["find", "--image", red, "--confidence", "nan"] + d).status, 2)
    }

    func testTiesAreRefusedAllListsThemAndNthOrRegionPicksOne() throws {
        let badge = try template("badge.png", onLight(200, 40, 24, 24))
        let first = onLight(200, 40, 24, 24), second = onLight(300, 40, 24, 24)
        let tie = try runCLI(["find", "--image", badge] + d)
        XCTAssertEqual(tie.status, 1)
        XCTAssertTrue(tie.stderr.contains("matches 2 places equally"), tie.stderr)
        XCTAssertTrue(
            tie.stderr.contains("at \(first.x),\(first.y)") && tie.stderr.contains("at \(second.x),\(second.y)"))
        let all = try runCLI(["find", "--image", badge, "--all"] + d)
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertEqual(all.text.split(separator: "\n").count, 2, all.text)
        XCTAssertEqual(Set(try findJSON(["--image", badge, "--all"]).map(\.box)), [first, second])
        XCTAssertEqual(try findJSON(["--image", badge, "--nth", "2"]).map(\.box), [second])
        XCTAssertEqual(try runCLI(["find", "--image", badge, "--nth", "3"] + d).status, 1)
        XCTAssertEqual(
            try findJSON(["--image", badge, "--region", "\(onLight(280, 20, 80, 80))"]).map(\.box), [second])
        XCTAssertEqual(try runCLI(["find", "--image", badge, "--all", "--nth", "1"] + d).status, 2)

        // tap refuses the tie and clicks nothing; --nth 2 clicks the second, as the window saw it.
        let input = try InputController(connection: display.connect())
        try light.settlePointer(at: onLight(700, 280, 1, 1).center, via: input)
        let refused = try runCLI(["tap", "--image", badge] + d)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("matches 2 places equally"), refused.stderr)
        let tapped = try runCLI(["tap", "--image", badge, "--nth", "2"] + d)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        let presses = try light.pressesUntilSentinel(at: onLight(700, 280, 1, 1).center, via: input)
        XCTAssertEqual(presses.map { Point(x: $0.rootX ?? -1, y: $0.rootY ?? -1) }, [second.center])
    }

    func testTapClicksTheMatchedButtonAndOffsetMovesTheClick() throws {
        let save = onLight(40, 120, 100, 30)
        let button = try template("save.png", save)
        light.clear()
        let tapped = try runCLI(["tap", "--image", button, "--json"] + d)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        XCTAssertEqual(try JSONDecoder().decode(ImageMatch.self, from: tapped.stdout).box, save)
        let press = light.wait(for: .buttonPress).first
        XCTAssertEqual(press?.target, "Save")
        XCTAssertEqual(press.map { Point(x: $0.rootX ?? -1, y: $0.rootY ?? -1) }, save.center)
        light.clear()
        let beside = try runCLI(["tap", "--image", button, "--offset", "30,0", "--button", "right"] + d)
        XCTAssertEqual(beside.status, 0, beside.stderr)
        XCTAssertTrue(beside.text.contains("(clicked at \(save.center.x + 30),\(save.center.y))"), beside.text)
        let right = light.wait(for: .buttonPress).first
        XCTAssertEqual(right?.button, 3)
        XCTAssertEqual(right?.rootX, save.center.x + 30)
        XCTAssertEqual(try runCLI(["tap", "--image", button, "--action"] + d).status, 2)
        XCTAssertEqual(try runCLI(["tap", "Save", "--image", button] + d).status, 2)
    }

    func testWatchWaitsForAnImageToAppearAndToVanish() throws {
        let icon = try template("icon.png", onLight(40, 40, 32, 32))
        let spot = Rect(x: 900, y: 80, width: 200, height: 120)
        let area = ["--region", "\(spot)"]
        let none = try runCLI(["watch", "--image", icon, "--timeout", "0.4"] + area + d)
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("timed out waiting for image \(icon) to appear"), none.stderr)
        // A window with the same icon comes up 1.5 s later, and goes 1.5 s after that.
        let name = display.name
        let late = LateFixture(after: 1.5, lifetime: 1.5) {
            try Fixture(
                display: name, title: "late icon", frame: Rect(x: 920, y: 100, width: 120, height: 80),
                background: "#f0f0f0", rects: Self.icon(at: 30, 20, dark: false))
        }
        defer { late.stop() }
        let appeared = try runCLI(["watch", "--image", icon, "--timeout", "10", "--json"] + area + d)
        XCTAssertEqual(appeared.status, 0, appeared.stderr)
        let result = try JSONDecoder().decode(WatchResult.self, from: appeared.stdout)
        XCTAssertEqual(result.image?.box, Rect(x: 950, y: 120, width: 32, height: 32))
        // It was not there at the watch's first look: the watch waited for it. (Its elapsed time, once checked
        // against 300 ms, also counted how long a loaded machine took to start the command.)
        XCTAssertGreaterThan(result.polls, 1, "the icon was there at the first look")
        let gone = try runCLI(["watch", "--image", icon, "--gone", "--timeout", "10"] + area + d)
        XCTAssertEqual(gone.status, 0, gone.stderr)
        XCTAssertTrue(gone.text.hasPrefix("image \(icon) to vanish: after"), gone.text)
        XCTAssertEqual(try runCLI(["watch", "--image", icon, "--text", "x"] + d).status, 2)
    }

    func testFindColorPrintsTheFirstPixelInReadingOrder() throws {
        let centre = onLight(52, 52, 8, 8)  // the light icon's red centre, #d93025
        let hit = try runCLI(["find", "--color", "#d93025"] + d)
        XCTAssertEqual(hit.status, 0, hit.stderr)
        XCTAssertEqual(hit.text, "\(centre.x),\(centre.y) #d93025\n")
        // Within a tolerance, the pixel's own colour is printed.
        let near = try runCLI(
            ["find", "--color", "d93020", "--tolerance", "5", "--json", "--window", "images light"] + d)
        XCTAssertEqual(near.status, 0, near.stderr)
        XCTAssertEqual(
            String(decoding: near.stdout, as: UTF8.self),
            "{\"color\":\"#d93025\",\"x\":\(centre.x),\"y\":\(centre.y)}\n")
        let miss = try runCLI(["find", "--color", "#123457"] + d)
        XCTAssertEqual(miss.status, 1)
        XCTAssertTrue(miss.stderr.contains("no pixel is #123457"), miss.stderr)
        // Outside the region it is not looked for.
        XCTAssertEqual(try runCLI(["find", "--color", "#d93025", "--region", "0,0,100,100"] + d).status, 1)
        XCTAssertEqual(try runCLI(["find", "--color", "#d9302"] + d).status, 2)
        XCTAssertEqual(try runCLI(["find", "--color", "#d93025", "--tolerance", "300"] + d).status, 2)
        XCTAssertEqual(try runCLI(["find", "Save", "--color", "#d93025"] + d).status, 2)
    }

    func testBadTemplateFilesAreRefusedWithExitTwoAndClickNothing() throws {
        let missing = folder.appendingPathComponent("missing.png").path
        let text = folder.appendingPathComponent("notes.png")
        try Data("not a picture\n".utf8).write(to: text)
        let truncated = folder.appendingPathComponent("truncated.png")
        let whole = try Data(contentsOf: URL(fileURLWithPath: try template("whole.png", onLight(40, 40, 32, 32))))
        try whole.prefix(40).write(to: truncated)
        let empty = folder.appendingPathComponent("empty.png")
        try Data().write(to: empty)
        let flat = try template("flat.png", onLight(600, 200, 20, 20))
        let cases: [(String, String)] = [
            (missing, "no such file"), (text.path, "not a PNG file"), (truncated.path, "PNG"),
            (empty.path, "the file is empty"), (folder.path, "is a directory"), (flat, "one flat colour (#f0f0f0)"),
        ]
        light.clear()
        for (path, words) in cases {
            for command in [["find", "--image", path], ["tap", "--image", path], ["watch", "--image", path]] {
                let result = try runCLI(command + d)
                XCTAssertEqual(result.status, 2, "\(command): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains(words), "\(command): \(result.stderr)")
                XCTAssertEqual(result.stdout.count, 0)
            }
        }
        // The template bigger than the area searched is bad input too.
        let big = try template("big.png", onLight(0, 0, 300, 200))
        let small = try runCLI(["find", "--image", big, "--region", "0,0,100,100"] + d)
        XCTAssertEqual(small.status, 2, small.stderr)
        XCTAssertTrue(small.stderr.contains("larger than the area searched"), small.stderr)
        XCTAssertTrue(try Data(contentsOf: truncated).count == 40, "the file is left as it was")
        XCTAssertTrue(light.received.filter { $0.kind == .buttonPress }.isEmpty, "nothing was clicked")
    }
}

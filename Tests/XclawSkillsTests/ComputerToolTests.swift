import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawMessages
import XclawPerception
import XclawPolling
import XclawScreen
import XclawSkills
import XclawTesting
import XclawTimeTesting

/// Collects the action log of a tool context.
final class SkillActionLog: Sendable {
    private let list = Mutex<[ActionRecord]>([])
    func append(_ record: ActionRecord) { list.withLock { $0.append(record) } }
    var records: [ActionRecord] { list.withLock { $0 } }
}

/// A tool context that records its log and answers confirmations with `confirm`.
func skillContext(_ log: SkillActionLog, dryRun: Bool = false, confirm: Bool = true) -> ToolContext {
    ToolContext(dryRun: dryRun, confirm: { _ in confirm }, log: { log.append($0) }, isCancelled: { false })
}

/// The text blocks of an output, joined by newlines.
func outputText(_ output: ToolOutput) -> String {
    output.content.compactMap {
        if case .text(let t) = $0 { return t }; return nil
    }.joined(separator: "\n")
}

/// The image blocks of an output, decoded.
func outputImages(_ output: ToolOutput) throws -> [Frame] {
    try output.content.compactMap { block -> Frame? in
        guard case .image(let media, let base64) = block else { return nil }
        XCTAssertEqual(media, "image/png")
        let data = try XCTUnwrap(Data(base64Encoded: base64), "image is not base64")
        return try PNG.decode([UInt8](data))
    }
}

/// The `ToolError` an async call throws, or nil (recording a failure) when it succeeds or throws something else.
func expectToolError(_ body: () async throws -> ToolOutput, file: StaticString = #filePath, line: UInt = #line) async
    -> ToolError?
{
    do {
        let output = try await body()
        XCTFail("expected a ToolError, got \(outputText(output))", file: file, line: line)
    } catch let error as ToolError {
        return error
    } catch {
        XCTFail("expected a ToolError, got \(error)", file: file, line: line)
    }
    return nil
}

/// Claude's computer tool on a real 1920x1080 Xvfb, where screenshots are scaled to 1456x819 for the model: every
/// model coordinate must land on the exact screen pixel `ScreenGeometry` maps it to.
final class ComputerToolTests: XCTestCase {
    nonisolated(unsafe) static var display: TestDisplay?
    nonisolated(unsafe) static var fixture: Fixture?
    nonisolated(unsafe) static var session: ScreenSession?
    static let window = Rect(x: 200, y: 150, width: 900, height: 600)
    /// The red rectangle, in screen pixels (drawn at 300,200 in the window).
    static let red = Rect(x: 500, y: 350, width: 121, height: 81)

    override class func setUp() {
        super.setUp()
        do {
            let d = try TestDisplay(size: Size(width: 1920, height: 1080))
            display = d
            fixture = try Fixture(
                display: d.name, title: "computer target", frame: window,
                rects: [(Rect(x: 300, y: 200, width: 121, height: 81), "#ff0000")])
            session = try ScreenSession(display: d.name)
        } catch {
            XCTFail("could not start the display, fixture and session: \(error)")
        }
    }

    override class func tearDown() {
        session = nil
        fixture?.stop()
        display?.stop()
        super.tearDown()
    }

    private var fixture: Fixture { get throws { try XCTUnwrap(Self.fixture) } }
    private var session: ScreenSession { get throws { try XCTUnwrap(Self.session) } }

    /// Keyboard focus on the fixture and the pointer inside it; events so far forgotten.
    private func focusFixture() throws {
        let session = try session, fixture = try fixture
        let manager = WindowManager(connection: session.connection)
        try manager.activate(try manager.window(id: fixture.window))
        try fixture.settlePointer(at: Point(x: Self.window.x + 5, y: Self.window.y + 7), via: session.input)
    }

    /// Clicks a sentinel point and returns every button press received up to and including it: anything an
    /// earlier call sent has arrived by then.
    private func pressesUntilSentinel() throws -> [ProbeEvent] {
        try fixture.pressesUntilSentinel(
            at: Point(x: Self.window.x + 850, y: Self.window.y + 550), via: try session.input)
    }

    /// `computer_batch`: a click, typing and a key in one call, coordinates from the screenshot before it, one
    /// screenshot at the end; the first error stops it and says how far it got, and nothing after it is sent.
    func testABatchRunsItsActionsInOrderAndStopsAtTheFirstError() async throws {
        try focusFixture()
        let session = try session, fixture = try fixture
        fixture.clear()
        let batch = ComputerBatchTool(computer: ComputerTool(session: session, version: .v20251124))
        let m = session.geometry.toModel(Self.red.center)
        let output = try await batch.execute(
            [
                "actions": [
                    ["action": "left_click", "coordinate": [.int(m.x), .int(m.y)]],
                    ["action": "type", "text": "ab"], ["action": "key", "text": "Return"],
                ]
            ], context: ToolContext())
        let text = outputText(output)
        XCTAssertTrue(text.contains("[0:left_click]") && text.contains("[2:key]"), text)
        XCTAssertEqual(output.content.filter { if case .image = $0 { return true } else { return false } }.count, 1)
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertEqual(Point(x: press.rootX ?? -1, y: press.rootY ?? -1), session.geometry.toScreen(m))
        XCTAssertEqual(fixture.typed(count: 3), "ab\n")
        // Stopped at its second action (out of bounds); the third is never sent.
        fixture.clear()
        let error = await expectToolError {
            try await batch.execute(
                [
                    "actions": [
                        ["action": "type", "text": "c"], ["action": "left_click", "coordinate": [99999, 5]],
                        ["action": "type", "text": "NEVER"],
                    ]
                ], context: ToolContext())
        }
        let message = try XCTUnwrap(error?.message)
        XCTAssertTrue(message.contains("batch stopped at actions[1] (1:left_click)"), message)
        XCTAssertTrue(message.contains("(1 completed, 1 skipped)"), message)
        XCTAssertEqual(fixture.typed(count: 1), "c")
        XCTAssertEqual(try pressesUntilSentinel(), [], "the refused click sent nothing")
        XCTAssertFalse(EventProbe.typedText(fixture.received).contains("N"), "nothing after the error was typed")
        let empty = await expectToolError { try await batch.execute(["actions": []], context: ToolContext()) }
        XCTAssertNotNil(empty)
    }

    func testDefinitionAdvertisesTheModelSizeAndZoomOnlyFor20251124() throws {
        let session = try session
        XCTAssertEqual(session.geometry.model, Size(width: 1456, height: 819))
        let old = ComputerTool(session: session, version: .v20250124).definition
        XCTAssertEqual(old["type"], "computer_20250124")
        XCTAssertEqual(old["name"], "computer")
        XCTAssertEqual(old["display_width_px"], 1456)
        XCTAssertEqual(old["display_height_px"], 819)
        XCTAssertNil(old["enable_zoom"])
        let number = try XCTUnwrap(Int(session.connection.name.dropFirst()))
        XCTAssertEqual(old["display_number"], .int(number))
        let new = ComputerTool(session: session, version: .v20251124).definition
        XCTAssertEqual(new["type"], "computer_20251124")
        XCTAssertEqual(new["enable_zoom"], true)
        XCTAssertEqual(new["display_width_px"], 1456)
        XCTAssertEqual(ComputerToolVersion.v20251124.betaHeader, "computer-use-2025-11-24")
        // The permissive schema lets every action through to the tool's own checks.
        XCTAssertEqual(
            SchemaCheck.problems(
                ["action": "zoom", "region": "x"], against: ComputerTool(session: session).inputSchema), [])
    }

    func testLeftClickAtAModelCoordinateLandsOnTheMappedScreenPixel() async throws {
        try focusFixture()
        let session = try session, fixture = try fixture
        let geometry = session.geometry
        let model = geometry.toModel(Self.red.center)
        let expected = geometry.toScreen(model)
        XCTAssertTrue(Self.red.contains(expected))
        let log = SkillActionLog()
        let output = try await ComputerTool(session: session).execute(
            ["action": "left_click", "coordinate": [.int(model.x), .int(model.y)]], context: skillContext(log))
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertEqual(press.rootX, expected.x)
        XCTAssertEqual(press.rootY, expected.y)
        XCTAssertEqual(press.button, 1)
        XCTAssertEqual(fixture.received.filter { $0.kind == .buttonPress }.count, 1)
        // A line and the settled screenshot, at the model's size.
        XCTAssertTrue(outputText(output).contains("left_click at (\(model.x), \(model.y))"), outputText(output))
        let shots = try outputImages(output)
        XCTAssertEqual(shots.map(\.size), [Size(width: 1456, height: 819)])
        // The screenshot shows the red rectangle where the model clicked.
        XCTAssertEqual(shots.first?.pixel(x: model.x, y: model.y), RGB(r: 255, g: 0, b: 0))
        // The log has the screen coordinates.
        let record = try XCTUnwrap(log.records.last)
        XCTAssertEqual(record.tool, "computer")
        XCTAssertEqual(record.action, .leftClick)
        XCTAssertEqual(record.x, expected.x)
        XCTAssertEqual(record.y, expected.y)
        XCTAssertEqual(record.result, "ok")
        XCTAssertNotNil(record.ms)
    }

    func testEveryModelPixelOfTheRectangleMapsBackInsideIt() async throws {
        try focusFixture()
        let session = try session, fixture = try fixture
        let geometry = session.geometry
        let tool = ComputerTool(session: session)
        // Corners of the rectangle as the model sees it (model pixels whose centres lie inside it).
        let topLeft = geometry.toModel(Point(x: Self.red.x + 1, y: Self.red.y + 1))
        let bottomRight = geometry.toModel(
            Point(x: Self.red.x + Self.red.width - 2, y: Self.red.y + Self.red.height - 2))
        for model in [topLeft, bottomRight] {
            fixture.clear()
            _ = try await tool.execute(
                ["action": "right_click", "coordinate": [.int(model.x), .int(model.y)]],
                context: ToolContext())
            let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
            XCTAssertEqual(Point(x: press.rootX ?? -1, y: press.rootY ?? -1), geometry.toScreen(model))
            XCTAssertEqual(press.button, 3)
        }
    }

    func testOutOfBoundsCoordinatesAreRefusedInModelSpaceAndNothingIsSent() async throws {
        try focusFixture()
        let session = try session
        let tool = ComputerTool(session: session)
        // 1500 is on the 1920-px screen but outside the 1456-px image the model sees.
        let error = await expectToolError {
            try await tool.execute(
                ["action": "left_click", "coordinate": [1500, 100]],
                context: ToolContext())
        }
        XCTAssertEqual(
            error?.message.hasPrefix("Coordinates (1500, 100) are outside the display (1456x819)"), true,
            error?.message ?? "")
        let error2 = await expectToolError {
            try await tool.execute(
                ["action": "mouse_move", "coordinate": [-1, 5]],
                context: ToolContext())
        }
        XCTAssertTrue(error2?.message.contains("outside the display (1456x819)") ?? false)
        // Through the registry: an is_error result with the same words, no image.
        let result = await ToolRegistry([tool]).run(
            id: "toolu_1", name: "computer",
            input: ["action": "double_click", "coordinate": [1456, 819]],
            context: ToolContext())
        XCTAssertTrue(result.isError)
        XCTAssertEqual(
            result.content,
            [
                .text(
                    "Coordinates (1456, 819) are outside the display (1456x819): x must be "
                        + "0–1455 and y 0–818, in the pixels of the latest screenshot")
            ])
        XCTAssertEqual(try pressesUntilSentinel(), [], "a refused action sends nothing")
    }

    func testInvalidInputNamesWhatIsValid() async throws {
        try focusFixture()
        // Presses an earlier test sent may still be on their way under load: drain them before counting.
        _ = try pressesUntilSentinel()
        try fixture.clear()
        let tool = ComputerTool(session: try session, version: .v20250124)
        let unknown = await expectToolError { try await tool.execute(["action": "foo"], context: ToolContext()) }
        XCTAssertTrue(
            unknown?.message.hasPrefix("Unknown action \"foo\". Actions: screenshot, cursor_position") ?? false,
            unknown?.message ?? "")
        XCTAssertFalse(unknown?.message.contains("zoom") ?? true, "20250124 has no zoom")
        let noText = await expectToolError { try await tool.execute(["action": "key"], context: ToolContext()) }
        XCTAssertTrue(noText?.message.hasPrefix("text is required for key") ?? false)
        let badKey = await expectToolError {
            try await tool.execute(["action": "key", "text": "ctrl+a Retrun"], context: ToolContext())
        }
        XCTAssertTrue(badKey?.message.contains("\"Return\"") ?? false, badKey?.message ?? "")
        let zoom = await expectToolError {
            try await tool.execute(["action": "zoom", "region": [0, 0, 10, 10]], context: ToolContext())
        }
        XCTAssertTrue(zoom?.message.contains("computer_20251124") ?? false, zoom?.message ?? "")
        let scroll = await expectToolError {
            try await tool.execute(
                [
                    "action": "scroll", "scroll_direction": "sideways",
                    "scroll_amount": 2,
                ], context: ToolContext())
        }
        XCTAssertTrue(scroll?.message.contains("\"up\", \"down\", \"left\" or \"right\"") ?? false)
        let drag = await expectToolError {
            try await tool.execute(
                ["action": "left_click_drag", "coordinate": [5, 5]],
                context: ToolContext())
        }
        XCTAssertTrue(drag?.message.hasPrefix("start_coordinate is required") ?? false, drag?.message ?? "")
        let malformed = await expectToolError {
            try await tool.execute(
                ["action": "left_click", "coordinate": [1, 2, 3]],
                context: ToolContext())
        }
        XCTAssertTrue(malformed?.message.hasPrefix("coordinate must be [x, y]") ?? false)
        let huge = await expectToolError {
            try await tool.execute(
                ["action": "left_click", "coordinate": [1e300, 2]],
                context: ToolContext())
        }
        XCTAssertTrue(huge?.message.contains("outside the display") ?? false, "no crash on absurd numbers")
        let control = await expectToolError {
            try await tool.execute(["action": "type", "text": "a\u{7}b"], context: ToolContext())
        }
        XCTAssertTrue(control?.message.contains("U+0007") ?? false, control?.message ?? "")
        XCTAssertEqual(try pressesUntilSentinel(), [])
    }

    func testTypeUnicodeWithANewlineArrivesExactly() async throws {
        try focusFixture()
        let fixture = try fixture
        let text = "héllo 世界\n"
        let output = try await ComputerTool(session: try session).execute(
            ["action": "type", "text": .string(text)],
            context: ToolContext())
        XCTAssertEqual(fixture.typed(count: text.unicodeScalars.count), text)
        XCTAssertTrue(fixture.received.contains { $0.kind == .keyPress && $0.keysym == "Return" }, "\\n is Return")
        XCTAssertEqual(try outputImages(output).count, 1)
    }

    func testKeyCombinationsAndHeldModifierClicks() async throws {
        try focusFixture()
        let fixture = try fixture
        let tool = ComputerTool(session: try session)
        _ = try await tool.execute(["action": "key", "text": "ctrl+a"], context: ToolContext())
        let presses = fixture.wait(for: .keyPress, count: 2)
        XCTAssertEqual(presses.compactMap(\.keysym), ["Control_L", "a"])
        XCTAssertEqual((presses.last?.state ?? 0) & 4, 4, "a pressed with Control held")
        XCTAssertEqual(fixture.wait(for: .keyRelease, count: 2).count, 2, "both released")
        fixture.clear()
        _ = try await tool.execute(["action": "key", "text": "ctrl+a Delete"], context: ToolContext())
        XCTAssertEqual(fixture.wait(for: .keyPress, count: 3).compactMap(\.keysym), ["Control_L", "a", "Delete"])
        fixture.clear()
        // A click with shift held (the `text` of a click action).
        let model = try session.geometry.toModel(Self.red.center)
        _ = try await tool.execute(
            ["action": "left_click", "coordinate": [.int(model.x), .int(model.y)], "text": "shift"],
            context: ToolContext())
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertEqual((press.state ?? 0) & 0xff, 1, "Shift held during the click")
        fixture.clear()
        _ = try await tool.execute(
            ["action": "triple_click", "coordinate": [.int(model.x), .int(model.y)]],
            context: ToolContext())
        XCTAssertEqual(fixture.wait(for: .buttonRelease, count: 3).count, 3)
        XCTAssertEqual(fixture.received.filter { $0.kind == .buttonPress }.count, 3)
        // hold_key keeps the key down for the duration (server timestamps: a correctness bound, not a speed one). The
        // server stamps an event when it handles the request, and the press is flushed, not waited for: a press
        // handled late under load shortens the gap (189 ms once for 200). The bound tells a hold from a release at
        // once, not milliseconds.
        fixture.clear()
        _ = try await tool.execute(["action": "hold_key", "text": "shift", "duration": 0.2], context: ToolContext())
        let held = fixture.wait { $0.contains { $0.kind == .keyRelease } }
        let down = try XCTUnwrap(held.first { $0.kind == .keyPress })
        let up = try XCTUnwrap(held.first { $0.kind == .keyRelease })
        XCTAssertEqual(down.keysym, "Shift_L")
        XCTAssertGreaterThanOrEqual((up.time ?? 0) - (down.time ?? 0), 150)
    }

    func testScrollDragAndMouseDownUp() async throws {
        try focusFixture()
        let session = try session, fixture = try fixture
        let g = session.geometry
        let tool = ComputerTool(session: session)
        let at = Point(x: 600, y: 400)
        _ = try await tool.execute(
            [
                "action": "scroll", "coordinate": [.int(at.x), .int(at.y)], "scroll_direction": "down",
                "scroll_amount": 3,
            ], context: ToolContext())
        let presses = fixture.wait(for: .buttonPress, count: 3)
        XCTAssertEqual(presses.map(\.button), [5, 5, 5])
        XCTAssertEqual(presses.first?.rootX, g.toScreen(at).x)
        XCTAssertEqual(presses.first?.rootY, g.toScreen(at).y)
        fixture.clear()
        let from = Point(x: 300, y: 250), to = Point(x: 500, y: 450)
        _ = try await tool.execute(
            [
                "action": "left_click_drag", "start_coordinate": [.int(from.x), .int(from.y)],
                "coordinate": [.int(to.x), .int(to.y)],
            ], context: ToolContext())
        let events = fixture.wait { $0.contains { $0.kind == .buttonRelease } }
        let press = try XCTUnwrap(events.first { $0.kind == .buttonPress })
        let release = try XCTUnwrap(events.first { $0.kind == .buttonRelease })
        XCTAssertEqual(Point(x: press.rootX ?? -1, y: press.rootY ?? -1), g.toScreen(from))
        XCTAssertEqual(Point(x: release.rootX ?? -1, y: release.rootY ?? -1), g.toScreen(to))
        XCTAssertTrue(
            events.contains { $0.kind == .motion && ($0.state ?? 0) & 256 != 0 }, "moved with the button held")
        fixture.clear()
        _ = try await tool.execute(["action": "left_mouse_down", "coordinate": [400, 300]], context: ToolContext())
        _ = try await tool.execute(["action": "mouse_move", "coordinate": [420, 310]], context: ToolContext())
        _ = try await tool.execute(["action": "left_mouse_up"], context: ToolContext())
        let upEvents = fixture.wait { $0.contains { $0.kind == .buttonRelease } }
        XCTAssertEqual(upEvents.first { $0.kind == .buttonPress }?.rootX, g.toScreen(Point(x: 400, y: 300)).x)
        XCTAssertEqual(upEvents.first { $0.kind == .buttonRelease }?.rootX, g.toScreen(Point(x: 420, y: 310)).x)
    }

    func testScreenshotAndCursorPositionAreInModelSpace() async throws {
        let session = try session
        let tool = ComputerTool(session: session)
        let output = try await tool.execute(["action": "screenshot"], context: ToolContext())
        XCTAssertEqual(output.content.count, 1, "just the image")
        let shot = try XCTUnwrap(try outputImages(output).first)
        XCTAssertEqual(shot.size, Size(width: 1456, height: 819))
        _ = try await tool.execute(["action": "mouse_move", "coordinate": [1000, 700]], context: ToolContext())
        XCTAssertEqual(try session.input.cursorPosition(), session.geometry.toScreen(Point(x: 1000, y: 700)))
        let cursor = try await tool.execute(["action": "cursor_position"], context: ToolContext())
        XCTAssertEqual(outputText(cursor), "X=1000,Y=700")
    }

    func testZoomReturnsTheFullResolutionCrop() async throws {
        let session = try session
        let g = session.geometry
        let tool = ComputerTool(session: session, version: .v20251124)
        let region = Rect(x: 300, y: 200, width: 200, height: 150)  // model pixels, over the red rectangle
        let output = try await tool.execute(
            ["action": "zoom", "region": [300, 200, 500, 350]], context: ToolContext())
        let image = try XCTUnwrap(try outputImages(output).first)
        let area = g.toScreen(region)
        XCTAssertEqual(image.size, area.size)
        XCTAssertGreaterThan(image.width, region.width, "more pixels than the model's view of the region")
        // Pixel for pixel what the screen shows there.
        XCTAssertEqual(image.rgb(), try session.capturer.capture(area).rgb())
        let bad = await expectToolError {
            try await tool.execute(
                ["action": "zoom", "region": [500, 200, 300, 350]],
                context: ToolContext())
        }
        XCTAssertTrue(bad?.message.contains("0 ≤ x1 < x2 ≤ 1456") ?? false, bad?.message ?? "")
        let outside = await expectToolError {
            try await tool.execute(
                ["action": "zoom", "region": [0, 0, 1460, 10]],
                context: ToolContext())
        }
        XCTAssertNotNil(outside)
    }

    func testDryRunAndDeclinedActionsDoNotTouchTheDisplay() async throws {
        try focusFixture()
        let session = try session, fixture = try fixture
        let g = session.geometry
        let tool = ComputerTool(session: session)
        let model = g.toModel(Self.red.center)
        let screen = g.toScreen(model)
        let log = SkillActionLog()
        let dry = try await tool.execute(
            ["action": "left_click", "coordinate": [.int(model.x), .int(model.y)]],
            context: skillContext(log, dryRun: true))
        XCTAssertEqual(
            outputText(dry), "dry run: would left_click at (\(screen.x), \(screen.y)) [model (\(model.x), \(model.y))]")
        XCTAssertEqual(try outputImages(dry).count, 0)
        _ = try await tool.execute(["action": "type", "text": "nope"], context: skillContext(log, dryRun: true))
        let declined = try await tool.execute(
            ["action": "left_click", "coordinate": [.int(model.x), .int(model.y)]],
            context: skillContext(log, confirm: false))
        XCTAssertTrue(outputText(declined).hasPrefix("the user declined left_click at"), outputText(declined))
        XCTAssertEqual(log.records.map(\.result), ["dry-run", "dry-run", "declined"])
        XCTAssertEqual(log.records.first?.x, screen.x)
        XCTAssertEqual(try pressesUntilSentinel(), [], "nothing reached the window")
        XCTAssertFalse(fixture.received.contains { $0.kind == .keyPress })
    }

    func testSettlerOnAStaticScreenAndOnAnAnimation() throws {
        let session = try session
        let result = try Settler(capturer: session.capturer).settle()
        XCTAssertFalse(result.timedOut)
        XCTAssertFalse(result.changed)
        XCTAssertGreaterThanOrEqual(result.polls, 2)
        XCTAssertEqual(result.frame.size, Size(width: 1920, height: 1080))
        XCTAssertEqual(result.area, Rect(x: 0, y: 0, width: 1920, height: 1080))
        let started = ContinuousClock.now
        let shot = try session.screenshot()
        XCTAssertEqual(shot.size, Size(width: 1456, height: 819))
        print(
            "settle on a static 1080p screen: \(Int(result.elapsedMs)) ms, \(result.polls) polls; settle + scale + "
                + "PNG: \(ContinuousClock.now - started)")
        // An animation never settles: the settler gives up at its timeout, reports it, and keeps the last frame.
        let animated = try Fixture(
            display: try XCTUnwrap(Self.display).name, title: "anim",
            frame: Rect(x: 1400, y: 800, width: 200, height: 100), extra: ["--animate", "10,10,50,50"])
        defer { animated.stop() }
        let area = Rect(x: 1400, y: 800, width: 200, height: 100)
        // Under load the new window may take a while to map and start flipping: wait for its first change.
        _ = try Watcher(perceiver: session.perceiver, interval: .milliseconds(10))
            .wait(for: .change, area: area, timeout: .seconds(10))
        // It flips every 40 ms, but a loaded machine can hold it back for longer than any quiet period (it once
        // sat still for 100 ms, and the settler rightly called that settled). So the settler runs on a clock whose
        // every pause lasts until the animation has drawn a new frame: it changes between any two looks.
        let frames = AnimationClock(capturer: session.capturer, area: area)
        let busy = try Settler(
            capturer: session.capturer, interval: .milliseconds(40), quiet: .milliseconds(100),
            timeout: .milliseconds(400),
            clock: frames
        ).settle(area: area)
        XCTAssertTrue(busy.timedOut, "\(busy.polls) polls")
        XCTAssertTrue(busy.changed)
        XCTAssertEqual(busy.frame.size, area.size)
        // A region away from it settles.
        let calm = try Settler(capturer: session.capturer).settle(area: Rect(x: 0, y: 0, width: 800, height: 600))
        XCTAssertFalse(calm.timedOut)
    }

    func testWaitIsCancellable() async throws {
        let tool = ComputerTool(session: try session)
        let waited = try await tool.execute(["action": "wait", "duration": 0.1], context: ToolContext())
        XCTAssertEqual(try outputImages(waited).count, 1)
        let cancelled = ToolContext(isCancelled: { true })
        do {
            _ = try await tool.execute(["action": "wait", "duration": 100], context: cancelled)
            XCTFail("a cancelled wait returned")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        let tooLong = await expectToolError {
            try await tool.execute(["action": "wait", "duration": 101], context: ToolContext())
        }
        XCTAssertTrue(tooLong?.message.contains("0 to 100") ?? false)
    }
}

import XCTest
import XclawTesting
import XclawTimeTesting

@testable import XclawScreen

/// XTest input against a real Xvfb: the fixture reports exactly what arrived.
final class InputTests: XCTestCase {
    nonisolated(unsafe) static var scene: Scene?
    static let origin = Point(x: 100, y: 100)

    override class func setUp() {
        super.setUp()
        do {
            scene = try Scene(title: "input target", frame: Rect(x: origin.x, y: origin.y, width: 600, height: 400))
        } catch {
            XCTFail("could not start the display and fixture: \(error)")
        }
    }

    override class func tearDown() {
        scene?.stop()
        super.tearDown()
    }

    private var fixture: Fixture { get throws { try XCTUnwrap(Self.scene?.fixture) } }

    /// An input controller on a fresh connection, with keyboard focus on the fixture.
    private func controller() throws -> InputController {
        let connection = try XCTUnwrap(Self.scene?.display).connect()
        let manager = WindowManager(connection: connection)
        try manager.activate(try manager.window(id: try fixture.window))
        let input = try InputController(connection: connection)
        // A sentinel instead of a sleep: once this motion arrives, the focus events before it have arrived too.
        let fixture = try fixture
        let sentinel = Point(x: Self.origin.x + 2, y: Self.origin.y + 3)
        try input.move(to: Point(x: Self.origin.x + 1, y: Self.origin.y + 1))
        try input.move(to: sentinel)
        XCTAssertFalse(
            fixture.wait { $0.contains { $0.kind == .motion && $0.rootX == sentinel.x && $0.rootY == sentinel.y } }
                .isEmpty)
        fixture.clear()
        return input
    }

    func testClicksLandOnTheExactPixelWithTheRightButtonAndCount() throws {
        let input = try controller()
        let fixture = try fixture
        for (point, button, count) in [
            (Point(x: 100, y: 100), MouseButton.left, 1), (Point(x: 699, y: 499), .right, 1),
            (Point(x: 345, y: 217), .middle, 2), (Point(x: 101, y: 498), .left, 3),
        ] {
            fixture.clear()
            try input.click(at: point, button: button, count: count)
            let presses =
                fixture.wait(for: .buttonRelease, count: count).isEmpty
                ? [] : fixture.received.filter { $0.kind == .buttonPress }
            XCTAssertEqual(presses.count, count, "\(point) \(button)")
            for press in presses {
                XCTAssertEqual(press.rootX, point.x)
                XCTAssertEqual(press.rootY, point.y)
                XCTAssertEqual(press.x, point.x - Self.origin.x)
                XCTAssertEqual(press.y, point.y - Self.origin.y)
                XCTAssertEqual(press.button, Int(button.number))
            }
        }
        XCTAssertEqual(try input.cursorPosition(), Point(x: 101, y: 498))
    }

    func testModifiersAreHeldDuringTheClickAndReleasedAfter() throws {
        let input = try controller()
        let fixture = try fixture
        try input.click(at: Point(x: 200, y: 200), modifiers: try parse("ctrl+shift"))
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertEqual((press.state ?? 0) & 0xff, 4 | 1, "Control and Shift held")
        fixture.clear()
        try input.click(at: Point(x: 210, y: 200))
        XCTAssertEqual((fixture.wait(for: .buttonPress).first?.state ?? 99) & 0xff, 0, "nothing held afterwards")
    }

    func testMouseDownAndUp() throws {
        let input = try controller()
        let fixture = try fixture
        try input.buttonDown(.left, at: Point(x: 300, y: 300))
        XCTAssertEqual(fixture.wait(for: .buttonPress).first?.rootX, 300)
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonRelease }.isEmpty)
        try input.move(to: Point(x: 320, y: 310))
        try input.buttonUp(.left)
        let release = try XCTUnwrap(fixture.wait(for: .buttonRelease).first)
        XCTAssertEqual(release.rootX, 320)
        XCTAssertEqual(release.rootY, 310)
    }

    func testDragPassesThroughIntermediatePoints() throws {
        let input = try controller()
        let fixture = try fixture
        try input.drag(from: Point(x: 150, y: 150), to: Point(x: 450, y: 350), steps: 10)
        let events = fixture.wait { $0.contains { $0.kind == .buttonRelease } }
        let press = try XCTUnwrap(events.first { $0.kind == .buttonPress })
        XCTAssertEqual(press.rootX, 150)
        XCTAssertEqual(press.rootY, 150)
        let dragged = events.filter { $0.kind == .motion && ($0.state ?? 0) & 256 != 0 }  // Button1Mask
        XCTAssertEqual(dragged.count, 10, "one motion per step with the button held")
        let xs = dragged.compactMap(\.rootX)
        XCTAssertEqual(xs, xs.sorted())
        XCTAssertEqual(dragged.last?.rootX, 450)
        XCTAssertEqual(dragged.last?.rootY, 350)
        XCTAssertTrue(dragged.contains { $0.rootX == 300 && $0.rootY == 250 }, "passes the midpoint")
        let release = try XCTUnwrap(events.last { $0.kind == .buttonRelease })
        XCTAssertEqual(release.rootX, 450)
    }

    func testScrollSendsButtonsFourToSeven() throws {
        let input = try controller()
        let fixture = try fixture
        for direction in ScrollDirection.allCases {
            fixture.clear()
            try input.scroll(direction, amount: 3, at: Point(x: 400, y: 300))
            let presses =
                fixture.wait(for: .buttonRelease, count: 3).isEmpty
                ? [] : fixture.received.filter { $0.kind == .buttonPress }
            XCTAssertEqual(presses.map(\.button), Array(repeating: Int(direction.button), count: 3), "\(direction)")
            XCTAssertEqual(presses.first?.rootX, 400)
        }
        fixture.clear()
        try input.scroll(.up, amount: 1, modifiers: try parse("ctrl"))
        XCTAssertEqual((fixture.wait(for: .buttonPress).first?.state ?? 0) & 0xff, 4)
    }

    func testKeyCombinationsInXdotoolSyntax() throws {
        let input = try controller()
        let fixture = try fixture
        try input.keyboard.press(
            try ["ctrl+shift+t", "alt+Tab", "F5", "KP_0", "Return", "Enter", "super", "A"]
                .map(KeyCombo.parse))
        let presses = fixture.wait(for: .keyPress, count: 12)
        XCTAssertEqual(presses.count, 12, "ctrl shift t alt Tab F5 KP_0 Return Return super shift A")
        let names = presses.compactMap(\.keysym)
        XCTAssertEqual(Array(names.prefix(3)), ["Control_L", "Shift_L", "T"])
        XCTAssertEqual((presses[2].state ?? 0) & 0xff, 4 | 1, "t pressed with ctrl+shift held")
        XCTAssertTrue(names.contains("F5") && names.contains("Super_L") && names.contains("Tab"))
        XCTAssertTrue(names.contains("KP_0"), "KP_0, not KP_Insert: keypad levels need NumLock, not Shift")
        XCTAssertEqual(names.filter { $0 == "Return" }.count, 2)
        XCTAssertEqual(presses.last?.text, "A", "A adds Shift by itself")
        // Every key went back up.
        let releases = fixture.wait(for: .keyRelease, count: presses.count)
        XCTAssertEqual(releases.count, presses.count)
    }

    func testHoldKeepsTheKeyDownForTheDuration() throws {
        let input = try controller()
        let fixture = try fixture
        try input.keyboard.hold(try KeyCombo.parse("shift+a"), for: .milliseconds(300))
        let events = fixture.wait { $0.filter { $0.kind == .keyRelease }.count >= 2 }
        let press = try XCTUnwrap(events.first { $0.kind == .keyPress && $0.keysym == "A" })
        let release = try XCTUnwrap(events.first { $0.kind == .keyRelease })
        // Server timestamps: the key stayed down at least as long as asked (a correctness bound, not a speed one).
        XCTAssertGreaterThanOrEqual((release.time ?? 0) - (press.time ?? 0), 290)
    }

    func testTypingUnicodeAndAllPrintableASCIIIsExact() throws {
        let input = try controller()
        let fixture = try fixture
        let text = "héllo wörld ß € ñ 你好 — ✓\n" + printableASCII + "\tend"
        try input.keyboard.type(text)
        XCTAssertEqual(fixture.typed(count: text.unicodeScalars.count), text)
    }

    func testMoreDistinctMissingCharactersThanSpareKeycodesAndTheKeymapIsRestored() throws {
        let input = try controller()
        let fixture = try fixture
        let before = try Keyboard.keymap(input.connection)
        // 120 distinct CJK characters: far more than the spare keycodes, so keycodes are rebound mid-text.
        let text = String((0..<120).compactMap { Unicode.Scalar(0x4e00 + $0 * 7).map(Character.init) })
        try input.keyboard.type(text)
        XCTAssertEqual(fixture.typed(count: 120, timeout: 20), text)
        try input.keyboard.restoreMapping()
        XCTAssertEqual(try Keyboard.keymap(input.connection).keysyms, before.keysyms, "keymap restored")
    }

    func testKeysOnLevelsShiftDoesNotReach() throws {
        let input = try controller()
        let fixture = try fixture
        // Sys_Req is Alt+Print and KP_1 needs NumLock: both are bound to a spare keycode instead of sent with Shift.
        try input.keyboard.press(try ["Sys_Req", "KP_1", "Break"].map(KeyCombo.parse))
        let names = fixture.wait(for: .keyPress, count: 3).compactMap(\.keysym)
        XCTAssertEqual(names, ["Sys_Req", "KP_1", "Break"])
        try input.keyboard.restoreMapping()
    }

    func testTwoKeyboardsTypingAtOnceDoNotStealEachOthersKeycodes() throws {
        let fixture = try fixture
        _ = try controller()
        let display = try XCTUnwrap(Self.scene?.display)
        // Both read the keymap first, so both see the same spare keycodes.
        let first = try Keyboard(connection: try display.connect())
        let second = try Keyboard(connection: try display.connect())
        let a = String(repeating: "你ä", count: 60), b = String(repeating: "好ö", count: 60)
        let group = DispatchGroup()
        for (keyboard, text) in [(first, a), (second, b)] {
            DispatchQueue.global().async(group: group) { try? keyboard.type(text) }
        }
        group.wait()
        let typed = fixture.typed(count: 240, timeout: 20)
        XCTAssertEqual(typed.filter { $0 == "你" }.count, 60, typed)
        XCTAssertEqual(typed.filter { $0 == "好" }.count, 60, typed)
        XCTAssertEqual(typed.filter { $0 == "ä" }.count, 60)
        XCTAssertEqual(typed.filter { $0 == "ö" }.count, 60)
        try first.restoreMapping()
        try second.restoreMapping()
    }

    func testNoSpareKeycodeLeftFailsInsteadOfHanging() throws {
        let input = try controller()
        let fixture = try fixture
        let before = try Keyboard.keymap(input.connection)
        // Occupy every spare keycode: more distinct characters than there are spares, left bound.
        let hog = try Keyboard(connection: try XCTUnwrap(Self.scene?.display).connect())
        try hog.type(String((0..<200).compactMap { Unicode.Scalar(0x3400 + $0).map(Character.init) }))
        fixture.wait(timeout: 20) { EventProbe.typedText($0).unicodeScalars.count >= 200 }
        let starved = try Keyboard(connection: input.connection)
        fixture.clear()
        XCTAssertThrowsError(try starved.type("ok 你")) { error in
            XCTAssertEqual(error as? ScreenError, .noSpareKeycode)
        }
        try starved.type("z")  // a sentinel: once it arrives, anything sent before it has arrived too
        XCTAssertEqual(fixture.typed(count: 1), "z", "nothing of the failed text was sent")
        try hog.restoreMapping()
        XCTAssertEqual(try Keyboard.keymap(input.connection).keysyms, before.keysyms)
    }

    func testErrorsSendNothingAndLeaveNoModifierDown() throws {
        let input = try controller()
        let fixture = try fixture
        XCTAssertThrowsError(try input.click(at: Point(x: 5000, y: 10), modifiers: try parse("ctrl"))) { error in
            XCTAssertEqual(error as? ScreenError, .outOfBounds(x: 5000, y: 10, width: 1280, height: 800))
        }
        XCTAssertThrowsError(try input.drag(from: Point(x: 10, y: 10), to: Point(x: 10, y: 900)))
        XCTAssertThrowsError(try input.click(at: Point(x: -1, y: 10)))
        // The sentinel click arrives after anything the failed calls might have sent.
        try input.click(at: Point(x: 250, y: 250))
        let press = fixture.wait(for: .buttonPress)
        XCTAssertEqual(press.count, 1)
        XCTAssertEqual(press.first?.rootX, 250)
        XCTAssertEqual((press.first?.state ?? 99) & 0xff, 0, "no modifier left down")
        XCTAssertTrue(
            fixture.received.filter { ![.motion, .enter, .buttonPress, .buttonRelease].contains($0.kind) }
                .isEmpty, "\(fixture.received)")
    }

    func testTypingIntoARealXterm() throws {
        let d = try XCTUnwrap(Self.scene?.display)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-xterm-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let xterm = Process()
        xterm.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        xterm.arguments = ["-geometry", "80x10+700+0", "-title", "xterm cat", "-e", "sh", "-c", "cat > '\(file.path)'"]
        xterm.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": d.name, "LC_ALL": "C.UTF-8"]) { $1 }
        try xterm.run()
        defer { if xterm.isRunning { xterm.terminate() } }
        let connection = try d.connect()
        let manager = WindowManager(connection: connection)
        let window = try eventually("xterm appears", every: .milliseconds(50)) {
            try manager.list().first { $0.className == "XTerm" && $0.title == "xterm cat" }
        }
        try manager.activate(try XCTUnwrap(window, "xterm never appeared"))
        // xterm starts the shell and cat after mapping; the shell's redirection makes the file, and what is typed
        // meanwhile waits in the terminal for cat.
        eventually("the shell opened the file for cat") { FileManager.default.fileExists(atPath: file.path) }
        let input = try InputController(connection: connection)
        let text = "héllo wörld ß € ñ 你好 — ✓\n" + printableASCII + "\n"
        try input.keyboard.type(text)
        try input.keyboard.press([try KeyCombo.parse("ctrl+d")])
        eventually("xterm ends with cat", every: .milliseconds(50)) { !xterm.isRunning }
        XCTAssertFalse(xterm.isRunning, "cat did not see ctrl+d")
        XCTAssertEqual(try String(contentsOf: file, encoding: .utf8), text)
    }

    private func parse(_ modifiers: String) throws -> [UInt] {
        let combo = try KeyCombo.parse(modifiers)
        return combo.modifiers + [combo.key]
    }
}

import Foundation
import XCTest
import XclawBase
import XclawPolling
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// xdotool's habits that carry over: `key`/`type --window` (synthetic events to that window, as xdotool's
/// `--window`), `key --delay/--repeat/--clearmodifiers`, a resize that honours the client's size increments, and a
/// `--window` that says which window it picked when a title and a class name different ones. Against real xterm.
final class XdotoolHabitsCLITests: XCTestCase {
    nonisolated(unsafe) static var display: TestDisplay?
    private var scratch: URL!

    override class func setUp() {
        super.setUp()
        display = try? TestDisplay(size: Size(width: 1024, height: 768))
    }

    override class func tearDown() {
        display?.stop()
        super.tearDown()
    }

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-habits-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: scratch) }

    private var d: String { get throws { try XCTUnwrap(Self.display).name } }

    private func ok(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CLIResult {
        let result = try runCLI(arguments + ["--display", try d])
        XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)", file: file, line: line)
        return result
    }

    /// An xterm titled `title` running a shell in the scratch directory, its window mapped; synthetic events
    /// allowed when `sendEvents`.
    private func xterm(_ title: String, geometry: String = "80x24+500+20", sendEvents: Bool = false) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        process.arguments =
            ["-display", try d, "-T", title, "-geometry", geometry, "-fa", "DejaVu Sans Mono", "-fs", "11"]
            + (sendEvents ? ["-xrm", "XTerm*allowSendEvents: true"] : [])
            + ["-e", "sh", "-c", "cd '\(scratch.path)' && exec sh"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let mapped = try poll(within: .seconds(15), every: .milliseconds(50)) {
            try runCLI(["windows", "--name", "^\(title)$", "--visible", "--display", try d]).status == 0
        }
        XCTAssertTrue(mapped, "xterm \(title) mapped")
        return process
    }

    func testKeyAndTypeWithWindowReachThatWindowWhileAnotherHasTheFocus() throws {
        let focused = try Fixture(display: try d, title: "focused", frame: Rect(x: 0, y: 0, width: 200, height: 150))
        defer { focused.stop() }
        let target = try Fixture(display: try d, title: "target", frame: Rect(x: 0, y: 300, width: 200, height: 150))
        defer { target.stop() }
        _ = try ok(["activate", "focused"])
        focused.clear()
        let text = "héllo wörld ✓ — 你好"
        _ = try ok(["type", "--window", "target", text])
        XCTAssertEqual(target.typed(count: text.unicodeScalars.count), text, "the text reached the named window")
        _ = try ok(["key", "--window", String(target.window), "ctrl+a", "Return"])
        let keys = target.wait { $0.filter { $0.kind == .keyPress && $0.keysym == "Return" }.count == 1 }
        let a = try XCTUnwrap(keys.last { $0.kind == .keyPress && $0.keysym == "a" }, "\(keys)")
        XCTAssertEqual((a.state ?? 0) & 4, 4, "ctrl held in the synthetic event's state")
        XCTAssertEqual((keys.last { $0.kind == .keyPress }?.state ?? 1) & 4, 0, "and released before Return")
        let elsewhere = focused.wait(timeout: 0.3) { _ in false }.filter {
            $0.kind == .keyPress || $0.kind == .keyRelease
        }
        XCTAssertEqual(elsewhere, [], "the focused window got none")
        // The focused window itself gets real keys (XTest), as xdotool does for the current window.
        _ = try ok(["key", "--window", "focused", "b"])
        XCTAssertEqual(focused.wait(for: .keyPress).first?.keysym, "b")

        // A real app: xterm takes synthetic keys only with allowSendEvents; then a command typed to it runs while the
        // fixture keeps the focus.
        let shell = try xterm("sendable", sendEvents: true)
        defer { shell.terminate() }
        _ = try ok(["activate", "focused"])
        _ = try ok(["type", "--window", "sendable", "echo 'typed ✓' > out.txt\n"])
        let out = scratch.appendingPathComponent("out.txt")
        XCTAssertTrue(
            poll(within: .seconds(10), every: .milliseconds(50)) {
                (try? String(contentsOf: out, encoding: .utf8)) == "typed ✓\n"
            }, "xterm ran what was typed to it: \(String(describing: try? String(contentsOf: out, encoding: .utf8)))")
    }

    func testKeyRepeatDelayAndClearmodifiers() throws {
        let probe = try Fixture(display: try d, title: "keys", frame: Rect(x: 0, y: 0, width: 200, height: 150))
        defer { probe.stop() }
        _ = try ok(["activate", "keys"])
        probe.clear()
        _ = try ok(["key", "--repeat", "3", "--delay", "5", "Tab", "x"])
        let presses = probe.wait { $0.filter { $0.kind == .keyPress }.count >= 6 }.filter { $0.kind == .keyPress }
        XCTAssertEqual(presses.map(\.keysym), ["Tab", "x", "Tab", "x", "Tab", "x"])
        probe.clear()
        _ = try ok(["key", "--repeat", "2", "--repeat-delay", "20", "y"])
        XCTAssertEqual(probe.wait(for: .keyPress, count: 2).map(\.keysym), ["y", "y"])

        // Shift held (as a hotkey's modifier would be): --clearmodifiers types a plain "a", and Shift is down again
        // after it, so the next key without the flag is "A".
        _ = try ok(["keydown", "shift"])
        defer { _ = try? runCLI(["keyup", "shift", "--display", try d]) }
        probe.clear()
        _ = try ok(["key", "--clearmodifiers", "a"])
        _ = try ok(["key", "a"])
        let typed = probe.wait { $0.filter { $0.kind == .keyPress && $0.text != nil && $0.text != "" }.count >= 2 }
            .filter { $0.kind == .keyPress && ($0.keysym == "a" || $0.keysym == "A") }
        XCTAssertEqual(typed.map(\.text), ["a", "A"], "\(typed)")
        XCTAssertEqual(typed.first.map { ($0.state ?? 1) & 1 }, 0, "no Shift in the cleared key's state")

        let bad = try runCLI(["key", "--repeat", "0", "a", "--display", try d])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("--repeat"), bad.stderr)
        let held = try runCLI(["key", "--hold", "1", "--repeat", "2", "a", "--display", try d])
        XCTAssertEqual(held.status, 2)
        XCTAssertTrue(held.stderr.contains("--hold presses once"), held.stderr)
    }

    /// The sizes xterm's WM_NORMAL_HINTS accept, as xprop reports them: base and increment.
    private func xtermHints(_ title: String) throws -> (base: Size, step: Size) {
        let id = try ok(["windows", "--name", "^\(title)$"]).text.split(separator: " ").first.map(String.init) ?? ""
        let xprop = try Subprocess.run(
            ["/usr/bin/xprop", "-display", try d, "-id", id, "WM_NORMAL_HINTS"], timeout: .seconds(10))
        let text = String(decoding: xprop.stdout, as: UTF8.self)
        func pair(_ label: String) throws -> Size {
            let line = try XCTUnwrap(text.split(separator: "\n").first { $0.contains(label) }, text)
            let numbers = line.split { !$0.isNumber }.compactMap { Int($0) }
            return Size(width: numbers[numbers.count - 2], height: numbers[numbers.count - 1])
        }
        return (try pair("base size"), try pair("resize increment"))
    }

    /// The frame's size in a window's JSON.
    private func size(_ result: CLIResult) throws -> Size {
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], result.text)
        let frame = try XCTUnwrap(object["frame"] as? [String: Any], result.text)
        return Size(width: try XCTUnwrap(frame["width"] as? Int), height: try XCTUnwrap(frame["height"] as? Int))
    }

    func testAResizeOfXtermTakesTheNearestSizeItsCellsAllowWithAndWithoutAWindowManager() throws {
        let term = try xterm("cells", geometry: "80x24+0+0")
        defer { term.terminate() }
        let (base, step) = try xtermHints("cells")
        XCTAssertGreaterThan(step.width, 1, "xterm resizes by character cells")
        func nearest(_ value: Int, _ base: Int, _ step: Int) -> Int {
            base + Int((Double(value - base) / Double(step)).rounded(.toNearestOrAwayFromZero)) * step
        }
        let expected = Size(width: nearest(800, base.width, step.width), height: nearest(600, base.height, step.height))
        XCTAssertNotEqual(expected, Size(width: 800, height: 600), "800x600 is not a whole number of cells")
        let listed = try ok(["windows", "--name", "^cells$", "--json"])
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: listed.stdout) as? [[String: Any]], listed.text)
        let id = try XCTUnwrap(rows.first?["id"] as? Int, listed.text)
        let resized = try ok(["window", "resize", "cells", "800", "600", "--json"])
        XCTAssertEqual(try size(resized), expected, "the size reached")
        XCTAssertTrue(resized.stderr.contains("resizing to \(expected.width)x\(expected.height)"), resized.stderr)
        let geometry = try xwininfoGeometry(UInt(id), display: try d)
        XCTAssertEqual(Size(width: geometry.width, height: geometry.height), expected, "as xwininfo sees it")

        // Under openbox, which keeps clients to their increments itself.
        let openbox = try Openbox(display: try XCTUnwrap(Self.display))
        defer { openbox.stop() }
        let smaller = Size(
            width: nearest(500, base.width, step.width), height: nearest(400, base.height, step.height))
        let managed = try ok(["window", "resize", "cells", "500", "400", "--json"])
        XCTAssertEqual(try size(managed), smaller, managed.stderr)
    }

    func testWindowSaysWhichItPickedWhenATitleAndAClassNameDifferentWindows() throws {
        let term = try xterm("main shell", geometry: "40x10+0+0")
        defer { term.terminate() }
        let about = try Fixture(
            display: try d, title: "About XTerm", frame: Rect(x: 600, y: 400, width: 200, height: 100))
        defer { about.stop() }
        let picked = try ok(["activate", "XTerm"])
        XCTAssertTrue(
            picked.stderr.contains("\"XTerm\" picked 0x\(String(about.window, radix: 16)) \"About XTerm\""),
            picked.stderr)
        XCTAssertTrue(
            picked.stderr.contains("\"main shell\" has it as class, not picked: --class XTerm"), picked.stderr)
        // --class picks by class, and says nothing.
        let byClass = try ok(["activate", "--class", "XTerm"])
        XCTAssertEqual(byClass.stderr, "")
        // One window with both: nothing to say.
        about.stop()
        _ = try poll(within: .seconds(5), every: .milliseconds(20)) {
            try runCLI(["windows", "--name", "About", "--display", try d]).status == 1
        }
        let single = try ok(["activate", "main"])
        XCTAssertEqual(single.stderr, "")
    }
}

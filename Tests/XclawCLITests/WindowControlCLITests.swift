import XCTest
import XclawBase
import XclawMessages
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Window selection and control against the oracles: xwininfo for geometry, xdotool search for selection, wmctrl
/// and xprop for desktops and states; on bare Xvfb and under openbox.
final class WindowControlCLITests: XCTestCase {
    private func ok(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try runCLI(arguments)
        XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)", file: file, line: line)
        return result.text
    }

    private func hex(_ id: UInt) -> String { "0x" + String(id, radix: 16) }

    /// Move and resize on bare Xvfb, straight through Xlib; geometry as xwininfo reports it.
    func testMoveAndResizeMatchXwininfoWithoutAWindowManager() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let d = display.name
        let fixture = try Fixture(display: d, title: "mover", frame: Rect(x: 10, y: 20, width: 200, height: 100))
        defer { fixture.stop() }
        let moved = try ok(["window", "move", "mover", "120", "130", "--display", d])
        XCTAssertTrue(moved.hasPrefix(hex(fixture.window) + "\t200x100+120+130"), moved)
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 120, y: 130, width: 200, height: 100))
        _ = try ok(["window", "resize", hex(fixture.window), "321", "234", "--display", d])
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 120, y: 130, width: 321, height: 234))
        // Negative coordinates are numbers, not options.
        _ = try ok(["window", "move", "--class", "XclawFixture", "-5", "-7", "--display", d])
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d).x, -5)
        _ = try ok(["window", "move", "mover", "40", "50", "--display", d])

        // Maximize covers the screen with no manager, and --off puts it back.
        _ = try ok(["window", "maximize", "mover", "--display", d])
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 0, y: 0, width: 1024, height: 768))
        _ = try ok(["window", "maximize", "--off", "mover", "--display", d])
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 40, y: 50, width: 321, height: 234))

        // Minimize unmaps (xdotool's --onlyvisible stops finding it); activate finds it by title and maps it again.
        _ = try ok(["window", "minimize", "mover", "--display", d])
        XCTAssertEqual(try oracle(["xdotool", "search", "--onlyvisible", "--name", "mover"], display: d), "")
        _ = try ok(["activate", "mover", "--display", d])
        XCTAssertEqual(
            try ok(["active", "--display", d]).split(separator: "\t").first.map(String.init), hex(fixture.window))
        // No _NET_ACTIVE_WINDOW without a manager: the input focus, as xdotool reads it.
        XCTAssertEqual(try oracle(["xdotool", "getwindowfocus", "-f"], display: d), "\(fixture.window)\n")

        // Raise and lower against the stacking order xdotool sees (its search lists bottom-most first).
        let other = try Fixture(display: d, title: "other", frame: Rect(x: 30, y: 40, width: 100, height: 100))
        defer { other.stop() }
        func stacking() throws -> [UInt] {
            try oracle(["xdotool", "search", "--onlyvisible", "--class", "XclawFixture"], display: d)
                .split(separator: "\n").compactMap { UInt($0) }
        }
        _ = try ok(["window", "raise", "mover", "--display", d])
        XCTAssertEqual(try stacking().last, fixture.window)
        _ = try ok(["window", "lower", "mover", "--display", d])
        XCTAssertEqual(try stacking().first, fixture.window)
        XCTAssertEqual(try runCLI(["window", "above", "mover", "--display", d]).status, 1, "needs a window manager")
        XCTAssertEqual(try runCLI(["desktop", "--display", d]).status, 1, "needs a window manager")

        // The window under the pointer.
        _ = try ok(["move", "--window", "other", "10", "10", "--display", d])
        let cursor = try ok(["cursor", "--window", "--display", d])
        XCTAssertTrue(cursor.hasPrefix("40 50\t\(hex(other.window))\t"), cursor)

        // Close (no WM_DELETE_WINDOW: destroyed, as xdotool windowclose) and kill (XKillClient: the client ends).
        _ = try ok(["window", "close", "other", "--display", d])
        XCTAssertEqual(try oracle(["xdotool", "search", "--name", "^other$"], display: d), "")
        _ = try ok(["window", "kill", "mover", "--display", d])
        eventually("XKillClient ends the fixture", within: .seconds(5)) { !fixture.process.isRunning }
        XCTAssertFalse(fixture.process.isRunning, "XKillClient ended the fixture")
    }

    /// Under openbox (reparenting, EWMH): the frame is accounted for, states and desktops go through the manager.
    func testWindowControlUnderOpenbox() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let d = display.name
        let openbox = try Openbox(display: display)
        defer { openbox.stop() }
        let fixture = try Fixture(display: d, title: "framed", frame: Rect(x: 10, y: 20, width: 200, height: 100))
        defer { fixture.stop() }
        let second = try Fixture(display: d, title: "second", frame: Rect(x: 300, y: 20, width: 200, height: 100))
        defer { second.stop() }

        _ = try ok(["window", "move", "framed", "100", "150", "--display", d])
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 100, y: 150, width: 200, height: 100))
        _ = try ok(["window", "resize", "framed", "333", "222", "--display", d])
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 100, y: 150, width: 333, height: 222))

        for (state, atom) in [
            ("maximize", "_NET_WM_STATE_MAXIMIZED_VERT"), ("fullscreen", "_NET_WM_STATE_FULLSCREEN"),
            ("above", "_NET_WM_STATE_ABOVE"),
        ] {
            _ = try ok(["window", state, "framed", "--display", d])
            let set = try oracle(["xprop", "-id", hex(fixture.window), "_NET_WM_STATE"], display: d)
            XCTAssertTrue(set.contains(atom), "\(state): \(set)")
            _ = try ok(["window", state, "--off", "framed", "--display", d])
            let cleared = try oracle(["xprop", "-id", hex(fixture.window), "_NET_WM_STATE"], display: d)
            XCTAssertFalse(cleared.contains(atom), "\(state) --off: \(cleared)")
        }
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), Rect(x: 100, y: 150, width: 333, height: 222))

        // Desktops, with wmctrl as the oracle ("*" marks the current one; -l gives each window's desktop).
        let desktops = try JSONDecoder().decode(
            Desktops.self, from: try runCLI(["desktop", "--json", "--display", d]).stdout)
        XCTAssertEqual(desktops.current, 0)
        XCTAssertGreaterThan(desktops.count, 1)
        XCTAssertEqual(try ok(["desktop", "1", "--display", d]), "1\n")
        XCTAssertTrue(try oracle(["wmctrl", "-d"], display: d).split(separator: "\n")[1].contains("*"))
        _ = try ok(["desktop", "0", "--display", d])
        _ = try ok(["window", "desktop", "second", "1", "--display", d])
        let listed = try oracle(["wmctrl", "-l"], display: d)
        let line = listed.split(separator: "\n").first { $0.hasSuffix("second") }
        XCTAssertEqual(line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first, "1", listed)
        let bad = try runCLI(["desktop", "\(desktops.count)", "--display", d])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("does not exist"), bad.stderr)

        // Active: _NET_ACTIVE_WINDOW, the same as xdotool's.
        _ = try ok(["activate", "framed", "--display", d])
        let active = try ok(["active", "--display", d])
        XCTAssertTrue(active.hasPrefix(hex(fixture.window)), active)
        XCTAssertEqual(try oracle(["xdotool", "getactivewindow"], display: d), "\(fixture.window)\n")

        // Minimize, then close through the manager (openbox ends a client that has no WM_DELETE_WINDOW).
        _ = try ok(["window", "minimize", "framed", "--display", d])
        XCTAssertTrue(
            try oracle(["xprop", "-id", hex(fixture.window), "_NET_WM_STATE"], display: d).contains("HIDDEN"))
        _ = try ok(["window", "close", hex(fixture.window), "--display", d])
        XCTAssertFalse(try oracle(["wmctrl", "-l"], display: d).contains("framed"))
    }

    /// The selection flags pick what `xdotool search` picks.
    func testSelectionFlagsAgreeWithXdotoolSearch() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let d = display.name
        let a = try Fixture(display: d, title: "Alpha report", frame: Rect(x: 10, y: 10, width: 100, height: 80))
        defer { a.stop() }
        let b = try Fixture(display: d, title: "beta notes", frame: Rect(x: 200, y: 10, width: 100, height: 80))
        defer { b.stop() }
        let c = try Fixture(display: d, title: "Beta report", frame: Rect(x: 400, y: 10, width: 100, height: 80))
        defer { c.stop() }

        func ours(_ flags: [String]) throws -> Set<UInt> {
            let result = try runCLI(["windows", "--json", "--display", d] + flags)
            XCTAssertEqual(result.status, 0, result.stderr)
            return Set(try JSONDecoder().decode([WindowInfo].self, from: result.stdout).map(\.id))
        }
        func theirs(_ arguments: [String]) throws -> Set<UInt> {
            Set(
                try oracle(["xdotool", "search"] + arguments, display: d).split(separator: "\n").compactMap { UInt($0) }
            )
        }
        XCTAssertEqual(try ours(["--class", "XclawFixture"]), try theirs(["--class", "^XclawFixture$"]))
        XCTAssertEqual(try ours(["--class", "XclawFixture"]).count, 3)
        XCTAssertEqual(try ours(["--instance", "xclaw-fixture"]), try theirs(["--classname", "^xclaw-fixture$"]))
        XCTAssertEqual(try ours(["--regex", "^beta"]), try theirs(["--name", "^beta"]))
        XCTAssertEqual(try ours(["--regex", "^beta"]), [b.window, c.window])
        XCTAssertEqual(try ours(["--regex", "report$", "--class", "xclawfixture"]), [a.window, c.window])
        let pid = String(b.process.processIdentifier)
        XCTAssertEqual(try ours(["--pid", pid]), try theirs(["--pid", pid]))
        XCTAssertEqual(try ours(["--pid", pid]), [b.window])
        _ = try ok(["window", "minimize", "--regex", "^alpha", "--display", d])
        XCTAssertEqual(
            try ours(["--visible", "--class", "XclawFixture"]),
            try theirs(["--onlyvisible", "--class", "^XclawFixture$"]))
        XCTAssertEqual(try ours(["--visible", "--class", "XclawFixture"]), [b.window, c.window])
        XCTAssertEqual(try ours(["--all", "--regex", "^alpha"]), try theirs(["--name", "^alpha"]))
        // xdotool's own name for the title's pattern, and its exit status when nothing matches (1, nothing printed;
        // --json prints an empty list).
        XCTAssertEqual(try ours(["--name", "^beta"]), try theirs(["--name", "^beta"]))
        for flags in [["--name", "^gamma"], ["--class", "Nothing"], ["--pid", "999999"]] {
            let none = try runCLI(["windows", "--display", d] + flags)
            XCTAssertEqual(none.status, 1, "\(flags): \(none.stderr)")
            XCTAssertEqual(none.text, "")
            XCTAssertTrue(none.stderr.contains("no window matches \"\(flags.joined(separator: " "))\""), none.stderr)
            let xdotool = Process()
            xdotool.executableURL = URL(fileURLWithPath: "/usr/bin/xdotool")
            xdotool.arguments = ["search"] + (flags[0] == "--class" ? ["--class", "^Nothing$"] : flags)
            xdotool.environment = ["DISPLAY": d]
            xdotool.standardOutput = FileHandle.nullDevice
            try xdotool.run()
            xdotool.waitUntilExit()
            XCTAssertEqual(xdotool.terminationStatus, 1, "xdotool search \(flags) exits 1 too")
        }
        let emptyJSON = try runCLI(["windows", "--json", "--name", "^gamma", "--display", d])
        XCTAssertEqual(emptyJSON.status, 1)
        XCTAssertEqual(try JSONValue.parse(emptyJSON.stdout)["error"]?["kind"]?.string, "not_found", emptyJSON.text)

        // A selection that picks several is refused (exit 1), listing them; the id may be left out when it picks one.
        let several = try runCLI(["window", "raise", "--class", "XclawFixture", "--display", d])
        XCTAssertEqual(several.status, 1)
        XCTAssertTrue(several.stderr.contains("matches 2 windows"), several.stderr)
        XCTAssertEqual(try ok(["activate", "--pid", pid, "--display", d]), hex(b.window) + "\n")
        // Mapped windows are preferred: the minimized "Alpha report" does not make "report" ambiguous.
        XCTAssertEqual(try ok(["window", "raise", "--regex", "report", "--display", d]), hex(c.window) + "\n")
    }

    /// Every `--window` takes the selection flags too: capture, find, ocr and watch (alone: a window that appears or
    /// goes, as `xdotool search --sync`), and a region with a selection is refused.
    func testPerceptionCommandsTakeTheSelectionFlags() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let d = display.name
        let a = try Fixture(
            display: d, title: "Alpha report", frame: Rect(x: 20, y: 20, width: 320, height: 160),
            extra: ["--button", "40,40,120,40:Save"])
        defer { a.stop() }
        let b = try Fixture(
            display: d, title: "beta notes", frame: Rect(x: 420, y: 20, width: 300, height: 140),
            extra: ["--button", "40,40,120,40:Open"])
        defer { b.stop() }
        let shot = try runCLI(["capture", "--regex", "^alpha", "-o", "-", "--json", "--display", d])
        XCTAssertEqual(shot.status, 0, shot.stderr)
        let captured = try runCLI(
            ["capture", "--pid", String(b.process.processIdentifier), "--json", "-o", "/dev/null", "--display", d])
        XCTAssertEqual(captured.status, 0, captured.stderr)
        XCTAssertTrue(
            captured.text.contains("\"width\":300") && captured.text.contains("\"height\":140"), captured.text)
        // find looks only in the window the flags pick.
        XCTAssertEqual(try runCLI(["find", "Save", "--regex", "^alpha", "--display", d]).status, 0)
        let elsewhere = try runCLI(["find", "Save", "--regex", "^beta", "--display", d])
        XCTAssertEqual(elsewhere.status, 1, elsewhere.stderr)
        let read = try runCLI(["ocr", "--pid", String(b.process.processIdentifier), "--display", d])
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertTrue(read.text.contains("Open") && !read.text.contains("Save"), read.text)
        // watch with the flags alone waits for such a window, then for it to go.
        let watcher = try launchCLI(
            ["watch", "--regex", "^gamma", "--timeout", "20", "--display", d], environment: [:])
        Thread.sleep(forTimeInterval: 0.5)  // kept: the scenario, the window comes while watch waits
        let c = try Fixture(display: d, title: "gamma", frame: Rect(x: 20, y: 300, width: 200, height: 100))
        watcher.waitUntilExit()
        XCTAssertEqual(watcher.terminationStatus, 0)
        c.stop()
        let gone = try runCLI(["watch", "--regex", "^gamma", "--gone", "--timeout", "20", "--display", d])
        XCTAssertEqual(gone.status, 0, gone.stderr)
        // A region and a selection together are refused before anything is read.
        let both = try runCLI(["capture", "--region", "0,0,10,10", "--class", "XclawFixture", "--display", d])
        XCTAssertEqual(both.status, 2, both.stderr)
        XCTAssertTrue(both.stderr.contains("not both"), both.stderr)
    }

    /// Bad input exits 2 (a missing window 1), says why, and changes nothing.
    func testBadInputChangesNothing() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let d = display.name
        let fixture = try Fixture(display: d, title: "steady", frame: Rect(x: 10, y: 20, width: 200, height: 100))
        defer { fixture.stop() }
        let before = try xwininfoGeometry(fixture.window, display: d)
        let cases: [([String], Int32, String)] = [
            (["window", "move", "steady", "1", "x"], 2, "is not a number"),
            (["window", "move", "steady", "1"], 2, "expected ID|NAME X Y"),
            (["window", "move", "steady", "1", "2", "--frob"], 2, "unknown option --frob"),
            (["move", "1", "2", "--frob"], 2, "unknown option --frob"),
            (["window", "move", "steady", "1", "99999999"], 2, "is not a number"),
            (["window", "resize", "steady", "0", "10"], 2, "W must be from 1"),
            (["window", "resize", "steady", "10", "40000"], 2, "H must be from 1"),
            (["window", "move", "no such window", "1", "2"], 1, "no window matches"),
            (["window", "move", "0x7ffff1", "1", "2"], 1, "no window matches"),
            (["windows", "--regex", "("], 2, "not a valid regular expression"),
            (["windows", "--pid", "0"], 2, "--pid must be from 1"),
            (["window", "desktop", "steady", "-1"], 2, "N must be from 0"),
            (["move", "--relative", "--window", "steady", "1", "2"], 2, "does not take a window"),
            (["drag", "--path", "1,1"], 2, "--path needs 2"),
            (["click", "--interval=-1"], 2, "--interval must be from 0"),
            (["keydown", "nosuchkey"], 2, "unknown key name"),
            (["clipboard", "set", "--type", "image/png", "not a png"], 2, "not a PNG"),
        ]
        for (arguments, status, message) in cases {
            let result = try runCLI(arguments + ["--display", d])
            XCTAssertEqual(result.status, status, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.text.isEmpty, "\(arguments): \(result.text)")
        }
        XCTAssertEqual(try xwininfoGeometry(fixture.window, display: d), before)
    }
}

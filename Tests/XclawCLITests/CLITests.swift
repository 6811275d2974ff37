import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The command line's contract: results on stdout, errors on stderr, documented exit codes, nothing lost.
final class CLITests: XCTestCase {
    nonisolated(unsafe) static var display: TestDisplay?

    override class func setUp() {
        super.setUp()
        display = try? TestDisplay()
    }

    override class func tearDown() {
        display?.stop()
        super.tearDown()
    }

    private var displayName: String { get throws { try XCTUnwrap(Self.display).name } }

    func testHelpDocumentsExitCodes() throws {
        let help = try runCLI(["--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.text.contains("Exit codes: 0 ok; 1 not found"), help.text)
        // The examples come last, as the process prints them (HelpExamplesTests checks every command in-process).
        let tap = try runCLI(["tap", "--help"])
        XCTAssertEqual(tap.status, 0)
        let lines = tap.text.split(separator: "\n")
        XCTAssertEqual(lines.suffix(3).first, "Examples:", tap.text)
        XCTAssertTrue(lines.suffix(2).allSatisfy { $0.hasPrefix("  xclaw tap ") }, tap.text)
        XCTAssertEqual(try runCLI(["--version"]).text, "0.1.0\n")
    }

    func testMissingOrUnreachableDisplayExitsThree() throws {
        let none = try runCLI(["click", "1", "1"], removing: ["DISPLAY"])
        XCTAssertEqual(none.status, 3)
        XCTAssertTrue(none.stderr.contains("xclaw display start"), none.stderr)
        XCTAssertTrue(none.text.isEmpty)
        let gone = try runCLI(["capture", "-o", "-", "--display", ":987"])
        XCTAssertEqual(gone.status, 3)
        XCTAssertTrue(gone.stderr.contains("cannot open display :987"), gone.stderr)
    }

    func testBadInputExitsTwoWithAClearMessage() throws {
        let d = try displayName
        // "D" stands for the test display.
        let cases: [([String], String)] = [
            (["click", "1280", "10", "--display", "D"], "outside the screen (1280x800)"),
            (["move", "10", "800", "--display", "D"], "outside the screen (1280x800)"),
            (["move", "--display", "D", "--", "-5", "10"], "outside the screen (1280x800)"),
            (["drag", "0", "0", "10", "900", "--display", "D"], "outside the screen (1280x800)"),
            (["scroll", "down", "--at", "10,5000", "--display", "D"], "outside the screen (1280x800)"),
            (["key", "ctrl+retrun", "--display", "D"], "did you mean \"Return\""),
            (["key", "Return", "nosuchkey", "--display", "D"], "unknown key name \"nosuchkey\""),
            (["type", "bell\u{07}", "--display", "D"], "U+0007"),
            (["capture", "--region", "10,10,0,5", "-o", "-", "--display", "D"], "empty"),
            (["capture", "--region", "1200,0,200,10", "-o", "-", "--display", "D"], "not inside"),
            (["click", "10", "--display", "D"], "give both X and Y"),
            (["click", "1", "1", "--count", "4", "--display", "D"], "--count"),
            (["scroll", "sideways", "--display", "D"], "sideways"),
            (["scroll", "up", "--amount", "100000000", "--display", "D"], "--amount"),
            (["drag", "0", "0", "5", "5", "--steps", "0", "--display", "D"], "--steps"),
            (["capture", "--region", "10,0,9223372036854775800,10", "-o", "-", "--display", "D"], "out of range"),
            (["scroll", "up", "--at", "9223372036854775800,1", "--display", "D"], "is not a point"),
            (["type", "x", "--delay", "-1", "--display", "D"], "--delay"),
            (["display", "start", "--size", "big"], "WIDTHxHEIGHT"),
            (["nosuchcommand"], "nosuchcommand"),
        ]
        for (args, message) in cases {
            let result = try runCLI(args.map { $0 == "D" ? d : $0 })
            XCTAssertEqual(result.status, 2, "\(args): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(message), "\(args): \(result.stderr)")
            XCTAssertTrue(result.stdout.isEmpty, "\(args) printed to stdout")
        }
    }

    func testNotFoundExitsOne() throws {
        let result = try runCLI(["activate", "no such window", "--display", try displayName])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("no window matches"), result.stderr)
    }

    func testBadKeyInAListSendsNoKeysAtAll() throws {
        let d = try displayName
        let fixture = try Fixture(display: d, frame: Rect(x: 0, y: 0, width: 200, height: 200))
        defer { fixture.stop() }
        XCTAssertEqual(try runCLI(["activate", String(fixture.window), "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["key", "a", "b", "nosuchkey", "--display", d]).status, 2)
        XCTAssertEqual(try runCLI(["key", "x", "--display", d]).status, 0)
        // Only the x arrived: the failing command sent nothing.
        XCTAssertEqual(fixture.typed(count: 1), "x")
        Thread.sleep(forTimeInterval: 0.1)  // kept: time for a stray key to arrive, to show none does
        XCTAssertEqual(EventProbe.typedText(fixture.received), "x")
    }

    func testInputCommandsEndToEnd() throws {
        let d = try displayName
        let fixture = try Fixture(display: d, frame: Rect(x: 50, y: 50, width: 400, height: 300))
        defer { fixture.stop() }
        XCTAssertEqual(try runCLI(["activate", String(fixture.window), "--display", d]).status, 0)
        let stdinText = "from stdin: ünïcödé ✓\nline two\n"
        let typed = try runCLI(["type", "-", "--display", d], stdin: Data(stdinText.utf8))
        XCTAssertEqual(typed.status, 0, typed.stderr)
        XCTAssertEqual(fixture.typed(count: stdinText.unicodeScalars.count), stdinText)
        // `type` exits as soon as its keys are sent; the spare keycode it bound for ✓ is unbound once the fixture has
        // had its settle delay (by a detached helper in-process, by the daemon's timer through the daemon).
        let keyboard = try Keyboard(connection: DisplayConnection(name: d))
        let check = Keyboard.keysym(for: "✓")
        try eventually("the keycode bound for ✓ is unbound", within: .seconds(5)) {
            try keyboard.keycodes(holding: check).isEmpty
        }
        XCTAssertEqual(try keyboard.keycodes(holding: check), [], "the keymap is restored after typing")
        // Two in a row, in-process: the second takes over the first's pending restore (announced on the root window,
        // xprop as the oracle), so its keycodes are not unbound under it. The first restore is made to wait 3 s, so
        // the second surely comes before it.
        fixture.clear()
        func announced() throws -> String {
            let xprop = try Subprocess.run(
                ["/usr/bin/xprop", "-display", d, "-root", "_XCLAW_PENDING_KEYMAP_RESTORE"], timeout: .seconds(10))
            return String(decoding: xprop.stdout, as: UTF8.self)
        }
        let slow = ["XCLAW_KEYMAP_SETTLE_MS": "3000"]
        XCTAssertEqual(try runCLI(["type", "€✓", "--no-daemon", "--display", d], environment: slow).status, 0)
        let first = try announced()
        XCTAssertTrue(first.contains("CARDINAL) = "), first)
        XCTAssertEqual(try runCLI(["type", "€✓", "--no-daemon", "--display", d]).status, 0)
        let second = try announced()
        XCTAssertNotEqual(first, second, "the second typer took the restore over and announced its own")
        // The same keycodes, now the second's to restore: everything after the token.
        XCTAssertEqual(first.split(separator: ",").dropFirst(), second.split(separator: ",").dropFirst(), second)
        XCTAssertEqual(fixture.typed(count: 4), "€✓€✓")
        try eventually("the keycode bound for ✓ is unbound again", within: .seconds(5)) {
            try keyboard.keycodes(holding: check).isEmpty
        }
        XCTAssertEqual(try keyboard.keycodes(holding: check), [], "the keymap is restored after both")
        fixture.clear()
        XCTAssertEqual(
            try runCLI(["click", "60", "70", "--button", "right", "--count", "2", "--with", "shift", "--display", d])
                .status, 0)
        let presses = fixture.wait(for: .buttonPress, count: 2)
        XCTAssertEqual(presses.map(\.button), [3, 3])
        XCTAssertEqual(presses.map { ($0.state ?? 0) & 1 }, [1, 1])
        XCTAssertEqual(presses.first?.rootX, 60)
        XCTAssertEqual(try runCLI(["move", "123", "234", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["cursor", "--display", d]).text, "123 234\n")
        XCTAssertEqual(try runCLI(["cursor", "--json", "--display", d]).text, "{\"x\":123,\"y\":234}\n")
        fixture.clear()
        XCTAssertEqual(try runCLI(["drag", "100", "100", "200", "150", "--steps", "5", "--display", d]).status, 0)
        XCTAssertEqual(fixture.wait(for: .buttonRelease).first?.rootX, 200)
        fixture.clear()
        XCTAssertEqual(try runCLI(["scroll", "down", "--amount", "4", "--at", "300,300", "--display", d]).status, 0)
        XCTAssertEqual(fixture.wait(for: .buttonPress, count: 4).map(\.button), [5, 5, 5, 5])
        fixture.clear()
        XCTAssertEqual(try runCLI(["mousedown", "200", "200", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["mouseup", "--display", d]).status, 0)
        XCTAssertEqual(fixture.wait(for: .buttonRelease).count, 1)
        fixture.clear()
        XCTAssertEqual(try runCLI(["key", "--hold", "0.2", "shift", "--display", d]).status, 0)
        let shift = fixture.wait { $0.contains { $0.kind == .keyRelease } }
        XCTAssertEqual(shift.map(\.kind), [.keyPress, .keyRelease])
    }

    func testCtrlCDuringHoldReleasesTheKeyAndExits130() throws {
        let d = try displayName
        let fixture = try Fixture(display: d, frame: Rect(x: 0, y: 0, width: 200, height: 200))
        defer { fixture.stop() }
        XCTAssertEqual(try runCLI(["activate", String(fixture.window), "--display", d]).status, 0)
        let process = try launchCLI(["key", "--hold", "30", "shift", "--display", d], environment: [:])
        XCTAssertEqual(fixture.wait(for: .keyPress).first?.keysym, "Shift_L")
        process.interrupt()  // SIGINT, as Ctrl-C sends
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 130)
        XCTAssertEqual(fixture.wait(for: .keyRelease).first?.keysym, "Shift_L", "shift released before exiting")
    }

    func testDisplayStartListStop() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-state-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        let env = ["XCLAW_STATE_DIR": state.path]
        let started = try runCLI(["display", "start", "--size", "800x600", "--json"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let display = try JSONDecoder.xclaw.decode(VirtualDisplay.self, from: started.stdout)
        defer { try? display.stop() }
        XCTAssertTrue(display.name.hasPrefix(":"))
        XCTAssertTrue(display.isRunning)
        let listed = try runCLI(["display", "list"], environment: env)
        XCTAssertTrue(listed.text.hasPrefix("\(display.name)\t800x600x24"), listed.text)
        // It outlives the command that started it, and accepts clients.
        let size = try DisplayConnection(name: display.name).screenSize()
        XCTAssertEqual(size, Size(width: 800, height: 600))
        XCTAssertEqual(try runCLI(["display", "stop", display.name], environment: env).status, 0)
        XCTAssertFalse(display.isRunning)
        XCTAssertEqual(try runCLI(["display", "list"], environment: env).text, "")
        let again = try runCLI(["display", "stop", display.name], environment: env)
        XCTAssertEqual(again.status, 3)
        XCTAssertTrue(again.stderr.contains("xclaw display list"), again.stderr)

        // A number of one's own, as `Xvfb :N` takes it: a free one (high, away from the suite's own displays).
        let free = try XCTUnwrap(
            (0..<200).lazy.map { _ in Int.random(in: 3000...9000) }.first { n in
                !FileManager.default.fileExists(atPath: "/tmp/.X\(n)-lock")
                    && !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)")
            })
        let chosen = try runCLI(["display", "start", ":\(free)", "--size", "640x480"], environment: env)
        XCTAssertEqual(chosen.status, 0, chosen.stderr)
        XCTAssertEqual(chosen.text, ":\(free)\n")
        defer { _ = try? runCLI(["display", "stop", ":\(free)"], environment: env) }
        XCTAssertEqual(try DisplayConnection(name: ":\(free)").screenSize(), Size(width: 640, height: 480))
        // Taken: said plainly (exit 3), and the running one is left alone.
        let taken = try runCLI(["display", "start", ":\(free)"], environment: env)
        XCTAssertEqual(taken.status, 3, taken.stderr)
        XCTAssertTrue(taken.stderr.contains("display :\(free) is in use"), taken.stderr)
        XCTAssertEqual(try DisplayConnection(name: ":\(free)").screenSize(), Size(width: 640, height: 480))
        for bad in [":x", ":-1", ":70000", "99x"] {
            let refused = try runCLI(["display", "start", bad], environment: env)
            XCTAssertEqual(refused.status, 2, "\(bad): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("the display is :N"), refused.stderr)
        }
        XCTAssertEqual(try runCLI(["display", "stop", ":\(free)"], environment: env).status, 0)
    }
}

import XCTest
import XclawScreen
import XclawTesting

/// Window listing, lookup, activation and monitors on a real Xvfb with no window manager, in process and through the
/// `xclaw` binary.
final class WindowTests: XCTestCase {
    func testListFindActivateAndMonitors() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let alpha = try Fixture(
            display: display.name, title: "alpha window ✓", frame: Rect(x: 10, y: 20, width: 200, height: 100))
        defer { alpha.stop() }
        let beta = try Fixture(
            display: display.name, title: "beta window", frame: Rect(x: 300, y: 40, width: 250, height: 150))
        defer { beta.stop() }
        let term = try Fixture(display: display.name, title: "term", frame: Rect(x: 600, y: 600, width: 50, height: 50))
        defer { term.stop() }
        let terminal = try Fixture(
            display: display.name, title: "terminal", frame: Rect(x: 700, y: 600, width: 50, height: 50))
        defer { terminal.stop() }

        let manager = WindowManager(connection: try display.connect())
        XCTAssertFalse(try manager.hasWindowManager())
        let windows = try manager.list()
        let a = try XCTUnwrap(windows.first { $0.id == alpha.window })
        XCTAssertEqual(a.title, "alpha window ✓", "UTF-8 _NET_WM_NAME")
        XCTAssertEqual(a.className, "XclawFixture")
        XCTAssertEqual(a.instance, "xclaw-fixture")
        XCTAssertEqual(a.pid, Int(alpha.process.processIdentifier))
        XCTAssertEqual(a.frame, Rect(x: 10, y: 20, width: 200, height: 100))
        XCTAssertTrue(a.visible && a.mapped)
        // Top-most first: the last one mapped is on top.
        XCTAssertEqual(windows.first?.id, terminal.window)

        XCTAssertEqual(try manager.find("BETA").id, beta.window)
        XCTAssertEqual(try manager.find("term").id, term.window, "an exact title wins over substrings")
        XCTAssertThrowsError(try manager.find("window")) { error in
            guard case .ambiguousWindow(_, let candidates) = error as? ScreenError else { return XCTFail("\(error)") }
            XCTAssertEqual(candidates.count, 2)
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .notFound)
        }
        XCTAssertThrowsError(try manager.find("no such window")) { error in
            XCTAssertEqual(error as? ScreenError, .windowNotFound("no such window"))
        }
        XCTAssertThrowsError(try manager.window(id: 0x7ff_fff1)) { error in
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .notFound)
        }
        // A protocol error (BadWindow) on a bogus id is a typed error, not a crash.
        var bogus = a
        bogus.id = 0x7ff_fff1
        XCTAssertThrowsError(try manager.activate(bogus)) { error in
            guard case .protocolError(let code, _, _, _) = error as? ScreenError else { return XCTFail("\(error)") }
            XCTAssertEqual(code, 3, "BadWindow")
        }

        for target in [alpha, beta, alpha] {
            try manager.activate(try manager.window(id: target.window))
            XCTAssertEqual(try manager.activeWindow(), target.window)
            let listed = try manager.list()
            XCTAssertEqual(listed.first?.id, target.window, "raised to the top")
            XCTAssertEqual(listed.filter(\.active).map(\.id), [target.window])
        }

        let monitors = try display.connect().monitors()
        XCTAssertEqual(monitors.count, 1)
        XCTAssertEqual(monitors.first?.frame, Rect(x: 0, y: 0, width: 1024, height: 768))
        XCTAssertEqual(monitors.first?.primary, true)

        let json = try runCLI(["windows", "--display", display.name, "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let decoded = try JSONDecoder().decode([WindowInfo].self, from: json.stdout)
        XCTAssertEqual(Set(decoded.map(\.id)), Set([alpha, beta, term, terminal].map(\.window)))
        let activated = try runCLI(["activate", "beta", "--display", display.name])
        XCTAssertEqual(activated.status, 0, activated.stderr)
        XCTAssertEqual(
            activated.text.trimmingCharacters(in: .whitespacesAndNewlines), "0x" + String(beta.window, radix: 16))
        XCTAssertEqual(try manager.activeWindow(), beta.window)
        let text = try runCLI(["monitors", "--display", display.name])
        XCTAssertEqual(text.text, "screen\t1024x768+0+0\tprimary\n")
    }
}

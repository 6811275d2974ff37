import XCTest
import XclawBase
import XclawScreen
import XclawTesting

/// Keys held across commands, and the pointer primitives: relative and window-relative moves, spaced and held
/// clicks, drags through waypoints; the fixture reports what arrived.
final class HeldInputCLITests: XCTestCase {
    func testAHeldKeyLastsAcrossCommandsUntilKeyupOrReleaseAll() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480))
        defer { display.stop() }
        let d = display.name
        let fixture = try Fixture(display: d, title: "keys", frame: Rect(x: 0, y: 0, width: 300, height: 200))
        defer { fixture.stop() }
        XCTAssertEqual(try runCLI(["activate", "keys", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["keydown", "shift", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["key", "a", "--display", d]).status, 0)  // a second command: shift still down
        XCTAssertEqual(try runCLI(["key", "b", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["keyup", "shift", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["key", "c", "--display", d]).status, 0)
        XCTAssertEqual(fixture.typed(count: 3), "ABc")
        // The fixture counts a character at its press; c's release may come later, and must not land in the record
        // the release-all check reads (a loaded run once saw it there).
        _ = fixture.wait { $0.contains { $0.kind == .keyRelease && $0.keysym == "c" } }

        // release-all releases exactly what keydown held.
        fixture.clear()
        XCTAssertEqual(try runCLI(["keydown", "ctrl", "alt", "--display", d]).status, 0)
        let held = try runCLI(["release-all", "--display", d])
        XCTAssertEqual(held.status, 0, held.stderr)
        XCTAssertEqual(held.text, "released 2\n")
        let releases = fixture.wait { $0.filter { $0.kind == .keyRelease }.count >= 2 }.filter {
            $0.kind == .keyRelease
        }
        XCTAssertEqual(Set(releases.compactMap(\.keysym)), ["Control_L", "Alt_L"])
        XCTAssertEqual(try runCLI(["release-all", "--display", d]).text, "released 0\n")
        // The record on the root window (xprop as the oracle) is gone with them.
        XCTAssertTrue(try oracle(["xprop", "-root", "_XCLAW_HELD_INPUT"], display: d).contains("not found"))
    }

    func testRelativeAndWindowMovesSpacedClicksAndDragPaths() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480))
        defer { display.stop() }
        let d = display.name
        let fixture = try Fixture(display: d, title: "pointer", frame: Rect(x: 20, y: 30, width: 400, height: 300))
        defer { fixture.stop() }
        XCTAssertEqual(try runCLI(["move", "100", "100", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["move", "--relative", "-10", "25", "--display", d]).status, 0)
        XCTAssertEqual(try oracle(["xdotool", "getmouselocation"], display: d).hasPrefix("x:90 y:125 "), true)
        XCTAssertEqual(try runCLI(["move", "--window", "pointer", "5", "6", "--display", d]).status, 0)
        XCTAssertEqual(try runCLI(["cursor", "--display", d]).text, "25 36\n")

        fixture.clear()
        let began = ContinuousClock.now
        let click = try runCLI([
            "click", "200", "200", "--count", "4", "--interval", "40", "--hold-ms", "30", "--display", d,
        ])
        let took = ContinuousClock.now - began
        XCTAssertEqual(click.status, 0, click.stderr)
        let events = fixture.wait { $0.filter { $0.kind == .buttonRelease }.count >= 4 }
            .filter { $0.kind == .buttonPress || $0.kind == .buttonRelease }
        XCTAssertEqual(events.map(\.kind), Array(repeating: [.buttonPress, .buttonRelease], count: 4).flatMap { $0 })
        // Each press held and the clicks spaced (what xdotool's --delay spaces too): the command waited 4 × 30 +
        // 3 × 40 ms (a wait only grows under load), and each event reached the server on its own, after the one
        // before (server timestamps rise: events held back and sent together would share one). Not the gaps between
        // server timestamps: a loaded server read a press late and its release on time, 22 ms apart for a 30 ms hold.
        XCTAssertGreaterThanOrEqual(took, .milliseconds(240))
        let times = events.compactMap(\.time).map { Int($0) }
        XCTAssertEqual(times.count, 8)
        XCTAssertEqual(times, times.sorted())
        // Sent together they would share one or two milliseconds; a loaded server may read a few in one.
        XCTAssertGreaterThanOrEqual(Set(times).count, 4, "spread over the 240 ms, not sent in one batch: \(times)")

        fixture.clear()
        let drag = try runCLI(["drag", "--path", "50,50", "150,60", "150,200", "--steps", "4", "--display", d])
        XCTAssertEqual(drag.status, 0, drag.stderr)
        let dragged = fixture.wait { $0.contains { $0.kind == .buttonRelease } }
        XCTAssertEqual(dragged.first { $0.kind == .buttonPress }.map { [$0.rootX, $0.rootY] }, [50, 50])
        XCTAssertEqual(dragged.first { $0.kind == .buttonRelease }.map { [$0.rootX, $0.rootY] }, [150, 200])
        let held = dragged.filter { $0.kind == .motion && ($0.state ?? 0) & 256 != 0 }
        XCTAssertTrue(held.contains { $0.rootX == 150 && $0.rootY == 60 }, "through the middle waypoint: \(held)")
    }
}

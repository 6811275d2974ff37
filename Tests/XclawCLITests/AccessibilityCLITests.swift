import Foundation
import XCTest
import XclawBase
import XclawPerception
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Finding the accessibility bus on a real Xvfb, and what `snapshot` does when the bus it names is not there.
final class AccessibilityCLITests: XCTestCase {
    func testTheBusIsFoundWithoutStartingAnything() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480))
        defer { display.stop() }
        let connection = try display.connect()
        let windows = WindowManager(connection: connection)
        // Nothing set: no bus, so snapshots stay OCR-only without trying.
        XCTAssertNil(AccessibilityReader.locate(display: display.name, windows: windows, environment: [:]))
        // The environment counts only for its own display.
        let env = [
            "DISPLAY": display.name + ".0", "AT_SPI_BUS_ADDRESS": "unix:path=/tmp/a11y-env",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/session",
        ]
        XCTAssertEqual(
            AccessibilityReader.locate(display: display.name, windows: windows, environment: env),
            .bus("unix:path=/tmp/a11y-env"))
        XCTAssertNil(
            AccessibilityReader.locate(
                display: display.name, windows: windows,
                environment: ["DISPLAY": ":9999", "AT_SPI_BUS_ADDRESS": "x"]))
        XCTAssertEqual(
            AccessibilityReader.locate(
                display: display.name, windows: windows,
                environment: [
                    "DISPLAY": display.name,
                    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/s",
                ]),
            .session("unix:path=/tmp/s"))

        // The root-window property an accessibility bus launcher sets; here it names a bus that is not there.
        let set = Process()
        set.executableURL = URL(fileURLWithPath: "/usr/bin/xprop")
        set.arguments = [
            "-display", display.name, "-root", "-f", "AT_SPI_BUS", "8s", "-set", "AT_SPI_BUS",
            "unix:path=/nonexistent/bus",
        ]
        try set.run()
        eventually("xprop exits") { !set.isRunning }
        XCTAssertFalse(set.isRunning, "xprop did not finish")
        XCTAssertEqual(
            AccessibilityReader.locate(display: display.name, windows: windows, environment: [:]),
            .bus("unix:path=/nonexistent/bus"))

        // A snapshot there falls back to OCR with a warning that says what failed; --source atspi fails outright.
        let result = try runCLI(["snapshot", "--display", display.name], removing: ["AT_SPI_BUS_ADDRESS"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("warning:") && result.stderr.contains("nonexistent"), result.stderr)
        XCTAssertTrue(result.stderr.contains("using OCR instead"), result.stderr)
        let strict = try runCLI(["snapshot", "--display", display.name, "--source", "atspi"])
        XCTAssertEqual(strict.status, 1, strict.stderr)
        XCTAssertTrue(strict.stderr.contains("nonexistent"), strict.stderr)
    }
}

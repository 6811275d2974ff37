import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `xclaw open` with a real handler: the default application of the `xclawtest:` scheme and of `text/plain` in the
/// test's own mimeapps.list, reached through xdg-open on a real display; a missing file opens nothing.
final class OpenCLITests: XCTestCase {
    func testOpensAURIAndAFileWithTheirDefaultHandler() throws {
        let home = try TestDesktopHome()
        defer { home.remove() }
        try home.installOpenHandler()
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let note = home.directory.appendingPathComponent("note.txt")
        try "a note\n".write(to: note, atomically: true, encoding: .utf8)
        let environment = home.environment.merging(["DISPLAY": display.name]) { $1 }
        let xclaw = { (arguments: [String]) in
            try runCLI(
                arguments, environment: environment, removing: ["DBUS_SESSION_BUS_ADDRESS"], directory: home.directory)
        }
        let trace = { (try? String(contentsOf: home.openTrace, encoding: .utf8)) ?? "" }

        let opened = try xclaw(["open", "xclawtest://hello", "note.txt"])
        XCTAssertEqual(opened.status, 0, opened.stderr)
        XCTAssertEqual(opened.text, "opened xclawtest://hello via xdg-open\nopened \(note.path) via xdg-open\n")
        XCTAssertEqual(trace(), "xclawtest://hello\n\(note.path)\n")

        // A missing file: exit 1, and nothing opened, not even the target before it.
        let missing = try xclaw(["open", "xclawtest://again", "absent.txt"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no file at \(home.directory.path)/absent.txt"), missing.stderr)
        XCTAssertEqual(trace(), "xclawtest://hello\n\(note.path)\n")

        let json = try xclaw(["open", "xclawtest://json", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let errors = try JSONSchemas.errors([.init(name: "open", schema: "open", stdout: json.stdout)])
        XCTAssertTrue(errors.isEmpty, errors.joined(separator: "\n"))
        XCTAssertEqual(try JSONValue.parse(json.stdout).array?.first?["via"]?.string, "xdg-open")

        let unhandled = try xclaw(["open", "xclawnobody://x"])
        XCTAssertEqual(unhandled.status, 1)
        XCTAssertTrue(unhandled.stderr.contains("xdg-open could not open xclawnobody://x"), unhandled.stderr)
    }
}

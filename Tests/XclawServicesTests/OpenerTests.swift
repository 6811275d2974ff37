import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// Opening URIs and files with the default handler of the test's own `mimeapps.list` (an application whose Exec
/// records its arguments), through xdg-open with no desktop environment (its generic path) on a real display. No
/// desktop portal is installed here, so the bus the test starts has none and xdg-open is the route.
final class OpenerTests: XCTestCase {
    private var home: TestDesktopHome!

    override func setUpWithError() throws {
        home = try TestDesktopHome()
        try home.installOpenHandler()
    }

    override func tearDown() { home?.remove() }

    private var opened: String { (try? String(contentsOf: home.openTrace, encoding: .utf8)) ?? "" }

    func testTargetsAreURIsOrFilesThatExist() throws {
        let opener = Opener(environment: home.environment, directory: home.directory.path)
        let note = home.directory.appendingPathComponent("note.txt")
        try "a note\n".write(to: note, atomically: true, encoding: .utf8)
        XCTAssertEqual(try opener.resolve("https://example.org/x?y=1").uri, "https://example.org/x?y=1")
        XCTAssertNil(try opener.resolve("mailto:someone@example.org").file)
        XCTAssertEqual(try opener.resolve("note.txt").file, note.path)
        XCTAssertEqual(try opener.resolve("note.txt").uri, note.absoluteString)
        XCTAssertEqual(try opener.resolve(note.absoluteString).file, note.path)
        for missing in ["nope.txt", "/nonexistent/file", "file:///nonexistent/file"] {
            XCTAssertThrowsError(try opener.resolve(missing), missing) { error in
                guard case .missingFile = error as? OpenError else { return XCTFail("\(error)") }
                XCTAssertEqual((error as? OpenError)?.exitStatus, .notFound)
            }
        }
        XCTAssertTrue(Opener.hasScheme("x-scheme+1.a:rest"))
        XCTAssertFalse(Opener.hasScheme("1abc:rest"))
        XCTAssertFalse(Opener.hasScheme("no scheme"))
    }

    func testAURIAndAFileReachTheirDefaultHandlerThroughXDGOpen() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        // A session bus with no portal on it: xdg-open is the route.
        let bus = try TestSessionBus()
        var environment = home.environment.merging(bus.environment.filter { $0.key == "DBUS_SESSION_BUS_ADDRESS" }) {
            $1
        }
        environment["DISPLAY"] = display.name
        let opener = Opener(environment: environment, directory: home.directory.path)
        let uri = try opener.open("xclawtest://hello/world", timeout: .seconds(20))
        XCTAssertEqual(
            uri,
            OpenResult(
                target: "xclawtest://hello/world", opened: "xclawtest://hello/world",
                via: "xdg-open", stillRunning: false))
        let note = home.directory.appendingPathComponent("note.txt")
        try "a note\n".write(to: note, atomically: true, encoding: .utf8)
        let file = try opener.open("note.txt", timeout: .seconds(20))
        XCTAssertEqual(file.opened, note.path)
        XCTAssertEqual(opened, "xclawtest://hello/world\n\(note.path)\n")

        // A scheme nobody handles: xdg-open's own failure, as exit 1.
        XCTAssertThrowsError(try opener.open("xclawnobody://x", timeout: .seconds(20))) { error in
            guard case .notOpened(_, let status, _) = error as? OpenError else { return XCTFail("\(error)") }
            XCTAssertNotEqual(status, 0)
            XCTAssertEqual((error as? OpenError)?.exitStatus, .notFound)
        }
    }
}

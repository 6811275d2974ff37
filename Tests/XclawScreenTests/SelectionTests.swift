import Foundation
import XCTest
import XclawScreen
import XclawTesting

/// The selection owner and reader against each other in one process, and the owner's hand-over: an owner ends when
/// another client takes the selection.
final class SelectionTests: XCTestCase {
    func testOwnerAndReaderAgreeOnEveryTypeAndHandOver() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let d = display.name
        XCTAssertThrowsError(try SelectionReader.read(.clipboard, type: .text, display: d)) { error in
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .notFound)
        }
        // Larger than one chunk: served and read by INCR.
        let big = Data(String(repeating: "€uro ✓ ", count: 60_000).utf8)
        XCTAssertGreaterThan(big.count, SelectionOwner.chunkLimit)
        let first = try SelectionOwner.start(display: d, selection: .clipboard, type: .text, data: big)
        XCTAssertEqual(try SelectionReader.read(.clipboard, type: .text, display: d), big)
        // The reader has the last chunk a moment before the owner sees its property deleted and counts the transfer.
        XCTAssertTrue(first.waitForRequests(1, timeout: .seconds(5)))
        XCTAssertEqual(first.served, 1)
        let targets = try SelectionReader.targets(.clipboard, display: d)
        XCTAssertEqual(Array(targets.prefix(3)), ["TARGETS", "TIMESTAMP", "UTF8_STRING"])
        XCTAssertThrowsError(try SelectionReader.read(.clipboard, type: .png, display: d))

        let html = Data("<b>bold</b>".utf8)
        let second = try SelectionOwner.start(display: d, selection: .clipboard, type: .html, data: html)
        first.waitUntilDone()  // it lost the selection to the second and ended
        XCTAssertEqual(try SelectionReader.read(.clipboard, type: .html, display: d), html)
        second.stop()
        second.waitUntilDone()
        XCTAssertThrowsError(try SelectionReader.read(.clipboard, type: .html, display: d), "given up on stop")
    }

    func testWindowFilterPicksByClassPidTitleAndVisibility() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480))
        defer { display.stop() }
        let one = try Fixture(display: display.name, title: "First One", frame: Rect(x: 0, y: 0, width: 50, height: 50))
        defer { one.stop() }
        let two = try Fixture(display: display.name, title: "second", frame: Rect(x: 60, y: 0, width: 50, height: 50))
        defer { two.stop() }
        let manager = WindowManager(connection: try display.connect())
        func ids(_ filter: WindowFilter, hidden: Bool = false) throws -> Set<UInt> {
            Set(try manager.list(matching: filter, includeHidden: hidden).map(\.id))
        }
        XCTAssertEqual(try ids(WindowFilter(className: "xclawfixture")), [one.window, two.window])
        XCTAssertEqual(try ids(WindowFilter(className: "Xclaw")), [], "class names are compared whole")
        XCTAssertEqual(try ids(WindowFilter(pid: Int(two.process.processIdentifier))), [two.window])
        XCTAssertEqual(try ids(WindowFilter(titlePattern: "^first")), [one.window])
        XCTAssertThrowsError(try ids(WindowFilter(titlePattern: "["))) { error in
            XCTAssertEqual((error as? ScreenError)?.exitStatus, .usage)
        }
        try manager.minimize(try manager.window(id: one.window))
        XCTAssertEqual(try ids(WindowFilter(className: "XclawFixture", visibleOnly: true), hidden: true), [two.window])
        XCTAssertEqual(try manager.find("first", matching: WindowFilter(className: "XclawFixture")).id, one.window)
    }
}

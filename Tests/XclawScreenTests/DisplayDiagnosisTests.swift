import CX11
import XCTest
import XclawScreen
import XclawTesting

/// The diagnosis a test display's failure prints: it must name the clients and the windows, and say so when the
/// server does not answer, or the rare failure it explains stays unexplained.
final class DisplayDiagnosisTests: XCTestCase {
    func testItListsTheClientsAndWindowsAndSaysWhenTheServerIsGrabbed() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let fixture = try Fixture(
            display: display.name, title: "diagnosed", frame: Rect(x: 10, y: 10, width: 100, height: 50))
        defer { fixture.stop() }
        let text = DisplayDiagnosis.describe(display: display.name)
        XCTAssertTrue(text.contains("\"diagnosed\""), "the window tree: \(text)")
        XCTAssertTrue(text.contains("xclaw-fixture"), "the fixture among the clients: \(text)")

        // A client that grabs the server: a new client gets no answer, and the diagnosis says so instead of hanging.
        let grabber = try display.connect()
        XGrabServer(grabber.handle)
        try grabber.sync()
        let grabbed = DisplayDiagnosis.describe(display: display.name)
        XUngrabServer(grabber.handle)
        try grabber.sync()
        XCTAssertTrue(grabbed.contains("a client holds a grab"), grabbed)
        XCTAssertTrue(grabbed.contains("xclaw-fixture"), "the clients still listed, from the kernel: \(grabbed)")
    }
}

import XCTest
import XclawScreen

/// The size a resize asks for: the nearest a window's WM_NORMAL_HINTS accept (ICCCM 4.1.2.3).
final class SizeHintsTests: XCTestCase {
    func testNoHintsAcceptEverySize() {
        XCTAssertEqual(SizeHints().nearest(to: Size(width: 801, height: 599)), Size(width: 801, height: 599))
        XCTAssertEqual(SizeHints().spoken, "any size")
    }

    func testStepsCountFromTheBase() {
        // xterm with DejaVu Sans Mono 11: cells of 7x15 from a base of 4x4.
        let cells = SizeHints(base: Size(width: 4, height: 4), increment: Size(width: 7, height: 15))
        XCTAssertEqual(cells.nearest(to: Size(width: 800, height: 600)), Size(width: 802, height: 604))
        XCTAssertEqual(cells.nearest(to: Size(width: 8, height: 11)), Size(width: 11, height: 4), "the nearest step")
        XCTAssertEqual(cells.nearest(to: Size(width: 1, height: 1)), Size(width: 4, height: 4), "never below the base")
        XCTAssertEqual(cells.spoken, "sizes in steps of 7x15 from 4x4")
    }

    func testWithoutABaseTheStepsCountFromTheMinimum() {
        let hints = SizeHints(minimum: Size(width: 10, height: 20), increment: Size(width: 5, height: 10))
        XCTAssertEqual(hints.nearest(to: Size(width: 32, height: 44)), Size(width: 30, height: 40))
        XCTAssertEqual(hints.nearest(to: Size(width: 3, height: 3)), Size(width: 10, height: 20))
    }

    func testBoundsKeepTheSizeOnAStep() {
        let hints = SizeHints(
            minimum: Size(width: 100, height: 100), maximum: Size(width: 400, height: 300),
            base: Size(width: 0, height: 0),
            increment: Size(width: 30, height: 40))
        XCTAssertEqual(
            hints.nearest(to: Size(width: 50, height: 50)), Size(width: 120, height: 120), "first step above")
        XCTAssertEqual(hints.nearest(to: Size(width: 999, height: 999)), Size(width: 390, height: 280), "last below")
        XCTAssertEqual(
            SizeHints(minimum: Size(width: 200, height: 100), maximum: Size(width: 200, height: 100))
                .nearest(to: Size(width: 640, height: 480)), Size(width: 200, height: 100), "a fixed size")
    }
}

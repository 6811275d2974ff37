import Foundation
import XCTest
import XclawPerception

/// How many tesseract engines read at once: the user's `XCLAW_OCR_WORKERS`, within 1–16, else the cores (at most 4).
final class OCRWorkersTests: XCTestCase {
    func testTheUsersNumberWithinBoundsElseTheCores() {
        let cores = min(4, ProcessInfo.processInfo.activeProcessorCount)
        XCTAssertEqual(TextRecognizer.defaultWorkers([:]), cores)
        XCTAssertEqual(TextRecognizer.defaultWorkers(["XCLAW_OCR_WORKERS": "1"]), 1)
        XCTAssertEqual(TextRecognizer.defaultWorkers(["XCLAW_OCR_WORKERS": "0"]), 1)
        XCTAssertEqual(TextRecognizer.defaultWorkers(["XCLAW_OCR_WORKERS": "99"]), 16)
        XCTAssertEqual(TextRecognizer.defaultWorkers(["XCLAW_OCR_WORKERS": "many"]), cores, "not a number: unset")
    }
}

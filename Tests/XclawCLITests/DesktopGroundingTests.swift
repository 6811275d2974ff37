import Foundation
import XCTest
import XclawTesting

/// The desktop apps of the grounding suite that report no presses of their own (FeatherPad, gtk3-widget-factory):
/// their menus, judged by their accessibility trees, through `xclaw bench grounding`'s desktop rows. A class of its
/// own so that the test runner runs it beside `GroundingTests`, not after it; with the CLI's tests, since it runs the
/// `xclaw` binary (which hands `bench` to `xclaw-bench`).
final class DesktopGroundingTests: XCTestCase {
    /// FeatherPad's menu bar and every item of its five menus, by OCR alone (no bus) and served by its tree, judged by
    /// its tree (`xclaw bench grounding`'s desktop rows: the point a tap would click must lie in the item's box).
    /// By OCR, "Open" and "Delete" were refused as "part of the control's label": their menu icons read "B" and "X".
    func testFeatherPadMenusByOCRAndByTheTree() throws { try checkDesktop("featherpad", atLeast: 40) }

    /// gtk3-widget-factory's menus (page 2's menu bar), likewise. By OCR, "Delete" tied with its own shortcut key
    /// "Delete" on the same menu row.
    func testWidgetFactoryMenusByOCRAndByTheTree() throws { try checkDesktop("widget factory", atLeast: 15) }

    /// Runs the desktop rows of `xclaw bench grounding` for `app` and requires every item first try, none wrong.
    private func checkDesktop(_ app: String, atLeast: Int) throws {
        let run = try runCLI(["bench", "grounding", "--app", app, "--iterations", "1", "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let rows = try XCTUnwrap(JSONSerialization.jsonObject(with: run.stdout) as? [[String: Any]], run.text)
        XCTAssertEqual(rows.count, 2, run.text)
        for row in rows {
            let name = row["app"] as? String ?? "?"
            let controls = row["controls"] as? Int ?? 0
            XCTAssertGreaterThanOrEqual(controls, atLeast, "\(name): \(run.text)")
            XCTAssertEqual(row["correct"] as? Int, controls, "\(name) first try: \(run.text)")
            XCTAssertEqual(row["wrong"] as? Int, 0, "\(name) wrong: \(run.text)")
            // xclaw's --json convention: snake_case keys, the benchmarks' too.
            XCTAssertNotNil(row["cold_without_controls_ms"], run.text)
        }
    }
}

import Foundation
import XCTest
import XclawMessages
import XclawScreen
import XclawTesting

/// Refs through the real binary on a real app (the grounding suite's Tk app, read by OCR): a control keeps its ref
/// while it stays on screen in its window, across a menu opening and closing, whether the daemon serves the command
/// or it runs in process; and a ref printed in a refusal names its control in the next command.
final class RefsCLITests: XCTestCase {
    private var state: URL!
    private var display: TestDisplay!
    private var app: GroundingApp!
    /// This class runs its own daemon beside in-process commands, in both modes of the suite.
    private var env: [String: String] { ["XCLAW_STATE_DIR": state.path, "XCLAW_TEST_DAEMON": "0"] }

    override func setUpWithError() throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-refs-\(UUID().uuidString)")
        display = try TestDisplay(size: Size(width: 1024, height: 700))
        app = try GroundingApp(.tk("default"), display: display.name, environment: display.environment)
    }

    override func tearDown() {
        _ = try? runCLI(["daemon", "stop"], environment: env)
        app?.stop()
        display?.stop()
        if let state { try? FileManager.default.removeItem(at: state) }
    }

    /// The app window's elements of one snapshot, `role "label"` → ref, for the labels that occur once.
    private func snapshot(served: Bool) throws -> (refs: [String: String], labels: [String]) {
        let result = try runCLI(
            ["snapshot", "--json", "--display", display.name] + (served ? [] : ["--no-daemon"]), environment: env)
        XCTAssertEqual(result.status, 0, result.stderr)
        let elements = try JSONValue.parse(result.stdout)["elements"]?.array ?? []
        let window = elements.first { $0["role"]?.string == "window" && $0["label"]?.string == app.title }
        let windowRef = try XCTUnwrap(window?["ref"]?.string, "the app's window is listed")
        var counts: [String: Int] = [:]
        var refs: [String: String] = [:]
        for element in elements where element["window"]?.string == windowRef {
            let key = "\(element["role"]?.string ?? "") \"\(element["label"]?.string ?? "")\""
            counts[key, default: 0] += 1
            refs[key] = element["ref"]?.string
        }
        return (refs.filter { counts[$0.key] == 1 }, elements.compactMap { $0["label"]?.string })
    }

    /// Waits until the screen stopped changing (as an agent's run does after each action), so a snapshot reads
    /// what the app shows, not a frame of its repaint.
    private func settle() throws {
        let settled = try runCLI(
            ["wait-stable", "--ms", "150", "--timeout", "10", "--display", display.name], environment: env)
        XCTAssertEqual(settled.status, 0, settled.stderr)
    }

    func testTenCyclesWithAMenuOpeningKeepTheRefsInAndOutOfTheDaemon() throws {
        let started = try runCLI(["daemon", "start"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let first = try snapshot(served: false)
        XCTAssertGreaterThan(first.refs.count, 20, "the keypad, the buttons and the form are read")
        var changes: [String] = []
        for cycle in 0..<10 {
            // Odd cycles run in process, even ones in the daemon: the two share one set of refs.
            let served = cycle % 2 == 0
            let daemonFlag = served ? [] : ["--no-daemon"]
            let open = try runCLI(
                ["tap", "File", "--window", app.title, "--display", display.name] + daemonFlag, environment: env)
            XCTAssertEqual(open.status, 0, open.stderr)
            try settle()
            let withMenu = try snapshot(served: !served)
            XCTAssertTrue(withMenu.labels.contains("Close menu"), "cycle \(cycle): the File menu is open")
            for (key, ref) in withMenu.refs where first.refs[key] != nil && first.refs[key] != ref {
                changes.append("cycle \(cycle), menu open: \(key) \(first.refs[key] ?? "") → \(ref)")
            }
            let close = try runCLI(
                ["key", "Escape", "Escape", "--display", display.name] + daemonFlag, environment: env)
            XCTAssertEqual(close.status, 0, close.stderr)
            // Tk repaints what the menu covered after it is gone: read the window once it has (in a clean-clone run
            // a snapshot taken mid-repaint found "7" and "8" missing and the still-highlighted "File" as a control
            // of its own).
            try settle()
            let closed = try snapshot(served: served)
            XCTAssertFalse(closed.labels.contains("Close menu"), "cycle \(cycle): the File menu is closed")
            for (key, ref) in closed.refs where first.refs[key] != ref {
                changes.append("cycle \(cycle): \(key) \(first.refs[key] ?? "none") → \(ref)")
            }
            for key in first.refs.keys where closed.refs[key] == nil {
                changes.append("cycle \(cycle): \(key) not read")
            }
        }
        XCTAssertEqual(changes, [], "0 ref changes for controls that stayed on screen")
    }

    func testARefPrintedInARefusalNamesItsControlInTheNextCommand() throws {
        // A pick out of range is refused with the candidates and their refs (the label ties with nothing, so the
        // refusal is the list); the next command, in process, takes the ref the daemon printed.
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: env).status, 0)
        let refused = try runCLI(
            ["tap", "Save", "--nth", "9", "--window", app.title, "--display", display.name], environment: env)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        let line = try XCTUnwrap(
            refused.stderr.range(of: #"e[0-9]+ button "Save""#, options: .regularExpression), refused.stderr)
        let ref = String(refused.stderr[line].prefix { $0 != " " })
        let outcome = app.attempt(GroundingTarget(label: ref, expected: "button Save", role: nil)) {
            let tapped = try runCLI(["tap", ref, "--no-daemon", "--display", display.name], environment: env)
            XCTAssertEqual(tapped.status, 0, tapped.stderr)
        }
        XCTAssertEqual(outcome, .correct)
    }
}

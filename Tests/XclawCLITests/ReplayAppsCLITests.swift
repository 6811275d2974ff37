import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawTesting

/// Record once, replay without the model, on real Debian apps: a run driven by the loopback model taps xcalc's keys
/// by their screen points (12 + 34 =) and answers a zenity entry dialog; its script replays with the model gone on
/// freshly started apps, after the windows moved, with another value for the typed name, and stops (exit 1, nothing
/// more pressed) when a key's label is gone. The apps judge: xcalc's display read by xclaw's OCR, zenity's stdout.
/// Only Claude is replaced (by the loopback server); X11, OCR, the accessibility tree and SQLite are real.
final class ReplayAppsCLITests: XCTestCase {
    private var display: TestDisplay!
    private var apps: ReplayApps?
    private var dir: URL!
    private var env: [String: String] = [:]
    /// The default model (Sonnet 5) sees the 1080p screen whole.
    private let geometry = ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: .highRes)

    override func setUpWithError() throws {
        // The bus, so zenity (GTK) shows its tree: its entry is then named by its prompt, as on a desktop.
        display = try TestDisplay(size: Size(width: 1920, height: 1080), accessibility: true)
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-replay-apps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
        // The run presses OK unattended; the approval gate has tests of its own.
        try "approval = none\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        env = [
            "HOME": dir.path, "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XCLAW_STATE_DIR": dir.appendingPathComponent("xclaw-state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            // Each command runs in its own process, timed out by the test: no daemon to outlive it.
            "XCLAW_NO_DAEMON": "1", "XCLAW_TEST_DAEMON": "0",
        ].merging(display.environment) { $1 }
    }

    override func tearDown() {
        apps?.stop()
        apps = nil
        display?.stop()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// Starts the apps afresh (the ones before killed).
    private func restart(
        calculatorAt: Point = Point(x: 100, y: 100), dialogAt: Point? = nil, xcalcArguments: [String] = []
    ) throws -> ReplayApps {
        apps?.stop()
        let started = try ReplayApps(
            display: display.name, environment: display.environment, calculatorAt: calculatorAt, dialogAt: dialogAt,
            xcalcArguments: xcalcArguments)
        apps = started
        return started
    }

    private func xclaw(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 60) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        try ReplayApps.xclaw(arguments, environment: environment ?? env, timeout: timeout)
    }

    private static func tool(_ id: String, _ input: String) -> MockReply {
        .stream(.turn(blocks: [.toolUse(id: id, name: "computer", input: input)], stopReason: "tool_use"))
    }

    func testARecordedXcalcAndZenityRunReplaysWithoutTheModel() throws {
        // The run: the loopback model clicks xcalc's keys at their points, then the dialog's entry, types, and OK.
        var apps = try restart()
        let actions = try apps.actions(geometry: geometry, environment: env)
        XCTAssertEqual(actions.count, 10)
        let server = try MockMessagesServer(
            replies: actions.enumerated().map { Self.tool("toolu_\($0.offset + 1)", $0.element) }
                + [.stream(.turn(blocks: [.text("Done: 46, and the name entered.")]))])
        defer { server.stop() }
        var recording = env
        recording["ANTHROPIC_BASE_URL"] = server.baseURL
        recording["ANTHROPIC_API_KEY"] = "sk-" + "ant-replay-apps-SECRET"
        let ran = try xclaw(
            ["run", ReplayApps.prompt, "--display", display.name, "--tools", "computer"], environment: recording,
            timeout: 180)
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(server.requests.count, 11)
        XCTAssertTrue(apps.calculatorShows(ReplayApps.sum, environment: env), "xcalc does not show 46 after the run")
        let recorded = apps.dialogAnswer()
        XCTAssertEqual(recorded.status, 0)
        XCTAssertEqual(recorded.text, ReplayApps.name)

        // Its script: ten steps, each tap anchored by the label it hit in its window, the name a parameter.
        let runs = try JSONValue.parse(try xclaw(["runs", "--json"]).stdout).array
        let id = try XCTUnwrap(runs?.last?["id"]?.int)
        let file = dir.appendingPathComponent("task.json").path
        let exported = try xclaw(["script", "export", "\(id)", "-o", file])
        XCTAssertEqual(exported.status, 0, exported.stderr)
        let script = try JSONValue.parse(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(script["parameters"]?["p1"]?.string, ReplayApps.name)
        let steps = try XCTUnwrap(script["steps"]?.array)
        XCTAssertEqual(steps.count, 10)
        XCTAssertEqual(
            steps.compactMap { $0["target"]?["label"]?.string },
            ReplayApps.keys + ["Customer name", "Customer name", "OK"])
        XCTAssertEqual(
            steps.compactMap { $0["target"]?["window_title"]?.string }.filter { $0 == "Calculator" }.count, 7)
        XCTAssertEqual(steps[8]["parameter"]?.string, "p1")

        // Replayed with the model gone (the server is stopped: no request is possible), on fresh apps.
        server.stop()
        apps = try restart()
        let replayed = try xclaw(
            ["replay", file, "--display", display.name, "--heal", "never", "--timeout", "5", "--json"])
        XCTAssertEqual(replayed.status, 0, replayed.stderr)
        let outcome = try JSONValue.parse(replayed.stdout)
        XCTAssertEqual(outcome["replayed"]?.int, 10)
        XCTAssertEqual(outcome["model_requests"]?.int, 0)
        XCTAssertTrue(apps.calculatorShows(ReplayApps.sum, environment: env), "xcalc does not show 46 after replay")
        XCTAssertEqual(apps.dialogAnswer().text, ReplayApps.name)
        XCTAssertEqual(apps.dialogAnswer().status, 0)

        // Both windows elsewhere, and another name: the taps ground by label in their windows.
        apps = try restart(calculatorAt: Point(x: 1300, y: 500), dialogAt: Point(x: 200, y: 700))
        let moved = try xclaw(
            [
                "replay", file, "--param", "P1=Grace Hopper", "--display", display.name, "--heal", "never",
                "--timeout", "5", "--json",
            ])
        XCTAssertEqual(moved.status, 0, moved.stderr)
        XCTAssertEqual(try JSONValue.parse(moved.stdout)["replayed"]?.int, 10)
        XCTAssertEqual(try JSONValue.parse(moved.stdout)["model_requests"]?.int, 0)
        XCTAssertTrue(apps.calculatorShows(ReplayApps.sum, environment: env), "xcalc does not show 46 (moved)")
        let answered = apps.dialogAnswer()
        XCTAssertEqual(answered.status, 0)
        XCTAssertEqual(answered.text, "Grace Hopper")

        // The "+" key renamed: the replay presses AC, 1 and 2, stops at "+" (exit 1) and presses nothing more: the
        // display reads 12 and the dialog is still up, unanswered.
        apps = try restart(xcalcArguments: ["-xrm", "XCalc*ti.button50.label: add"])
        let diverged = try xclaw(
            ["replay", file, "--display", display.name, "--heal", "never", "--timeout", "2", "--json"])
        XCTAssertEqual(diverged.status, 1, diverged.stderr)
        let stop = try JSONValue.parse(diverged.stdout)
        XCTAssertEqual(stop["diverged_step"]?.int, 4, diverged.stdout)
        XCTAssertEqual(stop["replayed"]?.int, 3)
        XCTAssertTrue(apps.calculatorShows("12", environment: env), "xcalc should read 12 after AC 1 2")
        XCTAssertTrue(apps.dialogIsUp)

        // The calculator missing altogether: the first step stops the replay, and nothing is clicked (the pointer
        // stays where it was, the dialog stays up).
        let connection = try display.connect()
        let input = try InputController(connection: connection)
        apps = try restart()
        apps.stopCalculator()
        try input.move(to: Point(x: 5, y: 5))
        let missing = try xclaw(
            ["replay", file, "--display", display.name, "--heal", "never", "--timeout", "1", "--json"])
        XCTAssertEqual(missing.status, 1, missing.stderr)
        XCTAssertEqual(try JSONValue.parse(missing.stdout)["diverged_step"]?.int, 1, missing.stdout)
        XCTAssertEqual(try input.cursorPosition(), Point(x: 5, y: 5))
        XCTAssertTrue(apps.dialogIsUp)
        XCTAssertEqual(server.requests.count, 11, "the replays asked no model")
    }

    /// `xclaw bench replay` replays on a second display (1280x800) while the first one still serves: starting that
    /// display's bus must not end the first one's. Xvfb started with `-displayfd` writes no `/tmp/.XN-lock`, and the
    /// orphan reaper once took every such display for gone and killed its bus.
    func testBAnotherAccessibilityDisplayLeavesThisOnesBusAlone() throws {
        let bus = try XCTUnwrap(display.server.accessibility)
        let other = try TestDisplay(size: Size(width: 1280, height: 800), accessibility: true)
        defer { other.stop() }
        XCTAssertTrue(Subprocess.isRunning(bus.daemonPID), "the first display's session bus was killed")
        XCTAssertTrue(Subprocess.isRunning(bus.launcherPID), "the first display's accessibility bus was killed")
    }
}

import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Every command with `--json` run for real, its stdout checked against its schema in `docs/json` (draft 2020-12,
/// strict: a renamed or added key fails); and a command that fails with `--json` prints one JSON error object on
/// stdout, its exit code unchanged. The daemon pass runs the class again through a daemon.
final class JSONOutputCLITests: XCTestCase {
    private var work: URL!
    private var checks: [JSONSchemas.Check] = []
    private var scenes: [WidgetScene] = []

    override func setUpWithError() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-json-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for scene in scenes {
            scene.fixture.stop()
            scene.display.stop()
        }
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    /// The widget window on a display of its own, stopped after the test.
    private func widgets() throws -> WidgetScene {
        let scene = try WidgetScene()
        scenes.append(scene)
        return scene
    }

    /// Runs xclaw, checks its exit status (one of `statuses`), and queues its stdout for `schema`; a failure that
    /// printed no result is checked against the error object's schema.
    @discardableResult
    private func expect(
        _ arguments: [String], _ schema: String, statuses: Set<Int32> = [0], environment: [String: String] = [:],
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> CLIResult {
        let result = try runCLI(arguments, environment: environment)
        XCTAssertTrue(
            statuses.contains(result.status), "\(arguments) → \(result.status): \(result.stderr)", file: file,
            line: line)
        checks.append(.init(name: arguments.joined(separator: " "), schema: schema, stdout: result.stdout))
        return result
    }

    /// Checks every queued stdout against its schema.
    private func validate(file: StaticString = #filePath, line: UInt = #line) throws {
        let errors = try JSONSchemas.errors(checks)
        XCTAssertTrue(errors.isEmpty, errors.joined(separator: "\n"), file: file, line: line)
        checks = []
    }

    /// The error object a failed command printed, after checking it is the only line and says what stderr said.
    private func errorObject(
        _ result: CLIResult, status: Int32, kind: String, file: StaticString = #filePath, line: UInt = #line
    ) throws -> [String: JSONValue] {
        XCTAssertEqual(result.status, status, result.stderr, file: file, line: line)
        XCTAssertEqual(result.text.filter { $0 == "\n" }.count, 1, "one line: \(result.text)", file: file, line: line)
        let error = try XCTUnwrap(JSONValue.parse(result.stdout)["error"]?.object, result.text, file: file, line: line)
        XCTAssertEqual(error["exit_code"]?.int, Int(status), file: file, line: line)
        XCTAssertEqual(error["kind"]?.string, kind, file: file, line: line)
        let message = try XCTUnwrap(error["message"]?.string, file: file, line: line)
        XCTAssertTrue(
            result.stderr.hasSuffix(message + "\n"), "stderr ends with the message: \(result.stderr) / \(message)",
            file: file, line: line)
        checks.append(.init(name: "error of \(kind)", schema: "error", stdout: result.stdout))
        return error
    }

    func testTheSchemasAreValidAndStrict() throws {
        let (errors, count) = try JSONSchemas.lint()
        XCTAssertTrue(errors.isEmpty, errors.joined(separator: "\n"))
        XCTAssertGreaterThan(count, 50)
    }

    func testScreenCommandsPrintWhatTheirSchemasSay() throws {
        let scene = try widgets()
        let d = ["--display", scene.display.name]
        let shot = work.appendingPathComponent("shot.png").path
        let save = Rect(x: WidgetScene.origin.x + 300, y: WidgetScene.origin.y + 20, width: 100, height: 30)
        let template = work.appendingPathComponent("save.png").path
        try expect(["capture", "--json", "-o", shot] + d, "capture")
        try expect(["capture", "--json", "--scale-for-model", "-o", shot] + d, "capture")
        try expect(["capture", "--json", "--region", "\(save)", "-o", template] + d, "capture")
        let pixel = try expect(["pixel", "5,5", "--json"] + d, "pixel")
        try expect(["release-all", "--json"] + d, "release-all")
        try expect(["cursor", "--json"] + d, "cursor")
        try expect(["cursor", "--window", "--json"] + d, "cursor")
        try expect(["windows", "--json"] + d, "windows")
        try expect(["monitors", "--json"] + d, "monitors")
        try expect(["apps", "--all", "--json"], "apps")
        try expect(["launch", "--json"] + d + ["--", "/bin/true"], "launch")
        try expect(["ocr", "--json"] + d, "ocr")
        try expect(["snapshot", "--json"] + d, "snapshot")
        let found = try expect(["find", "Save", "--json"] + d, "find")
        try expect(["find", "--image", template, "--json"] + d, "find")
        try expect(["find", "--color", "#ffffff", "--region", "100,80,50,50", "--json"] + d, "find")
        try expect(["tap", "Save", "--json"] + d, "tap")
        try expect(["tap", "--image", template, "--json"] + d, "tap")
        try expect(["watch", "--text", "Save", "--json"] + d, "watch")
        try expect(["watch", "--window", "widgets", "--json"] + d, "watch")
        try expect(["watch", "--class", "XclawFixture", "--json"] + d, "watch")
        let color = try XCTUnwrap(JSONValue.parse(pixel.stdout)["color"]?.string)
        try expect(["watch", "--pixel", "5,5", "--color", color, "--json"] + d, "watch")
        try expect(["wait-stable", "--json"] + d, "wait-stable")
        XCTAssertEqual(try runCLI(["clipboard", "set", "copied ✓"] + d).status, 0)
        try expect(["clipboard", "get", "--json"] + d, "clipboard-get")
        try validate()
        // The matched words are the element's `label`, as a snapshot names them.
        XCTAssertEqual(try JSONValue.parse(found.stdout).array?.first?["label"]?.string, "Save")
    }

    func testWindowCommandsPrintWhatTheirSchemasSay() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let openbox = try Openbox(display: display)
        defer { openbox.stop() }
        let framed = try Fixture(
            display: display.name, title: "framed", frame: Rect(x: 10, y: 20, width: 200, height: 100))
        defer { framed.stop() }
        let second = try Fixture(
            display: display.name, title: "second", frame: Rect(x: 300, y: 20, width: 200, height: 100))
        defer { second.stop() }
        let d = ["--display", display.name]
        try expect(["window", "move", "framed", "100", "150", "--json"] + d, "window-move")
        try expect(["window", "resize", "framed", "333", "222", "--json"] + d, "window-resize")
        for state in ["maximize", "fullscreen", "above"] {
            try expect(["window", state, "framed", "--json"] + d, "window-" + state)
            try expect(["window", state, "--off", "framed", "--json"] + d, "window-" + state)
        }
        try expect(["window", "raise", "second", "--json"] + d, "window-raise")
        try expect(["window", "lower", "second", "--json"] + d, "window-lower")
        try expect(["desktop", "--json"] + d, "desktop")
        try expect(["window", "desktop", "second", "1", "--json"] + d, "window-desktop")
        XCTAssertEqual(try runCLI(["activate", "framed"] + d).status, 0)
        try expect(["active", "--json"] + d, "active")
        try expect(["window", "minimize", "framed", "--json"] + d, "window-minimize")
        try expect(["window", "close", "framed", "--json"] + d, "window-close")
        try expect(["window", "kill", "second", "--json"] + d, "window-kill")
        try validate()
    }

    /// The agents' commands on one database: a real run against the loopback Messages API (it clicks Save), then
    /// everything that lists, shows, replays and schedules what it left.
    func testAgentAndStoreCommandsPrintWhatTheirSchemasSay() throws {
        let scene = try widgets()
        let d = ["--display", scene.display.name]
        let server = try MockMessagesServer(replies: [
            .toolUse(name: "computer", input: #"{"action": "left_click", "coordinate": [450, 115]}"#),
            .text("Pressed Save."),
            .text("Nothing to delegate: the answer is 42."),  // the pipeline's orchestrator
            .text("Looked."),  // the scheduled task, run now
        ])
        defer { server.stop() }
        let env = try agentEnvironment(server, display: scene.display.name)
        @discardableResult
        func run(_ arguments: [String], _ schema: String, statuses: Set<Int32> = [0]) throws -> CLIResult {
            try expect(arguments, schema, statuses: statuses, environment: env)
        }
        let summary = try JSONValue.parse(
            try run(["run", "Press Save", "--tools", "computer", "--json"] + d, "run").stdout)
        let agent = try XCTUnwrap(summary["agent"]?.string)
        let runs = try JSONValue.parse(try run(["runs", "--json"], "runs").stdout)
        let id = try XCTUnwrap(runs.array?.last?["id"]?.int.map(String.init), runs.jsonText)
        try run(["usage", "--json"], "usage")
        try run(["usage", agent, "--json"], "usage")
        try run(["history", agent, "--json"], "history")
        try run(["agents", "--json"], "agents")
        try run(["agents", "--all", "--json"], "agents")  // the run's one-shot agent, `one_shot` and all
        try run(["report", id, "--json"], "report")
        try run(["script", "show", id, "--json"], "script-show")
        // Replayed or diverged, stdout is the one outcome object.
        try run(["replay", id, "--heal", "never", "--json"] + d, "replay", statuses: [0, 1])
        try run(["agent", "create", "bot", "--json"], "agent-create")
        try run(["agent", "set", "bot", "--dry-run", "--json"], "agent-set")
        try run(["memory", "bot", "--json"], "memory")
        try run(["schedule", "add", "bot", "Look", "--every", "1h", "--name", "hourly", "--json"], "schedule-add")
        XCTAssertEqual(try runCLI(["schedule", "run-now", "hourly"], environment: env).status, 0)
        try run(["schedule", "list", "--json"], "schedule-list")
        try run(["schedule", "show", "hourly", "--json"], "schedule-show")
        try run(["stop", "--all", "--wait", "0", "--json"], "stop")
        try run(["approvals", "--json"], "approvals")
        try run(["pipeline", "Answer", "--json"], "pipeline-run")
        try run(["pipeline", "list", "--json"], "pipeline-list")
        try run(["pipeline", "show", "1", "--json"], "pipeline-show")
        try run(["pipeline", "cancel", "1", "--wait", "0", "--json"], "pipeline-cancel")
        try run(["models", "--json"], "models")
        // Nothing waits for approval: the miss is the error object.
        _ = try errorObject(try runCLI(["approve", id, "--json"], environment: env), status: 1, kind: "not_found")
        _ = try errorObject(try runCLI(["deny", id, "--json"], environment: env), status: 1, kind: "not_found")
        try validate()
        XCTAssertEqual(summary["usage"]?["input_tokens"]?.int, 200)
    }

    func testDisplayAndDaemonCommandsPrintWhatTheirSchemasSay() throws {
        let state = work.appendingPathComponent("state")
        let env = ["XCLAW_STATE_DIR": state.path, "XCLAW_TEST_DAEMON": "0"]
        let started = try expect(
            ["display", "start", "--size", "640x480", "--accessibility", "--json"], "display-start", environment: env)
        let name = try XCTUnwrap(JSONValue.parse(started.stdout)["name"]?.string, started.text)
        defer { _ = try? runCLI(["display", "stop", name], environment: env) }
        try expect(["display", "list", "--json"], "display-list", environment: env)
        let variables = try expect(["display", "env", name, "--json"], "display-env", environment: env)
        // An app on it exposes its tree: `tree --json`, once its window is there.
        var app = env
        for (key, value) in try JSONValue.parse(variables.stdout).object ?? [:] { app[key] = value.string }
        try expect(
            ["launch", "--json", "--wait-window", "--", "zenity", "--info", "--text", "hello"], "launch",
            environment: app)
        try expect(["watch", "--window", "Information", "--json"], "watch", environment: app)
        try expect(["tree", "--json"], "tree", environment: app)
        try expect(["daemon", "start", "--json"], "daemon-start", environment: env)
        defer { _ = try? runCLI(["daemon", "stop"], environment: env) }
        try expect(["daemon", "status", "--json"], "daemon-status", environment: env)
        try validate()
        // Keys that are data stay as they are: the variables' names.
        XCTAssertNotNil(
            try JSONValue.parse(try runCLI(["display", "env", name, "--json"], environment: env).stdout)["DISPLAY"])
    }

    func testAFailureWithJSONPrintsOneErrorObjectAndKeepsItsExitCode() throws {
        let scene = try widgets()
        let d = ["--display", scene.display.name]
        // A miss: exit 1, and what stderr says.
        let miss = try runCLI(["find", "Nowhere To Be Seen", "--json"] + d)
        let error = try errorObject(miss, status: 1, kind: "not_found")
        XCTAssertTrue(error["message"]?.string?.contains("Nowhere To Be Seen") == true, miss.text)
        // Bad usage: exit 2, the usage text as stderr shows it.
        _ = try errorObject(try runCLI(["find", "--json"] + d), status: 2, kind: "usage")
        _ = try errorObject(try runCLI(["watch", "--json", "--timeout", "0"] + d), status: 2, kind: "usage")
        // No such display: exit 3, in the full binary and where the front does `cursor` itself.
        let nowhere = ["--display", ":59999"]
        _ = try errorObject(try runCLI(["windows", "--json"] + nowhere), status: 3, kind: "display")
        _ = try errorObject(try runCLI(["cursor", "--json"] + nowhere), status: 3, kind: "display")
        // No accessibility bus on this display: a miss too.
        _ = try errorObject(try runCLI(["tree", "--json"] + d), status: 1, kind: "not_found")
        try validate()

        // After `--` it is an operand (the label "--json"), and a command without --json prints as before.
        let operand = try runCLI(["find"] + d + ["--", "--json"])
        XCTAssertEqual(operand.status, 1, operand.stderr)
        XCTAssertEqual(operand.text, "")
        let click = try runCLI(["click", "--json"] + d)
        XCTAssertEqual(click.status, 2, click.stderr)
        XCTAssertEqual(click.text, "")
        let plain = try runCLI(["find", "Nowhere To Be Seen"] + d)
        XCTAssertEqual(plain.status, 1)
        XCTAssertEqual(plain.text, "", "without --json a miss prints nothing on stdout")
    }

    /// A command that printed its JSON result and then fails (a run that hit its step limit, or whose model
    /// refused the key) keeps stdout that one object; a failure before any result is the error object, and neither
    /// names the key.
    func testAResultThenAFailureKeepsOneObjectAndAKeyNeverShows() throws {
        let scene = try widgets()
        let d = ["--display", scene.display.name]
        let limited = try MockMessagesServer(replies: [
            .toolUse(name: "computer", input: #"{"action": "screenshot"}"#)
        ])
        defer { limited.stop() }
        let summary = try expect(
            ["run", "Look", "--max-steps", "1", "--json"] + d, "run", statuses: [1],
            environment: try agentEnvironment(limited, display: scene.display.name))
        XCTAssertEqual(
            try JSONValue.parse(summary.stdout)["outcome"]?.string, "stopped after 1 steps without finishing")

        let refused = try MockMessagesServer { _, _ in
            .error(status: 401, type: "authentication_error", message: "invalid x-api-key")
        }
        defer { refused.stop() }
        let env = try agentEnvironment(refused, display: scene.display.name)
        let failed = try expect(["run", "anything", "--json"] + d, "run", statuses: [4], environment: env)
        XCTAssertFalse(failed.text.contains("SECRET"), failed.text)
        // Failing before any result (the API gone, its port closed): the error object.
        refused.stop()
        let listing = try runCLI(
            ["models", "--refresh", "--json"], environment: env.merging(["XCLAW_RETRY_BUDGET": "1"]) { $1 })
        _ = try errorObject(listing, status: 4, kind: "api")
        XCTAssertFalse(listing.text.contains("SECRET"), listing.text)
        XCTAssertFalse(listing.stderr.contains("SECRET"), listing.stderr)
        try validate()
    }

    /// The front reports a daemon that died under a command on stdout too, as the command's own failures are. The
    /// test starts (and kills) a daemon of its own, so it runs in both passes.
    func testADaemonThatDiesUnderACommandIsReportedAsAnErrorObject() throws {
        let scene = try widgets()
        let state = work.appendingPathComponent("own-daemon-state")
        // XCLAW_TEST_DAEMON=0: the daemon pass's harness leaves this state directory to the test.
        let env = ["XCLAW_STATE_DIR": state.path, "XCLAW_TEST_DAEMON": "0"]
        let started = try runCLI(["daemon", "start", "--json"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let daemon = try XCTUnwrap(JSONValue.parse(started.stdout)["pid"]?.int.map { pid_t($0) }, started.text)
        defer { kill(daemon, SIGKILL) }
        let out = Pipe()
        let watch = try launchCLI(
            ["watch", "--text", "Never Shown Here", "--timeout", "60", "--json", "--display", scene.display.name],
            environment: env, stdout: out)
        // Killed once the daemon runs it (its status counts the command).
        try eventually("the daemon runs the watch", within: .seconds(20)) {
            let status = try runCLI(["daemon", "status", "--json"], environment: env)
            return (try? JSONValue.parse(status.stdout)["running"]?.int) ?? 0 > 0
        }
        kill(daemon, SIGKILL)
        let printed = out.fileHandleForReading.readDataToEndOfFile()
        watch.waitUntilExit()
        XCTAssertEqual(watch.terminationStatus, 5)
        let error = try XCTUnwrap(JSONValue.parse(printed)["error"]?.object, String(decoding: printed, as: UTF8.self))
        XCTAssertEqual(error["kind"]?.string, "internal")
        XCTAssertEqual(error["exit_code"]?.int, 5)
        XCTAssertTrue(error["message"]?.string?.contains("the daemon died during the command") == true)
        checks.append(.init(name: "daemon died", schema: "error", stdout: printed))
        try validate()
    }

    /// What an agent command needs: the loopback API, a key built from parts, private state and config directories
    /// (no approval gate: the run clicks unattended), a database, and the display as `$DISPLAY`.
    private func agentEnvironment(_ server: MockMessagesServer, display: String) throws -> [String: String] {
        let config = work.appendingPathComponent("config/xclaw")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try "approval = none\n".write(to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        return [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-json-SECRET", "HOME": work.path,
            "XDG_STATE_HOME": work.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": work.appendingPathComponent("config").path,
            "XCLAW_DB": work.appendingPathComponent("xclaw.sqlite").path, "DISPLAY": display,
        ]
    }
}

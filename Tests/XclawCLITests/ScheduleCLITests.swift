import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `xclaw schedule` end to end: tasks added by the CLI, fired by a real daemon against the loopback Messages API,
/// recorded in the store; bad schedules refused with exit 2. The daemon is this test's own (both suite passes).
final class ScheduleCLITests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-schedule-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let dir {
            _ = try? runCLI(
                ["daemon", "stop"], environment: ["XCLAW_STATE_DIR": dir.appendingPathComponent("state").path])
            try? FileManager.default.removeItem(at: dir)
        }
    }

    private struct Shown: Decodable {
        struct Task: Decodable {
            var id: String
            var name: String?
            var status: String
            var schedule: String
            var next_run: String?
            var last_result: String?
        }
        struct Run: Decodable {
            var status: String
            var runAt: String?
        }
        var task: Task
        var runs: [Run]
    }

    func testTasksFireOnceFromTheDaemonAndBadSchedulesAreRefused() throws {
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text("Scheduled hello ✓")])),
            .stream(.turn(blocks: [.text("Ran it now.")])),
        ])
        defer { server.stop() }
        let env = [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-schedule-SECRET"),
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path, "HOME": dir.path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "XCLAW_STATE_DIR": dir.appendingPathComponent("state").path, "XCLAW_TEST_DAEMON": "0",
            "XDG_STATE_HOME": dir.appendingPathComponent("xdg-state").path,
        ]
        XCTAssertEqual(try runCLI(["agent", "create", "bot", "--tools", "memory"], environment: env).status, 0)

        // Refused, with what to write instead, and nothing stored.
        for (arguments, says) in [
            (["schedule", "add", "bot", "p"], "exactly one of --cron, --every and --at"),
            (["schedule", "add", "bot", "p", "--cron", "61 * * * *"], "the minute field"),
            (["schedule", "add", "bot", "p", "--every", "10s"], "at least 1m"),
            (["schedule", "add", "bot", "p", "--every", "ten"], "not a duration"),
            (["schedule", "add", "bot", "p", "--at", "2020-01-01 10:00"], "in the past"),
            (["schedule", "add", "bot", "p", "--cron", "0 9 * * *", "--tz", "Mars/Base"], "not a time zone"),
            (["schedule", "add", "bot", "p", "--every", "1h", "--tz", "UTC"], "--tz goes with"),
        ] {
            let refused = try runCLI(arguments, environment: env)
            XCTAssertEqual(refused.status, 2, "\(arguments) \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains(says), "\(arguments): \(refused.stderr)")
        }
        let nobody = try runCLI(["schedule", "add", "nobody", "p", "--every", "1h"], environment: env)
        XCTAssertEqual(nobody.status, 1, nobody.stderr)
        XCTAssertEqual(try runCLI(["schedule", "list", "--json"], environment: env).text, "[]\n")

        // A weekly task in Berlin: Monday 09:00 there is 08:00 UTC in winter.
        let weekly = try runCLI(
            [
                "schedule", "add", "bot", "weekly report", "--cron", "0 9 * * mon", "--tz", "Europe/Berlin", "--name",
                "weekly", "--json",
            ], environment: env)
        XCTAssertEqual(weekly.status, 0, weekly.stderr)
        let weeklyNext = try XCTUnwrap(try JSONValue.parse(weekly.stdout)["next_run"]?.string)
        XCTAssertTrue(weeklyNext.hasSuffix("T08:00:00.000Z"), weeklyNext)
        let duplicate = try runCLI(
            ["schedule", "add", "bot", "p", "--every", "1h", "--name", "weekly"], environment: env)
        XCTAssertEqual(duplicate.status, 2, duplicate.stderr)

        // One due in two seconds; the daemon fires it once.
        let formatter = ISO8601DateFormatter()
        let soon = formatter.string(from: Date().addingTimeInterval(2))
        let added = try runCLI(
            ["schedule", "add", "bot", "say hello", "--at", soon, "--name", "hello"], environment: env)
        XCTAssertEqual(added.status, 0, added.stderr)
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: env).status, 0)
        var shown: Shown?
        try eventually("the one-shot ran", within: .seconds(30), every: .milliseconds(200)) {
            let result = try runCLI(["schedule", "show", "hello", "--json"], environment: env)
            shown = try? JSONDecoder().decode(Shown.self, from: result.stdout)
            return shown?.runs.isEmpty == false
        }
        XCTAssertEqual(shown?.runs.map(\.status), ["completed"])
        XCTAssertEqual(shown?.task.status, "completed", "a one-shot is done after its run")
        XCTAssertNil(shown?.task.next_run)
        XCTAssertEqual(server.requests.count, 1, "fired once")
        let history = try runCLI(["history", "bot"], environment: env)
        XCTAssertTrue(history.text.contains("say hello"), history.text)
        XCTAssertTrue(history.text.contains("Scheduled hello ✓"), history.text)

        // Pause, resume, run now (here, printed, recorded), remove.
        XCTAssertEqual(try runCLI(["schedule", "pause", "weekly"], environment: env).status, 0)
        let list = try JSONValue.parse(try runCLI(["schedule", "list", "--json"], environment: env).stdout)
        XCTAssertEqual(list.array?.first { $0["name"]?.string == "weekly" }?["status"]?.string, "paused")
        let resumed = try runCLI(["schedule", "resume", "weekly"], environment: env)
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertTrue(resumed.text.contains("T08:00:00.000Z"), resumed.text)
        let now = try runCLI(["schedule", "run-now", "weekly"], environment: env)
        XCTAssertEqual(now.status, 0, now.stderr)
        XCTAssertTrue(now.text.contains("Ran it now."), now.text)
        let after = try JSONDecoder().decode(
            Shown.self, from: try runCLI(["schedule", "show", "weekly", "--json"], environment: env).stdout)
        XCTAssertEqual(after.runs.map(\.status), ["completed"])
        XCTAssertEqual(after.task.next_run, resumed.text.split(separator: " ").last.map { String($0.dropLast()) })
        // The runs, each with its task, and every field of a row there (null where it has no value).
        let runs = try runCLI(["runs", "--json"], environment: env)
        XCTAssertEqual(runs.status, 0, runs.stderr)
        let rows = try XCTUnwrap(try JSONValue.parse(runs.stdout).array)
        XCTAssertEqual(rows.map { $0["task"]?.string }, ["hello", "weekly"])
        for row in rows {
            // Each scheduled run (the daemon's, and run-now's) kept its report, named by its session.
            let report = row["report"]?.string ?? ""
            XCTAssertEqual(
                report,
                dir.appendingPathComponent("xdg-state/xclaw/reports/run-\(row["id"]?.int ?? 0).html").path)
            let page = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
            XCTAssertTrue(page.contains("scheduled task \(row["task"]?.string ?? "")"), report)
            XCTAssertEqual(row["status"]?.string, "completed")
            XCTAssertEqual(row["agent"]?.string, "bot")
            XCTAssertGreaterThanOrEqual(row["steps"]?.double ?? 0, 1)
            XCTAssertNotNil(row["duration_ms"]?.double)
            XCTAssertNotNil(row["cost_usd"]?.double)
            XCTAssertNotNil(row["started_at"]?.string)
        }
        let byTask = try runCLI(["runs", "bot", "--task", "hello", "--json"], environment: env)
        XCTAssertEqual(try JSONValue.parse(byTask.stdout).array?.count, 1, byTask.stderr)
        XCTAssertEqual(try runCLI(["runs", "nobody"], environment: env).status, 1)
        XCTAssertEqual(try runCLI(["schedule", "remove", "weekly"], environment: env).status, 0)
        let gone = try runCLI(["schedule", "show", "weekly"], environment: env)
        XCTAssertEqual(gone.status, 1, gone.stderr)
        // The key never reaches the task list or the log.
        let log = (try? String(contentsOf: dir.appendingPathComponent("state/schedule.log"), encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("task hello"), log)
        XCTAssertFalse(log.contains("SECRET"))
    }

    /// Unattended end to end: a scheduled task fires in the daemon, its agent takes a screenshot and answers a real
    /// zenity dialog by its button's label, and `runs` and the kept report show the run.
    func testAScheduledRunAnswersAZenityDialogAndItsReportShowsIt() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let zenity = Process()
        zenity.executableURL = URL(fileURLWithPath: "/usr/bin/zenity")
        zenity.arguments = [
            "--question", "--title", "Backup", "--text", "Start the nightly backup now?", "--ok-label", "Proceed",
            "--cancel-label", "Later",
        ]
        zenity.environment = ProcessInfo.processInfo.environment.merging(display.environment) { $1 }
            .merging(["NO_AT_BRIDGE": "1"]) { $1 }
        zenity.standardOutput = FileHandle.nullDevice
        zenity.standardError = FileHandle.nullDevice
        try zenity.run()
        defer { if zenity.isRunning { kill(zenity.processIdentifier, SIGKILL) } }
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [
                        .text("Looking first. "),
                        .toolUse(id: "toolu_1", name: "computer", input: #"{"action": "screenshot"}"#),
                    ],
                    stopReason: "tool_use")),
            .stream(
                .turn(
                    blocks: [.toolUse(id: "toolu_2", name: "tap_element", input: #"{"label": "Proceed"}"#)],
                    stopReason: "tool_use")),
            .stream(.turn(blocks: [.text("Started the backup.")])),
        ])
        defer { server.stop() }
        let env = [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-zenity-SECRET"),
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path, "HOME": dir.path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "XCLAW_STATE_DIR": dir.appendingPathComponent("state").path, "XCLAW_TEST_DAEMON": "0",
            "XDG_STATE_HOME": dir.appendingPathComponent("xdg-state").path,
        ]
        let created = try runCLI(
            ["agent", "create", "nightly", "--tools", "computer,tap_element", "--display", display.name],
            environment: env)
        XCTAssertEqual(created.status, 0, created.stderr)
        // The dialog is up before the run is due.
        let seen = try runCLI(
            ["watch", "--text", "Proceed", "--timeout", "20", "--display", display.name], environment: env)
        XCTAssertEqual(seen.status, 0, seen.stderr)
        let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        let added = try runCLI(
            ["schedule", "add", "nightly", "Answer the backup dialog: proceed.", "--at", soon, "--name", "backup"],
            environment: env)
        XCTAssertEqual(added.status, 0, added.stderr)
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: env).status, 0)
        // zenity exits 0 for its OK button: the oracle that the right button was pressed.
        eventually("zenity answered", within: .seconds(40), every: .milliseconds(50)) { !zenity.isRunning }
        XCTAssertFalse(zenity.isRunning, "the scheduled run never answered the dialog")
        XCTAssertEqual(zenity.terminationStatus, 0, "zenity's answer (0 = Proceed)")
        var row: JSONValue?
        try eventually("the run completed with its report", within: .seconds(20), every: .milliseconds(100)) {
            row = try JSONValue.parse(try runCLI(["runs", "nightly", "--json"], environment: env).stdout).array?.last
            return row?["status"]?.string == "completed" && row?["report"]?.string != nil
        }
        XCTAssertEqual(row?["task"]?.string, "backup")
        XCTAssertEqual(row?["status"]?.string, "completed")
        XCTAssertEqual(row?["steps"]?.int, 3)
        let report = try XCTUnwrap(row?["report"]?.string)
        let page = try String(contentsOfFile: report, encoding: .utf8)
        XCTAssertTrue(page.contains("scheduled task backup"), report)
        XCTAssertTrue(page.contains("Proceed"), "the tap is in the report")
        XCTAssertTrue(page.contains("Started the backup."), "the model's last words are in the report")
        XCTAssertTrue(page.contains("data:image/png;base64,"), "the screenshot the model saw is in the report")
        XCTAssertFalse(page.contains("SECRET"))
    }

    /// Two daemons on one database (each with its own state directory and socket) both see a slot come due: it runs
    /// once. Several one-shot slots make a double run likely if the claim were not one transaction.
    func testTwoDaemonsOnOneDatabaseRunEachSlotOnce() throws {
        let slots = 4
        let server = try MockMessagesServer(
            replies: (0..<slots).map { _ in .stream(.turn(blocks: [.text("once")])) }
                + (0..<slots).map { _ in .stream(.turn(blocks: [.text("TWICE")])) })
        defer { server.stop() }
        func env(_ daemon: String) -> [String: String] {
            [
                "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-two-SECRET"),
                "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path, "HOME": dir.path,
                "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
                "XCLAW_STATE_DIR": dir.appendingPathComponent(daemon).path, "XCLAW_TEST_DAEMON": "0",
                "XDG_STATE_HOME": dir.appendingPathComponent("xdg-state").path,
            ]
        }
        let (first, second) = (env("state"), env("state-2"))
        defer { _ = try? runCLI(["daemon", "stop"], environment: second) }
        XCTAssertEqual(try runCLI(["agent", "create", "bot", "--tools", "memory"], environment: first).status, 0)
        let due = Date().addingTimeInterval(3)
        for slot in 0..<slots {
            let at = ISO8601DateFormatter().string(from: due.addingTimeInterval(Double(slot)))
            let added = try runCLI(
                ["schedule", "add", "bot", "slot \(slot)", "--at", at, "--name", "slot-\(slot)"], environment: first)
            XCTAssertEqual(added.status, 0, added.stderr)
        }
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: first).status, 0)
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: second).status, 0)
        try eventually("every slot completed", within: .seconds(40), every: .milliseconds(200)) {
            let done =
                try JSONValue.parse(try runCLI(["runs", "bot", "--json"], environment: first).stdout).array ?? []
            return done.filter { $0["status"]?.string == "completed" }.count >= slots
        }
        // Kept: time for a double run to show, which would start within the daemons' 1 s tick.
        Thread.sleep(forTimeInterval: 2)
        let runs = try JSONValue.parse(try runCLI(["runs", "bot", "--json"], environment: first).stdout).array ?? []
        // On a failure, what the two daemons said: which claimed which slot, and how each run ended.
        func logs() -> String {
            ["state", "state-2"].flatMap { state in
                ["schedule.log", "daemon.log"].map { name in
                    "\n== \(state)/\(name):\n"
                        + ((try? String(contentsOf: dir.appendingPathComponent("\(state)/\(name)"), encoding: .utf8))
                            ?? "(none)")
                }
            }.joined()
        }
        XCTAssertEqual(
            runs.compactMap { $0["task"]?.string }.sorted(), (0..<slots).map { "slot-\($0)" },
            runs.count == slots ? "" : logs())
        XCTAssertEqual(server.requests.count, slots, "each slot ran exactly once")
        let history = try runCLI(["history", "bot"], environment: first)
        XCTAssertFalse(history.text.contains("TWICE"), history.text)
    }

    /// `schedule add --replay`: a task whose script replays is done without the model; one whose script diverges
    /// (its button is not there) falls back to the agent, which the model answers.
    func testAReplayingTaskAsksNoModelAndOneThatDivergesFallsBackToTheAgent() throws {
        let display = try TestDisplay(size: Size(width: 1280, height: 800))
        defer { display.stop() }
        let frame = Rect(x: 100, y: 100, width: 600, height: 300)
        let fixture = try Fixture(
            display: display.name, title: "form", frame: frame, extra: ["--button", "300,40,120,36:Submit"])
        defer { fixture.stop() }
        func script(_ label: String) throws -> String {
            let path = dir.appendingPathComponent("\(label).json").path
            let json = """
                {"format": "xclaw-script", "version": 1, "run": 1, "agent": "bot", "prompt": "press it",
                 "parameters": {}, "steps": [{"tool": "computer", "action": "left_click", "x": 460, "y": 158,
                 "target": {"label": "\(label)", "role": "button", "box": [400, 140, 120, 36], "windowTitle": "form"},
                 "pre": {"anchorVisible": true}, "post": {"appeared": [], "vanished": [], "changed": false}}]}
                """
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let server = try MockMessagesServer(replies: [.stream(.turn(blocks: [.text("Fell back to the agent.")]))])
        defer { server.stop() }
        let env = [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-replay-SECRET"),
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path, "HOME": dir.path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "XCLAW_STATE_DIR": dir.appendingPathComponent("state").path, "XCLAW_TEST_DAEMON": "0",
            "XDG_STATE_HOME": dir.appendingPathComponent("xdg-state").path,
        ]
        // Submit is gated for unattended runs, replays included; this agent may press it.
        XCTAssertEqual(
            try runCLI(
                ["agent", "create", "bot", "--tools", "memory", "--display", display.name, "--approval", "none"],
                environment: env
            ).status, 0)
        let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        for (name, label) in [("replayed", "Submit"), ("diverged", "Nope")] {
            let added = try runCLI(
                ["schedule", "add", "bot", "press it", "--at", soon, "--name", name, "--replay", try script(label)],
                environment: env)
            XCTAssertEqual(added.status, 0, added.stderr)
        }
        let bad = try runCLI(
            ["schedule", "add", "bot", "p", "--every", "1h", "--replay", dir.appendingPathComponent("none.json").path],
            environment: env)
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: env).status, 0)
        var results: [String: String] = [:]
        try eventually("both tasks ran", within: .seconds(40), every: .milliseconds(200)) {
            for name in ["replayed", "diverged"] {
                let shown = try JSONValue.parse(
                    try runCLI(["schedule", "show", name, "--json"], environment: env).stdout)
                if let result = shown["runs"]?.array?.last?["result"]?.string { results[name] = result }
            }
            return results.count == 2
        }
        XCTAssertTrue(
            results["replayed"]?.hasPrefix("replayed 1 step(s) without the model (run ") == true, "\(results)")
        XCTAssertEqual(results["diverged"], "the replay diverged; the agent ran")
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1, "the replay pressed Submit once")
        XCTAssertEqual(server.requests.count, 1, "only the diverged task asked the model")
        // Both replays are runs of their tasks, with kept reports; the diverged one is followed by the agent's run.
        let runs = try XCTUnwrap(try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array)
        let replayed = runs.filter { $0["task"]?.string == "replayed" }
        XCTAssertEqual(replayed.count, 1, "\(runs)")
        XCTAssertEqual(replayed.first?["replay"]?["replayed"]?.int, 1)
        XCTAssertEqual(replayed.first?["cost_usd"]?.double, 0)
        XCTAssertNotNil(replayed.first?["report"]?.string, "its report is kept")
        let diverged = runs.filter { $0["task"]?.string == "diverged" }
        XCTAssertEqual(diverged.map { $0["replay"] == .null }, [false, true], "\(diverged)")
        XCTAssertEqual(diverged.first?["replay"]?["failed"]?.int, 1)

        // run-now replays first too, without the model.
        fixture.clear()
        let now = try runCLI(["schedule", "run-now", "replayed"], environment: env)
        XCTAssertEqual(now.status, 0, now.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1, "run-now pressed Submit through the replay")
        XCTAssertEqual(server.requests.count, 1, "run-now asked no model")
    }
}

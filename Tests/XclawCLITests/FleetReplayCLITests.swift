import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `run` and `replay` with a fleet: a worker on its own display runs a one-shot task the client queued (its replies
/// stream back, its steps are in the shared database); the client exports the run's script and replays it on the
/// worker; a replay of a file stores the file in the database, and the revision the worker's healed replay saved there
/// comes back into the file. Stored scripts are listed and replayed by name. An approval the worker's run waits for
/// is given on the client's host.
final class FleetReplayCLITests: FleetTestCase {
    private let frame = Rect(x: 200, y: 150, width: 800, height: 400)
    private var button: Rect { Rect(x: frame.x + 300, y: frame.y + 40, width: 120, height: 36) }

    /// The fixture's form with its button labelled `label`.
    private func form(_ display: TestDisplay, _ label: String) throws -> Fixture {
        try Fixture(
            display: display.name, title: "form", frame: frame,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:\(label)"])
    }

    func testARunAndAReplayAreQueuedAndAHealedRevisionComesBackToTheFile() throws {
        let display = try TestDisplay(size: Size(width: 1920, height: 1080))
        defer { display.stop() }
        var fixture = try form(display, "Submit")
        defer { fixture.stop() }
        // The default model sees the 1080p screen whole.
        let target = ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: .highRes).toModel(button.center)
        let server = try MockMessagesServer { request, _ in
            let body = String(decoding: request.body, as: UTF8.self)
            // A replay's healing question: the control's new label.
            if body.contains("no longer on the screen as it was") { return .text("Finish") }
            if body.contains("Say hello") { return .text("Hello.") }
            return request.toolResults.isEmpty ? .leftClick(x: target.x, y: target.y) : .text("Pressed it.")
        }
        defer { server.stop() }
        let url = try PostgresTestServer.shared().newDatabase()
        // The worker presses "Submit" unattended; the approval gate has tests of its own.
        let config = dir.appendingPathComponent("worker-config")
        try FileManager.default.createDirectory(
            at: config.appendingPathComponent("xclaw"), withIntermediateDirectories: true)
        try "approval = none\n".write(
            to: config.appendingPathComponent("xclaw/config"), atomically: true, encoding: .utf8)
        _ = try startWorker(
            "desk", [], url, server, environment: ["DISPLAY": display.name, "XDG_CONFIG_HOME": config.path])
        let e = client(url, server)
        func cli(_ arguments: [String]) throws -> CLIResult {
            try runCLI(arguments, environment: e, removing: ["XCLAW_DB", "DISPLAY"])
        }

        // A one-shot run, queued: the worker clicks, the reply streams back here. Its --system file is read here,
        // and its text reaches the worker whole, though it starts with "-".
        let system = dir.appendingPathComponent("system.md")
        try "- answer in four words\n".write(to: system, atomically: true, encoding: .utf8)
        let ran = try cli(["run", "Press Submit", "--tools", "computer", "--system", system.path])
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertTrue(
            String(decoding: try XCTUnwrap(server.requests.first).body, as: UTF8.self).contains(
                "- answer in four words"))
        XCTAssertTrue(ran.text.contains("Pressed it."), ran.text)
        XCTAssertTrue(ran.stderr.contains("queued as fleet run 1"), ran.stderr)
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertTrue(button.contains(Point(x: press.rootX ?? -1, y: press.rootY ?? -1)), "\(press)")
        let fleetRun = try XCTUnwrap(try JSONValue.parse(try cli(["fleet", "runs", "--json"]).stdout).array?.first)
        XCTAssertEqual(fleetRun["kind"]?.string, "run")
        XCTAssertEqual(fleetRun["status"]?.string, "completed")
        let agent = try XCTUnwrap(fleetRun["agent"]?.string)
        XCTAssertTrue(agent.hasPrefix("run-"), agent)
        let run = try XCTUnwrap(fleetRun["session"]?.int)
        // An empty value reaches the worker as one (no tools: the reply is all).
        let bare = try cli(["run", "Say hello", "--tools", "", "--no-wait"])
        XCTAssertEqual(bare.status, 0, bare.stderr)
        let bareRun = bare.text.trimmingCharacters(in: .whitespacesAndNewlines)
        eventually("the toolless run completes") {
            (try? JSONValue.parse(try cli(["fleet", "runs", "--json"]).stdout))?.array?
                .first { "\($0["id"]?.int ?? 0)" == bareRun }?["status"]?.string == "completed"
        }

        // What this host cannot hand to a worker is refused before anything is queued.
        let confirm = try cli(["run", "Press Submit", "--confirm"])
        XCTAssertEqual(confirm.status, 2, confirm.stderr)
        XCTAssertTrue(confirm.stderr.contains("--confirm is for a run on this host"), confirm.stderr)
        XCTAssertEqual(try JSONValue.parse(try cli(["fleet", "runs", "--json"]).stdout).array?.count, 2)

        // An approval the worker's run waits for is given on this host: the gated click happens only then.
        let careful = try cli(
            ["agent", "create", "careful", "--tools", "computer", "--approval", "all", "--display", display.name])
        XCTAssertEqual(careful.status, 0, careful.stderr)
        fixture.clear()
        let gated = try startFollower(["send", "careful", "Press Submit"], e)
        defer { _ = gated.kill() }
        var waiting: Int?
        eventually("the click waits for approval on the worker", within: .seconds(30)) {
            let runs = (try? JSONValue.parse(try cli(["runs", "careful", "--json"]).stdout))?.array ?? []
            waiting = runs.last.flatMap { $0["status"]?.string == "needs-approval" ? $0["id"]?.int : nil }
            return waiting != nil
        }
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty, "clicked before approval")
        let approved = try cli(["approve", "\(waiting ?? 0)"])
        XCTAssertEqual(approved.status, 0, approved.stderr)
        let (replied, gatedErrors, _) = gated.read(until: .now + .seconds(30))
        let said = String(decoding: gatedErrors, as: UTF8.self)
        XCTAssertEqual(gated.wait(deadline: .now + .seconds(10)), .exited(0), said)
        XCTAssertTrue(String(decoding: replied, as: UTF8.self).contains("Pressed it."), said)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1, "pressed once approved")

        // The run's script, exported here from the shared database.
        let file = dir.appendingPathComponent("press.json").path
        let exported = try cli(["script", "export", "\(run)", "-o", file])
        XCTAssertEqual(exported.status, 0, exported.stderr)

        // The button renamed: a replay of the run id, queued, diverges on the worker (exit 1) and clicks nothing.
        fixture.stop()
        fixture = try form(display, "Finish")
        let diverged = try cli(["replay", "\(run)", "--heal", "never", "--timeout", "1"])
        XCTAssertEqual(diverged.status, 1, diverged.stderr)
        XCTAssertTrue(diverged.stderr.contains("step 1 diverged"), diverged.stderr)
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty)

        // The file replayed: stored in the database, healed on the worker (its key, its model), and the healed
        // revision written back into the file here, the one before kept beside it.
        let healed = try cli(["replay", file, "--timeout", "1", "--json"])
        XCTAssertEqual(healed.status, 0, healed.stderr)
        let outcome = try JSONValue.parse(healed.stdout)
        XCTAssertEqual(outcome["healed"]?.int, 1, healed.text)
        XCTAssertEqual(outcome["model_requests"]?.int, 1)
        XCTAssertEqual(outcome["saved"]?.string, file)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        let saved = try JSONValue.parse(String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(saved["revision"]?.int, 2)
        XCTAssertEqual(saved["steps"]?.array?.first?["target"]?["label"]?.string, "Finish")
        XCTAssertEqual(
            try JSONValue.parse(String(contentsOfFile: file + ".rev1", encoding: .utf8))["revision"]?.int, 1)

        // The file put back as it was before the heal: it is an older revision of what is stored, so it is not
        // stored again over the healed one; the healed revision is written into it and replayed, without the model.
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.copyItem(atPath: file + ".rev1", toPath: file)
        fixture.clear()
        let stale = try cli(["replay", file, "--timeout", "1", "--heal", "never"])
        XCTAssertEqual(stale.status, 0, stale.stderr)
        XCTAssertTrue(
            stale.stderr.contains("was revision 1; revision 2, healed since, was written into it"), stale.stderr)
        XCTAssertEqual(try JSONValue.parse(String(contentsOfFile: file, encoding: .utf8))["revision"]?.int, 2)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)

        // The stored script, listed on any host, and replayed by name without the model.
        let listed = try XCTUnwrap(try JSONValue.parse(try cli(["script", "list", "--json"]).stdout).array)
        let name = "\(ProcessInfo.processInfo.hostName):\(file)"
        XCTAssertEqual(listed.map { $0["name"]?.string }, [name])
        XCTAssertEqual(listed.first?["revision"]?.int, 2)
        let requests = server.requests.count
        fixture.clear()
        let again = try cli(["replay", "--stored", name, "--heal", "never", "--json"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try JSONValue.parse(again.stdout)["replayed"]?.int, 1)
        XCTAssertEqual(server.requests.count, requests, "the healed revision needed no model")
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        // A scheduled replay of a file: the script is stored at `schedule add`, so the worker whose scheduler claims
        // the slot replays it from the database, without the model.
        fixture.clear()
        let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(5))
        let scheduled = try cli([
            "schedule", "add", agent, "press it", "--at", soon, "--name", "nightly", "--replay", file,
        ])
        XCTAssertEqual(scheduled.status, 0, scheduled.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress, timeout: 40).count, 1, "the scheduled replay pressed it")
        eventually("the scheduled replay is recorded") {
            let runs = (try? JSONValue.parse(try cli(["runs", "--json", "--task", "nightly"]).stdout))?.array ?? []
            return runs.contains { $0["replay"]?["replayed"]?.int == 1 && $0["status"]?.string == "completed" }
        }
        XCTAssertEqual(server.requests.count, requests, "nor did the scheduled one")
        let kinds = try XCTUnwrap(try JSONValue.parse(try cli(["fleet", "runs", "--json"]).stdout).array)
        XCTAssertEqual(kinds.map { $0["kind"]?.string }, ["run", "run", "send"] + Array(repeating: "replay", count: 5))
        XCTAssertEqual(kinds.map { $0["worker"]?.string }, Array(repeating: "desk", count: 8))

        // Stored here too, by name: the same script again is not a new revision; the --json outputs follow their
        // schemas (docs/json).
        let store = try cli(["script", "save", file, "--name", name, "--json"])
        XCTAssertEqual(store.status, 0, store.stderr)
        XCTAssertEqual(try JSONValue.parse(store.stdout)["revision"]?.int, 2)
        XCTAssertEqual(
            try JSONSchemas.errors([
                JSONSchemas.Check(name: "script save", schema: "script-save", stdout: store.stdout),
                JSONSchemas.Check(
                    name: "script list", schema: "script-list", stdout: try cli(["script", "list", "--json"]).stdout),
                JSONSchemas.Check(name: "replay", schema: "replay", stdout: again.stdout),
            ]), [])

        // Bad input: a stored name that is not one (1, naming those stored), two scripts at once, --heal ask.
        let unknown = try cli(["replay", "--stored", "nope"])
        XCTAssertEqual(unknown.status, 1, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("no stored script named \"nope\""), unknown.stderr)
        XCTAssertEqual(try cli(["replay", file, "--stored", name]).status, 2)
        let ask = try cli(["replay", file, "--heal", "ask"])
        XCTAssertEqual(ask.status, 2, ask.stderr)
        XCTAssertTrue(ask.stderr.contains("a worker runs a fleet replay"), ask.stderr)
        // A password typed by a step is never recorded, and a queued run's command line is kept in the database:
        // its --param is refused for the fleet.
        var secretScript = try JSONValue.parse(String(contentsOfFile: file, encoding: .utf8))
        if case .object(var root) = secretScript, case .array(var steps)? = root["steps"],
            case .object(var step)? = steps.first
        {
            step["parameter"] = .string("p9")
            step["action"] = .string("type")
            step.removeValue(forKey: "text")
            steps.append(.object(step))
            root["steps"] = .array(steps)
            secretScript = .object(root)
        }
        let secretFile = dir.appendingPathComponent("secret.json").path
        try Data(secretScript.jsonText.utf8).write(to: URL(fileURLWithPath: secretFile))
        let secret = try cli(["replay", secretFile, "--param", "P9=hunter2"])
        XCTAssertEqual(secret.status, 2, secret.stderr)
        XCTAssertTrue(secret.stderr.contains("fills a password"), secret.stderr)
        XCTAssertEqual(try JSONValue.parse(try cli(["fleet", "runs", "--json"]).stdout).array?.count, 8)
        XCTAssertFalse(
            try PostgresTestServer.shared().query("SELECT arguments FROM fleet_runs", url: url).contains("hunter2"))
    }
}

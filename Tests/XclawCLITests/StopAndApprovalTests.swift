import Foundation
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawRuntime
import XclawScreen
import XclawStore
import XclawTesting
import XclawTimeTesting

/// The emergency stop and the approval gates end to end: real `xclaw run` processes on a real Xvfb with the fixture
/// app, the loopback Messages API as the model, and the database and the display as oracles. The stop's latency is
/// measured and printed (the issue's 200 ms); the assertions hold it only to a loose bound, since this machine is
/// noisy and speed is the benchmarks' business.
final class StopAndApprovalTests: XCTestCase {
    private var display: TestDisplay!
    private var fixture: Fixture!
    private var dir: URL!
    private let frame = Rect(x: 100, y: 100, width: 600, height: 300)
    /// The fixture's Delete button, in screen pixels.
    private var button: Rect { Rect(x: frame.x + 200, y: frame.y + 60, width: 120, height: 40) }

    override func setUpWithError() throws {
        display = try TestDisplay(size: Size(width: 1024, height: 768))
        fixture = try Fixture(
            display: display.name, title: "files", frame: frame,
            extra: [
                "--text", "20,20,10x20,#000000:Old files",
                "--button", "200,60,120,40:Delete",
            ])
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-stop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
    }

    override func tearDown() {
        fixture?.stop()
        display?.stop()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    private func environment(_ server: MockMessagesServer, config: String = "") throws -> [String: String] {
        try config.write(to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        return [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-stop-SECRET"), "HOME": dir.path,
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]
    }

    /// Creates an agent on the test's display.
    private func createAgent(_ name: String, tools: String, _ env: [String: String]) throws {
        let created = try runCLI(
            ["agent", "create", name, "--tools", tools, "--display", display.name], environment: env)
        XCTAssertEqual(created.status, 0, created.stderr)
    }

    private static func tool(_ id: String, _ name: String, _ input: String) -> MockReply {
        .stream(.turn(blocks: [.toolUse(id: id, name: name, input: input)], stopReason: "tool_use"))
    }

    /// The newest session, polled until `done` holds it or the deadline passes.
    private func session(_ env: [String: String], timeout: TimeInterval = 20, until done: (SessionRecord) -> Bool)
        throws -> SessionRecord?
    {
        let store = try AgentStore(path: try XCTUnwrap(env["XCLAW_DB"]))
        let last = { try? store.sessions(agent: nil).last }
        return poll(within: .seconds(timeout), every: .milliseconds(5)) { last().flatMap { done($0) ? $0 : nil } }
            ?? last()
    }

    /// A run that holds the mouse button and a key, stopped by `xclaw stop`: it ends `stopped` at once, with both
    /// released, every tool call answered, and exit 130.
    func testXclawStopEndsARunHoldingKeysAndButtonsAtOnce() throws {
        // Pressed on the window's empty part: pressing Delete would wait for approval.
        let point = Point(x: frame.x + 450, y: frame.y + 220)
        let server = try MockMessagesServer(replies: [
            Self.tool(
                "toolu_1", "computer",
                "{\"action\": \"left_mouse_down\", \"coordinate\": [\(point.x), \(point.y)]}"),
            Self.tool("toolu_2", "computer", "{\"action\": \"hold_key\", \"text\": \"shift\", \"duration\": 60}"),
            .stream(.turn(blocks: [.text("never reached")])),
        ])
        defer { server.stop() }
        let env = try environment(server)
        try createAgent("holder", tools: "computer", env)
        let run = try launchCLI(["send", "holder", "hold things"], environment: env)
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        // Wait until the key is held (the second tool call is running).
        XCTAssertFalse(fixture.wait(for: .buttonPress, timeout: 20).isEmpty, "the button went down")
        XCTAssertFalse(fixture.wait(for: .keyPress, timeout: 20).isEmpty, "shift went down")
        let stop = try runCLI(["stop", "holder", "--json"], environment: env)
        XCTAssertEqual(stop.status, 0, stop.stderr)
        let rows = try XCTUnwrap(try JSONValue.parse(stop.stdout).array)
        XCTAssertEqual(rows.count, 1, stop.text)
        XCTAssertEqual(rows.first?["status"]?.string, "stopped")
        let ms = try XCTUnwrap(rows.first?["stopped_ms"]?.double)
        print("xclaw stop → run stopped in \(Int(ms)) ms (target 200 ms)")
        XCTAssertLessThan(ms, 2000, "the stop waited on something it should not")
        run.waitUntilExit()
        XCTAssertEqual(run.terminationStatus, 130)
        // Nothing stays held: the fixture saw the releases, and the server holds nothing.
        XCTAssertFalse(fixture.wait(for: .buttonRelease, timeout: 5).isEmpty, "the button was released")
        XCTAssertFalse(fixture.wait(for: .keyRelease, timeout: 5).isEmpty, "shift was released")
        let input = try InputController(connection: try display.connect())
        XCTAssertEqual(try input.releaseEverything(), 0, "a key or button was still down")
        // Recorded as stopped, with every tool call answered.
        let store = try AgentStore(path: try XCTUnwrap(env["XCLAW_DB"]))
        let session = try XCTUnwrap(try store.sessions(agent: "holder").last)
        XCTAssertEqual(session.status, .stopped)
        XCTAssertTrue(session.error?.contains("xclaw stop") == true, session.error ?? "")
        let conversation = Conversation.build(try store.messages(agent: "holder"))
        XCTAssertEqual(ConversationCheck.unansweredToolUses(conversation), [])
        XCTAssertEqual(server.requests.count, 2, "no request after the stop")
        // Nothing in flight any more; bad targets are refused.
        XCTAssertEqual(try runCLI(["stop", "--all"], environment: env).text, "no run in flight\n")
        XCTAssertEqual(try runCLI(["stop", "9999"], environment: env).status, 1)
        XCTAssertEqual(try runCLI(["stop", "nobody"], environment: env).status, 1)
        XCTAssertEqual(try runCLI(["stop"], environment: env).status, 2)
        XCTAssertEqual(try runCLI(["stop", "holder", "--all"], environment: env).status, 2)
    }

    /// The hotkey on the run's display stops a run waiting on the model; with the failsafe on, so does the pointer
    /// parked in a corner.
    func testTheHotkeyAndTheCornerFailsafeStopARun() throws {
        let server = try MockMessagesServer(replies: [.hang, .hang])
        defer { server.stop() }
        let env = try environment(server, config: "failsafe = on\n")
        for (index, (agent, trigger)) in [("by-key", ["key", "ctrl+alt+Pause"]), ("by-corner", ["move", "0", "0"])]
            .enumerated()
        {
            try createAgent(agent, tools: "computer", env)
            let run = try launchCLI(["send", agent, "wait"], environment: env)
            defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
            XCTAssertNotNil(try session(env) { $0.agent == agent && $0.status == .running })
            // The run is waiting on the model once its request arrived.
            // The hotkey is grabbed (and the failsafe watched) before the request goes out.
            eventually("the run asked the model", within: .seconds(20)) { server.requests.count >= index + 1 }
            let pressed = Date()
            let result = try runCLI(trigger + ["--display", display.name], environment: env)
            XCTAssertEqual(result.status, 0, result.stderr)
            let stopped = try session(env) { $0.agent == agent && $0.status == .stopped }
            XCTAssertEqual(stopped?.status, .stopped, "\(agent): \(stopped?.error ?? "")")
            print(
                "\(agent): stopped \(Int(Date().timeIntervalSince(pressed) * 1000)) ms after the trigger command began")
            XCTAssertTrue(
                stopped?.error?.contains(agent == "by-key" ? "hotkey" : "corner") == true, stopped?.error ?? "")
            run.waitUntilExit()
            XCTAssertEqual(run.terminationStatus, 130)
            if agent == "by-corner" {
                _ = try runCLI(["move", "500", "500", "--display", display.name], environment: env)
            }
        }
    }

    /// On a display xclaw started for the run (`new`) no person can press anything, so the hotkey and the failsafe
    /// are not armed there: the agent's own press of the stop chord and its move into a corner are input like any
    /// other, and the run goes on to its end.
    func testAnAgentsOwnHotkeyAndCornerOnItsPrivateDisplayDoNotStopIt() throws {
        let chord = "{\"action\": \"key\", \"text\": \"ctrl+alt+Pause\"}"
        let corner = "{\"action\": \"mouse_move\", \"coordinate\": [0, 0]}"
        for (agent, action) in [("by-key", chord), ("by-corner", corner)] {
            let server = try MockMessagesServer(replies: [
                Self.tool("toolu_1", "computer", action), .stream(.turn(blocks: [.text("done")])),
            ])
            defer { server.stop() }
            let env = try environment(server, config: "failsafe = on\n")
            let created = try runCLI(
                ["agent", "create", agent, "--tools", "computer", "--display", "new:640x480"], environment: env)
            XCTAssertEqual(created.status, 0, created.stderr)
            let run = try runCLI(["send", agent, "press the stop chord, or park the pointer"], environment: env)
            XCTAssertEqual(run.status, 0, "\(agent): \(run.stderr)")
            let ended = try session(env) { $0.agent == agent && $0.status != .running }
            XCTAssertEqual(ended?.status, .completed, "\(agent): \(ended?.error ?? "")")
            XCTAssertEqual(server.requests.count, 2, "\(agent): every reply was asked for")
        }
    }

    /// An unattended "Delete" waits as needs-approval; `approve` lets it click, `deny` and the timeout do not, and
    /// the model is told. Bad decisions are refused with their exit codes.
    func testAnUnattendedDeleteWaitsForApprovalThenIsApprovedOrDenied() throws {
        let script: [MockReply] = [
            Self.tool("toolu_1", "tap_element", "{\"label\": \"Delete\"}"),
            .stream(.turn(blocks: [.text("Finished.")])),
        ]
        let server = try MockMessagesServer(replies: script + script + script)
        defer { server.stop() }
        let env = try environment(server, config: "approval_timeout = 2\n")
        for (agent, decision) in [("approved", "approve"), ("denied", "deny"), ("timed-out", "")] {
            fixture.clear()
            try createAgent(agent, tools: "tap_element", env)
            let run = try launchCLI(["send", agent, "delete the old files"], environment: env)
            defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
            let waiting = try session(env) { $0.agent == agent && $0.status == .needsApproval }
            XCTAssertEqual(waiting?.status, .needsApproval, agent)
            let runs = try JSONValue.parse(try runCLI(["runs", agent, "--json"], environment: env).stdout)
            if decision != "" {
                XCTAssertEqual(runs.array?.last?["status"]?.string, "needs-approval")
            }
            XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty, "clicked before approval")
            if decision != "", let id = waiting?.id {
                let decided = try runCLI([decision, "\(id)", "--json"], environment: env)
                XCTAssertEqual(decided.status, 0, decided.stderr)
                XCTAssertEqual(
                    try JSONValue.parse(decided.stdout)["decision"]?.string,
                    decision == "approve" ? "approved" : "denied")
                XCTAssertEqual(try runCLI([decision, "\(id)"], environment: env).status, 1, "decided twice")
            }
            run.waitUntilExit()
            XCTAssertEqual(run.terminationStatus, 0, agent)
            let final = try session(env) { $0.agent == agent && $0.status.isFinal }
            XCTAssertEqual(final?.status, .completed, agent)
            let presses = fixture.received.filter { $0.kind == .buttonPress }
            XCTAssertEqual(presses.isEmpty, decision != "approve", "\(agent): \(presses)")
        }
        // What the model read each time.
        let results = server.requests.enumerated().filter { $0.offset % 2 == 1 }.map {
            String(decoding: $0.element.body, as: UTF8.self)
        }
        XCTAssertEqual(results.count, 3)
        XCTAssertTrue(results[0].contains("tapped"), results[0])
        XCTAssertTrue(results[1].contains("not approved") && results[1].contains("xclaw deny"), results[1])
        XCTAssertTrue(results[2].contains("not approved") && results[2].contains("nobody within 2 s"), results[2])
        XCTAssertEqual(try runCLI(["approve", "9999"], environment: env).status, 1)
        XCTAssertEqual(try runCLI(["approve", "abc"], environment: env).status, 2)
        XCTAssertEqual(try runCLI(["deny"], environment: env).status, 2)
    }

    /// The display dies between the model's answer and the gate's look at what a click would press: the run ends
    /// at once with exit 3, like every other lost display, instead of handing the model a tool error to try again.
    func testADisplayLostUnderTheApprovalGateEndsTheRunWithExit3() throws {
        let server = try MockMessagesServer(handler: { [display, button] _, index in
            guard index == 0, let display else { return .stream(.turn(blocks: [.text("Finished.")])) }
            kill(display.server.pid, SIGKILL)
            eventually("Xvfb is gone, its sockets closed") { !Subprocess.isRunning(display.server.pid) }
            let (x, y) = (button.x + button.width / 2, button.y + button.height / 2)
            return Self.tool("toolu_1", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(x), \(y)]}")
        })
        defer { server.stop() }
        let env = try environment(server)
        let log = dir.appendingPathComponent("gated.jsonl").path
        let ran = try runCLI(
            ["run", "delete the old files", "--display", display.name, "--tools", "computer", "--log", log],
            environment: env)
        XCTAssertEqual(ran.status, 3, ran.stderr)
        XCTAssertTrue(ran.stderr.contains("lost the connection"), ran.stderr)
        XCTAssertEqual(server.requests.count, 1, "the model was not asked again after the display died")
        let final = try session(env) { $0.status.isFinal }
        XCTAssertEqual(final?.status, .failed)
        // The failed click is logged once, with its point and time (no bare second record).
        let records = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
            try JSONValue.parse(String($0))
        }
        XCTAssertEqual(records.count, 1, "\(records.map(\.jsonText))")
        XCTAssertEqual(records.first?["action"]?.string, "left_click")
        XCTAssertEqual(records.first?["x"]?.int, button.x + button.width / 2)
        XCTAssertNotNil(records.first?["ms"]?.double)
        XCTAssertTrue(records.first?["result"]?.string?.contains("lost the connection") ?? false, "\(records)")
    }

    /// An agent whose policy gates nothing clicks at once; one whose policy does not parse is refused up front.
    func testAPolicyOfNoneLetsTheClickThroughAndABadOneIsRefused() throws {
        let server = try MockMessagesServer(replies: [
            Self.tool("toolu_1", "tap_element", "{\"label\": \"Delete\"}"),
            .stream(.turn(blocks: [.text("Finished.")])),
        ])
        defer { server.stop() }
        let env = try environment(server)
        let created = try runCLI(
            [
                "agent", "create", "free", "--tools", "tap_element", "--display", display.name, "--approval", "none",
                "--json",
            ], environment: env)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual(try JSONValue.parse(created.stdout)["approval"]?.string, "none")
        let sent = try runCLI(["send", "free", "delete the old files"], environment: env)
        XCTAssertEqual(sent.status, 0, sent.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        let bad = try runCLI(["agent", "set", "free", "--approval", "delete,explode"], environment: env)
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("accept-terms"), bad.stderr)
        let set = try runCLI(["agent", "set", "free", "--approval", "delete,send", "--json"], environment: env)
        XCTAssertEqual(try JSONValue.parse(set.stdout)["approval"]?.string, "delete,send")
        let badConfig = try environment(server, config: "approval = everything\n")
        let refused = try runCLI(["send", "free", "again"], environment: badConfig)
        XCTAssertEqual(refused.status, 2, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("approval = everything"), refused.stderr)
    }

    /// A run still starting its private display's setup command is stopped as quickly, and recorded as stopped.
    func testAStopDuringTheSetupCommandEndsTheRunAtOnce() throws {
        let server = try MockMessagesServer(replies: [.stream(.turn(blocks: [.text("never asked")]))])
        defer { server.stop() }
        let env = try environment(server)
        let seen = dir.appendingPathComponent("setup-environment").path
        let created = try runCLI(
            [
                "agent", "create", "slow-setup", "--tools", "computer", "--display", "new:320x240", "--setup",
                "env > '\(seen)'; sleep 60",
            ], environment: env)
        XCTAssertEqual(created.status, 0, created.stderr)
        let run = try launchCLI(["send", "slow-setup", "look"], environment: env)
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        XCTAssertNotNil(try session(env) { $0.agent == "slow-setup" && $0.status == .running })
        eventually("the setup command ran on the run's display") {
            (try? String(contentsOfFile: seen, encoding: .utf8))?.contains("DISPLAY=:") == true
        }
        let stop = try runCLI(["stop", "slow-setup", "--json"], environment: env)
        XCTAssertEqual(stop.status, 0, stop.stderr)
        let row = try XCTUnwrap(try JSONValue.parse(stop.stdout).array?.first)
        XCTAssertEqual(row["status"]?.string, "stopped")
        print("xclaw stop during the setup → stopped in \(row["stopped_ms"]?.int ?? -1) ms")
        run.waitUntilExit()
        XCTAssertEqual(run.terminationStatus, 130)
        XCTAssertEqual(server.requests.count, 0, "the model was never asked")
        // The setup got the run's display, never the API key (an agent could read it back off a terminal).
        let environment = try String(contentsOfFile: seen, encoding: .utf8)
        XCTAssertTrue(environment.contains("DISPLAY=:"), environment)
        XCTAssertFalse(environment.contains("SECRET"), "the API key reached the setup command")
    }

    /// The gate classifies what a click without a coordinate presses (the control under the pointer) and what a drag
    /// drops onto: both wait for approval; denied, nothing is pressed.
    func testAClickAtThePointerAndADragOntoDeleteAreGated() throws {
        let c = button.center
        let server = try MockMessagesServer(replies: [
            Self.tool("toolu_1", "computer", "{\"action\": \"mouse_move\", \"coordinate\": [\(c.x), \(c.y)]}"),
            Self.tool("toolu_2", "computer", "{\"action\": \"left_click\"}"),
            Self.tool(
                "toolu_3", "computer",
                "{\"action\": \"left_click_drag\", \"start_coordinate\": [\(frame.x + 40), \(frame.y + 200)], "
                    + "\"coordinate\": [\(c.x), \(c.y)]}"),
            .stream(.turn(blocks: [.text("Finished.")])),
        ])
        defer { server.stop() }
        let env = try environment(server)
        try createAgent("pointer", tools: "computer", env)
        let run = try launchCLI(["send", "pointer", "delete via the pointer"], environment: env)
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        for _ in 0..<2 {
            let waiting = try session(env) { $0.agent == "pointer" && $0.status == .needsApproval }
            XCTAssertEqual(waiting?.status, .needsApproval)
            let denied = try runCLI(["deny", "\(waiting?.id ?? 0)"], environment: env)
            XCTAssertEqual(denied.status, 0, denied.stderr)
            _ = try session(env) { $0.agent == "pointer" && $0.status != .needsApproval }
        }
        run.waitUntilExit()
        XCTAssertEqual(run.terminationStatus, 0)
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty, "a denied press happened")
        let bodies = server.requests.map { String(decoding: $0.body, as: UTF8.self) }
        XCTAssertTrue(bodies[2].contains("not approved"), bodies[2])
        XCTAssertTrue(bodies[3].contains("not approved"), bodies[3])
    }

    /// "OK" in a dialog that asks to delete is a delete: the gate reads the question a generic answer answers.
    func testAnOKThatConfirmsADeleteIsGated() throws {
        fixture.stop()
        fixture = try Fixture(
            display: display.name, title: "Confirm", frame: frame,
            extra: ["--text", "20,20,10x20,#000000:Delete 3 files permanently?", "--button", "200,60,120,40:OK"])
        let server = try MockMessagesServer(replies: [
            Self.tool("toolu_1", "tap_element", "{\"label\": \"OK\"}"),
            .stream(.turn(blocks: [.text("Finished.")])),
        ])
        defer { server.stop() }
        let env = try environment(server, config: "approval_timeout = 1\n")
        try createAgent("confirmer", tools: "tap_element", env)
        let sent = try runCLI(["send", "confirmer", "confirm it"], environment: env)
        XCTAssertEqual(sent.status, 0, sent.stderr)
        XCTAssertTrue(sent.stderr.contains("waits for approval"), sent.stderr)
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty, "OK was pressed without approval")
        let body = String(decoding: server.requests[1].body, as: UTF8.self)
        XCTAssertTrue(body.contains("not approved"), body)
    }
}

import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawStore
import XclawTesting
import XclawTimeTesting

/// `xclaw pipeline` as a user runs it, in-process and through the daemon: a run that streams its progress and prints
/// the answer, `list` and `show`, a cancel from another process measured, and bad input refused. The model is the
/// loopback Messages API scripted per role.
final class PipelineCLITests: XCTestCase {
    private var dir: URL!
    private var server: MockMessagesServer!
    private let router = MockRouter()

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-pipecli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
        server = try MockMessagesServer(handler: router.handler)
    }

    override func tearDown() {
        server?.stop()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    private var env: [String: String] {
        [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-pipe-SECRET"), "HOME": dir.path,
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]
    }

    private static let orchestrator = "You are the orchestrator of a team"

    private static func delegate(_ id: String, _ role: String, _ task: String) -> MockBlock {
        .toolUse(id: id, name: "delegate", input: #"{"role":"\#(role)","task":"\#(task)"}"#)
    }

    /// The orchestrator delegates `blocks` first, then answers `answer`.
    private func scriptOrchestrator(_ blocks: [MockBlock], answer: String) {
        router.route(systemContains: Self.orchestrator) { request, _ in
            request.toolResults.isEmpty ? .stream(.turn(blocks: blocks, stopReason: "tool_use")) : .text(answer)
        }
    }

    func testAPipelineStreamsProgressPrintsTheAnswerAndIsListedAndShown() throws {
        scriptOrchestrator(
            [Self.delegate("d1", "researcher", "find the facts"), Self.delegate("d2", "writer", "draft it")],
            answer: "The final report.")
        router.route(systemContains: "You are the researcher", replies: [.text("Fact: 42.")])
        router.route(systemContains: "You are the writer", replies: [.text("A draft.")])
        let run = try runCLI(["pipeline", "write a report"], environment: env)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.text.trimmingCharacters(in: .whitespacesAndNewlines), "The final report.")
        // The default orchestrator is created and named; progress lines come as subtasks start and finish.
        XCTAssertTrue(run.stderr.contains("created the default orchestrator agent orchestrator"), run.stderr)
        XCTAssertTrue(run.stderr.contains("pipeline 1: started"), run.stderr)
        for role in ["researcher", "writer"] {
            XCTAssertTrue(run.stderr.contains("\(role) started"), run.stderr)
            XCTAssertTrue(run.stderr.contains("\(role) completed in"), run.stderr)
        }
        XCTAssertTrue(run.stderr.contains("pipeline 1: completed in"), run.stderr)
        XCTAssertFalse(run.stderr.contains("ant-pipe-SECRET"))

        let again = try runCLI(
            ["pipeline", "run", "another report", "--orchestrator", "orchestrator"], environment: env)
        // The children's scripts are spent: their subtasks fail, and the orchestrator still answers (partially).
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stderr.contains("researcher failed in"), again.stderr)
        let list = try runCLI(["pipeline", "list", "--json"], environment: env)
        XCTAssertEqual(list.status, 0, list.stderr)
        let rows = try XCTUnwrap(try JSONValue.parse(list.stdout).array)
        XCTAssertEqual(rows.compactMap { $0["id"]?.int }, [1, 2], "oldest first")
        XCTAssertEqual(rows.first?["status"]?.string, "completed")
        XCTAssertEqual(rows.first?["subtasks"]?.array?.count, 2)

        let show = try runCLI(["pipeline", "show", "1", "--json"], environment: env)
        XCTAssertEqual(show.status, 0, show.stderr)
        let tree = try JSONValue.parse(show.stdout)
        XCTAssertEqual(tree["result"]?.string, "The final report.")
        let nodes = try XCTUnwrap(tree["subtasks"]?.array)
        XCTAssertEqual(Set(nodes.compactMap { $0["role"]?.string }), ["researcher", "writer"])
        for node in nodes {
            XCTAssertEqual(node["status"]?.string, "completed")
            XCTAssertNotNil(node["duration_ms"]?.int)
            XCTAssertGreaterThan(node["cost_usd"]?.double ?? 0, 0)
        }
        let text = try runCLI(["pipeline", "show", "1"], environment: env)
        XCTAssertTrue(text.text.hasPrefix("pipeline 1  completed"), text.text)
        XCTAssertTrue(text.text.contains("└─"), text.text)
        let follow = try runCLI(["pipeline", "show", "1", "--follow"], environment: env)
        XCTAssertEqual(follow.status, 0, "an ended pipeline is shown once: \(follow.stderr)")
        XCTAssertEqual(follow.text, text.text)
        // The pipelines' own agents stay out of the agent list.
        let agents = try runCLI(["agents"], environment: env)
        XCTAssertFalse(agents.text.contains("pipeline-1"), agents.text)
    }

    func testCancelFromAnotherProcessStopsEveryRunWithinASecond() throws {
        scriptOrchestrator(
            [Self.delegate("d1", "researcher", "search forever"), Self.delegate("d2", "analyst", "think forever")],
            answer: "unused")
        router.route(systemContains: "You are the researcher") { _, _ in .hang }
        router.route(systemContains: "You are the analyst") { _, _ in .hang }
        let created = try runCLI(["agent", "create", "boss", "--kind", "orchestrator"], environment: env)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertTrue(created.text.contains("tools delegate"), created.text)
        let pipeline = try launchCLI(["pipeline", "slow work", "--orchestrator", "boss"], environment: env)
        let store = try AgentStore(path: try XCTUnwrap(env["XCLAW_DB"]))
        eventually("both subtasks run", within: .seconds(20), every: .milliseconds(10)) {
            (try? store.pipelines().first.map { try store.subtasks(pipeline: $0.id) })??
                .filter({ $0.status == .running }).count == 2
        }
        XCTAssertTrue(server.waitForRequests(3, timeout: .seconds(10)), "both children asked the model")
        let started = ContinuousClock.now
        let cancel = try runCLI(["pipeline", "cancel", "1", "--json"], environment: env)
        let elapsed = ContinuousClock.now - started
        XCTAssertEqual(cancel.status, 0, cancel.stderr)
        let outcome = try JSONValue.parse(cancel.stdout)
        XCTAssertEqual(outcome["runs_stopped"]?.int, 3, cancel.text)
        let ms = try XCTUnwrap(outcome["cancelled_ms"]?.int)
        print(
            "pipeline cancel: every run stopped \(ms) ms after the request (the command took \(Int(elapsed.milliseconds)) ms)"
        )
        XCTAssertLessThan(ms, 2000)
        pipeline.waitUntilExit()
        XCTAssertEqual(pipeline.terminationStatus, 130)
        XCTAssertEqual(try store.pipeline(1).status, .cancelled)
        XCTAssertEqual(try store.subtasks(pipeline: 1).map(\.status), [.cancelled, .cancelled])
        XCTAssertEqual(
            try store.sessions(agent: nil).filter { $0.agent.hasPrefix("pipeline-1") }.map(\.status),
            [.cancelled, .cancelled, .cancelled])
        let again = try runCLI(["pipeline", "cancel", "1"], environment: env)
        XCTAssertEqual(again.status, 0)
        XCTAssertTrue(again.text.contains("not running (it ended cancelled)"), again.text)
    }

    func testBadInputIsRefusedWithWhatToDo() throws {
        let missing = try runCLI(["pipeline", "show", "9"], environment: env)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no pipeline with id 9"), missing.stderr)
        XCTAssertEqual(try runCLI(["agent", "create", "plain"], environment: env).status, 0)
        let plain = try runCLI(["pipeline", "a task", "--orchestrator", "plain"], environment: env)
        XCTAssertEqual(plain.status, 2, plain.stderr)
        XCTAssertTrue(plain.stderr.contains("--kind orchestrator"), plain.stderr)
        let empty = try runCLI(["pipeline", "  "], environment: env)
        XCTAssertEqual(empty.status, 2, empty.stderr)
        XCTAssertEqual(
            try runCLI(["pipeline", "list"], environment: env).text,
            "no pipelines yet; start one with `xclaw pipeline \"TASK\"`\n")
    }
}

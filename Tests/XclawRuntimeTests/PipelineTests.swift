import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawMockAPI
import XclawRuntime
import XclawScreen
import XclawStore
import XclawTesting
import XclawTimeTesting

/// Multi-agent pipelines (issue 19's seed tests 2.1–2.5): an orchestrator delegates subtasks to role agents that run
/// in their own queue slots, on a real SQLite store, with the loopback model scripted per role (routed by the system
/// prompt, so each child has its own script however the requests interleave).
final class PipelineTests: XCTestCase {
    private var temporary: TemporaryStore?
    private var store: AgentStore!
    private var server: MockMessagesServer!
    private let router = MockRouter()
    private let events = Lines()

    /// The text the orchestrator's system prompt, and only it, contains.
    private static let orchestratorMatch = "You are the orchestrator of a team"

    override func setUpWithError() throws {
        temporary = try TemporaryStore("pipeline")
        store = temporary?.store
        server = try MockMessagesServer(handler: router.handler)
    }

    override func tearDown() {
        server?.stop()
        store = nil
        temporary?.remove()
    }

    private func runner(display: String? = nil, cap: Int = 5) throws -> PipelineRunner {
        let client = ClaudeClient(
            configuration: ClientConfiguration(baseURL: server.baseURL, apiKey: APIKey("sk-" + "pipeline")))
        let builder = AgentBuilder(
            store: store, client: client, catalog: try ModelCatalog.load(overlay: "/nonexistent"))
        var config = AgentConfig(name: "boss", model: "claude-sonnet-4-6", tools: [], display: display)
        config.kind = .orchestrator
        if (try? store.agent(named: "boss")) == nil { try store.createAgent(config) }
        let roles = try RoleCatalog.load(directory: "/nonexistent")
        let events = self.events
        return PipelineRunner(
            builder: builder, roles: roles, cap: cap, guardSettings: GuardSettings(stopKey: nil),
            events: { event in
                let line: String
                switch event {
                case .started(let id, _, _): line = "started \(id)"
                case .delegated(let s): line = "delegated \(s.id) \(s.role)"
                case .subtaskStarted(_, let id, let role, _): line = "running \(id) \(role)"
                case .subtaskFinished(let s): line = "finished \(s.id) \(s.role) \(s.status.rawValue)"
                case .finished(let p): line = "pipeline \(p.id) \(p.status.rawValue)"
                }
                events.append(line)
            })
    }

    /// One delegate call.
    private static func delegate(_ id: String, role: String, task: String, extra: String = "") -> MockBlock {
        .toolUse(id: id, name: "delegate", input: #"{"role":"\#(role)","task":"\#(task)"\#(extra)}"#)
    }

    /// A turn calling `blocks`' tools.
    private static func calls(_ blocks: [MockBlock]) -> MockReply {
        .stream(.turn(blocks: blocks, stopReason: "tool_use"))
    }

    /// A text turn that streams over about `ms` milliseconds, so runs last long enough to overlap.
    private static func slowText(_ text: String, ms: Int) -> MockReply {
        var stream = MockStream.turn(blocks: [.text(text)])
        stream.chunking = .perFrame
        stream.interChunkDelay = .milliseconds(max(1, ms / max(1, stream.frames.count)))
        return .stream(stream)
    }

    /// The orchestrator's script: its first turn makes `calls`, its next one answers `answer`.
    private func scriptOrchestrator(_ calls: [MockBlock], answer: String) {
        router.route(systemContains: Self.orchestratorMatch) { request, _ in
            Self.isFirst(request) ? Self.calls(calls) : .text(answer)
        }
    }

    /// Whether the request is the first of its conversation (no tool results yet).
    private static func isFirst(_ request: RecordedRequest) -> Bool { request.toolResults.isEmpty }

    private func run(_ runner: PipelineRunner, _ task: String) throws -> PipelineRecord {
        let id = try runner.start(task: task, orchestrator: "boss")
        return try Blocking.wait {
            let record = await runner.run(id)
            await runner.waitUntilIdle()
            return record
        }
    }

    // MARK: - 2.1 two subtasks, in parallel

    func testTwoSubtasksRunInParallelAndTheirResultsComeBackInOrder() throws {
        scriptOrchestrator(
            [
                Self.delegate("d1", role: "researcher", task: "find the capital of France"),
                Self.delegate("d2", role: "analyst", task: "compare 3 and 4"),
            ],
            answer: "Combined: Paris; 4 is larger.")
        router.route(systemContains: "You are the researcher") { _, _ in Self.slowText("Paris.", ms: 400) }
        router.route(systemContains: "You are the analyst") { _, _ in Self.slowText("4 is larger.", ms: 400) }
        let record = try run(try runner(), "capital and comparison")
        XCTAssertEqual(record.status, .completed, record.error ?? "")
        XCTAssertEqual(record.result, "Combined: Paris; 4 is larger.")
        // Delegated at once, so created in either order.
        let subtasks = try store.subtasks(pipeline: record.id).sorted { $0.role > $1.role }
        XCTAssertEqual(subtasks.map(\.role), ["researcher", "analyst"])
        XCTAssertEqual(subtasks.map(\.status), [.completed, .completed])
        XCTAssertEqual(subtasks.map(\.result), ["Paris.", "4 is larger."])
        XCTAssertTrue(subtasks.allSatisfy { $0.usd > 0 && $0.steps == 1 }, "each child's cost is recorded")
        // The overlap in time, from the store: each interval starts before the other ends.
        let (a, b) = (
            try interval(subtasks[0]), try interval(subtasks[1])
        )
        print(
            String(
                format: "2.1 intervals from the researcher's start: 0.000–%.3f s and %.3f–%.3f s",
                a.end - a.start, b.start - a.start, b.end - a.start))
        XCTAssertTrue(a.start < b.end && b.start < a.end, "the two subtasks overlap: \(a) \(b)")
        // The orchestrator's second request answers both calls, in the order they were made.
        let last = try XCTUnwrap(server.requests.last { $0.system?.contains(Self.orchestratorMatch) == true })
        XCTAssertEqual(last.toolResults.map(\.toolUseID), ["d1", "d2"])
        XCTAssertEqual(last.toolResults.map(\.texts), [["Paris."], ["4 is larger."]])
        XCTAssertEqual(last.toolResults.map(\.isError), [false, false])
        XCTAssertGreaterThan(record.usd, subtasks.map(\.usd).reduce(0, +), "the pipeline's cost includes its own")
    }

    // MARK: - 2.2 a subtask failing mid-run

    func testAFailedSubtaskComesBackAsAnErrorAndThePipelineGivesAPartialAnswer() throws {
        scriptOrchestrator(
            [
                Self.delegate("d1", role: "researcher", task: "look up the price"),
                Self.delegate("d2", role: "writer", task: "write the intro"),
            ],
            answer: "Partial answer. Missing: the price (the research failed).")
        // The researcher takes a step (a tool call), then its next request fails for good.
        router.route(systemContains: "You are the researcher") { request, _ in
            Self.isFirst(request)
                ? .toolUse(name: "memory", input: #"{"action":"set","key":"seen","value":"yes"}"#)
                : .error(status: 400, type: "invalid_request_error", message: "the research source broke")
        }
        router.route(systemContains: "You are the writer") { _, _ in .text("Intro text.") }
        let record = try run(try runner(), "price report")
        XCTAssertEqual(record.status, .completed, record.error ?? "")
        // Delegated at once, so created in either order.
        let subtasks = try store.subtasks(pipeline: record.id).sorted { $0.role < $1.role }
        XCTAssertEqual(subtasks.map(\.role), ["researcher", "writer"])
        XCTAssertEqual(subtasks.map(\.status), [.failed, .completed])
        XCTAssertTrue(subtasks[0].error?.contains("the research source broke") ?? false, subtasks[0].error ?? "")
        XCTAssertEqual(subtasks[0].steps, 1, "it failed mid-run, after a step")
        // The orchestrator's next request carries the error result and the instruction (in it and in the prompt).
        let next = try XCTUnwrap(server.requests.last { $0.system?.contains(Self.orchestratorMatch) == true })
        let failed = try XCTUnwrap(next.toolResults.first { $0.toolUseID == "d1" })
        XCTAssertTrue(failed.isError)
        let text = failed.texts.joined()
        XCTAssertTrue(text.contains("the research source broke"), text)
        XCTAssertTrue(text.contains(OrchestratorPrompt.partialAnswer), text)
        XCTAssertTrue(next.system?.contains(OrchestratorPrompt.partialAnswer) ?? false)
        XCTAssertEqual(next.toolResults.first { $0.toolUseID == "d2" }?.texts, ["Intro text."])
        XCTAssertTrue(record.result?.contains("Missing: the price") ?? false)
    }

    // MARK: - 2.3 cancel within 1 s

    func testCancelStopsEveryRunInFlightAndRecordsThemCancelled() throws {
        scriptOrchestrator(
            [
                Self.delegate("d1", role: "researcher", task: "a long search"),
                Self.delegate("d2", role: "analyst", task: "a long analysis"),
            ],
            answer: "unused")
        router.route(systemContains: "You are the researcher") { _, _ in .hang }
        router.route(systemContains: "You are the analyst") { _, _ in .hang }
        let runner = try runner()
        let id = try runner.start(task: "slow work", orchestrator: "boss")
        let running = Task.detached { await runner.run(id) }
        try eventually("both subtasks run") {
            try self.store.subtasks(pipeline: id).filter { $0.status == .running }.count == 2
        }
        XCTAssertTrue(server.waitForRequests(3, timeout: .seconds(5)), "both children asked the model")
        let asked = ContinuousClock.now
        let sessions = try store.requestPipelineCancel(id, by: "the test")
        XCTAssertEqual(sessions.count, 3, "the orchestrator's run and both children's")
        try eventually("every run ends") {
            try sessions.allSatisfy { try self.store.session($0.id).status.isFinal }
        }
        let stopped = ContinuousClock.now - asked
        let record = try Blocking.wait { await running.value }
        let total = ContinuousClock.now - asked
        print(
            "2.3 pipeline cancel: every run ended \(Int(stopped.milliseconds)) ms after the request, the pipeline "
                + "\(Int(total.milliseconds)) ms")
        XCTAssertLessThan(stopped, .seconds(2))
        XCTAssertEqual(record.status, .cancelled)
        XCTAssertEqual(try sessions.map { try store.session($0.id).status }, [.cancelled, .cancelled, .cancelled])
        XCTAssertEqual(try store.subtasks(pipeline: id).map(\.status), [.cancelled, .cancelled])
    }

    // MARK: - 2.4 the cap: five at once, the sixth waits

    func testFiveSubtasksRunUnderTheCapAndTheSixthWaitsForASlot() throws {
        let calls = (1...6).map { Self.delegate("d\($0)", role: "analyst", task: "part \($0)") }
        scriptOrchestrator(calls, answer: "All six parts done.")
        router.route(systemContains: "You are the analyst") { _, _ in Self.slowText("part done", ms: 500) }
        let runner = try runner()
        let active = Lines()
        let sampler = Task.detached {
            while !Task.isCancelled {
                let count = await runner.children.queue.activeCount
                active.append("\(count)")
                try? await Task.sleep(for: .milliseconds(5))  // kept: the sampler's period, not a wait
            }
        }
        let record = try run(runner, "six parts")
        sampler.cancel()
        XCTAssertEqual(record.status, .completed, record.error ?? "")
        let subtasks = try store.subtasks(pipeline: record.id)
        XCTAssertEqual(subtasks.count, 6)
        XCTAssertTrue(subtasks.allSatisfy { $0.status == .completed })
        // Each child holds its slot from its start to its session's end (the session ends before the slot is freed).
        let intervals = try subtasks.map { try interval($0) }
        let most = maxOverlap(intervals)
        let sixth = try XCTUnwrap(intervals.indices.max { intervals[$0].start < intervals[$1].start })
        let firstEnd = try XCTUnwrap(intervals.indices.filter { $0 != sixth }.map { intervals[$0].end }.min())
        print(
            String(
                format: "2.4 most at once: %d; the sixth started %.3f s after the first slot was freed", most,
                intervals[sixth].start - firstEnd))
        XCTAssertEqual(most, 5, "exactly the cap ran at once: \(intervals)")
        XCTAssertGreaterThanOrEqual(intervals[sixth].start, firstEnd, "the sixth started only after one finished")
        XCTAssertEqual(active.all.compactMap { Int($0) }.max(), 5, "the queue never held more than its cap")
    }

    // MARK: - 2.5 a subtask's screen tool

    func testAScreenOperatorSubtaskRunsARealScreenToolAndContinues() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        let fixture = try Fixture(
            display: display.name, title: "pipeline fixture", frame: Rect(x: 80, y: 60, width: 600, height: 300),
            extra: ["--button", "200,40,120,34:Save", "--text", "20,120,9x15,#000000:Quarterly total 4711"])
        defer { fixture.stop() }
        scriptOrchestrator(
            [Self.delegate("d1", role: "screen-operator", task: "read the quarterly total")],
            answer: "The total is 4711.")
        let seen = Lines()
        router.route(systemContains: "You are the screen operator") { request, _ in
            guard let result = request.toolResults.first else {
                return .toolUse(name: "screen_snapshot", input: "{}")
            }
            seen.append(result.texts.joined(separator: "\n"))
            return .text(result.isError ? "the snapshot failed" : "Quarterly total: 4711.")
        }
        let record = try run(try runner(display: display.name), "what is the quarterly total?")
        XCTAssertEqual(record.status, .completed, record.error ?? "")
        let snapshot = seen.all.joined()
        XCTAssertTrue(snapshot.contains("4711"), "the snapshot read the fixture: \(snapshot.prefix(400))")
        XCTAssertTrue(snapshot.contains("Save"), "and its button: \(snapshot.prefix(400))")
        let subtask = try XCTUnwrap(try store.subtasks(pipeline: record.id).first)
        XCTAssertEqual(subtask.status, .completed)
        XCTAssertEqual(subtask.result, "Quarterly total: 4711.")
        XCTAssertEqual(subtask.steps, 2, "it continued after its tool call")
        let child = try store.agent(named: subtask.agent)
        XCTAssertEqual(child.display, display.name, "it works on the orchestrator's display")
        XCTAssertTrue(child.tools.contains("screen_snapshot"), "the role's default tools: \(child.tools)")
    }

    func testASubtaskAskingForANewDisplayGetsAPrivateOne() throws {
        let display = try TestDisplay(size: Size(width: 800, height: 600))
        defer { display.stop() }
        scriptOrchestrator(
            [
                Self.delegate("d1", role: "screen-operator", task: "look at the shared one"),
                Self.delegate(
                    "d2", role: "screen-operator", task: "look at a new one", extra: #","display":"new""#),
            ],
            answer: "Both looked.")
        router.route(systemContains: "You are the screen operator") { request, _ in
            request.toolResults.isEmpty
                ? .toolUse(name: "capture_screen", input: "{}")
                : .text(request.toolResults.first?.isError == false ? "looked" : "failed")
        }
        let record = try run(try runner(display: display.name), "look twice")
        XCTAssertEqual(record.status, .completed, record.error ?? "")
        let subtasks = try store.subtasks(pipeline: record.id).sorted { ($0.display ?? "") < ($1.display ?? "") }
        XCTAssertEqual(subtasks.map(\.display), [display.name, "new"])
        XCTAssertEqual(subtasks.map(\.result), ["looked", "looked"])
        // The private display's child was told of a display other than the shared one.
        let systems = server.requests.compactMap(\.system).filter { $0.contains("You are the screen operator") }
        XCTAssertTrue(systems.contains { $0.contains("display \(display.name),") })
        XCTAssertTrue(systems.contains { !$0.contains("display \(display.name),") }, "one ran on a private display")
    }

    // MARK: - Target: 20 pipelines of 5 at once

    func testTwentyPipelinesOfFiveSubtasksAtOnceLoseNothingAndRespectTheCap() throws {
        scriptOrchestrator(
            (1...5).map { Self.delegate("d\($0)", role: "writer", task: "piece \($0)") }, answer: "assembled")
        router.route(systemContains: "You are the writer") { _, _ in .text("piece") }
        let runner = try runner()
        let ids = try (1...20).map { try runner.start(task: "job \($0)", orchestrator: "boss") }
        let records = try Blocking.wait { await runner.run(all: ids) }
        XCTAssertEqual(records.count, 20)
        XCTAssertTrue(records.allSatisfy { $0.status == .completed && $0.result == "assembled" })
        var intervals: [(start: Double, end: Double)] = []
        for id in ids {
            let subtasks = try store.subtasks(pipeline: id)
            XCTAssertEqual(subtasks.count, 5, "pipeline \(id)'s tree is complete")
            XCTAssertTrue(subtasks.allSatisfy { $0.status == .completed && $0.result == "piece" })
            intervals += try subtasks.map { try interval($0) }
        }
        let most = maxOverlap(intervals)
        print("20 × 5: \(intervals.count) subtasks, at most \(most) at once")
        XCTAssertLessThanOrEqual(most, 5)
    }

    // MARK: - Roles

    func testTheRolesShipAsFilesAndUsersAddOrReplaceThem() throws {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Models/roles")
        let files = try FileManager.default.contentsOfDirectory(atPath: models.path).filter { $0.hasSuffix(".md") }
        let builtIn = try RoleCatalog.load(directory: "/nonexistent")
        XCTAssertEqual(
            Set(files.map { String($0.dropLast(3)) }),
            ["researcher", "coder", "writer", "analyst", "screen-operator"])
        for file in files {
            let text = try String(contentsOf: models.appendingPathComponent(file), encoding: .utf8)
            let role = try builtIn.role(String(file.dropLast(3)))
            XCTAssertEqual(
                role.prompt, RoleCatalog.parse(name: role.name, text: text, source: "").prompt,
                "Models/roles/\(file) changed: copy it into Sources/XclawRuntime/Agents/BuiltinRoles.swift")
            XCTAssertGreaterThan(role.prompt.count, 300, "\(file) is a real prompt")
        }
        XCTAssertTrue(try builtIn.role("screen-operator").tools.contains("screen_snapshot"))
        // Tools a build lacks (the web tools) are left out instead of failing.
        XCTAssertFalse(try builtIn.role("researcher").tools.contains("no_such_tool"))
        let dir = try XCTUnwrap(temporary).directory.appendingPathComponent("roles")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try "---\ndescription: checks facts\ntools: memory, no_such_tool\n---\nYou are the fact checker."
            .write(to: dir.appendingPathComponent("fact-checker.md"), atomically: true, encoding: .utf8)
        try "You are a terse writer.".write(
            to: dir.appendingPathComponent("writer.md"), atomically: true, encoding: .utf8)
        let mine = try RoleCatalog.load(directory: dir.path)
        XCTAssertEqual(try mine.role("fact-checker").tools, ["memory"])
        XCTAssertEqual(try mine.role("writer").prompt, "You are a terse writer.")
        XCTAssertEqual(mine.names.count, 6)
        XCTAssertThrowsError(try mine.role("poet")) { error in
            XCTAssertTrue("\(error)".contains("fact-checker, researcher, screen-operator, writer"), "\(error)")
        }
    }

    func testAnUnknownRoleIsAnErrorResultListingTheRoles() throws {
        scriptOrchestrator(
            [Self.delegate("d1", role: "poet", task: "a poem")],
            answer: "No poet available.")
        let record = try run(try runner(), "a poem")
        XCTAssertEqual(record.status, .completed)
        let result = try XCTUnwrap(server.requests.last?.toolResults.first)
        XCTAssertTrue(result.isError)
        XCTAssertTrue(
            result.texts.joined().contains("unknown role \"poet\"; the roles are: analyst, coder, researcher"),
            result.texts.joined())
        XCTAssertEqual(try store.subtasks(pipeline: record.id).count, 0)
    }

    // MARK: - Helpers

    /// A subtask's slot time in seconds (since 2001): its start, and its session's end.
    private func interval(_ subtask: SubtaskRecord) throws -> (start: Double, end: Double) {
        let start = try XCTUnwrap(subtask.startedAt).timeIntervalSinceReferenceDate
        let session = try store.session(try XCTUnwrap(subtask.session))
        let end = try XCTUnwrap(session.endedAt).timeIntervalSinceReferenceDate
        return (start, end)
    }

    /// The most intervals open at one instant (touching ends do not overlap).
    private func maxOverlap(_ intervals: [(start: Double, end: Double)]) -> Int {
        intervals.map { probe in
            intervals.filter { $0.start <= probe.start && probe.start < $0.end }.count
        }.max() ?? 0
    }
}

/// Lines the test's callbacks note from other threads.
private final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    /// Notes one.
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    /// Every line so far.
    var all: [String] { lines.withLock { $0 } }
}

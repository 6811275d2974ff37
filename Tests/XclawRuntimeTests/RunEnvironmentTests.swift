import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawRuntime
import XclawScreen
import XclawStore
import XclawTimeTesting

/// A run's environment without a model: which display and setup command a run gets (the agent's, or its scheduled
/// task's), the setup command run with the run's display and mark, and what it started ended with the run, also when
/// it overruns its time or the run is stopped during it. (A private display's Xvfb and bus are tested end to end in
/// `RunDisplayCLITests`.)
final class RunEnvironmentTests: XCTestCase {
    private var temporary: TemporaryStore!
    private var store: AgentStore { temporary.store }
    private var record: String { temporary.directory.appendingPathComponent("setup.txt").path }

    override func setUpWithError() throws { temporary = try TemporaryStore("runenv") }
    override func tearDown() { temporary?.remove() }

    func testPrivateDisplayForms() throws {
        XCTAssertNil(try RunDisplay.privateSize(nil))
        XCTAssertNil(try RunDisplay.privateSize(":1"))
        XCTAssertNil(try RunDisplay.privateSize("host:2.0"))
        XCTAssertEqual(try RunDisplay.privateSize("new"), Size(width: 1920, height: 1080))
        XCTAssertEqual(try RunDisplay.privateSize("new:1280x800"), Size(width: 1280, height: 800))
        for bad in ["new:", "new:abc", "new:800", "new:0x600", "new:800x600x24", "new:20000x100"] {
            XCTAssertThrowsError(try RunDisplay.privateSize(bad), bad) { error in
                XCTAssertEqual((error as? RunDisplayError)?.exitStatus, .usage, bad)
            }
        }
        XCTAssertFalse(try RunDisplay.isNeeded(display: ":1", setup: ""))
        XCTAssertTrue(try RunDisplay.isNeeded(display: ":1", setup: "true"))
    }

    /// A batch claimed for `agent` from one message by `sender`.
    private func batch(_ agent: String, sender: String) throws -> ClaimedBatch {
        _ = try store.appendMessage(agent: agent, role: .user, content: [.text("go")], sender: sender)
        return try XCTUnwrap(
            try store.claimBatch(
                agent: agent, kind: .message, batchSender: "batch", isInput: { $0.sender != "batch" },
                prompt: { _ in "go" }))
    }

    /// What a setup command wrote: who ran, its DISPLAY, its mark, the pid of what it left in the background.
    private func written() throws -> [String] {
        try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    private func waitGone(_ pid: pid_t, file: StaticString = #filePath, line: UInt = #line) {
        eventually("\(pid) ends with the run", within: .seconds(5), file: file, line: line) {
            !Subprocess.isRunning(pid)
        }
        XCTAssertFalse(Subprocess.isRunning(pid), "\(pid) outlived the run", file: file, line: line)
    }

    private func setup(_ who: String) -> String {
        "echo \(who) > \(record); echo \"$DISPLAY\" >> \(record); echo \"$XCLAW_RUN_ID\" >> \(record); "
            + "sleep 30 & echo $! >> \(record)"
    }

    func testATaskReplacesTheAgentsDisplayAndSetupAndWhatTheSetupLeftEndsWithTheRun() async throws {
        var config = AgentConfig(name: "bot", model: "m", display: ":77")
        config.setup = setup("agent")
        try store.createAgent(config)
        XCTAssertEqual(try store.agent(named: "bot").setup, setup("agent"))
        let task = try store.createTask(
            agent: "bot", prompt: "p", scheduleType: .interval, scheduleValue: "3600000", nextRun: Date(),
            name: "nightly", display: ":78", setup: setup("task"))
        XCTAssertEqual(try store.task("nightly").display, ":78")
        XCTAssertEqual(try store.task(task.id).setup, setup("task"))
        let environments = RunEnvironments(store: store)

        // A message from a person: the agent's own.
        let own = try await environments.prepare(try store.agent(named: "bot"), batch: try batch("bot", sender: "ann"))
        XCTAssertEqual(own.config.display, ":77")
        var lines = try written()
        XCTAssertEqual(Array(lines.prefix(2)), ["agent", ":77"])
        let ownChild = try XCTUnwrap(lines.count == 4 ? pid_t(lines[3]) : nil)
        XCTAssertTrue(Subprocess.isRunning(ownChild), "the setup's background child runs during the run")
        own.tearDown()
        waitGone(ownChild)

        // The task's run (sent as `schedule:NAME`): its display and setup.
        let batch = try batch("bot", sender: "schedule:nightly")
        XCTAssertEqual(RunEnvironments.taskLabel(of: batch), "nightly")
        let scheduled = try await environments.prepare(try store.agent(named: "bot"), batch: batch)
        XCTAssertEqual(scheduled.config.display, ":78")
        lines = try written()
        XCTAssertEqual(Array(lines.prefix(2)), ["task", ":78"])
        XCTAssertFalse(lines[2].isEmpty, "the run's mark")
        let taskChild = try XCTUnwrap(lines.count == 4 ? pid_t(lines[3]) : nil)
        scheduled.tearDown()
        waitGone(taskChild)
    }

    func testASetupThatFailsOrOverrunsFailsTheStartAndLeavesNothing() async throws {
        XCTAssertThrowsError(
            try RunDisplay.start(display: ":1", setup: "sleep 30 & echo $! > \(record); echo nope; exit 3")
        ) { error in
            guard case .setupFailed(_, let ending, let log) = error as? RunDisplayError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(ending, "exited with status 3")
            XCTAssertEqual(log, "nope")
            XCTAssertEqual((error as? RunDisplayError)?.exitStatus, .notFound)
        }
        try waitGone(XCTUnwrap(pid_t(written().first ?? "")))

        XCTAssertThrowsError(
            try RunDisplay.start(
                display: ":1", setup: "echo $$ > \(record); exec sleep 30", setupTimeout: .milliseconds(200))
        ) { error in
            guard case .setupTimedOut = error as? RunDisplayError else { return XCTFail("\(error)") }
        }
        try waitGone(XCTUnwrap(pid_t(written().first ?? "")))
    }

    func testStoppingTheRunDuringItsSetupStopsTheSetup() async throws {
        let command = "echo $$ > \(record); exec sleep 30"
        let started = Task { try await RunDisplay.prepare(display: ":1", setup: command) }
        await eventually("the setup wrote its pid", within: .seconds(5), on: .continuous) {
            (try? written())?.first.flatMap { pid_t($0) } != nil
        }
        let pid = try XCTUnwrap(pid_t(written().first ?? ""))
        started.cancel()
        do {
            _ = try await started.value
            XCTFail("a cancelled setup must not count as done")
        } catch is CancellationError {}
        waitGone(pid)
    }
}

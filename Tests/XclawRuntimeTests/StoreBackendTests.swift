import Foundation
import XCTest
import XclawMessages
import XclawStore
import XclawTesting

/// The store's contract, driven only through its aggregate protocols (`any StoreBackend`), as the runtime uses it:
/// every backend passes these with the same assertions: SQLite in a temporary file, PostgreSQL in a fresh database of
/// the tests' own server (`PostgresTestServer`).
final class StoreBackendTests: XCTestCase {
    private var temporaries: [TemporaryStore] = []

    override func tearDown() {
        temporaries.forEach { $0.remove() }
        temporaries = []
        super.tearDown()
    }

    /// A fresh, empty store of every backend, each with one agent `a`.
    private func backends() throws -> [any StoreBackend] {
        let sqlite = try TemporaryStore("backend")
        temporaries.append(sqlite)
        let postgres = try AgentStore(postgres: PostgresURL(PostgresTestServer.shared().newDatabase()))
        let stores: [any StoreBackend] = [sqlite.store, postgres]
        for store in stores { try store.createAgent(AgentConfig(name: "a", model: "m", tools: ["computer"])) }
        return stores
    }

    func testAgentsAndTheirMemory() throws {
        for store in try backends() {
            XCTAssertEqual(try store.agents().map(\.name), ["a"])
            try store.setEffort(agent: "a", effort: "high")
            XCTAssertEqual(try store.agent(named: "a").effort, "high")
            try store.setMemory(agent: "a", key: "k", value: "v")
            XCTAssertEqual(try store.memory(agent: "a", key: "k"), "v")
            XCTAssertEqual(try store.memoryList(agent: "a"), ["k": "v"])
            XCTAssertTrue(try store.deleteMemory(agent: "a", key: "k"))
            XCTAssertNil(try store.memory(agent: "a", key: "k"))
            try store.deleteAgent(named: "a")
            XCTAssertThrowsError(try store.agent(named: "a"))
        }
    }

    func testAConversationsBatchIsClaimedOnceAndRolledBack() throws {
        for store in try backends() {
            let first = try store.appendMessage(
                agent: "a", role: .user, content: [.text("one")], status: .complete, sender: "me", sessionID: nil)
            let second = try store.appendMessage(
                agent: "a", role: .user, content: [.text("two")], status: .complete, sender: "me", sessionID: nil)
            XCTAssertLessThan(first, second)
            let claimed = try XCTUnwrap(
                try store.claimBatch(
                    agent: "a", kind: .message, batchSender: "batch",
                    isInput: { $0.role == .user && $0.sender != "batch" },
                    prompt: { $0.count.description }))
            XCTAssertEqual(claimed.pending.map(\.id), [first, second])
            XCTAssertEqual(claimed.previousCursor, 0)
            XCTAssertNil(
                try store.claimBatch(
                    agent: "a", kind: .message, batchSender: "batch",
                    isInput: { $0.role == .user && $0.sender != "batch" },
                    prompt: { _ in "" }), "a claimed batch is not claimed again")
            try store.rollBackRun(session: claimed.session)
            XCTAssertEqual(try store.state(agent: "a").cursor, 0, "a rolled-back run gives its batch back")
            let again = try store.claimBatch(
                agent: "a", kind: .message, batchSender: "batch", isInput: { $0.role == .user && $0.sender != "batch" },
                prompt: { _ in "" })
            XCTAssertEqual(again?.pending.map(\.id), [first, second])
        }
    }

    func testARunsSessionUsageAndStopRequest() throws {
        for store in try backends() {
            let session = try store.startSession(agent: "a", kind: .run, pid: getpid())
            XCTAssertEqual(try store.session(session).status, .running)
            try store.recordUsage(
                agent: "a", sessionID: session, model: "m", usage: Usage(inputTokens: 10, outputTokens: 5), usd: 0.5,
                timing: nil)
            try store.recordActionStep(session: session, seq: 1, json: "{\"action\":\"left_click\"}")
            XCTAssertEqual(try store.actionSteps(session: session), ["{\"action\":\"left_click\"}"])
            XCTAssertEqual(try store.requestStop(session: session, agent: nil, by: "test").map(\.id), [session])
            XCTAssertNotNil(try store.stopRequest(session: session))
            try store.finishSession(session, status: .stopped, error: nil, steps: 1, usd: 0.5)
            let finished = try store.session(session)
            XCTAssertEqual(finished.status, .stopped)
            XCTAssertEqual(try store.usageSummary(agent: "a").first?.usd, 0.5)
            XCTAssertEqual(try store.sessions(agent: "a").map(\.id), [session])
        }
    }

    func testASchedulesSlotIsClaimedOnce() throws {
        for store in try backends() {
            let due = Date(timeIntervalSince1970: 1_000_000)
            let task = try store.createTask(
                agent: "a", prompt: "p", scheduleType: .interval, scheduleValue: "60", contextMode: .isolated,
                nextRun: due, status: .active, id: "t1", name: "tick", timeZone: nil, catchUp: .once,
                createdAt: due, display: nil, setup: nil, replay: nil)
            XCTAssertEqual(try store.task("tick").id, task.id)
            XCTAssertEqual(try store.nextDueTime(), due)
            let slots = try store.claimDueTasks(now: due, claimer: "one", missedBefore: due) { _, now in
                now.addingTimeInterval(60)
            }
            XCTAssertEqual(slots.map(\.task.id), ["t1"])
            XCTAssertEqual(
                try store.claimDueTasks(now: due, claimer: "two", missedBefore: due) { _, _ in nil }.count, 0,
                "a slot is claimed once, whoever asks")
            _ = try store.appendTaskRunLog(
                taskID: "t1", runAt: due, durationMs: 5, status: "success", result: "ok", error: nil)
            XCTAssertEqual(try store.taskRunLogs(taskID: "t1").map(\.status), ["success"])
            try store.deleteTask("t1")
            XCTAssertEqual(try store.tasks(agent: "a").count, 0)
        }
    }

    func testAnApprovalIsDecidedOnce() throws {
        for store in try backends() {
            let session = try store.startSession(agent: "a", kind: .run, pid: getpid())
            let id = try store.requestApproval(
                session: session, kind: "delete", tool: "computer", action: "left_click", detail: "tap Delete",
                expiresAt: Date().addingTimeInterval(60))
            XCTAssertEqual(try store.session(session).status, .needsApproval)
            XCTAssertEqual(try store.approvals(session: session, pendingOnly: true).map(\.id), [id])
            XCTAssertEqual(try store.decideApproval(session: session, approve: true, by: "test").status, "approved")
            XCTAssertEqual(try store.settleApproval(id, now: Date()).status, "approved")
            XCTAssertEqual(try store.approvals(session: session, pendingOnly: true).count, 0)
        }
    }

    func testAReplaysLogAndAPipelinesCancel() throws {
        for store in try backends() {
            let replay = try store.startReplay(agent: "a", script: "s.json", revision: nil, steps: 2, task: nil)
            XCTAssertNil(try store.replayLog(session: replay)?.screenshot)
            let pipeline = try store.createPipeline(orchestrator: "a", agent: "", task: "do it", pid: getpid())
            try store.setPipelineAgent(pipeline, agent: "a")
            XCTAssertEqual(try store.pipeline(pipeline).status, .running)
            _ = try store.requestPipelineCancel(pipeline, by: "test")
            XCTAssertTrue(try store.pipelineCancelRequest(pipeline)?.contains(PipelineRecord.cancelMarker) ?? false)
            try store.finishPipeline(pipeline, status: .cancelled, result: nil, error: nil)
            XCTAssertEqual(try store.pipelines().map(\.status), [.cancelled])
        }
    }

    func testAScreenshotIsKeptOnceAndResolved() throws {
        for store in try backends() {
            let png = Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]).base64EncodedString()
            let image = ContentBlock.image(mediaType: "image/png", base64: png)
            for _ in 0..<2 {
                _ = try store.appendMessage(
                    agent: "a", role: .user, content: [image], status: .complete, sender: nil, sessionID: nil)
            }
            XCTAssertEqual(try store.imageTotals().count, 1, "one image, kept once by its content")
            let messages = try store.messages(agent: "a", after: 0, limit: nil, screenshots: false)
            let resolved = try store.resolveScreenshots(
                messages.map { Message(role: $0.role, content: $0.content) }, keep: 1, chunk: 1, removed: "(removed)")
            XCTAssertEqual(resolved.count, 2)
            XCTAssertEqual(resolved.last?.content, [image], "the newest screenshot comes back whole")
        }
    }

    func testScriptsAreKeptByNameAndRevisionAndTheSameScriptIsNotStoredTwice() throws {
        for store in try backends() {
            func body(_ label: String) -> (Int) throws -> String { { #"{"revision":\#($0),"label":"\#(label)"}"# } }
            let first = try store.storeScript(
                name: "ws:/s.json", revision: 2, agent: "a", run: 7, steps: 3, by: "u@h",
                body: body("OK"))
            XCTAssertTrue(first.created)
            XCTAssertEqual(first.script.revision, 2, "a file's own revision is kept when it is the first")
            XCTAssertEqual(first.script.body, #"{"revision":2,"label":"OK"}"#)
            let again = try store.storeScript(
                name: "ws:/s.json", revision: 2, agent: "a", run: 7, steps: 3, by: "u@h",
                body: body("OK"))
            XCTAssertFalse(again.created, "the newest revision is this script")
            XCTAssertEqual(again.script.id, first.script.id)
            // Another script under the name: the next revision, even if it says it is an older one.
            let healed = try store.storeScript(
                name: "ws:/s.json", revision: 1, agent: "a", run: 7, steps: 3,
                by: "worker w1", body: body("Finish"))
            XCTAssertTrue(healed.created)
            XCTAssertEqual(healed.script.revision, 3)
            XCTAssertEqual(
                try store.script(named: "ws:/s.json", revision: nil).body, #"{"revision":3,"label":"Finish"}"#)
            XCTAssertEqual(try store.script(named: "ws:/s.json", revision: 2).storedBy, "u@h")
            _ = try store.storeScript(name: "b", revision: 1, agent: "a", run: 8, steps: 1, by: "u@h", body: body("x"))
            XCTAssertEqual(try store.scripts().map { "\($0.name)@\($0.revision)" }, ["b@1", "ws:/s.json@3"])
            XCTAssertThrowsError(try store.script(named: "nope", revision: nil)) { error in
                XCTAssertEqual((error as? StoreError)?.exitStatus, .notFound)
                XCTAssertTrue("\(error)".contains("stored: b, ws:/s.json"), "\(error)")
            }
            XCTAssertThrowsError(
                try store.storeScript(name: "", revision: 1, agent: "a", run: 1, steps: 1, by: "u", body: body("x")))
        }
    }
}

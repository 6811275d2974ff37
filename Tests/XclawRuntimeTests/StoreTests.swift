import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawStore
import XclawTesting
import XclawTimeTesting

/// The persistence layer against real SQLite files in a private temporary directory: schema, agents, messages and
/// paging, content round trips, two processes' worth of stores on one file, the cursor, crash recovery, memory,
/// usage, tasks, and the errors users see.
final class StoreTests: BackendTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        // Restore permissions a test may have removed, so the directory can be deleted.
        _ = chmod(directory.path, 0o755)
        try? FileManager.default.removeItem(at: directory)
    }

    /// A database path inside the test's directory.
    private func dbPath(_ name: String = "xclaw.sqlite") -> String { directory.appendingPathComponent(name).path }

    /// Runs `body` once per backend (`BackendTestCase`), SQLite in the test's directory.
    private func eachBackend(_ body: () throws -> Void) throws { try eachBackend(sqliteFile: dbPath(), body) }

    /// A fresh store with one agent.
    private func storeWithAgent(_ name: String = "alice", path: String? = nil) throws -> AgentStore {
        let store = try AgentStore.at(path ?? (location.isEmpty ? dbPath() : location))
        try store.createAgent(AgentConfig(name: name, model: "claude-sonnet-4-5", tools: ["computer"]))
        return store
    }

    /// Session kinds and statuses are typed, and the file itself refuses others (the schema's CHECK), so a typed
    /// read never meets a value it cannot name.
    func testTheFileRefusesASessionKindThatIsNotTyped() throws {
        let store = try storeWithAgent()
        let id = try store.startSession(agent: "alice", kind: .run)
        XCTAssertEqual(try store.sessions(agent: "alice").map(\.kind), [.run])
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = ["-cmd", ".timeout 5000", dbPath(), "UPDATE sessions SET kind = 'chat' WHERE id = \(id)"]
        shell.standardError = FileHandle.nullDevice
        try shell.run()
        shell.waitUntilExit()
        XCTAssertEqual(shell.terminationStatus, 19, "SQLITE_CONSTRAINT")
        XCTAssertEqual(try store.sessions(agent: "alice").map(\.kind), [.run])
        XCTAssertEqual(Set(SessionKind.allCases.map(\.rawValue)), ["message", "task", "run"])
        XCTAssertEqual(SessionStatus.allCases.filter { !$0.isFinal }, [.running, .needsApproval])
    }

    /// Asserts that `body` throws a `StoreError` and hands it over.
    private func assertStoreError(
        _ body: @autoclosure () throws -> some Any, file: StaticString = #filePath,
        line: UInt = #line, _ check: (StoreError) -> Void
    ) {
        do {
            _ = try body()
            XCTFail("expected a StoreError", file: file, line: line)
        } catch let error as StoreError {
            check(error)
        } catch {
            XCTFail("expected a StoreError, got \(error)", file: file, line: line)
        }
    }

    func testMigrationCreatesEveryTableWithWALAndPrivateFiles() throws {
        let path = directory.appendingPathComponent("new/deeper/xclaw.sqlite").path
        let store = try AgentStore(path: path)
        let info = try store.info()
        XCTAssertEqual(
            info.tables,
            [
                "action_frames", "action_steps", "agent_state", "agents", "approvals", "images", "memory", "messages",
                "pipelines",
                "replays", "scripts",
                "sessions", "subtasks", "task_run_logs",
                "tasks", "usage",
            ])
        XCTAssertEqual(
            info.migrations,
            [
                "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",
                "v17",
            ])
        XCTAssertEqual(info.journalMode, "wal")
        XCTAssertEqual(info.synchronous, "NORMAL")
        XCTAssertTrue(info.foreignKeys)
        XCTAssertEqual(info.busyTimeoutMs, 5000)
        XCTAssertEqual(info.path, path)
        let fileMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        XCTAssertEqual(fileMode, 0o600, "conversations are private")
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            let mode = try FileManager.default.attributesOfItem(atPath: path + suffix)[.posixPermissions] as? Int
            XCTAssertEqual(mode, 0o600, suffix)
        }
        let dirMode =
            try FileManager.default.attributesOfItem(
                atPath: directory.appendingPathComponent("new").path)[.posixPermissions] as? Int
        XCTAssertEqual(dirMode, 0o700)
        // Reopening an existing file migrates nothing and keeps working.
        let again = try AgentStore(path: path)
        XCTAssertEqual(try again.info(), info)
    }

    /// Openers of one new file take turns to migrate it: without that, two could apply one migration and the loser
    /// failed ("duplicate column name") once it had lost three races (seen in a clean-clone suite run). The race is
    /// rare: without the turns, ten new files at six openers failed once in two runs (and thirty passed three runs).
    func testConcurrentFirstOpensOfOneNewFileAllSucceed() throws {
        for round in 0..<30 {
            let path = dbPath("race-\(round).sqlite")
            let failures = LockedList()
            DispatchQueue.concurrentPerform(iterations: 6) { i in
                do {
                    let store = try AgentStore(path: path)
                    try store.createAgent(AgentConfig(name: "agent\(i)", model: "m"))
                } catch {
                    failures.append("\(error)")
                }
            }
            XCTAssertEqual(failures.items, [], "round \(round)")
            XCTAssertEqual(try AgentStore(path: path).agents().map(\.name), (0..<6).map { "agent\($0)" })
        }
    }

    /// Turning WAL on while another connection holds the write lock of the still rollback-journal file fails at once
    /// with SQLITE_BUSY, without the busy handler (seen as a `locked` error in 0 ms when four stores opened one new
    /// file at once); opening waits for the lock instead.
    func testFirstOpenWaitsForAnotherOpenersWriteLock() throws {
        // scripts/install-deps.sh installs it; without it this must fail, not pass unchecked.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") else {
            return XCTFail("/usr/bin/sqlite3 is not installed: run scripts/install-deps.sh")
        }
        let path = dbPath("new.sqlite")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil), "an empty file, as a store makes it")
        let ready = directory.appendingPathComponent("ready").path
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [path, "BEGIN IMMEDIATE", ".shell touch \(ready); sleep 1", "COMMIT"]
        try shell.run()
        defer { shell.waitUntilExit() }
        eventually("the shell took the lock") { FileManager.default.fileExists(atPath: ready) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: ready), "the shell took the lock")
        let start = Date()
        let store = try AgentStore(path: path)
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.5, "the open waited for the other writer")
        XCTAssertEqual(try store.info().journalMode, "wal")
    }

    func testAgentCRUDAndNameValidation() throws {
        try eachBackend {
            let store = try AgentStore.at(location)
            let created = AgentConfig(
                name: "bob.v2_test-1", model: "claude-opus-4-6", systemPrompt: "Be brief.",
                tools: ["computer", "memory"], display: ":1", memoryNotes: "likes tea")
            try store.createAgent(created)
            try store.createAgent(AgentConfig(name: "alice", model: "m"))
            XCTAssertEqual(try store.agent(named: "bob.v2_test-1"), created)
            XCTAssertEqual(try store.agents().map(\.name), ["alice", "bob.v2_test-1"])

            var changed = created
            changed.model = "claude-haiku-4-5"
            changed.tools = []
            changed.display = nil
            changed.createdAt = Date(timeIntervalSince1970: 0)
            try store.updateAgent(changed)
            let read = try store.agent(named: created.name)
            XCTAssertEqual(read.model, "claude-haiku-4-5")
            XCTAssertEqual(read.tools, [])
            XCTAssertNil(read.display)
            XCTAssertEqual(read.createdAt, created.createdAt, "createdAt never changes")

            try store.createAgent(AgentConfig(name: String(repeating: "x", count: 64), model: "m"))
            for bad in ["", String(repeating: "x", count: 65), "a b", "a/b", "é", "../x", "a;rm"] {
                assertStoreError(try store.createAgent(AgentConfig(name: bad, model: "m"))) { error in
                    XCTAssertEqual(error, .invalidAgentName(bad))
                    XCTAssertEqual(error.exitStatus, .usage)
                }
            }
            assertStoreError(try store.createAgent(AgentConfig(name: "alice", model: "m"))) { error in
                XCTAssertEqual(error, .agentExists("alice"))
                XCTAssertEqual(error.exitStatus, .usage)
                XCTAssertTrue(error.description.contains("xclaw agent delete alice"), error.description)
            }
            assertStoreError(try store.agent(named: "carol")) { error in
                XCTAssertEqual(error.exitStatus, .notFound)
                XCTAssertTrue(error.description.contains("alice, bob.v2_test-1"), error.description)
            }
            assertStoreError(try store.updateAgent(AgentConfig(name: "carol", model: "m"))) {
                XCTAssertEqual($0.exitStatus, .notFound)
            }
            assertStoreError(try store.createAgent(AgentConfig(name: "nomodel", model: " "))) {
                XCTAssertEqual($0.exitStatus, .usage)
            }

            // Deleting cascades to everything the agent owns.
            let id = try store.appendMessage(agent: "alice", role: .user, content: [.text("hi")])
            try store.setMemory(agent: "alice", key: "k", value: "v")
            _ = try store.startSession(agent: "alice", kind: .message)
            try store.deleteAgent(named: "alice")
            assertStoreError(try store.message(id: id)) { XCTAssertEqual($0, .unknownMessage(id)) }
            XCTAssertEqual(try store.sessions(agent: nil).count, 0)
            assertStoreError(try store.deleteAgent(named: "alice")) { XCTAssertEqual($0.exitStatus, .notFound) }
            assertStoreError(try store.messages(agent: "alice")) { XCTAssertEqual($0.exitStatus, .notFound) }
        }
    }

    func testMessageIDsStrictlyIncreaseAndAreNeverReused() throws {
        try eachBackend {
            let store = try storeWithAgent()
            var ids: [Int64] = []
            for i in 0..<5 {
                ids.append(try store.appendMessage(agent: "alice", role: .user, content: [.text("m\(i)")]))
            }
            XCTAssertEqual(ids, ids.sorted())
            XCTAssertEqual(Set(ids).count, ids.count)
            try store.deleteMessage(id: ids[4])
            let next = try store.appendMessage(agent: "alice", role: .assistant, content: [.text("after delete")])
            XCTAssertGreaterThan(next, ids[4], "a deleted id is never handed out again")
            // Not even after the agent and all its rows are gone.
            try store.deleteAgent(named: "alice")
            try store.createAgent(AgentConfig(name: "alice", model: "m"))
            XCTAssertGreaterThan(try store.appendMessage(agent: "alice", role: .user, content: [.text("x")]), next)
            assertStoreError(try store.appendMessage(agent: "nobody", role: .user, content: [])) {
                XCTAssertEqual($0, .unknownAgent("nobody", known: ["alice"]))
            }
            assertStoreError(try store.updateMessage(id: 999_999, content: [], status: .complete)) {
                XCTAssertEqual($0, .unknownMessage(999_999))
            }
        }
    }

    func testPagingReturnsEveryMessageExactlyOnce() throws {
        try eachBackend {
            let store = try storeWithAgent()
            try store.createAgent(AgentConfig(name: "other", model: "m"))
            var expected: [Int64] = []
            for i in 0..<25 {
                expected.append(
                    try store.appendMessage(
                        agent: "alice", role: i % 2 == 0 ? .user : .assistant,
                        content: [.text("message \(i)")]))
                try store.appendMessage(agent: "other", role: .user, content: [.text("noise \(i)")])
            }
            var seen: [Int64] = []
            var cursor: Int64 = 0
            while true {
                let page = try store.messages(agent: "alice", after: cursor, limit: 7)
                guard let last = page.last else { break }
                XCTAssertLessThanOrEqual(page.count, 7)
                seen += page.map(\.id)
                cursor = last.id
            }
            XCTAssertEqual(seen, expected)
            XCTAssertEqual(try store.messages(agent: "alice").map(\.id), expected)
            XCTAssertEqual(try store.messages(agent: "alice", after: expected[20]).count, 4)
            assertStoreError(try store.messages(agent: "alice", limit: 0)) { XCTAssertEqual($0.exitStatus, .usage) }
        }
    }

    func testContentBlocksRoundTrip() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0, 1, 2, 255]).base64EncodedString()
            let blocks: [ContentBlock] = [
                .text("héllo 👋🏽 wörld — 你好 \"quoted\" \\ back\nnew line"),
                .thinking(thinking: "Let me think… 🤔", signature: "EqQBCkYIARgCKkD+sig/=="),
                .toolUse(
                    id: "toolu_01", name: "computer",
                    input: [
                        "action": "left_click", "coordinate": [640, 400],
                        "nested": ["deep": ["list": [1.5, true, nil, "x"]], "empty": [:]],
                    ]),
                .toolResult(
                    ToolResultBlock(
                        toolUseID: "toolu_01",
                        content: [.text("clicked"), .image(mediaType: "image/png", base64: png)])),
                .toolResult(ToolResultBlock(toolUseID: "toolu_02", content: [.text("failed")], isError: true)),
                .redactedThinking(data: "opaque"),
                .other(["type": "server_tool_use", "id": "srv_1", "input": ["q": "x"]]),
            ]
            let id = try store.appendMessage(
                agent: "alice", role: .assistant, content: blocks, status: .partial,
                sender: "model")
            let stored = try store.message(id: id)
            XCTAssertEqual(stored.content, blocks)
            XCTAssertEqual(stored.status, .partial)
            XCTAssertEqual(stored.sender, "model")
            XCTAssertEqual(stored.role, .assistant)
            XCTAssertEqual(stored.message, Message(role: .assistant, content: blocks))

            let longer = blocks + [.text("more")]
            try store.updateMessage(id: id, content: longer, status: .complete)
            let updated = try store.message(id: id)
            XCTAssertEqual(updated.content, longer)
            XCTAssertEqual(updated.status, .complete)
            XCTAssertGreaterThanOrEqual(updated.updatedAt, updated.createdAt)
        }
    }

    func testTwoStoresOnOneFileSeeEachOthersWrites() throws {
        try eachBackend {
            let path = location
            let first = try storeWithAgent(path: path)
            let second = try AgentStore.at(path)
            XCTAssertEqual(try second.agents().map(\.name), ["alice"])
            let id = try first.appendMessage(agent: "alice", role: .user, content: [.text("from the first")])
            XCTAssertEqual(try second.messages(agent: "alice").map(\.id), [id])
            try second.updateMessage(id: id, content: [.text("edited by the second")], status: .complete)
            XCTAssertEqual(try first.message(id: id).content, [.text("edited by the second")])
            XCTAssertEqual(try second.advanceCursor(agent: "alice", to: id), 0)
            XCTAssertEqual(try first.state(agent: "alice").cursor, id)

            // Interleaved writers on two threads, one per store: nothing lost, no id given twice.
            let before = try first.messages(agent: "alice").count
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                let store = i == 0 ? first : second
                for n in 0..<100 {
                    _ = try? store.appendMessage(agent: "alice", role: .user, content: [.text("w\(i) \(n)")])
                }
            }
            let all = try second.messages(agent: "alice")
            XCTAssertEqual(all.count, before + 200)
            XCTAssertEqual(Set(all.map(\.id)).count, all.count)
        }
    }

    /// Another process (the sqlite3 shell) holds the write lock: a write waits for it up to the 5 s busy timeout,
    /// and past that fails with `locked`, naming the file.
    func testAnotherProcessesWriteLockIsWaitedForThenReported() throws {
        // scripts/install-deps.sh installs it; without it this must fail, not pass unchecked.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") else {
            return XCTFail("/usr/bin/sqlite3 is not installed: run scripts/install-deps.sh")
        }
        let path = dbPath()
        let store = try storeWithAgent(path: path)
        func holdLock(seconds: Double) throws -> Process {
            let ready = directory.appendingPathComponent("ready-\(UUID().uuidString)").path
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            shell.arguments = [path, "BEGIN IMMEDIATE", ".shell touch \(ready); sleep \(seconds)", "COMMIT"]
            try shell.run()
            eventually("the shell took the lock") { FileManager.default.fileExists(atPath: ready) }
            XCTAssertTrue(FileManager.default.fileExists(atPath: ready), "the shell took the lock")
            return shell
        }
        var shell = try holdLock(seconds: 1)
        let start = Date()
        try store.setMemory(agent: "alice", key: "k", value: "waited")
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.5, "the write waited for the other process")
        shell.waitUntilExit()
        XCTAssertEqual(try store.memory(agent: "alice", key: "k"), "waited")

        shell = try holdLock(seconds: 6)
        // SIGKILL: sqlite3 waits out its `.shell` child on SIGTERM; killed, it releases the lock at once.
        defer { kill(shell.processIdentifier, SIGKILL); shell.waitUntilExit() }
        assertStoreError(try store.appendMessage(agent: "alice", role: .user, content: [.text("x")])) { error in
            XCTAssertEqual(error, .locked(path: path))
            XCTAssertEqual(error.exitStatus, .internal)
            XCTAssertTrue(error.description.contains(path), error.description)
        }
    }

    func testCursorAdvanceReturnsThePreviousValueAndPendingInputSkipsToolResults() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let a = try store.appendMessage(agent: "alice", role: .user, content: [.text("first")], sender: "Ann")
            try store.appendMessage(agent: "alice", role: .assistant, content: [.text("reply")])
            try store.appendMessage(
                agent: "alice", role: .user,
                content: [
                    .toolResult(ToolResultBlock(toolUseID: "t1", content: [.text("ok")]))
                ])
            let b = try store.appendMessage(agent: "alice", role: .user, content: [.text("second")], sender: "Ann")
            XCTAssertEqual(try store.userMessages(agent: "alice", after: 0).map(\.id), [a, b])
            XCTAssertEqual(try store.userMessages(agent: "alice", after: 0).first?.sender, "Ann")

            XCTAssertEqual(try store.state(agent: "alice"), AgentState())
            XCTAssertEqual(try store.advanceCursor(agent: "alice", to: a), 0)
            XCTAssertEqual(
                try store.userMessages(agent: "alice", after: try store.state(agent: "alice").cursor)
                    .map(\.id), [b])
            XCTAssertEqual(try store.advanceCursor(agent: "alice", to: b), a)
            XCTAssertEqual(try store.advanceCursor(agent: "alice", to: a), b, "never moves backwards")
            XCTAssertEqual(try store.state(agent: "alice").cursor, b)

            // A failed run rolls back with setState and records why.
            try store.setState(agent: "alice", AgentState(cursor: a, retryCount: 2, lastError: "overloaded"))
            XCTAssertEqual(
                try store.state(agent: "alice"), AgentState(cursor: a, retryCount: 2, lastError: "overloaded"))
            assertStoreError(try store.advanceCursor(agent: "ghost", to: 1)) {
                XCTAssertEqual($0.exitStatus, .notFound)
            }
        }
    }

    func testRecoverInterruptedMarksDeadProcessesSessionsAndKeepsPartialMessages() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let deadPID = try Self.deadPID()

            let dead = try store.startSession(agent: "alice", kind: .message, pid: deadPID)
            let partial = try store.appendMessage(
                agent: "alice", role: .assistant, content: [.text("half a repl")],
                status: .partial, sessionID: dead)
            // A session this process really runs, and one of a live process we do not own (pid 1).
            let live = try store.startSession(agent: "alice", kind: .run)
            let other = try store.startSession(agent: "alice", kind: .run, pid: 1)
            // This process's pid as recorded by an earlier process that had it: rewrite a session's process identity
            // (boot id and start time) with the backend's shell (scripts/install-deps.sh installs sqlite3 and psql).
            var expected = [dead]
            do {
                let earlier = try store.startSession(agent: "alice", kind: .task)
                let colon = backend == "postgresql" ? "strpos(process, ':')" : "instr(process, ':')"
                _ = try shell(
                    "UPDATE sessions SET process = substr(process, 1, \(colon)) || '0' "
                        + "WHERE id = \(earlier) AND process IS NOT NULL")
                expected.append(earlier)
            }
            // A dead pid of another host (a fleet's worker): not this host's to judge.
            let elsewhere = try store.startSession(agent: "alice", kind: .run, pid: deadPID)
            _ = try shell("UPDATE sessions SET host = 'another-host' WHERE id = \(elsewhere)")

            let recovered = try store.recoverInterrupted()
            XCTAssertEqual(recovered.map(\.id), expected)
            XCTAssertTrue(recovered.allSatisfy { $0.status == .interrupted && $0.endedAt != nil })
            XCTAssertTrue(recovered[0].error?.contains("pid \(deadPID)") ?? false, "\(recovered[0])")
            let byID = Dictionary(uniqueKeysWithValues: try store.sessions(agent: "alice").map { ($0.id, $0) })
            XCTAssertEqual(byID[dead]?.status, .interrupted)
            XCTAssertEqual(byID[live]?.status, .running)
            XCTAssertEqual(byID[live]?.pid, getpid())
            XCTAssertEqual(byID[live]?.host?.isEmpty, false, "a session records its host")
            XCTAssertEqual(byID[elsewhere]?.status, .running, "another host's session is left to its fleet")
            XCTAssertEqual(byID[other]?.status, .running)
            XCTAssertEqual(try store.message(id: partial).status, .partial)
            XCTAssertEqual(try store.message(id: partial).sessionID, dead)
            XCTAssertEqual(try store.recoverInterrupted(), [], "idempotent")

            try store.finishSession(live, status: .completed, steps: 3, usd: 0.25)
            let finished = try store.sessions(agent: "alice").first { $0.id == live }
            XCTAssertEqual(finished?.status, .completed)
            XCTAssertEqual(finished?.steps, 3)
            XCTAssertEqual(finished?.usd, 0.25)
            XCTAssertNotNil(finished?.endedAt)
            assertStoreError(try store.finishSession(live, status: .running, steps: 0, usd: 0)) {
                XCTAssertEqual($0.exitStatus, .usage)
            }
            XCTAssertNil(SessionKind(rawValue: "chat"), "an unknown kind cannot be asked for")
            assertStoreError(try store.finishSession(424_242, status: .failed, steps: 0, usd: 0)) {
                XCTAssertEqual($0, .unknownSession(424_242))
            }
        }
    }

    /// A reaped child's pid: certainly not running any more.
    private static func deadPID() throws -> Int32 {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        return child.processIdentifier
    }

    /// A pipeline whose process is gone is recovered as failed, unless another host runs it (a fleet's database):
    /// a pid means something only on its own host.
    func testOnlyThisHostsDeadPipelinesAreRecovered() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let deadPID = try Self.deadPID()
            let here = try store.createPipeline(orchestrator: "alice", agent: "alice", task: "t", pid: deadPID)
            let there = try store.createPipeline(orchestrator: "alice", agent: "alice", task: "t", pid: deadPID)
            _ = try shell("UPDATE pipelines SET host = 'another-host' WHERE id = \(there)")
            XCTAssertEqual(try store.recoverPipelines(), [here])
            XCTAssertEqual(try store.pipeline(here).status, .failed)
            XCTAssertEqual(try store.pipeline(there).status, .running, "another host's pipeline is left to it")
        }
    }

    /// An agent is created with every setting its config carries: a copy of an agent (a pipeline's) keeps the
    /// template's approval policy, effort and thinking without follow-up writes.
    func testCreateAgentKeepsEverySetting() throws {
        try eachBackend {
            let store = try AgentStore.at(location)
            var config = AgentConfig(name: "copy", model: "claude-opus-5", tools: ["computer"])
            (config.approval, config.effort, config.thinking) = ("delete,send", "high", "off")
            try store.createAgent(config)
            let stored = try store.agent(named: "copy")
            XCTAssertEqual(stored.approval, "delete,send")
            XCTAssertEqual(stored.effort, "high")
            XCTAssertEqual(stored.thinking, "off")
        }
    }

    /// `xclaw run`'s agents are stored marked one-shot, so listings can leave them out; nothing else is.
    func testAOneShotAgentIsMarked() throws {
        try eachBackend {
            let store = try AgentStore.at(location)
            var run = AgentConfig(name: "run-20261127-101010-42", model: "m", tools: ["computer"])
            run.oneShot = true
            try store.createAgent(run)
            try store.createAgent(AgentConfig(name: "clerk", model: "m"))
            XCTAssertEqual(try store.agent(named: run.name), run)
            XCTAssertEqual(try store.agents().map(\.name), ["clerk", run.name])
            XCTAssertEqual(try store.agents().map(\.oneShot), [false, true])
        }
    }

    /// The frame each tool call acted on: its image kept once by its bytes (and only for the call's first frame),
    /// read back with the run, spared by the orphan sweep while a frame refers to it, and removed by retention with
    /// the row kept (a report says the frame was removed); deleting the agent takes it away.
    func testActionFramesAreKeptOnceReadBackAndRemovedByRetention() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let first = try store.startSession(agent: "alice", kind: .message)
            let screen = Data("the screen before the tap".utf8)
            try store.recordActionFrame(session: first, call: "t1", mediaType: "image/png", data: screen)
            try store.recordActionFrame(session: first, call: "t2", mediaType: "image/png", data: screen)
            try store.recordActionFrame(session: first, call: "t1", mediaType: "image/jpeg", data: Data("later".utf8))
            XCTAssertEqual(try store.imageTotals().count, 1, "one image for two frames of one screen, none for nothing")
            let kept = ActionFrameRecord(mediaType: "image/png", data: screen)
            XCTAssertEqual(try store.runTranscript(session: first).frames, ["t1": kept, "t2": kept])
            try store.deleteUnusedImages()
            XCTAssertEqual(try store.imageTotals().count, 1, "a frame's image is not an orphan")
            assertStoreError(
                try store.recordActionFrame(session: 999, call: "t1", mediaType: "image/png", data: screen)
            ) { XCTAssertEqual($0, .unknownSession(999)) }

            // Retention: the finished run before the cutoff loses its frames' images, not their rows.
            try store.finishSession(first, status: .completed, steps: 1, usd: 0)
            let second = try store.startSession(agent: "alice", kind: .message)
            try store.recordActionFrame(session: second, call: "t1", mediaType: "image/png", data: Data("now".utf8))
            XCTAssertEqual(try store.pruneImages(sessionsBefore: second, placeholder: "[removed]"), 2)
            let removed = ActionFrameRecord(mediaType: "image/png", data: nil)
            XCTAssertEqual(try store.runTranscript(session: first).frames, ["t1": removed, "t2": removed])
            XCTAssertEqual(
                try store.runTranscript(session: second).frames["t1"],
                ActionFrameRecord(mediaType: "image/png", data: Data("now".utf8)), "a running session is kept")
            XCTAssertEqual(try store.imageTotals().count, 1)
            try store.deleteAgent(named: "alice")
            XCTAssertEqual(try store.imageTotals().count, 0, "the agent's frames went with it")
        }
    }

    /// A summary of old turns is xclaw's, not output that reached the user: a run killed after storing one (and
    /// nothing else) is still undone on recovery, so the user's message is answered by the next run.
    func testASummaryIsNotOutput() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let session = try store.startSession(agent: "alice", kind: .message)
            try store.appendMessage(
                agent: "alice", role: .user, content: [.text("batch")], sender: "xclaw:batch", sessionID: session)
            try store.appendMessage(
                agent: "alice", role: .user, content: [.text("notes")], sender: "xclaw:summary", sessionID: session)
            XCTAssertEqual(try store.outputCount(session: session, batchSender: "xclaw:batch"), 1)
            XCTAssertEqual(
                try store.outputCount(session: session, batchSender: "xclaw:batch", ignoring: ["xclaw:summary"]), 0)
            try store.appendMessage(agent: "alice", role: .assistant, content: [.text("hi")], sessionID: session)
            XCTAssertEqual(
                try store.outputCount(session: session, batchSender: "xclaw:batch", ignoring: ["xclaw:summary"]), 1)
        }
    }

    func testMemorySurvivesReopeningTheFile() throws {
        try eachBackend {
            let path = location
            do {
                let store = try storeWithAgent(path: path)
                try store.setMemory(agent: "alice", key: "wifi", value: "old")
                try store.setMemory(agent: "alice", key: "wifi", value: "hunter2")
                try store.setMemory(agent: "alice", key: "name", value: "Alice Ü")
                try store.setMemory(agent: "alice", key: "tmp", value: "x")
                XCTAssertTrue(try store.deleteMemory(agent: "alice", key: "tmp"))
                XCTAssertFalse(try store.deleteMemory(agent: "alice", key: "tmp"))
                assertStoreError(try store.setMemory(agent: "alice", key: "", value: "x")) {
                    XCTAssertEqual($0.exitStatus, .usage)
                }
            }
            let reopened = try AgentStore.at(path)
            XCTAssertEqual(try reopened.memory(agent: "alice", key: "wifi"), "hunter2")
            XCTAssertNil(try reopened.memory(agent: "alice", key: "tmp"))
            XCTAssertEqual(try reopened.memoryList(agent: "alice"), ["wifi": "hunter2", "name": "Alice Ü"])
            assertStoreError(try reopened.memoryList(agent: "zed")) { XCTAssertEqual($0.exitStatus, .notFound) }
        }
    }

    func testUsageSumsPerAgentAndSession() throws {
        try eachBackend {
            let store = try storeWithAgent("zoe")
            try store.createAgent(AgentConfig(name: "adam", model: "m"))
            try store.createAgent(AgentConfig(name: "idle", model: "m"))
            let s1 = try store.startSession(agent: "zoe", kind: .message)
            let s2 = try store.startSession(agent: "zoe", kind: .task)
            try store.recordUsage(
                agent: "zoe", sessionID: s1, model: "m",
                usage: Usage(
                    inputTokens: 100, outputTokens: 10, cacheCreationInputTokens: 5,
                    cacheReadInputTokens: 1), usd: 0.5)
            try store.recordUsage(
                agent: "zoe", sessionID: s1, model: "m", usage: Usage(inputTokens: 1, outputTokens: 2),
                usd: 0.25)
            try store.recordUsage(agent: "zoe", sessionID: s2, model: "m", usage: Usage(outputTokens: 7), usd: 1)
            try store.recordUsage(agent: "adam", sessionID: nil, model: "m", usage: Usage(inputTokens: 3), usd: 0.125)

            let summary = try store.usageSummary()
            XCTAssertEqual(summary.map(\.agent), ["adam", "idle", "zoe"])
            XCTAssertEqual(
                summary[2],
                UsageSummary(
                    agent: "zoe", requests: 3,
                    usage: Usage(
                        inputTokens: 101, outputTokens: 19,
                        cacheCreationInputTokens: 5, cacheReadInputTokens: 1),
                    usd: 1.75, sessions: 2))
            XCTAssertEqual(summary[1], UsageSummary(agent: "idle", requests: 0, usage: Usage(), usd: 0, sessions: 0))
            XCTAssertEqual(summary[0].usage.inputTokens, 3)
            XCTAssertEqual(summary[0].sessions, 0)
            XCTAssertEqual(try store.usageSummary(agent: "adam").map(\.usd), [0.125])

            let perSession = try store.usageBySession(agent: "zoe")
            XCTAssertEqual(perSession.map(\.session.id), [s1, s2])
            XCTAssertEqual(perSession.map(\.requests), [2, 1])
            XCTAssertEqual(perSession.map(\.usd), [0.75, 1])
            XCTAssertEqual(
                perSession[0].usage,
                Usage(
                    inputTokens: 101, outputTokens: 12, cacheCreationInputTokens: 5,
                    cacheReadInputTokens: 1))
            assertStoreError(
                try store.recordUsage(agent: "zoe", sessionID: 987_654, model: "m", usage: Usage(), usd: 0)
            ) {
                XCTAssertEqual($0, .unknownSession(987_654))
            }
        }
    }

    func testTasksAndRunLogs() throws {
        try eachBackend {
            let store = try storeWithAgent()
            let next = Date(timeIntervalSince1970: 1_800_000_000.123)
            let task = try store.createTask(
                agent: "alice", prompt: "check mail", scheduleType: .interval,
                scheduleValue: "3600000", nextRun: next)
            let once = try store.createTask(
                agent: "alice", prompt: "once", scheduleType: .once,
                scheduleValue: "2030-01-01T09:00:00Z", contextMode: .agent,
                nextRun: nil, id: "fixed-id")
            XCTAssertEqual(try store.tasks(agent: "alice"), [task, once])
            XCTAssertEqual(try store.tasks(agent: nil).first?.nextRun, next)
            assertStoreError(
                try store.createTask(
                    agent: "alice", prompt: "dup", scheduleType: .cron,
                    scheduleValue: "* * * * *", nextRun: nil, id: "fixed-id")
            ) {
                XCTAssertEqual($0.exitStatus, .usage)
            }
            let runAt = Date(timeIntervalSince1970: 1_700_000_000.5)
            try store.appendTaskRunLog(
                taskID: task.id, runAt: runAt, durationMs: 1200, status: "success", result: "3 new")
            try store.appendTaskRunLog(
                taskID: task.id, runAt: runAt.addingTimeInterval(60), durationMs: 5,
                status: "error", error: "overloaded")
            let logs = try store.taskRunLogs(taskID: task.id)
            XCTAssertEqual(logs.map(\.status), ["success", "error"])
            XCTAssertEqual(logs[0].runAt, runAt)
            XCTAssertEqual(logs[0].result, "3 new")
            XCTAssertEqual(logs[1].error, "overloaded")
            assertStoreError(try store.taskRunLogs(taskID: "nope")) { XCTAssertEqual($0, .unknownTask("nope")) }
            try store.deleteAgent(named: "alice")
            XCTAssertEqual(try store.tasks(agent: nil), [])
        }
    }

    func testUnwritableAndCorruptPathsNameThePath() throws {
        // A path below a regular file cannot be created, even by root.
        let blocker = directory.appendingPathComponent("not-a-dir")
        try Data("x".utf8).write(to: blocker)
        let below = blocker.appendingPathComponent("sub/xclaw.sqlite").path
        assertStoreError(try AgentStore(path: below)) { error in
            guard case .unwritable = error else { return XCTFail("\(error)") }
            XCTAssertEqual(error.exitStatus, .internal)
            XCTAssertTrue(error.description.contains(below), error.description)
            XCTAssertTrue(error.description.contains("XCLAW_DB"), error.description)
        }
        // Root ignores directory permissions, so this case can only run for other users; the regular-file case
        // above covers an unwritable path for everyone.
        if getuid() != 0 {
            let locked = directory.appendingPathComponent("locked")
            try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
            XCTAssertEqual(chmod(locked.path, 0o500), 0)
            defer { _ = chmod(locked.path, 0o700) }
            let inside = locked.appendingPathComponent("xclaw.sqlite").path
            assertStoreError(try AgentStore(path: inside)) { error in
                XCTAssertTrue(error.description.contains(inside), error.description)
                XCTAssertEqual(error.exitStatus, .internal)
            }
        }
        let garbage = dbPath("garbage.sqlite")
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: garbage))
        assertStoreError(try AgentStore(path: garbage)) { error in
            guard case .corrupt = error else { return XCTFail("\(error)") }
            XCTAssertTrue(error.description.contains(garbage), error.description)
            XCTAssertEqual(error.exitStatus, .internal)
        }
    }

    func testDefaultPath() {
        let cases: [(environment: [String: String], path: String, why: String)] = [
            (["XCLAW_DB": "/x/db.sqlite"], "/x/db.sqlite", ""),
            (["XDG_DATA_HOME": "/data"], "/data/xclaw/xclaw.sqlite", ""),
            (
                ["XDG_DATA_HOME": "relative"], "/home/u/.local/share/xclaw/xclaw.sqlite",
                "relative XDG values are ignored"
            ),
            (["XCLAW_DB": "~/my.sqlite"], "/home/u/my.sqlite", ""),
            (["XCLAW_DB": ""], "/home/u/.local/share/xclaw/xclaw.sqlite", ""),
        ]
        for (environment, path, why) in cases {
            XCTAssertEqual(
                AgentStore.defaultPath(environment: environment.merging(["HOME": "/home/u"]) { $1 }), path, why)
        }
    }

    func testDatesRoundTripToTheMillisecond() throws {
        try eachBackend {
            let store = try AgentStore.at(location)
            for (i, t) in [0, 1_700_000_000.123, 1_700_000_000.9995, 4_102_444_800.001, -1.5, 1e9 + 0.0004].enumerated()
            {
                let config = AgentConfig(name: "a\(i)", model: "m", createdAt: Date(timeIntervalSince1970: t))
                try store.createAgent(config)
                XCTAssertEqual(try store.agent(named: config.name).createdAt, config.createdAt, "\(t)")
                XCTAssertEqual(abs(config.createdAt.timeIntervalSince1970 - t), 0, accuracy: 0.0005)
            }
        }
    }

    /// Not an assertion: prints what one streamed update of a ~4 KB message costs, so regressions are visible.
    func testUpdateMessageThroughput() throws {
        let store = try storeWithAgent()
        let id = try store.appendMessage(agent: "alice", role: .assistant, content: [], status: .partial)
        let chunk = String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 91)  // ~4 KB
        let content: [ContentBlock] = [.text(chunk)]
        let rounds = 500
        let clock = ContinuousClock()
        for _ in 0..<20 { try store.updateMessage(id: id, content: content, status: .partial) }  // warm-up
        let total = clock.measure {
            for _ in 0..<rounds { try? store.updateMessage(id: id, content: content, status: .partial) }
        }
        let encode = clock.measure { for _ in 0..<rounds { _ = JSONValue.array(content.map(\.json)).jsonText } }
        let perUpdate = total.milliseconds * 1000 / Double(rounds)
        let perEncode = encode.milliseconds * 1000 / Double(rounds)
        let bytes = JSONValue.array(content.map(\.json)).jsonText.utf8.count
        print(
            String(
                format: "StoreTests: updateMessage of a %d-byte message: %.1f µs per update "
                    + "(of which %.1f µs JSON encoding), %d updates", bytes, perUpdate, perEncode, rounds))
        XCTAssertEqual(try store.message(id: id).content, content)
    }
}

/// A thread-safe list of failure texts for concurrent test bodies.
private final class LockedList: Sendable {
    private let storage = Mutex<[String]>([])
    /// Appends one item.
    func append(_ item: String) { storage.withLock { $0.append(item) } }
    /// A copy of the items.
    var items: [String] { storage.withLock { $0 } }
}

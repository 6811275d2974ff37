import Foundation
import Synchronization
import XCTest
import XclawMessages
import XclawStore
import XclawTesting
import XclawTimeTesting

/// The fleet's store on a real PostgreSQL server: workers register, heartbeat, leave and rejoin; runs queued from
/// several clients are claimed exactly once, in order per agent, one at a time per agent, by the workers that can
/// serve them; a worker that stops heartbeating is lost with its runs in flight (lost, or queued again when they
/// asked); a queued run wakes a waiting worker. SQLite has no fleet and says so.
final class FleetStoreTests: XCTestCase {
    /// A fresh PostgreSQL store with agents `a0`…`a(agents-1)`.
    private func fleet(agents: Int = 1) throws -> (store: AgentStore, url: String) {
        let url = try PostgresTestServer.shared().newDatabase()
        let store = try AgentStore(postgres: PostgresURL(url))
        for i in 0..<agents { try store.createAgent(AgentConfig(name: "a\(i)", model: "m", tools: [])) }
        return (store, url)
    }

    /// A worker description.
    private func worker(
        _ name: String, host: String = "host-1", labels: [String: String] = [:], displays: [String] = ["1280x800"],
        apps: [String] = []
    ) -> WorkerInfo {
        WorkerInfo(
            name: name, host: host, pid: getpid(), version: "test", labels: labels, slots: 2, displays: displays,
            apps: apps)
    }

    func testAWorkerRegistersHeartbeatsLeavesAndRejoins() throws {
        let (store, _) = try fleet()
        try store.registerWorker(worker("w1", labels: ["zone": "eu"]))
        var listed = try store.workers()
        XCTAssertEqual(listed.map(\.info.name), ["w1"])
        XCTAssertEqual(listed.first?.state, .up)
        XCTAssertEqual(listed.first?.info.labels, ["zone": "eu"])
        XCTAssertEqual(listed.first?.busy, 0)
        XCTAssertTrue(try store.heartbeat(worker: "w1"))
        // Another host cannot take a live worker's name.
        XCTAssertThrowsError(try store.registerWorker(worker("w1", host: "host-2"))) { error in
            XCTAssertEqual(error as? StoreError, .workerNameTaken("w1", host: "host-1"))
            XCTAssertEqual((error as? StoreError)?.exitStatus, .usage)
        }
        try store.leaveWorker("w1")
        listed = try store.workers()
        XCTAssertEqual(listed.first?.state, .left)
        XCTAssertNotNil(listed.first?.endedAt)
        XCTAssertFalse(try store.heartbeat(worker: "w1"), "a worker that left is not alive")
        try store.registerWorker(worker("w1", host: "host-2"))
        XCTAssertEqual(try store.workers().first?.state, .up, "a worker rejoins under its name")
        XCTAssertEqual(try store.workers().first?.info.host, "host-2")

        // SQLite serves one machine: no fleet, and a message that says what to set.
        let temporary = try TemporaryStore("nofleet")
        defer { temporary.remove() }
        XCTAssertThrowsError(try temporary.store.workers()) { error in
            guard case .noFleet = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains("XCLAW_DATABASE_URL"))
        }
    }

    /// The target in miniature, through the store: 3 workers, 30 agents, 300 runs queued by three clients at
    /// once; every run claimed once, each agent's runs in order and never two at a time.
    func testThreeWorkersClaimEveryRunOnceInOrderPerAgent() throws {
        let (store, url) = try fleet(agents: 30)
        let clients = try (0..<3).map { _ in try AgentStore(postgres: PostgresURL(url)) }
        DispatchQueue.concurrentPerform(iterations: 3) { c in
            for i in 0..<100 {
                let agent = "a\((c * 100 + i) % 30)"
                _ = try? clients[c].enqueueRun(
                    FleetRunRequest(
                        kind: .send, agent: agent, arguments: ["send", agent, "m\(c)-\(i)"], enqueuedBy: "client\(c)"))
            }
        }
        XCTAssertEqual(try store.fleetRuns(status: .queued, limit: 1000).count, 300)
        let workers = try (0..<3).map { i -> (AgentStore, WorkerInfo) in
            let s = try AgentStore(postgres: PostgresURL(url))
            let info = worker("w\(i)")
            try s.registerWorker(info)
            return (s, info)
        }
        let claimed = Mutex<[(agent: String, id: Int64, worker: String)]>([])
        let problems = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { w in
            let (s, info) = workers[w]
            var idle = 0
            while idle < 3 {
                do {
                    guard let run = try s.claimRun(for: info) else {
                        idle += 1
                        Thread.sleep(forTimeInterval: 0.02)
                        continue
                    }
                    idle = 0
                    let agent = run.request.agent
                    // The database itself must hold one running run of this agent: this one.
                    let inFlight = try s.fleetRuns(status: .running, limit: 1000).filter { $0.request.agent == agent }
                    if inFlight.map(\.id) != [run.id] {
                        problems.withLock { $0.append("\(agent) has \(inFlight.map(\.id)) running at once") }
                    }
                    claimed.withLock { $0.append((agent, run.id, info.name)) }
                    Thread.sleep(forTimeInterval: 0.001)  // a run takes time: others claim meanwhile
                    try s.finishRun(run.id, worker: info.name, status: .completed, exitStatus: 0, error: nil)
                } catch {
                    problems.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        XCTAssertEqual(problems.withLock { $0 }, [])
        let all = claimed.withLock { $0 }
        XCTAssertEqual(all.count, 300, "each run claimed")
        XCTAssertEqual(Set(all.map(\.id)).count, 300, "no run claimed twice")
        for agent in Set(all.map(\.agent)) {
            let ids = all.filter { $0.agent == agent }.map(\.id)
            XCTAssertEqual(ids, ids.sorted(), "\(agent)'s runs out of order")
        }
        XCTAssertEqual(try store.fleetRuns(status: .completed, limit: 1000).count, 300)
        XCTAssertGreaterThan(Set(all.map(\.worker)).count, 1, "one worker took every run")
    }

    func testLabelsDisplaySizesAndApplicationsChooseTheWorker() throws {
        let (store, _) = try fleet(agents: 3)
        let plain = worker("plain")
        let gpu = worker("gpu", labels: ["gpu": "yes", "zone": "eu"], displays: ["1920x1080"], apps: ["xcalc"])
        for w in [plain, gpu] { try store.registerWorker(w) }
        let labelled = try store.enqueueRun(
            FleetRunRequest(kind: .run, agent: "a0", arguments: [], labels: ["gpu": "yes"], enqueuedBy: "t"))
        let sized = try store.enqueueRun(
            FleetRunRequest(kind: .run, agent: "a1", arguments: [], displaySize: "1920x1080", enqueuedBy: "t"))
        let app = try store.enqueueRun(
            FleetRunRequest(kind: .run, agent: "a2", arguments: [], app: "xcalc", enqueuedBy: "t"))
        XCTAssertNil(try store.claimRun(for: plain), "the plain worker can serve none of them")
        var taken: [Int64] = []
        while let run = try store.claimRun(for: gpu) { taken.append(run.id) }
        XCTAssertEqual(taken, [labelled, sized, app])
        XCTAssertEqual(try store.workers().first { $0.info.name == "gpu" }?.busy, 3)
    }

    /// A rolling upgrade: a run queued by a newer xclaw (a higher command-line level) waits for a worker that
    /// speaks it, instead of failing on an older one; the older worker goes on with the runs it understands.
    func testARunQueuedByANewerXclawWaitsForAWorkerOfItsLevel() throws {
        let (store, _) = try fleet(agents: 2)
        var older = worker("older")
        older.level = FleetRunRequest.currentLevel
        var newer = worker("newer")
        newer.level = FleetRunRequest.currentLevel + 1
        try store.registerWorker(older)
        let ahead = try store.enqueueRun(
            FleetRunRequest(
                kind: .send, agent: "a0", arguments: ["send"], enqueuedBy: "t",
                level: FleetRunRequest.currentLevel + 1))
        let plain = try store.enqueueRun(
            FleetRunRequest(kind: .send, agent: "a1", arguments: ["send"], enqueuedBy: "t"))
        XCTAssertEqual(try store.fleetRun(ahead).request.level, FleetRunRequest.currentLevel + 1)
        XCTAssertEqual(try store.claimRun(for: older)?.id, plain, "the older worker takes only what it speaks")
        XCTAssertNil(try store.claimRun(for: older))
        XCTAssertEqual(try store.fleetRun(ahead).status, .queued)
        try store.registerWorker(newer)
        XCTAssertEqual(try store.claimRun(for: newer)?.id, ahead)
        XCTAssertEqual(
            try store.workers().map { "\($0.info.name):\($0.info.level)" },
            ["newer:\(FleetRunRequest.currentLevel + 1)", "older:\(FleetRunRequest.currentLevel)"])
    }

    func testALostWorkersRunsAreRecordedLostOrQueuedAgainAndItRejoins() throws {
        let (store, url) = try fleet(agents: 2)
        let lost = worker("lost-one")
        try store.registerWorker(lost)
        let clicks = try store.enqueueRun(FleetRunRequest(kind: .send, agent: "a0", arguments: [], enqueuedBy: "t"))
        let replay = try store.enqueueRun(
            FleetRunRequest(kind: .replay, agent: "a1", arguments: [], retryLost: true, enqueuedBy: "t"))
        XCTAssertEqual(try store.claimRun(for: lost)?.id, clicks)
        XCTAssertEqual(try store.claimRun(for: lost)?.id, replay)
        let session = try store.startSession(agent: "a0", kind: .message, pid: getpid())
        try store.attachSession(run: clicks, session: session)
        XCTAssertEqual(try store.markLostWorkers(timeout: .seconds(30)).count, 0, "its heartbeat is fresh")
        // Its heartbeat stops: made a minute old on the server's own clock.
        try PostgresTestServer.shared().sql(
            "UPDATE workers SET heartbeat_at = now() - interval '1 minute' WHERE name = 'lost-one'", url: url)
        let other = try AgentStore(postgres: PostgresURL(url))
        // A 2 s deadline (the server must itself have run that long: see the restart test).
        let found = try XCTUnwrap(
            eventually("the worker is declared lost") {
                let lost = try other.markLostWorkers(timeout: .seconds(2))
                return lost.isEmpty ? nil : lost
            })
        XCTAssertEqual(found.map(\.name), ["lost-one"])
        XCTAssertEqual(found.first?.runs.map(\.id), [clicks, replay])
        XCTAssertEqual(try store.markLostWorkers(timeout: .seconds(2)).count, 0, "a loss is settled once")
        let lostRun = try store.fleetRun(clicks)
        XCTAssertEqual(lostRun.status, .lost, "a click must not happen twice: never run again")
        XCTAssertEqual(lostRun.worker, "lost-one")
        XCTAssertTrue(lostRun.error?.contains("lost-one") ?? false, lostRun.error ?? "")
        XCTAssertEqual(try store.session(session).status, .interrupted)
        XCTAssertTrue(try store.session(session).error?.contains("lost-one") ?? false)
        let retried = try store.fleetRun(replay)
        XCTAssertEqual(retried.status, .queued, "a replay asked to run again elsewhere")
        XCTAssertNil(retried.worker)
        // The lost worker comes back: its heartbeat says so, its late result is refused, it rejoins.
        XCTAssertFalse(try store.heartbeat(worker: "lost-one"))
        XCTAssertFalse(
            try store.finishRun(clicks, worker: "lost-one", status: .completed, exitStatus: 0, error: nil))
        XCTAssertEqual(try store.fleetRun(clicks).status, .lost)
        try store.registerWorker(lost)
        XCTAssertEqual(try store.workers().first?.state, .up)
        let again = try XCTUnwrap(try store.claimRun(for: lost))
        XCTAssertEqual(again.id, replay)
        XCTAssertEqual(again.attempts, 2)
    }

    /// After the server restarts, a stale heartbeat is not a loss until the server has run a whole deadline: every
    /// worker was cut off alike, and each gets the time to reach it again. Meanwhile the store waits for the server
    /// and goes on: nothing written is lost, nothing twice.
    func testARestartedServerGivesEveryWorkerAFullDeadlineAndTheStoreWaitsForIt() throws {
        let (store, url) = try fleet()
        try store.registerWorker(worker("patient"))
        try PostgresTestServer.shared().sql(
            "UPDATE workers SET heartbeat_at = now() - interval '1 minute' WHERE name = 'patient'", url: url)
        // An agent held across the restart: the server drops the lock with its connection, and the hold's keeper
        // takes it again.
        var hold: AgentHold? = try XCTUnwrap(try store.tryHoldAgent("a0"))
        XCTAssertNil(try store.tryHoldAgent("a0"), "held")
        let restarted = Mutex<Bool?>(nil)
        Thread {
            let done = (try? PostgresTestServer.shared().restart(downFor: .milliseconds(700))) != nil
            restarted.withLock { $0 = done }
        }.start()
        defer { _ = poll(within: .seconds(60)) { restarted.withLock { $0 } } }
        // Written while the server goes down and comes back: each waits for it.
        var ids: [Int64] = []
        for i in 0..<20 {
            ids.append(try store.appendMessage(agent: "a0", role: .user, content: [.text("m\(i)")], sender: "t"))
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(eventually("the server restarts", within: .seconds(60)) { restarted.withLock { $0 } }, true)
        XCTAssertEqual(try store.messages(agent: "a0").map(\.id), ids, "every write landed once")
        eventually("the hold is taken again after the restart", within: .seconds(15)) {
            // A hold taken here (the keeper has not yet) is let go at once; a server still away is not an answer.
            do { return try store.tryHoldAgent("a0") == nil } catch { return false }
        }
        Thread.sleep(forTimeInterval: 1.5)  // a keeper's look or more later
        XCTAssertNil(try store.tryHoldAgent("a0"), "still held")
        XCTAssertNotNil(hold)
        hold = nil
        XCTAssertNotNil(try store.tryHoldAgent("a0"), "released with the hold")
        // The writes did span the outage: some were stored before the server started again, some after.
        let started = try XCTUnwrap(
            Double(
                try PostgresTestServer.shared().query(
                    "SELECT extract(epoch FROM pg_postmaster_start_time())", url: url)))
        let stored = try store.messages(agent: "a0").map(\.createdAt.timeIntervalSince1970)
        XCTAssertTrue(stored.contains { $0 < started } && stored.contains { $0 > started }, "\(stored) \(started)")
        XCTAssertEqual(try store.markLostWorkers(timeout: .seconds(30)).count, 0, "the server just started")
        XCTAssertEqual(try store.workers().first?.state, .up)
        XCTAssertTrue(try store.heartbeat(worker: "patient"))
    }

    /// A worker restarted in its container comes back with the same name and the same pid (1): its run cut off with
    /// the old process is settled as lost when it registers, so the agent's next runs are not held behind it; a
    /// worker that left claims nothing; a run left by a worker that is no longer up is settled by the others.
    func testARegisteringWorkerSettlesItsCutOffRunsAndOnlyLiveWorkersClaim() throws {
        let (store, url) = try fleet(agents: 2)
        let restarted = worker("pod-0")
        try store.registerWorker(restarted)
        let cut = try store.enqueueRun(FleetRunRequest(kind: .send, agent: "a0", arguments: [], enqueuedBy: "t"))
        XCTAssertEqual(try store.claimRun(for: restarted)?.id, cut)
        let next = try store.enqueueRun(FleetRunRequest(kind: .send, agent: "a0", arguments: [], enqueuedBy: "t"))
        XCTAssertNil(try store.claimRun(for: restarted), "a0's next run waits behind the one in flight")
        try store.registerWorker(restarted)  // the same name and pid: a container's restart
        XCTAssertEqual(try store.fleetRun(cut).status, .lost)
        XCTAssertTrue(try store.fleetRun(cut).error?.contains("restarted") ?? false)
        XCTAssertEqual(try store.claimRun(for: restarted)?.id, next, "the agent goes on")

        let leaver = worker("leaver")
        try store.registerWorker(leaver)
        let orphan = try store.enqueueRun(FleetRunRequest(kind: .send, agent: "a1", arguments: [], enqueuedBy: "t"))
        XCTAssertEqual(try store.claimRun(for: leaver)?.id, orphan)
        try store.leaveWorker("leaver")  // as if it left with the run still recorded in flight
        _ = try store.enqueueRun(FleetRunRequest(kind: .send, agent: "a1", arguments: [], enqueuedBy: "t"))
        XCTAssertNil(try store.claimRun(for: leaver), "a worker that left claims nothing")
        let settled = try AgentStore(postgres: PostgresURL(url)).markLostWorkers(timeout: .seconds(30))
        XCTAssertEqual(settled.flatMap(\.runs).map(\.id), [orphan])
        XCTAssertEqual(try store.fleetRun(orphan).status, .lost)
    }

    func testAQueuedRunWakesAWaitingWorker() throws {
        let (store, url) = try fleet()
        let waiter = try AgentStore(postgres: PostgresURL(url))
        XCTAssertTrue(try waiter.waitForFleetChange(timeout: .seconds(5)), "the first wait starts listening")
        XCTAssertFalse(try waiter.waitForFleetChange(timeout: .milliseconds(50)), "nothing happened")
        let woken = Mutex<Bool?>(nil)
        let thread = Thread { woken.withLock { $0 = try? waiter.waitForFleetChange(timeout: .seconds(30)) } }
        thread.start()
        Thread.sleep(forTimeInterval: 0.1)
        _ = try store.enqueueRun(FleetRunRequest(kind: .send, agent: "a0", arguments: [], enqueuedBy: "t"))
        eventually("the waiting worker returns", within: .seconds(30)) { woken.withLock { $0 } != nil }
        XCTAssertEqual(woken.withLock { $0 }, true, "woken by the notification, not the timeout")
    }

    /// The store keeps its statements prepared on each connection; a newer xclaw that migrates the schema under them
    /// ("cached plan must not change result type") costs a fresh connection, never an error: the transaction the
    /// error aborted runs again. A read's COMMIT, not waited for, is answered before the connection's next use.
    func testPreparedStatementsSurviveASchemaChangeUnderThem() throws {
        let (store, url) = try fleet()
        let session = try store.startSession(agent: "a0", kind: .run)
        XCTAssertEqual(try store.session(session).status, .running)
        for _ in 0..<3 { _ = try store.session(session) }  // prepared, and read through pending COMMITs
        try PostgresTestServer.shared().sql("ALTER TABLE sessions ADD COLUMN added_by_a_newer_xclaw TEXT", url: url)
        XCTAssertEqual(try store.session(session).status, .running, "read again on a fresh connection")
        XCTAssertEqual(try store.session(session).status, .running)
        try store.finishSession(session, status: .completed, error: nil, steps: 1, usd: 0)
        XCTAssertEqual(
            try PostgresTestServer.shared().query("SELECT status FROM sessions WHERE id = \(session)", url: url)
                .trimmingCharacters(in: .whitespacesAndNewlines), "completed")
        // Nothing is left open on the server (the last transaction, a write, was waited for): every transaction
        // committed or rolled back.
        let open = try PostgresTestServer.shared().query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in%'",
            url: url)
        XCTAssertEqual(open.trimmingCharacters(in: .whitespacesAndNewlines), "0")
    }
}

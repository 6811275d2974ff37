import Foundation
import XCTest
import XclawTimeTesting

@testable import XclawAgent
@testable import XclawMessages

// MARK: - Helpers (private to this file)

/// A value shared between tasks under a lock.
/// Safe because the value is read and changed only under `lock`.
private final class AQLocked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func with<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
    var snapshot: Value { with { $0 } }
}

/// Suspends callers until opened.
private actor AQGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        for w in waiters { w.resume() }
        waiters = []
    }
}

/// Counts events and lets a test wait until a count is reached.
private actor AQSignal {
    private var count = 0
    private var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
    func fire() {
        count += 1
        let ready = waiters.filter { $0.0 <= count }
        waiters.removeAll { $0.0 <= count }
        for (_, w) in ready { w.resume() }
    }
    func wait(until n: Int) async {
        if count >= n { return }
        await withCheckedContinuation { waiters.append((n, $0)) }
    }
}

/// Start and end of one run or one critical section.
private struct AQInterval {
    var key: String
    var start: ContinuousClock.Instant
    var end: ContinuousClock.Instant
}

/// Tracks how many runs are in flight and the most seen at once.
/// Safe because its only state is an AQLocked.
private final class AQConcurrency: @unchecked Sendable {
    private let state = AQLocked((current: 0, max: 0))
    func enter() {
        state.with {
            $0.current += 1; $0.max = Swift.max($0.max, $0.current)
        }
    }
    func leave() { state.with { $0.current -= 1 } }
    var max: Int { state.snapshot.max }
}

private func assertNoOverlap(_ intervals: [AQInterval], file: StaticString = #filePath, line: UInt = #line) {
    let sorted = intervals.sorted { $0.start < $1.start }
    for (a, b) in zip(sorted, sorted.dropFirst()) {
        XCTAssertLessThanOrEqual(a.end, b.start, "\(a.key) overlaps \(b.key)", file: file, line: line)
    }
}

private func overlap(_ a: AQInterval, _ b: AQInterval) -> Duration {
    min(a.end, b.end) - max(a.start, b.start)
}

private func workName(_ work: QueueWork) -> String {
    switch work {
    case .messages: return "messages"
    case .task(let id): return "task:\(id)"
    }
}

/// Per-agent inboxes: enqueues append numbered messages, each run consumes everything after its cursor.
/// Safe because its only state is an AQLocked.
private final class AQInbox: @unchecked Sendable {
    private let state = AQLocked((inbox: [String: [Int]](), cursor: [String: Int](), processed: [String: [Int]]()))
    func append(_ agent: String, _ n: Int) { state.with { $0.inbox[agent, default: []].append(n) } }
    /// Reads the new messages and marks them processed; returns them.
    @discardableResult
    func consume(_ agent: String) -> [Int] {
        state.with { s in
            let all = s.inbox[agent] ?? []
            let from = s.cursor[agent] ?? 0
            let new = Array(all[from...])
            s.cursor[agent] = all.count
            s.processed[agent, default: []].append(contentsOf: new)
            return new
        }
    }
    func processed(_ agent: String) -> [Int] { state.with { $0.processed[agent] ?? [] } }
}

private struct AQEchoTool: AgentTool {
    var name: String { "echo" }
    var description: String { "Echoes." }
    var inputSchema: JSONValue { ["type": "object"] }
    var betas: [String] { ["echo-beta-1"] }
    func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput { .text("ok") }
}

// MARK: - AgentQueue

final class AgentQueueTests: XCTestCase {
    func testSameAgentSerializedInOrderAndBurstCoalesces() async {
        let clock = ContinuousClock()
        let gate = AQGate()
        let started = AQSignal()
        let inbox = AQInbox()
        let intervals = AQLocked<[AQInterval]>([])
        let batches = AQLocked<[[Int]]>([])
        let queue = AgentQueue(processor: { agent, _ in
            let start = clock.now
            let isFirst = batches.with { $0.isEmpty }
            let batch = inbox.consume(agent)
            batches.with { $0.append(batch) }
            await started.fire()
            // Kept: the run's work.
            if isFirst { await gate.wait() } else { try? await Task.sleep(for: .milliseconds(5)) }
            intervals.with { $0.append(AQInterval(key: agent, start: start, end: clock.now)) }
            return .success
        })
        inbox.append("a", 1)
        await queue.enqueueMessages(agent: "a")
        await started.wait(until: 1)
        for n in 2...4 {  // a burst while the first run is busy
            inbox.append("a", n)
            await queue.enqueueMessages(agent: "a")
        }
        let active = await queue.activeCount
        XCTAssertEqual(active, 1)
        await gate.open()
        await queue.waitUntilIdle()
        XCTAssertEqual(batches.snapshot, [[1], [2, 3, 4]], "the burst must coalesce into exactly one follow-up run")
        XCTAssertEqual(inbox.processed("a"), [1, 2, 3, 4])
        assertNoOverlap(intervals.snapshot)
    }

    func testDifferentAgentsRunInParallel() async {
        let clock = ContinuousClock()
        let intervals = AQLocked<[String: AQInterval]>([:])
        let queue = AgentQueue(processor: { agent, _ in
            let start = clock.now
            try? await Task.sleep(for: .milliseconds(150))  // kept: the run's work, long enough to overlap
            intervals.with { $0[agent] = AQInterval(key: agent, start: start, end: clock.now) }
            return .success
        })
        await queue.enqueueMessages(agent: "a")
        await queue.enqueueMessages(agent: "b")
        await queue.waitUntilIdle()
        let all = intervals.snapshot
        guard let a = all["a"], let b = all["b"] else { return XCTFail("both agents must run") }
        XCTAssertGreaterThan(overlap(a, b), .zero)
    }

    func testCapAndFIFOWaitingList() async {
        let gate = AQGate()
        let concurrency = AQConcurrency()
        let startOrder = AQLocked<[String]>([])
        let processed = AQLocked<[String]>([])
        let queue = AgentQueue(
            configuration: QueueConfiguration(maxConcurrent: 3),
            processor: { agent, _ in
                concurrency.enter()
                await gate.wait()
                try? await Task.sleep(for: .milliseconds(Int.random(in: 1...10)))  // kept: the run's work
                processed.with { $0.append(agent) }
                concurrency.leave()
                return .success
            },
            events: { event in
                if case .started(let agent, _) = event { startOrder.with { $0.append(agent) } }
            })
        let agents = (0..<8).map { "agent\($0)" }
        for agent in agents { await queue.enqueueMessages(agent: agent) }
        await queue.enqueueMessages(agent: "agent4")  // already waiting: keeps its place, no duplicate
        await queue.enqueueTask(agent: "agent5", id: "t")
        var active = await queue.activeCount
        var waiting = await queue.waiting
        XCTAssertEqual(active, 3)
        XCTAssertEqual(waiting, Array(agents[3...]))
        await gate.open()
        await queue.waitUntilIdle()
        XCTAssertLessThanOrEqual(concurrency.max, 3)
        XCTAssertEqual(Set(processed.snapshot), Set(agents))
        let starts = startOrder.snapshot
        // Each agent's first run starts in arrival order; agent5's own messages run follows its task.
        var firstStarts: [String] = []
        for agent in starts where !firstStarts.contains(agent) { firstStarts.append(agent) }
        XCTAssertEqual(firstStarts, agents)
        XCTAssertEqual(starts.filter { $0 == "agent5" }.count, 2)
        XCTAssertEqual(starts.filter { $0 == "agent4" }.count, 1)
        active = await queue.activeCount
        waiting = await queue.waiting
        XCTAssertEqual(active, 0)
        XCTAssertEqual(waiting, [])
    }

    func testHundredAgentsEveryMessageOnceInOrder() async {
        let clock = ContinuousClock()
        let inbox = AQInbox()
        let concurrency = AQConcurrency()
        let intervals = AQLocked<[String: [AQInterval]]>([:])
        let queue = AgentQueue(
            configuration: QueueConfiguration(maxConcurrent: 5),
            processor: { agent, _ in
                concurrency.enter()
                let start = clock.now
                inbox.consume(agent)
                try? await Task.sleep(for: .microseconds(Int.random(in: 0...2000)))  // kept: the run's work
                intervals.with { $0[agent, default: []].append(AQInterval(key: agent, start: start, end: clock.now)) }
                concurrency.leave()
                return .success
            })
        let agents = (0..<100).map { "agent\($0)" }
        await withTaskGroup(of: Void.self) { group in
            for agent in agents {
                group.addTask {
                    for n in 0..<10 {
                        inbox.append(agent, n)
                        await queue.enqueueMessages(agent: agent)
                        if Bool.random() { await Task.yield() }
                    }
                }
            }
        }
        await queue.waitUntilIdle()
        XCTAssertLessThanOrEqual(concurrency.max, 5)
        for agent in agents {
            XCTAssertEqual(inbox.processed(agent), Array(0..<10), agent)
            assertNoOverlap(intervals.snapshot[agent] ?? [])
        }
    }

    func testTasksBeforeMessagesAndDuplicateTasksSkipped() async {
        let gates = AQLocked<[String: AQGate]>([:])
        let started = AQSignal()
        let log = AQLocked<[String]>([])
        let queue = AgentQueue(
            configuration: QueueConfiguration(maxConcurrent: 1),
            processor: { agent, work in
                let key = "\(agent):\(workName(work))"
                log.with { $0.append(key) }
                await started.fire()
                if let gate = gates.with({ $0.removeValue(forKey: key) }) { await gate.wait() }
                return .success
            })
        let first = AQGate()
        gates.with { $0["a:messages"] = first }
        await queue.enqueueMessages(agent: "a")
        await started.wait(until: 1)
        await queue.enqueueMessages(agent: "a")
        await queue.enqueueTask(agent: "a", id: "t1")
        await queue.enqueueTask(agent: "a", id: "t2")
        await queue.enqueueTask(agent: "a", id: "t1")  // pending: skipped
        await queue.enqueueMessages(agent: "b")  // over the cap: waits
        await queue.enqueueTask(agent: "b", id: "u1")
        await queue.enqueueTask(agent: "b", id: "u1")  // pending: skipped
        let waiting = await queue.waiting
        XCTAssertEqual(waiting, ["b"])
        await first.open()
        await queue.waitUntilIdle()
        XCTAssertEqual(log.snapshot, ["a:messages", "a:task:t1", "a:task:t2", "a:messages", "b:task:u1", "b:messages"])

        // A task id already running is skipped too; once it ended, the same id runs again.
        let hold = AQGate()
        gates.with { $0["a:task:x"] = hold }
        log.with { $0 = [] }
        await queue.enqueueTask(agent: "a", id: "x")
        await started.wait(until: 7)
        await queue.enqueueTask(agent: "a", id: "x")
        await hold.open()
        await queue.waitUntilIdle()
        XCTAssertEqual(log.snapshot, ["a:task:x"])
        await queue.enqueueTask(agent: "a", id: "x")
        await queue.waitUntilIdle()
        XCTAssertEqual(log.snapshot, ["a:task:x", "a:task:x"])
    }

    func testRetryBackoffThenSuccess() async {
        let runs = AQLocked(0)
        let retries = AQLocked<[(Int, Duration)]>([])
        let gaveUp = AQLocked(0)
        let clock = TestClock()  // the backoff waits on it: no real time passes
        let queue = AgentQueue(
            configuration: QueueConfiguration(retryBase: .milliseconds(10), clock: clock),
            processor: { _, _ in
                let n = runs.with {
                    $0 += 1; return $0
                }
                return n <= 3 ? .failure("boom \(n)") : .success
            },
            events: { event in
                switch event {
                case .retryScheduled(_, let attempt, let delay): retries.with { $0.append((attempt, delay)) }
                case .gaveUp: gaveUp.with { $0 += 1 }
                default: break
                }
            })
        await queue.enqueueMessages(agent: "a")
        await queue.waitUntilIdle()
        XCTAssertEqual(runs.snapshot, 4)
        XCTAssertEqual(retries.snapshot.map(\.0), [1, 2, 3])
        XCTAssertEqual(retries.snapshot.map(\.1), [.milliseconds(10), .milliseconds(20), .milliseconds(40)])
        XCTAssertEqual(gaveUp.snapshot, 0)
        XCTAssertEqual(clock.sleeps, [.milliseconds(10), .milliseconds(20), .milliseconds(40)], "waited on the clock")
    }

    func testTheDefaultBackoffScheduleWithoutWaitingForIt() async {
        // nanoclaw's 5 s base, doubled per retry, then give up: 155 s of backoff, checked in no real time.
        let clock = TestClock()
        let gaveUp = AQLocked(0)
        let queue = AgentQueue(
            configuration: QueueConfiguration(clock: clock),
            processor: { _, _ in .failure("down") },
            events: { if case .gaveUp = $0 { gaveUp.with { $0 += 1 } } })
        let start = ContinuousClock.now
        await queue.enqueueMessages(agent: "a")
        await queue.waitUntilIdle()
        XCTAssertEqual(clock.sleeps, [5, 10, 20, 40, 80].map { Duration.seconds($0) })
        XCTAssertEqual(clock.now.offset, .seconds(155))
        XCTAssertEqual(gaveUp.snapshot, 1)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5), "no real backoff")
    }

    func testGiveUpAfterMaxRetriesUntilNextMessage() async {
        let runs = AQLocked(0)
        let failUntil = AQLocked(Int.max)
        let retries = AQLocked<[Duration]>([])
        let gaveUp = AQLocked<[String]>([])
        let queue = AgentQueue(
            configuration: QueueConfiguration(retryBase: .milliseconds(10), clock: TestClock()),
            processor: { _, _ in
                let n = runs.with {
                    $0 += 1; return $0
                }
                return n <= failUntil.snapshot ? .failure("boom \(n)") : .success
            },
            events: { event in
                switch event {
                case .retryScheduled(_, _, let delay): retries.with { $0.append(delay) }
                case .gaveUp(_, let reason): gaveUp.with { $0.append(reason) }
                default: break
                }
            })
        await queue.enqueueMessages(agent: "a")
        await queue.waitUntilIdle()  // idle means no retry is scheduled any more
        XCTAssertEqual(runs.snapshot, 6, "the first run and 5 retries")
        XCTAssertEqual(retries.snapshot, [10, 20, 40, 80, 160].map { .milliseconds($0) })
        XCTAssertEqual(gaveUp.snapshot, ["boom 6"])
        failUntil.with { $0 = 6 }
        await queue.enqueueMessages(agent: "a")
        await queue.waitUntilIdle()
        XCTAssertEqual(runs.snapshot, 7, "a new message runs the agent again")
        XCTAssertEqual(retries.snapshot.count, 5)
    }

    func testTaskFailureIsReportedNotRetried() async {
        let runs = AQLocked(0)
        let outcomes = AQLocked<[ProcessOutcome]>([])
        let retries = AQLocked(0)
        let queue = AgentQueue(
            configuration: QueueConfiguration(retryBase: .milliseconds(1)),
            processor: { _, _ in
                runs.with { $0 += 1 }; return .failure("nope")
            },
            events: { event in
                switch event {
                case .finished(_, _, let outcome): outcomes.with { $0.append(outcome) }
                case .retryScheduled: retries.with { $0 += 1 }
                default: break
                }
            })
        await queue.enqueueTask(agent: "a", id: "t")
        await queue.waitUntilIdle()
        XCTAssertEqual(runs.snapshot, 1)
        XCTAssertEqual(outcomes.snapshot, [.failure("nope")])
        XCTAssertEqual(retries.snapshot, 0)
    }

    func testCancelStopsRunningProcessor() async {
        let clock = ContinuousClock()
        let started = AQSignal()
        let runs = AQLocked<[String]>([])
        let events = AQLocked<[String]>([])
        let queue = AgentQueue(
            configuration: QueueConfiguration(retryBase: .milliseconds(1)),
            processor: { agent, work in
                runs.with { $0.append("\(agent):\(workName(work))") }
                await started.fire()
                do {
                    try await Task.sleep(for: .seconds(30))  // kept: a run long enough to be cancelled
                    return .success
                } catch {
                    return .failure("interrupted")
                }
            },
            events: { event in
                switch event {
                case .cancelled(let agent): events.with { $0.append("cancelled:\(agent)") }
                case .retryScheduled: events.with { $0.append("retry") }
                case .finished: events.with { $0.append("finished") }
                case .gaveUp: events.with { $0.append("gaveUp") }
                case .started: break
                }
            })
        await queue.enqueueMessages(agent: "a")
        await started.wait(until: 1)
        await queue.enqueueTask(agent: "a", id: "later")  // pending: dropped by the cancel
        let t0 = clock.now
        let wasRunning = await queue.cancel(agent: "a")
        XCTAssertTrue(wasRunning)
        await queue.waitUntilIdle()
        XCTAssertLessThan(clock.now - t0, .seconds(1))
        XCTAssertEqual(events.snapshot, ["cancelled:a"])
        XCTAssertEqual(runs.snapshot, ["a:messages"])
        let active = await queue.activeCount
        XCTAssertEqual(active, 0)
        let idleCancel = await queue.cancel(agent: "a")
        XCTAssertFalse(idleCancel)
    }

    func testCancelDropsScheduledRetry() async {
        let runs = AQLocked(0)
        let scheduled = AQSignal()
        let queue = AgentQueue(
            configuration: QueueConfiguration(retryBase: .seconds(60)),
            processor: { _, _ in
                runs.with { $0 += 1 }; return .failure("boom")
            },
            events: { if case .retryScheduled = $0 { Task { await scheduled.fire() } } })
        await queue.enqueueMessages(agent: "a")
        // Wait for the first run to end and its 60 s retry to be scheduled, then cancel: idle at once.
        await scheduled.wait(until: 1)
        let wasRunning = await queue.cancel(agent: "a")
        XCTAssertFalse(wasRunning)
        await queue.waitUntilIdle()
        XCTAssertEqual(runs.snapshot, 1)
    }

    // MARK: - DisplayLocks

    func testSameDisplaySerializes() async throws {
        let locks = DisplayLocks()
        let clock = ContinuousClock()
        let intervals = AQLocked<[AQInterval]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<5 {
                group.addTask {
                    try await locks.withLock(display: ":1") {
                        let start = clock.now
                        try await Task.sleep(for: .milliseconds(20))  // kept: the work under the lock
                        intervals.with { $0.append(AQInterval(key: "\(i)", start: start, end: clock.now)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(intervals.snapshot.count, 5)
        assertNoOverlap(intervals.snapshot)
    }

    func testDifferentDisplaysOverlap() async throws {
        let locks = DisplayLocks()
        let clock = ContinuousClock()
        let intervals = AQLocked<[String: AQInterval]>([:])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for display in [":1", ":2"] {
                group.addTask {
                    try await locks.withLock(display: display) {
                        let start = clock.now
                        try await Task.sleep(for: .milliseconds(150))  // kept: the work under the lock, to overlap
                        intervals.with { $0[display] = AQInterval(key: display, start: start, end: clock.now) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let all = intervals.snapshot
        guard let a = all[":1"], let b = all[":2"] else { return XCTFail("both bodies must run") }
        XCTAssertGreaterThan(overlap(a, b), .zero)
    }

    func testWaitersServedFIFOAndCancelledWaiterLeaves() async throws {
        let locks = DisplayLocks()
        let gate = AQGate()
        let holding = AQSignal()
        let order = AQLocked<[Int]>([])
        let holder = Task {
            try await locks.withLock(display: ":1") {
                await holding.fire()
                await gate.wait()
            }
        }
        await holding.wait(until: 1)
        var waiters: [Task<Void, any Error>] = []
        for i in 0..<4 {
            waiters.append(Task { try await locks.withLock(display: ":1") { order.with { $0.append(i) } } })
            await eventually("waiter \(i) queued", every: .milliseconds(1), on: .continuous) {
                await locks.queuedCount(display: ":1") >= i + 1
            }
        }
        waiters[1].cancel()
        do {
            try await waiters[1].value
            XCTFail("a cancelled waiter must throw")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        let queued = await locks.queuedCount(display: ":1")
        XCTAssertEqual(queued, 3)
        await gate.open()
        try await holder.value
        for (i, waiter) in waiters.enumerated() where i != 1 { try await waiter.value }
        XCTAssertEqual(order.snapshot, [0, 2, 3])
        // Free again: a new caller gets the lock at once.
        let value = try await locks.withLock(display: ":1") { 42 }
        XCTAssertEqual(value, 42)
    }

    func testLockedToolForwardsAndRunsInsideLock() async throws {
        let locks = DisplayLocks()
        let tool = LockedTool(AQEchoTool(), display: ":9", locks: locks)
        XCTAssertEqual(tool.name, "echo")
        XCTAssertEqual(tool.description, "Echoes.")
        XCTAssertEqual(tool.inputSchema, AQEchoTool().inputSchema)
        XCTAssertEqual(tool.definition, AQEchoTool().definition)
        XCTAssertEqual(tool.betas, ["echo-beta-1"])
        let gate = AQGate()
        let holding = AQSignal()
        let holder = Task {
            try await locks.withLock(display: ":9") {
                await holding.fire()
                await gate.wait()
            }
        }
        await holding.wait(until: 1)
        let call = Task { try await tool.execute([:], context: ToolContext()) }
        await eventually("the call queued", every: .milliseconds(1), on: .continuous) {
            await locks.queuedCount(display: ":9") >= 1
        }
        await gate.open()
        try await holder.value
        let output = try await call.value
        XCTAssertEqual(output, .text("ok"))
    }
}

import Foundation
import Synchronization
import XCTest
import XclawStore

@testable import XclawRuntime

/// Claiming due task slots in the store: once per slot whoever asks (two schedulers on one database, threads and
/// separate connections, and across a restart), missed slots caught up once or dropped, one-shots completed. The
/// clock is the instants passed in.
final class TaskClaimTests: BackendTestCase {
    private var temporary: TemporaryStore!
    /// The backend's store, with the agent `bot`.
    private var store: AgentStore!

    override func setUpWithError() throws {
        temporary = try TemporaryStore("claims")
    }

    override func tearDown() {
        temporary?.remove()
        super.tearDown()
    }

    /// Runs `body` once per backend with a fresh `store` holding the agent `bot`.
    private func eachBackend(_ body: () throws -> Void) throws {
        try eachBackend(sqliteFile: temporary.directory.appendingPathComponent("each.sqlite").path) {
            store = try AgentStore.at(location)
            try store.createAgent(AgentConfig(name: "bot", model: "m"))
            try body()
        }
    }

    private static let t0 = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18 11:06:40 UTC
    private var t0: Date { Self.t0 }

    /// The scheduler's rule: the task's schedule, after `now`.
    private static func next(_ task: TaskRecord, _ now: Date) -> Date? {
        switch task.scheduleType {
        case .interval:
            let seconds = (Int(task.scheduleValue) ?? 0) / 1000
            return TaskSchedule.interval(seconds: seconds, anchor: task.createdAt).next(after: now)
        case .once: return nil
        case .cron:
            let zone = task.timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC")!
            return (try? CronExpression(task.scheduleValue))?.next(after: now, in: zone)
        }
    }

    func testTwoSchedulersOnOneDatabaseTakeEachSlotOnce() throws {
        try eachBackend {
            let path = location
            for i in 0..<20 {
                try store.createTask(
                    agent: "bot", prompt: "task \(i)", scheduleType: .cron, scheduleValue: "*/5 * * * *", nextRun: t0,
                    name: "t\(i)")
            }
            // Two daemons: two stores (own connections) on the file, each from two threads, all at once.
            let other = try AgentStore.at(path)
            let stores = [store!, other, store!, other]
            let taken = Mutex<[String]>([])
            let failures = Mutex<[String]>([])
            let now = t0.addingTimeInterval(10)
            DispatchQueue.concurrentPerform(iterations: stores.count) { i in
                do {
                    let slots = try stores[i].claimDueTasks(
                        now: now, claimer: "daemon\(i % 2)", missedBefore: now.addingTimeInterval(-60)
                    ) {
                        TaskClaimTests.next($0, $1)
                    }
                    taken.withLock { $0 += slots.map(\.task.id) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, [])
            let ids = taken.withLock { $0 }
            XCTAssertEqual(ids.count, 20, "every slot taken")
            XCTAssertEqual(Set(ids).count, 20, "none twice")
            // A restart at the same instant finds nothing due: the claim lives in the database, not in memory.
            let restarted = try AgentStore.at(path)
            XCTAssertEqual(
                try restarted.claimDueTasks(now: t0.addingTimeInterval(20), claimer: "daemon2", missedBefore: t0) {
                    Self.next($0, $1)
                }, [])
            // Each task's next slot is the cron's next after the claim.
            for task in try restarted.tasks(agent: "bot") {
                XCTAssertEqual(task.nextRun, t0.addingTimeInterval(200), task.name ?? task.id)  // 11:10, the next */5
                XCTAssertEqual(task.lastRun, t0)
                XCTAssertNotNil(task.claimedBy)
            }
        }
    }

    func testMissedSlotsAreCaughtUpOnceOrDropped() throws {
        try eachBackend {
            // Every 10 minutes from t0; the daemon was away for three hours.
            let once = try store.createTask(
                agent: "bot", prompt: "catch up", scheduleType: .interval, scheduleValue: "600000", nextRun: t0,
                name: "once")
            let none = try store.createTask(
                agent: "bot", prompt: "skip", scheduleType: .interval, scheduleValue: "600000", nextRun: t0,
                name: "none",
                catchUp: .none)
            let late = t0.addingTimeInterval(3 * 3600 + 125)
            // This scheduler started a minute before: the slots of the three hours before were missed.
            let slots = try store.claimDueTasks(
                now: late, claimer: "d", missedBefore: late.addingTimeInterval(-120)
            ) {
                task, now in
                TaskSchedule.interval(seconds: 600, anchor: Self.t0).next(after: now)
            }
            XCTAssertEqual(slots.count, 2)
            XCTAssertEqual(slots.first { $0.task.id == once.id }?.fires, true, "one run for the missed slots")
            XCTAssertEqual(slots.first { $0.task.id == none.id }?.fires, false, "dropped")
            for task in try store.tasks(agent: "bot") {
                // On the schedule's grid, after now: not a burst of eighteen runs.
                XCTAssertEqual(task.nextRun, t0.addingTimeInterval(3 * 3600 + 600))
            }
            XCTAssertEqual(try store.taskRunLogs(taskID: none.id).map(\.status), ["skipped"])
            XCTAssertEqual(try store.taskRunLogs(taskID: once.id), [])
            // A slot due while this scheduler ran is on time whatever the task's rule, however late a busy scheduler
            // claims it (a run before it took ten minutes).
            let onTime = try store.claimDueTasks(
                now: t0.addingTimeInterval(3 * 3600 + 1200), claimer: "d", missedBefore: late.addingTimeInterval(-120)
            ) { _, now in TaskSchedule.interval(seconds: 600, anchor: Self.t0).next(after: now) }
            XCTAssertEqual(onTime.map(\.fires), [true, true])
        }
    }

    func testOneShotsCompleteAndPausedTasksWait() throws {
        try eachBackend {
            let shot = try store.createTask(
                agent: "bot", prompt: "once", scheduleType: .once, scheduleValue: "2026-11-18", nextRun: t0)
            try store.createTask(
                agent: "bot", prompt: "paused", scheduleType: .once, scheduleValue: "x", nextRun: t0, status: .paused)
            let future = try store.createTask(
                agent: "bot", prompt: "later", scheduleType: .once, scheduleValue: "y",
                nextRun: t0.addingTimeInterval(60))
            let slots = try store.claimDueTasks(now: t0, claimer: "d", missedBefore: t0) { _, _ in nil }
            XCTAssertEqual(slots.map(\.task.id), [shot.id])
            let tasks = try store.tasks(agent: "bot")
            XCTAssertEqual(tasks.first { $0.id == shot.id }?.status, .completed)
            XCTAssertNil(tasks.first { $0.id == shot.id }?.nextRun)
            XCTAssertEqual(tasks.first { $0.id == future.id }?.status, .active)
            // Names are unique.
            XCTAssertThrowsError(
                try store.createTask(
                    agent: "bot", prompt: "p", scheduleType: .once, scheduleValue: "z", nextRun: t0, name: "dup"
                )
                .name.map { _ in
                    try store.createTask(
                        agent: "bot", prompt: "p", scheduleType: .once, scheduleValue: "z", nextRun: t0, name: "dup")
                })
        }
    }
}

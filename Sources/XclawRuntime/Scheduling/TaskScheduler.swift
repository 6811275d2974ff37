import Foundation
import XclawStore

/// How one scheduled run ended, for the task's history.
public struct TaskRunResult: Sendable, Hashable {
    /// `completed` or `failed`.
    public var status: String
    /// A short account (the exit status, the last words of the reply).
    public var result: String?
    /// Why it failed.
    public var error: String?

    /// Creates a result.
    public init(status: String, result: String? = nil, error: String? = nil) {
        self.status = status
        self.result = result
        self.error = error
    }
}

/// Fires scheduled tasks: claims the slots due now from the store (each once, whoever else asks) and runs each with
/// the runner it is given, recording how it went. The clock is the `now` each tick is given, so tests need no sleeps;
/// the daemon looks each second whether anything is due (a read), and ticks (a write) only then.
public struct TaskScheduler: Sendable {
    /// The store the tasks are in.
    public let store: any StoreBackend
    /// Who claims (`daemon PID@HOST`), recorded on each task it takes.
    public let claimer: String

    /// Slots due before this were missed while no scheduler ran: when this one started, less a minute.
    public let missedBefore: Date

    /// Creates a scheduler over `store`, started at `started`.
    public init(store: any StoreBackend, claimer: String, started: Date = Date()) {
        self.store = store
        self.claimer = claimer
        missedBefore = started.addingTimeInterval(-60)
    }

    /// A stored task's schedule: its cron expression in its zone (UTC when none), its interval anchored to its
    /// creation, or its one time.
    public static func schedule(of task: TaskRecord) throws -> TaskSchedule {
        switch task.scheduleType {
        case .cron:
            let zone = try zone(task.timeZone)
            return .cron(try CronExpression(task.scheduleValue), zone: zone)
        case .interval:
            guard let ms = Int(task.scheduleValue), ms >= 1000 else {
                throw TaskSchedule.ParseError(description: "task \(task.id) has interval \(task.scheduleValue) ms")
            }
            return .interval(seconds: ms / 1000, anchor: task.createdAt)
        case .once:
            guard let at = StoreDate.parse(task.scheduleValue) else {
                throw TaskSchedule.ParseError(description: "task \(task.id) has time \(task.scheduleValue)")
            }
            return .once(at)
        }
    }

    /// A time zone by its IANA name; nil is UTC.
    public static func zone(_ name: String?) throws -> TimeZone {
        guard let name else { return TimeZone(secondsFromGMT: 0) ?? .current }
        guard let zone = TimeZone(identifier: name) else {
            throw TaskSchedule.ParseError(
                description: "\"\(name)\" is not a time zone: use an IANA name such as Europe/Berlin or UTC")
        }
        return zone
    }

    /// When `task` is next due after `date` (nil: never, or its schedule cannot be read).
    public static func nextRun(_ task: TaskRecord, after date: Date) -> Date? {
        (try? schedule(of: task))?.next(after: date)
    }

    /// Claims what is due at `now` and runs each slot that fires, one after another, recording each run; returns the
    /// slots taken (dropped ones included). A run whose record cannot be written (its task was removed meanwhile)
    /// is reported through `failed` and the other slots still run.
    @discardableResult
    public func tick(
        now: Date, failed: (TaskRecord, Error) -> Void = { _, _ in }, run: (TaskRecord) -> TaskRunResult
    ) throws -> [ClaimedSlot] {
        let slots = try store.claimDueTasks(now: now, claimer: claimer, missedBefore: missedBefore) {
            Self.nextRun($0, after: $1)
        }
        for slot in slots where slot.fires {
            let started = ContinuousClock.now
            let result = run(slot.task)
            let ms = Int((ContinuousClock.now - started) / .milliseconds(1))
            do {
                try store.recordTaskRun(
                    taskID: slot.task.id, runAt: slot.slot, durationMs: ms, status: result.status,
                    result: result.result, error: result.error)
            } catch {
                failed(slot.task, error)
            }
        }
        return slots
    }

}

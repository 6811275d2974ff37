import Foundation
import XclawMessages

/// Scheduled tasks, their due slots claimed once whoever asks, and their run history.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol ScheduleStore: AnyObject, Sendable {
    /// Creates a scheduled task (the scheduler adds claiming and firing later); `id` defaults to a new UUID.
    @discardableResult
    func createTask(
        agent: String, prompt: String, scheduleType: TaskScheduleType, scheduleValue: String,
        contextMode: TaskContextMode, nextRun: Date?, status: TaskStatus, id: String, name: String?, timeZone: String?,
        catchUp: TaskCatchUp, createdAt: Date, display: String?, setup: String?, replay: String?
    ) throws -> TaskRecord

    /// The task with this id or name.
    func task(_ idOrName: String) throws -> TaskRecord

    /// Pauses or resumes a task; resuming sets its next run (a paused task's slots are not caught up).
    func setTaskStatus(_ id: String, _ status: TaskStatus, nextRun: Date?) throws

    /// Deletes a task and its run history.
    func deleteTask(_ id: String) throws

    /// Records how one run of a task went: its history and the task's last result.
    func recordTaskRun(taskID: String, runAt: Date, durationMs: Int, status: String, result: String?, error: String?)
        throws

    /// The earliest next run of the active tasks: when a scheduler has something to do next.
    func nextDueTime() throws -> Date?

    /// Takes every active task due at `now` (its next run at or before it) for one scheduler, in one IMMEDIATE
    /// transaction, moving each task's next run on to `nextRun(task, now)` (after `now`: missed slots are not queued
    /// up) before anything runs. A slot is taken once, whichever scheduler asks first, also across processes and
    /// restarts: the update only applies to the next run it read. A slot due before `missedBefore` (when the asking
    /// scheduler started, less a minute) was missed, no scheduler running then: it fires once when the task catches
    /// up, else it is dropped and logged as skipped. A slot that waited for a busy scheduler is never dropped.
    func claimDueTasks(now: Date, claimer: String, missedBefore: Date, nextRun: (TaskRecord, Date) -> Date?) throws
        -> [ClaimedSlot]

    /// Tasks, oldest first: one agent's, or all when `agent` is nil.
    func tasks(agent: String?) throws -> [TaskRecord]

    /// Appends one entry to a task's run history and returns its id.
    @discardableResult
    func appendTaskRunLog(taskID: String, runAt: Date, durationMs: Int, status: String, result: String?, error: String?)
        throws -> Int64

    /// A task's run history, oldest first.
    func taskRunLogs(taskID: String) throws -> [TaskRunLog]
}

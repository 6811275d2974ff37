import Foundation
import XclawBase
import XclawMessages

// MARK: - Tasks

extension AgentStore: ScheduleStore {
    /// Creates a scheduled task (the scheduler adds claiming and firing later); `id` defaults to a new UUID.
    @discardableResult
    public func createTask(
        agent: String, prompt: String, scheduleType: TaskScheduleType, scheduleValue: String,
        contextMode: TaskContextMode = .isolated, nextRun: Date?, status: TaskStatus = .active,
        id: String = UUID().uuidString.lowercased(), name: String? = nil, timeZone: String? = nil,
        catchUp: TaskCatchUp = .once, createdAt: Date = Date(), display: String? = nil, setup: String? = nil,
        replay: String? = nil
    ) throws -> TaskRecord {
        guard !id.isEmpty else { throw StoreError.invalidArgument("a task id cannot be empty") }
        if let name, name.isEmpty || name.count > 64 || name.contains(where: \.isNewline) {
            throw StoreError.invalidArgument("a task name is 1 to 64 characters on one line")
        }
        var task = TaskRecord(
            id: id, agent: agent, prompt: prompt, scheduleType: scheduleType,
            scheduleValue: scheduleValue, contextMode: contextMode, nextRun: nextRun,
            status: status, createdAt: createdAt, name: name, timeZone: timeZone, catchUp: catchUp)
        (task.display, task.setup, task.replay) = (display, setup, replay)
        try write { db in
            try requireAgent(db, agent)
            if try Int.fetchOne(db, sql: "SELECT 1 FROM tasks WHERE id = ?", arguments: [id]) != nil {
                throw StoreError.invalidArgument("a task with id \"\(id)\" already exists; choose another id")
            }
            if let name, try Int.fetchOne(db, sql: "SELECT 1 FROM tasks WHERE name = ?", arguments: [name]) != nil {
                throw StoreError.invalidArgument("a task named \"\(name)\" already exists; choose another name")
            }
            try db.execute(
                sql: """
                    INSERT INTO tasks (id, agent, prompt, schedule_type, schedule_value, context_mode, next_run,
                        status, created_at, name, tz, catch_up, display, setup, replay)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id, agent, prompt, scheduleType.rawValue, scheduleValue, contextMode.rawValue,
                    task.nextRun.map(StoreDate.format), status.rawValue, StoreDate.format(task.createdAt),
                    name, timeZone, catchUp.rawValue, display, setup, replay,
                ])
        }
        return task
    }

    /// The task with this id or name.
    public func task(_ idOrName: String) throws -> TaskRecord {
        try read { db in
            guard
                let row = try SQLRow.fetchOne(
                    db, sql: "SELECT * FROM tasks WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1",
                    arguments: [idOrName, idOrName, idOrName])
            else { throw StoreError.unknownTask(idOrName) }
            return try taskRecord(row)
        }
    }

    /// Pauses or resumes a task; resuming sets its next run (a paused task's slots are not caught up).
    public func setTaskStatus(_ id: String, _ status: TaskStatus, nextRun: Date?) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE tasks SET status = ?, next_run = ? WHERE id = ?",
                arguments: [status.rawValue, nextRun.map(StoreDate.format), id])
            if db.changesCount == 0 { throw StoreError.unknownTask(id) }
        }
    }

    /// Deletes a task and its run history.
    public func deleteTask(_ id: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM tasks WHERE id = ?", arguments: [id])
            if db.changesCount == 0 { throw StoreError.unknownTask(id) }
        }
    }

    /// Records how one run of a task went: its history and the task's last result.
    public func recordTaskRun(
        taskID: String, runAt: Date, durationMs: Int, status: String, result: String?, error: String?
    ) throws {
        try write { db in
            _ = try insertRunLog(
                db, taskID: taskID, runAt: runAt, durationMs: durationMs, status: status, result: result, error: error)
            try db.execute(
                sql: "UPDATE tasks SET last_run = ?, last_result = ? WHERE id = ?",
                arguments: [StoreDate.format(runAt), error.map { "\(status): \($0)" } ?? status, taskID])
        }
    }

    /// The earliest next run of the active tasks: when a scheduler has something to do next.
    public func nextDueTime() throws -> Date? {
        try read { db in
            try String.fetchOne(
                db, sql: "SELECT MIN(next_run) FROM tasks WHERE status = 'active' AND next_run IS NOT NULL"
            ).flatMap { try? date($0, "tasks.next_run") }
        }
    }

    /// Takes every active task due at `now` (its next run at or before it) for one scheduler, in one IMMEDIATE
    /// transaction, moving each task's next run on to `nextRun(task, now)` (after `now`: missed slots are not queued
    /// up) before anything runs. A slot is taken once, whichever scheduler asks first, also across processes and
    /// restarts: the update only applies to the next run it read. A slot due before `missedBefore` (when the asking
    /// scheduler started, less a minute) was missed, no scheduler running then: it fires once when the task catches
    /// up, else it is dropped and logged as skipped. A slot that waited for a busy scheduler is never dropped.
    public func claimDueTasks(
        now: Date, claimer: String, missedBefore: Date, nextRun: (TaskRecord, Date) -> Date?
    ) throws -> [ClaimedSlot] {
        try write { db in
            let due = try SQLRow.fetchAll(
                db,
                sql:
                    "SELECT * FROM tasks WHERE status = 'active' AND next_run IS NOT NULL AND next_run <= ? ORDER BY next_run, id",
                arguments: [StoreDate.format(now)]
            ).map(taskRecord)
            var claimed: [ClaimedSlot] = []
            for task in due {
                guard let slot = task.nextRun else { continue }
                let next = nextRun(task, now).map(StoreDate.normalized)
                let fires = task.catchUp == .once || slot >= missedBefore
                try db.execute(
                    sql: """
                        UPDATE tasks SET next_run = ?, last_run = CASE WHEN ? <> 0 THEN ? ELSE last_run END, claimed_by = ?,
                            claimed_at = ?, status = CASE WHEN CAST(? AS TEXT) IS NULL AND schedule_type = 'once' THEN 'completed' ELSE status END
                        WHERE id = ? AND next_run = ? AND status = 'active'
                        """,
                    arguments: [
                        next.map(StoreDate.format), fires, StoreDate.format(slot), claimer, StoreDate.format(now),
                        next.map(StoreDate.format), task.id, StoreDate.format(slot),
                    ])
                guard db.changesCount == 1 else { continue }
                if !fires {
                    try db.execute(
                        sql: """
                            INSERT INTO task_run_logs (task_id, run_at, duration_ms, status, error)
                            VALUES (?, ?, 0, 'skipped', ?)
                            """,
                        arguments: [task.id, StoreDate.format(slot), "missed while no scheduler ran (catch-up none)"])
                }
                claimed.append(ClaimedSlot(task: task, slot: slot, fires: fires))
            }
            return claimed
        }
    }

    /// Tasks, oldest first: one agent's, or all when `agent` is nil.
    public func tasks(agent: String?) throws -> [TaskRecord] {
        try read { db in
            if let agent {
                try requireAgent(db, agent)
                return try SQLRow.fetchAll(
                    db, sql: "SELECT * FROM tasks WHERE agent = ? ORDER BY created_at, id",
                    arguments: [agent]
                ).map(taskRecord)
            }
            return try SQLRow.fetchAll(db, sql: "SELECT * FROM tasks ORDER BY created_at, id").map(taskRecord)
        }
    }

    /// Appends one entry to a task's run history and returns its id.
    @discardableResult
    public func appendTaskRunLog(
        taskID: String, runAt: Date, durationMs: Int, status: String,
        result: String? = nil, error: String? = nil
    ) throws -> Int64 {
        try write { db in
            try insertRunLog(
                db, taskID: taskID, runAt: runAt, durationMs: durationMs, status: status, result: result, error: error)
        }
    }

    /// One row of a task's run history, in the caller's transaction; its id.
    private func insertRunLog(
        _ db: any SQLConnection, taskID: String, runAt: Date, durationMs: Int, status: String, result: String?,
        error: String?
    ) throws -> Int64 {
        if try Int.fetchOne(db, sql: "SELECT 1 FROM tasks WHERE id = ?", arguments: [taskID]) == nil {
            throw StoreError.unknownTask(taskID)
        }
        try db.execute(
            sql: """
                INSERT INTO task_run_logs (task_id, run_at, duration_ms, status, result, error)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [taskID, StoreDate.format(runAt), durationMs, status, result, error])
        return try db.lastInsertedRowID
    }

    /// A task's run history, oldest first.
    public func taskRunLogs(taskID: String) throws -> [TaskRunLog] {
        try read { db in
            if try Int.fetchOne(db, sql: "SELECT 1 FROM tasks WHERE id = ?", arguments: [taskID]) == nil {
                throw StoreError.unknownTask(taskID)
            }
            return try SQLRow.fetchAll(
                db, sql: "SELECT * FROM task_run_logs WHERE task_id = ? ORDER BY run_at, id",
                arguments: [taskID]
            ).map { row in
                TaskRunLog(
                    id: row["id"], taskID: row["task_id"],
                    runAt: try date(row["run_at"] as String, "task_run_logs.run_at"),
                    durationMs: row["duration_ms"], status: row["status"], result: row["result"],
                    error: row["error"])
            }
        }
    }

    /// Builds a `TaskRecord` from a `tasks` row.
    private func taskRecord(_ row: SQLRow) throws -> TaskRecord {
        let id: String = row["id"]
        let typeText: String = row["schedule_type"]
        let modeText: String = row["context_mode"]
        let statusText: String = row["status"]
        guard let type = TaskScheduleType(rawValue: typeText), let mode = TaskContextMode(rawValue: modeText),
            let status = TaskStatus(rawValue: statusText)
        else {
            throw StoreError.corrupt(
                path: path,
                detail: "task \(id) has schedule \(typeText), mode \(modeText), "
                    + "status \(statusText)")
        }
        var task = TaskRecord(
            id: id, agent: row["agent"], prompt: row["prompt"], scheduleType: type,
            scheduleValue: row["schedule_value"], contextMode: mode,
            nextRun: try dateIfAny(row["next_run"], "tasks.next_run"),
            lastRun: try dateIfAny(row["last_run"], "tasks.last_run"),
            lastResult: row["last_result"], status: status, claimedBy: row["claimed_by"],
            claimedAt: try dateIfAny(row["claimed_at"], "tasks.claimed_at"),
            createdAt: try date(row["created_at"] as String, "tasks.created_at"), name: row["name"],
            timeZone: row["tz"], catchUp: TaskCatchUp(rawValue: row["catch_up"] ?? "once") ?? .once)
        (task.display, task.setup, task.replay) = (row["display"], row["setup"], row["replay"])
        return task
    }
}

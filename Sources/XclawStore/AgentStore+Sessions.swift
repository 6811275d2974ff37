import Foundation
import XclawMessages

@_implementationOnly import GRDB

// MARK: - Sessions

extension AgentStore {
    /// Records that a process starts running an agent, so a crash leaves a trace `recoverInterrupted` finds.
    /// `pid` is this process unless a supervisor records the worker it spawned.
    public func startSession(agent: String, kind: SessionKind, pid: Int32 = getpid()) throws -> Int64 {
        try startSession(
            agent: agent, kind: kind, pid: pid,
            process: pid == getpid() ? ProcessIdentity.current : ProcessIdentity.of(pid: pid))
    }

    /// `startSession` with the process identity given (nil when /proc cannot tell).
    func startSession(agent: String, kind: SessionKind, pid: Int32, process: String?) throws -> Int64 {
        try write { db in
            try requireAgent(db, agent)
            try db.execute(
                sql: """
                    INSERT INTO sessions (agent, kind, status, pid, process, started_at)
                    VALUES (?, ?, 'running', ?, ?, ?)
                    """,
                arguments: [agent, kind.rawValue, pid, process, Self.now()])
            return db.lastInsertedRowID
        }
    }

    /// Records how a session ended (`completed`, `failed`, `cancelled` or `interrupted`), its turns and cost.
    public func finishSession(_ id: Int64, status: SessionStatus, error: String? = nil, steps: Int, usd: Double) throws
    {
        guard status.isFinal else {
            let finals = SessionStatus.allCases.filter(\.isFinal).map(\.rawValue)
            throw StoreError.invalidArgument(
                "a session ends as one of \(finals.joined(separator: ", ")), "
                    + "not \"\(status.rawValue)\"")
        }
        guard steps >= 0, usd >= 0, usd.isFinite else {
            throw StoreError.invalidArgument("steps and cost cannot be negative (steps \(steps), usd \(usd))")
        }
        try write { db in
            try db.execute(
                sql: "UPDATE sessions SET status = ?, error = ?, steps = ?, usd = ?, ended_at = ? WHERE id = ?",
                arguments: [status.rawValue, error, steps, usd, Self.now(), id])
            if db.changesCount == 0 { throw StoreError.unknownSession(id) }
        }
    }

    /// Sessions, oldest first: one agent's, or every agent's when `agent` is nil.
    public func sessions(agent: String?) throws -> [SessionRecord] {
        try read { db in
            if let agent {
                try requireAgent(db, agent)
            }
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT s.*, \(Self.replayColumns) FROM sessions s LEFT JOIN replays r ON r.session_id = s.id
                    WHERE (? IS NULL OR s.agent = ?) ORDER BY s.id
                    """, arguments: [agent, agent]
            ).map(sessionRecord)
        }
    }

    /// Runs, oldest first, with the scheduled task each ran for (the `schedule:NAME` sender of a message in its
    /// batch; nil for runs a person asked for): one agent's or all, and only one task's when `task` is given.
    public func runs(agent: String?, task: String?) throws -> [(session: SessionRecord, task: String?)] {
        try read { db in
            if let agent { try requireAgent(db, agent) }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.*, \(Self.replayColumns), coalesce(r.task, (SELECT substr(m.sender, 10) FROM messages m
                        WHERE m.agent = s.agent AND m.id > coalesce(s.previous_cursor, 0)
                        AND m.id <= coalesce(s.claimed_cursor, 0) AND m.sender LIKE 'schedule:%' ORDER BY m.id
                        LIMIT 1)) AS task_label
                    FROM sessions s LEFT JOIN replays r ON r.session_id = s.id
                    WHERE (? IS NULL OR s.agent = ?) ORDER BY s.id
                    """, arguments: [agent, agent])
            return try rows.map { (try sessionRecord($0), $0["task_label"] as String?) }
                .filter { task == nil || $0.1 == task }
        }
    }

    /// Marks as `interrupted` every `running` session whose process is gone: its pid no longer exists, or the pid
    /// now belongs to another process (this one included, after a restart). Their `partial` messages stay partial.
    /// Returns them, updated, so the caller can tell the user what was cut short.
    @discardableResult
    public func recoverInterrupted() throws -> [SessionRecord] {
        let now = Self.now()
        return try write { db in
            let running = try Row.fetchAll(
                db, sql: "SELECT * FROM sessions WHERE status IN ('running', 'needs-approval') ORDER BY id")
            var recovered: [SessionRecord] = []
            for row in running {
                var session = try sessionRecord(row)
                guard ProcessIdentity.isGone(pid: session.pid, identity: row["process"]) else { continue }
                let reason = "the xclaw process (pid \(session.pid)) ended while this session was running"
                try db.execute(
                    sql: "UPDATE sessions SET status = 'interrupted', error = ?, ended_at = ? WHERE id = ?",
                    arguments: [reason, now, session.id])
                // Nobody waits on its approvals any more: a later `approve` must not look like it did something.
                try db.execute(
                    sql: """
                        UPDATE approvals SET status = 'denied', decided_at = ?, decided_by = 'the run was interrupted'
                        WHERE session_id = ? AND status = 'pending'
                        """, arguments: [now, session.id])
                session.status = .interrupted
                session.error = reason
                session.endedAt = StoreDate.parse(now)
                recovered.append(session)
            }
            return recovered
        }
    }

    /// Throws `unknownSession` unless the session exists.
    func requireSession(_ db: Database, _ id: Int64) throws {
        if try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM sessions WHERE id = ?"), arguments: [id]) == nil {
            throw StoreError.unknownSession(id)
        }
    }

    /// Builds a `SessionRecord` from a `sessions` row (possibly joined; only the sessions columns are read).
    func sessionRecord(_ row: Row) throws -> SessionRecord {
        let kindText: String = row["kind"], statusText: String = row["status"]
        guard let kind = SessionKind(rawValue: kindText), let status = SessionStatus(rawValue: statusText) else {
            throw StoreError.corrupt(
                path: path,
                detail: "a session has kind \"\(kindText)\" and status \"\(statusText)\", "
                    + "which this xclaw does not know (a newer version wrote it?)")
        }
        var record = SessionRecord(
            id: row["id"], agent: row["agent"], kind: kind, status: status,
            error: row["error"], steps: row["steps"], usd: row["usd"], pid: row["pid"],
            startedAt: try date(row["started_at"] as String, "sessions.started_at"),
            endedAt: try dateIfAny(row["ended_at"], "sessions.ended_at"), report: row["report"], model: row["model"])
        // Joined with `replayColumns`: the replay's counts.
        if let script: String = row["rp_script"] {
            record.replay = ReplaySummary(
                script: script, revision: row["rp_revision"], steps: row["rp_steps"], replayed: row["rp_replayed"],
                healed: row["rp_healed"], failed: row["rp_failed"], requests: row["rp_requests"],
                divergedStep: row["rp_diverged_step"], reason: row["rp_reason"])
            record.replay?.acted = row["rp_acted"]
        }
        return record
    }
}

// MARK: - Memory

extension AgentStore {
    /// Stores one fact under a key for an agent, replacing the old value; it outlives runs and restarts.
    public func setMemory(agent: String, key: String, value: String) throws {
        try Self.checkKey(key)
        try write { db in
            try requireAgent(db, agent)
            try db.execute(
                sql: """
                    INSERT INTO memory (agent, key, value, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT(agent, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    """,
                arguments: [agent, key, value, Self.now()])
        }
    }

    /// The value stored under a key, or nil.
    public func memory(agent: String, key: String) throws -> String? {
        try read { db in
            try requireAgent(db, agent)
            return try String.fetchOne(
                db, sql: "SELECT value FROM memory WHERE agent = ? AND key = ?",
                arguments: [agent, key])
        }
    }

    /// Every key and value of an agent's memory.
    public func memoryList(agent: String) throws -> [String: String] {
        try read { db in
            try requireAgent(db, agent)
            var result: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM memory WHERE agent = ?", arguments: [agent]) {
                result[row["key"]] = row["value"] as String
            }
            return result
        }
    }

    /// Forgets a key; returns whether it existed, so a tool can tell the model "there was nothing to forget".
    @discardableResult
    public func deleteMemory(agent: String, key: String) throws -> Bool {
        try write { db in
            try requireAgent(db, agent)
            try db.execute(sql: "DELETE FROM memory WHERE agent = ? AND key = ?", arguments: [agent, key])
            return db.changesCount > 0
        }
    }

    /// A key must say something.
    private static func checkKey(_ key: String) throws {
        if key.isEmpty { throw StoreError.invalidArgument("a memory key cannot be empty") }
    }
}

// MARK: - Usage

extension AgentStore {
    /// Records one model request's tokens and cost, so `xclaw usage` can total them per agent and session.
    public func recordUsage(
        agent: String, sessionID: Int64?, model: String, usage: Usage, usd: Double, timing: StepTiming? = nil
    ) throws {
        guard usd.isFinite, usd >= 0 else { throw StoreError.invalidArgument("a cost cannot be negative (\(usd))") }
        try write { db in
            try requireAgent(db, agent)
            if let sessionID { try requireSession(db, sessionID) }
            try db.execute(
                sql: """
                    INSERT INTO usage (agent, session_id, model, input_tokens, output_tokens, cache_creation_tokens,
                        cache_read_tokens, usd, created_at, step, model_ms, tool_ms, stop_reason)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    agent, sessionID, model, usage.inputTokens, usage.outputTokens,
                    usage.cacheCreationInputTokens, usage.cacheReadInputTokens, usd, Self.now(),
                    timing?.step, timing?.modelMs, timing?.toolMs, timing?.stopReason,
                ])
            if let sessionID {
                try db.execute(sql: "UPDATE sessions SET model = ? WHERE id = ?", arguments: [model, sessionID])
            }
        }
    }

    /// Each model request of a session, in order, with its tokens, cost and timings (for the run report).
    public func steps(session: Int64) throws -> [StepRecord] {
        try read { db in
            try requireSession(db, session)
            return try Row.fetchAll(
                db, sql: "SELECT * FROM usage WHERE session_id = ? ORDER BY id", arguments: [session]
            ).enumerated().map { index, row in
                StepRecord(
                    step: row["step"] ?? index + 1, model: row["model"],
                    usage: Usage(
                        inputTokens: row["input_tokens"], outputTokens: row["output_tokens"],
                        cacheCreationInputTokens: row["cache_creation_tokens"],
                        cacheReadInputTokens: row["cache_read_tokens"]),
                    usd: row["usd"], modelMs: row["model_ms"], toolMs: row["tool_ms"], stopReason: row["stop_reason"],
                    at: try date(row["created_at"] as String, "usage.created_at"))
            }
        }
    }

    /// Totals per agent, sorted by name; agents with no requests appear with zeros. With `agent`, just that one.
    public func usageSummary(agent: String? = nil) throws -> [UsageSummary] {
        try read { db in
            if let agent { try requireAgent(db, agent) }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT a.name AS agent, count(u.id) AS requests,
                        coalesce(sum(u.input_tokens), 0) AS input, coalesce(sum(u.output_tokens), 0) AS output,
                        coalesce(sum(u.cache_creation_tokens), 0) AS cache_creation,
                        coalesce(sum(u.cache_read_tokens), 0) AS cache_read,
                        total(u.usd) AS usd, count(DISTINCT u.session_id) AS sessions
                    FROM agents a LEFT JOIN usage u ON u.agent = a.name
                    WHERE ?1 IS NULL OR a.name = ?1
                    GROUP BY a.name ORDER BY a.name
                    """,
                arguments: [agent])
            return rows.map { row in
                UsageSummary(
                    agent: row["agent"], requests: row["requests"], usage: Self.usage(row),
                    usd: row["usd"], sessions: row["sessions"])
            }
        }
    }

    /// An agent's sessions, oldest first, each with the tokens and cost of its recorded requests (zeros if none).
    public func usageBySession(agent: String) throws -> [SessionUsage] {
        try read { db in
            try requireAgent(db, agent)
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.*, count(u.id) AS requests,
                        coalesce(sum(u.input_tokens), 0) AS input, coalesce(sum(u.output_tokens), 0) AS output,
                        coalesce(sum(u.cache_creation_tokens), 0) AS cache_creation,
                        coalesce(sum(u.cache_read_tokens), 0) AS cache_read, total(u.usd) AS usage_usd
                    FROM sessions s LEFT JOIN usage u ON u.session_id = s.id
                    WHERE s.agent = ? GROUP BY s.id ORDER BY s.id
                    """,
                arguments: [agent])
            return try rows.map { row in
                SessionUsage(
                    session: try sessionRecord(row), requests: row["requests"], usage: Self.usage(row),
                    usd: row["usage_usd"])
            }
        }
    }

    /// The summed token columns of an aggregate row.
    private static func usage(_ row: Row) -> Usage {
        Usage(
            inputTokens: row["input"], outputTokens: row["output"], cacheCreationInputTokens: row["cache_creation"],
            cacheReadInputTokens: row["cache_read"])
    }
}

// MARK: - Tasks

extension AgentStore {
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
                let row = try Row.fetchOne(
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
            let due = try Row.fetchAll(
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
                        UPDATE tasks SET next_run = ?, last_run = CASE WHEN ? THEN ? ELSE last_run END, claimed_by = ?,
                            claimed_at = ?, status = CASE WHEN ? IS NULL AND schedule_type = 'once' THEN 'completed' ELSE status END
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
                return try Row.fetchAll(
                    db, sql: "SELECT * FROM tasks WHERE agent = ? ORDER BY created_at, id",
                    arguments: [agent]
                ).map(taskRecord)
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM tasks ORDER BY created_at, id").map(taskRecord)
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
        _ db: Database, taskID: String, runAt: Date, durationMs: Int, status: String, result: String?, error: String?
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
        return db.lastInsertedRowID
    }

    /// A task's run history, oldest first.
    public func taskRunLogs(taskID: String) throws -> [TaskRunLog] {
        try read { db in
            if try Int.fetchOne(db, sql: "SELECT 1 FROM tasks WHERE id = ?", arguments: [taskID]) == nil {
                throw StoreError.unknownTask(taskID)
            }
            return try Row.fetchAll(
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
    private func taskRecord(_ row: Row) throws -> TaskRecord {
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

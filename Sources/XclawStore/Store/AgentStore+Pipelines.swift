import Foundation
import XclawBase
import XclawMessages

// MARK: - Pipelines (records in AgentStore+Pipelines.swift; here because they need GRDB, like the stops)

extension AgentStore: PipelineStore {

    /// Records a new pipeline run by `agent` (its own agent, made from `orchestrator`'s settings); returns its id.
    public func createPipeline(orchestrator: String, agent: String, task: String, pid: Int32 = getpid()) throws
        -> Int64
    {
        try write { db in
            try db.execute(
                sql: """
                    INSERT INTO pipelines (orchestrator, agent, task, status, pid, host, started_at)
                    VALUES (?, ?, ?, 'running', ?, ?, ?)
                    """, arguments: [orchestrator, agent, task, pid, ProcessIdentity.host, Self.now()])
            return try db.lastInsertedRowID
        }
    }

    /// Gives a pipeline its own agent's name once its id is known (the name carries the id).
    public func setPipelineAgent(_ id: Int64, agent: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE pipelines SET agent = ? WHERE id = ?", arguments: [agent, id])
            if db.changesCount == 0 { throw StoreError.unknownPipeline(id) }
        }
    }

    /// Records how a pipeline ended; its cost is its own agent's sessions plus every subtask's. Subtasks still open
    /// are closed as `cancelled` in the same transaction, so every tree in the store is complete.
    public func finishPipeline(_ id: Int64, status: PipelineStatus, result: String?, error: String?) throws {
        guard status.isFinal else {
            throw StoreError.invalidArgument("a pipeline ends completed, failed or cancelled, not \(status.rawValue)")
        }
        let now = Self.now()
        try write { db in
            guard let agent = try String.fetchOne(db, sql: "SELECT agent FROM pipelines WHERE id = ?", arguments: [id])
            else { throw StoreError.unknownPipeline(id) }
            try db.execute(
                sql: """
                    UPDATE subtasks SET status = 'cancelled', ended_at = ?,
                        error = coalesce(error, 'the pipeline ended before this subtask did')
                    WHERE pipeline_id = ? AND status IN ('waiting', 'running')
                    """, arguments: [now, id])
            let own =
                try Double.fetchOne(db, sql: "SELECT sum(usd) FROM sessions WHERE agent = ?", arguments: [agent]) ?? 0
            let children =
                try Double.fetchOne(db, sql: "SELECT sum(usd) FROM subtasks WHERE pipeline_id = ?", arguments: [id])
                ?? 0
            try db.execute(
                sql: "UPDATE pipelines SET status = ?, result = ?, error = ?, usd = ?, ended_at = ? WHERE id = ?",
                arguments: [status.rawValue, result, error, own + children, now, id])
        }
    }

    /// Every pipeline, oldest first.
    public func pipelines() throws -> [PipelineRecord] {
        try read { db in try SQLRow.fetchAll(db, sql: "SELECT * FROM pipelines ORDER BY id").map(pipelineRecord) }
    }

    /// One pipeline; `unknownPipeline` when there is none.
    public func pipeline(_ id: Int64) throws -> PipelineRecord {
        try read { db in
            guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM pipelines WHERE id = ?", arguments: [id]) else {
                throw StoreError.unknownPipeline(id)
            }
            return try pipelineRecord(row)
        }
    }

    /// A pipeline's subtasks in the order they were delegated.
    public func subtasks(pipeline: Int64) throws -> [SubtaskRecord] {
        try read { db in
            try SQLRow.fetchAll(
                db, sql: "SELECT * FROM subtasks WHERE pipeline_id = ? ORDER BY id", arguments: [pipeline]
            ).map(subtaskRecord)
        }
    }

    /// The subtask run by the child agent `agent`, or nil.
    public func subtask(agent: String) throws -> SubtaskRecord? {
        try read { db in
            try SQLRow.fetchOne(
                db, sql: "SELECT * FROM subtasks WHERE agent = ? ORDER BY id DESC LIMIT 1", arguments: [agent]
            )
            .map(subtaskRecord)
        }
    }

    /// The text of the last complete reply a session stored: a run's answer.
    public func finalText(agent: String, session: Int64) throws -> String {
        try read { db in
            let row = try SQLRow.fetchOne(
                db,
                sql: """
                    SELECT * FROM messages WHERE agent = ? AND session_id = ? AND role = 'assistant'
                        AND status = 'complete' ORDER BY id DESC LIMIT 1
                    """, arguments: [agent, session])
            return try row.map { try storedMessage($0, db, resolve: false).message.text } ?? ""
        }
    }

    /// Records a delegated subtask, `waiting` for a slot; its child agent is named `PREFIX.ID-ROLE` (the id makes it
    /// unique, so subtasks delegated at once never share a conversation). Returns the id and that name.
    public func createSubtask(
        pipeline: Int64, parent: Int64?, role: String, task: String, agentPrefix: String, display: String?
    ) throws -> (id: Int64, agent: String) {
        try write { db in
            guard try Int.fetchOne(db, sql: "SELECT 1 FROM pipelines WHERE id = ?", arguments: [pipeline]) != nil
            else { throw StoreError.unknownPipeline(pipeline) }
            try db.execute(
                sql: """
                    INSERT INTO subtasks (pipeline_id, parent_id, role, task, agent, display, status, created_at)
                    VALUES (?, ?, ?, ?, '', ?, 'waiting', ?)
                    """, arguments: [pipeline, parent, role, task, display, Self.now()])
            let id = try db.lastInsertedRowID
            let agent = "\(agentPrefix).\(id)-\(role)"
            try db.execute(sql: "UPDATE subtasks SET agent = ? WHERE id = ?", arguments: [agent, id])
            return (id, agent)
        }
    }

    /// Marks the waiting subtask run by `agent` as running in `session`; false when it no longer waits (cancelled).
    @discardableResult
    public func startSubtask(agent: String, session: Int64) throws -> Bool {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE subtasks SET status = 'running', session_id = ?, started_at = ?
                    WHERE agent = ? AND status = 'waiting'
                    """, arguments: [session, Self.now(), agent])
            return db.changesCount > 0
        }
    }

    /// Records how a subtask ended, with its answer or error, steps and cost; a subtask already closed (the
    /// pipeline ended first) keeps what it says.
    public func finishSubtask(
        _ id: Int64, status: PipelineStatus, result: String?, error: String?, steps: Int, usd: Double
    ) throws {
        guard status.isFinal else {
            throw StoreError.invalidArgument("a subtask ends completed, failed or cancelled, not \(status.rawValue)")
        }
        try write { db in
            try db.execute(
                sql: """
                    UPDATE subtasks SET status = ?, result = ?, error = ?, steps = ?, usd = ?,
                        ended_at = coalesce(ended_at, ?)
                    WHERE id = ? AND status IN ('waiting', 'running')
                    """, arguments: [status.rawValue, result, error, steps, usd, Self.now(), id])
        }
    }

    /// Asks a pipeline to cancel: the request is kept on the pipeline (its runner stops what has not started) and
    /// every run in flight of its agents is asked to stop, the way `xclaw stop` asks. Returns the sessions asked.
    @discardableResult
    public func requestPipelineCancel(_ id: Int64, by who: String) throws -> [SessionRecord] {
        let stamp = "\(Self.now()) \(PipelineRecord.cancelMarker) (\(who))"
        return try write { db in
            guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM pipelines WHERE id = ?", arguments: [id]) else {
                throw StoreError.unknownPipeline(id)
            }
            let pipeline = try pipelineRecord(row)
            guard !pipeline.status.isFinal else { return [] }
            try db.execute(
                sql: "UPDATE pipelines SET cancel_requested = coalesce(cancel_requested, ?) WHERE id = ?",
                arguments: [stamp, id])
            return try stopPipelineRuns(db, pipeline: pipeline, stamp: stamp)
        }
    }

    /// Asks again every run in flight of a cancelled pipeline to stop: a subtask that took its slot after the
    /// request is reached too. The runner calls it while it waits.
    @discardableResult
    public func restopPipelineRuns(_ id: Int64) throws -> [SessionRecord] {
        try write { db in
            guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM pipelines WHERE id = ?", arguments: [id]) else {
                throw StoreError.unknownPipeline(id)
            }
            let pipeline = try pipelineRecord(row)
            guard let stamp = pipeline.cancelRequested else { return [] }
            return try stopPipelineRuns(db, pipeline: pipeline, stamp: stamp)
        }
    }

    /// Who asked a pipeline to cancel, or nil: polled by its runner, so one cached SELECT on the primary key.
    public func pipelineCancelRequest(_ id: Int64) throws -> String? {
        try readOne { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT cancel_requested FROM pipelines WHERE id = ?"), arguments: [id])
        }
    }

    /// Marks the pipelines a killed process left running as failed, with their open subtasks cancelled.
    @discardableResult
    public func recoverPipelines() throws -> [Int64] {
        let now = Self.now()
        return try write { db in
            var recovered: [Int64] = []
            for row in try SQLRow.fetchAll(db, sql: "SELECT id, pid, host FROM pipelines WHERE status = 'running'") {
                let (id, pid): (Int64, Int32) = (row["id"], row["pid"])
                // Another host's pipeline is not this host's pid to judge (a fleet shares the database).
                if let host: String = row["host"], host != ProcessIdentity.host { continue }
                guard kill(pid, 0) != 0 && errno == ESRCH else { continue }
                try db.execute(
                    sql: """
                        UPDATE subtasks SET status = 'cancelled', ended_at = ?, error = 'its process ended'
                        WHERE pipeline_id = ? AND status IN ('waiting', 'running')
                        """, arguments: [now, id])
                try db.execute(
                    sql: """
                        UPDATE pipelines SET status = 'failed', ended_at = ?,
                            error = 'the xclaw process (pid ' || pid || ') ended while this pipeline ran' WHERE id = ?
                        """, arguments: [now, id])
                recovered.append(id)
            }
            return recovered
        }
    }

    /// Writes `stamp` as the stop request of every run in flight of the pipeline's agents.
    private func stopPipelineRuns(_ db: any SQLConnection, pipeline: PipelineRecord, stamp: String) throws
        -> [SessionRecord]
    {
        let rows = try SQLRow.fetchAll(
            db,
            sql: """
                SELECT * FROM sessions WHERE status IN ('running', 'needs-approval') AND stop_requested IS NULL
                    AND (agent = ? OR agent IN (SELECT agent FROM subtasks WHERE pipeline_id = ?)) ORDER BY id
                """, arguments: [pipeline.agent, pipeline.id])
        let records = try rows.map(sessionRecord)
        for record in records {
            try db.execute(sql: "UPDATE sessions SET stop_requested = ? WHERE id = ?", arguments: [stamp, record.id])
        }
        return records
    }

    /// Builds a `PipelineRecord` from a `pipelines` row.
    private func pipelineRecord(_ row: SQLRow) throws -> PipelineRecord {
        let statusText: String = row["status"]
        guard let status = PipelineStatus(rawValue: statusText) else {
            throw StoreError.corrupt(path: path, detail: "a pipeline has the unknown status \"\(statusText)\"")
        }
        return PipelineRecord(
            id: row["id"], orchestrator: row["orchestrator"], agent: row["agent"], task: row["task"], status: status,
            result: row["result"], error: row["error"], usd: row["usd"], cancelRequested: row["cancel_requested"],
            pid: row["pid"], startedAt: try date(row["started_at"] as String, "pipelines.started_at"),
            endedAt: try dateIfAny(row["ended_at"], "pipelines.ended_at"))
    }

    /// Builds a `SubtaskRecord` from a `subtasks` row.
    private func subtaskRecord(_ row: SQLRow) throws -> SubtaskRecord {
        let statusText: String = row["status"]
        guard let status = PipelineStatus(rawValue: statusText) else {
            throw StoreError.corrupt(path: path, detail: "a subtask has the unknown status \"\(statusText)\"")
        }
        return SubtaskRecord(
            id: row["id"], pipeline: row["pipeline_id"], parent: row["parent_id"], role: row["role"],
            task: row["task"], agent: row["agent"], display: row["display"], status: status, result: row["result"],
            error: row["error"], steps: row["steps"], usd: row["usd"], session: row["session_id"],
            createdAt: try date(row["created_at"] as String, "subtasks.created_at"),
            startedAt: try dateIfAny(row["started_at"], "subtasks.started_at"),
            endedAt: try dateIfAny(row["ended_at"], "subtasks.ended_at"))
    }
}

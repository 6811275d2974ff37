import Foundation

// MARK: - Replays

extension AgentStore: ReplayStore {
    /// The `replays` columns a sessions query joins (`LEFT JOIN replays r`), named so `sessionRecord` finds them.
    static let replayColumns = """
        r.script AS rp_script, r.revision AS rp_revision, r.steps AS rp_steps, r.replayed AS rp_replayed, \
        r.healed AS rp_healed, r.failed AS rp_failed, r.acted AS rp_acted, r.requests AS rp_requests, \
        r.diverged_step AS rp_diverged_step, r.reason AS rp_reason
        """

    /// Starts a replay of `script` as a run of `agent`: a `running` session (so `stop`, `runs` and crash recovery
    /// see it) with its replay row, in one transaction. `task` is the scheduled task that fired it.
    public func startReplay(agent: String, script: String, revision: Int?, steps: Int, task: String?) throws -> Int64 {
        let process = ProcessIdentity.current
        return try write { db in
            try requireAgent(db, agent)
            try db.execute(
                sql: """
                    INSERT INTO sessions (agent, kind, status, pid, process, host, started_at)
                    VALUES (?, 'run', 'running', ?, ?, ?, ?)
                    """,
                arguments: [agent, getpid(), process, ProcessIdentity.host, Self.now()])
            let id = try db.lastInsertedRowID
            try attachToFleetRun(db, session: id)
            try db.execute(
                sql: "INSERT INTO replays (session_id, script, revision, task, steps) VALUES (?, ?, ?, ?, ?)",
                arguments: [id, script, revision, task, steps])
            return id
        }
    }

    /// Records where a replay is: its counts, its steps' outcomes (JSON) and, when it diverged, the screen then
    /// (a PNG, base64).
    public func updateReplay(
        session id: Int64, summary: ReplaySummary, log: String, screenshot: String? = nil
    ) throws {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE replays SET replayed = ?, healed = ?, failed = ?, acted = ?, requests = ?,
                        diverged_step = ?, reason = ?, log = ?, screenshot = coalesce(?, screenshot)
                    WHERE session_id = ?
                    """,
                arguments: [
                    summary.replayed, summary.healed, summary.failed, summary.acted, summary.requests,
                    summary.divergedStep,
                    summary.reason, log, screenshot, id,
                ])
            if db.changesCount == 0 { throw StoreError.unknownSession(id) }
        }
    }

    /// A replay's steps' outcomes (JSON) and the screen where it diverged; nil when the session is no replay.
    public func replayLog(session id: Int64) throws -> (log: String, screenshot: String?)? {
        try read { db in
            try SQLRow.fetchOne(db, sql: "SELECT log, screenshot FROM replays WHERE session_id = ?", arguments: [id])
                .map { ($0["log"], $0["screenshot"]) }
        }
    }

    /// Drops the divergence screenshots of replays older than `cutoff` (retention, as for agents' screenshots);
    /// returns how many.
    @discardableResult
    public func pruneReplayScreenshots(sessionsBefore cutoff: Int64) throws -> Int {
        try write { db in
            try db.execute(
                sql: "UPDATE replays SET screenshot = NULL WHERE session_id < ? AND screenshot IS NOT NULL",
                arguments: [cutoff])
            return db.changesCount
        }
    }
}

import Foundation
import XclawBase
import XclawMessages

// MARK: - Sessions

extension AgentStore: RunStore {
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
                    INSERT INTO sessions (agent, kind, status, pid, process, host, started_at)
                    VALUES (?, ?, 'running', ?, ?, ?, ?)
                    """,
                arguments: [agent, kind.rawValue, pid, process, ProcessIdentity.host, Self.now()])
            let session = try db.lastInsertedRowID
            try attachToFleetRun(db, session: session)
            return session
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
            return try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT s.*, \(Self.replayColumns) FROM sessions s LEFT JOIN replays r ON r.session_id = s.id
                    WHERE (CAST(? AS TEXT) IS NULL OR s.agent = ?) ORDER BY s.id
                    """, arguments: [agent, agent]
            ).map(sessionRecord)
        }
    }

    /// Runs, oldest first, with the scheduled task each ran for (the `schedule:NAME` sender of a message in its
    /// batch; nil for runs a person asked for): one agent's or all, and only one task's when `task` is given.
    public func runs(agent: String?, task: String?) throws -> [(session: SessionRecord, task: String?)] {
        try read { db in
            if let agent { try requireAgent(db, agent) }
            let rows = try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT s.*, \(Self.replayColumns), coalesce(r.task, (SELECT substr(m.sender, 10) FROM messages m
                        WHERE m.agent = s.agent AND m.id > coalesce(s.previous_cursor, 0)
                        AND m.id <= coalesce(s.claimed_cursor, 0) AND m.sender LIKE 'schedule:%' ORDER BY m.id
                        LIMIT 1)) AS task_label
                    FROM sessions s LEFT JOIN replays r ON r.session_id = s.id
                    WHERE (CAST(? AS TEXT) IS NULL OR s.agent = ?) ORDER BY s.id
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
        // Every command asks this first: a read finds whether anything is to recover, so the write (a lock every
        // process, and on PostgreSQL every host, takes in turn) is taken only when something is.
        let suspects = try read { db in
            try SQLRow.fetchAll(
                db, sql: "SELECT pid, process, host FROM sessions WHERE status IN ('running', 'needs-approval')"
            ).filter { row in
                let host: String? = row["host"]
                return (host == nil || host == ProcessIdentity.host)
                    && ProcessIdentity.isGone(pid: row["pid"], identity: row["process"])
            }
        }
        if suspects.isEmpty { return [] }
        return try write { db in
            let running = try SQLRow.fetchAll(
                db, sql: "SELECT * FROM sessions WHERE status IN ('running', 'needs-approval') ORDER BY id")
            var recovered: [SessionRecord] = []
            for row in running {
                var session = try sessionRecord(row)
                // Another host's run is its worker's to account for (fleet heartbeats), not this host's pids.
                if let host = session.host, host != ProcessIdentity.host { continue }
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
    func requireSession(_ db: any SQLConnection, _ id: Int64) throws {
        if try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM sessions WHERE id = ?"), arguments: [id]) == nil {
            throw StoreError.unknownSession(id)
        }
    }

    /// Builds a `SessionRecord` from a `sessions` row (possibly joined; only the sessions columns are read).
    func sessionRecord(_ row: SQLRow) throws -> SessionRecord {
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
        record.host = row["host"]
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
            return try SQLRow.fetchAll(
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
            let rows = try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT a.name AS agent, count(u.id) AS requests,
                        coalesce(sum(u.input_tokens), 0) AS input, coalesce(sum(u.output_tokens), 0) AS output,
                        coalesce(sum(u.cache_creation_tokens), 0) AS cache_creation,
                        coalesce(sum(u.cache_read_tokens), 0) AS cache_read,
                        coalesce(sum(u.usd), 0.0) AS usd, count(DISTINCT u.session_id) AS sessions
                    FROM agents a LEFT JOIN usage u ON u.agent = a.name
                    WHERE CAST(?1 AS TEXT) IS NULL OR a.name = ?1
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
            let rows = try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT s.*, count(u.id) AS requests,
                        coalesce(sum(u.input_tokens), 0) AS input, coalesce(sum(u.output_tokens), 0) AS output,
                        coalesce(sum(u.cache_creation_tokens), 0) AS cache_creation,
                        coalesce(sum(u.cache_read_tokens), 0) AS cache_read, coalesce(sum(u.usd), 0.0) AS usage_usd
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
    private static func usage(_ row: SQLRow) -> Usage {
        Usage(
            inputTokens: row["input"], outputTokens: row["output"], cacheCreationInputTokens: row["cache_creation"],
            cacheReadInputTokens: row["cache_read"])
    }
}

// MARK: - Run reports

extension AgentStore {
    /// One session by id; `unknownSession` when there is none (never started, or its agent was deleted).
    public func session(_ id: Int64) throws -> SessionRecord {
        try read { db in
            guard
                let row = try SQLRow.fetchOne(
                    db,
                    sql: """
                        SELECT s.*, \(Self.replayColumns) FROM sessions s LEFT JOIN replays r ON r.session_id = s.id
                        WHERE s.id = ?
                        """, arguments: [id])
            else {
                throw StoreError.unknownSession(id)
            }
            return try sessionRecord(row)
        }
    }

    /// Everything a report of session `id` shows: the session and its messages in one snapshot, then its steps (a run
    /// that is still going may have one step more than messages show).
    public func runTranscript(session id: Int64) throws -> RunTranscript {
        var transcript = try read { db in
            guard
                let row = try SQLRow.fetchOne(
                    db,
                    sql: """
                        SELECT s.*, \(Self.replayColumns), coalesce(r.task, (SELECT substr(m.sender, 10)
                            FROM messages m WHERE m.agent = s.agent AND m.id > coalesce(s.previous_cursor, 0)
                            AND m.id <= coalesce(s.claimed_cursor, 0) AND m.sender LIKE 'schedule:%' ORDER BY m.id
                            LIMIT 1)) AS task_label
                        FROM sessions s LEFT JOIN replays r ON r.session_id = s.id WHERE s.id = ?
                        """, arguments: [id])
            else { throw StoreError.unknownSession(id) }
            let session = try sessionRecord(row)
            let previous: Int64 = row["previous_cursor"] ?? 0
            let claimed: Int64 = row["claimed_cursor"] ?? 0
            let input = try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM messages WHERE agent = ? AND id > ? AND id <= ? AND role = 'user'
                        AND session_id IS NULL ORDER BY id
                    """, arguments: [session.agent, previous, claimed]
            ).map { try storedMessage($0, db) }
            let messages = try SQLRow.fetchAll(
                db, sql: "SELECT * FROM messages WHERE session_id = ? ORDER BY id", arguments: [id]
            ).map { try storedMessage($0, db) }
            var frames: [String: ActionFrameRecord] = [:]
            for frame in try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT f.call_id, f.media_type, i.data FROM action_frames f
                    LEFT JOIN images i ON i.sha256 = f.sha256 WHERE f.session_id = ?
                    """, arguments: [id])
            {
                frames[frame["call_id"]] = ActionFrameRecord(mediaType: frame["media_type"], data: frame["data"])
            }
            var transcript = RunTranscript(
                session: session, task: row["task_label"], input: input, messages: messages, steps: [])
            transcript.frames = frames
            return transcript
        }
        transcript.steps = try steps(session: id)
        return transcript
    }

    /// Records where a session's report was written (nil: it is gone), so `xclaw runs` shows it and retention
    /// can delete it later.
    public func setReport(session id: Int64, path: String?) throws {
        try write { db in
            try db.execute(sql: "UPDATE sessions SET report = ? WHERE id = ?", arguments: [path, id])
            if db.changesCount == 0 { throw StoreError.unknownSession(id) }
        }
    }

    /// Every session that has a report recorded, newest first, with its path.
    public func reports() throws -> [(session: Int64, path: String)] {
        try read { db in
            try SQLRow.fetchAll(db, sql: "SELECT id, report FROM sessions WHERE report IS NOT NULL ORDER BY id DESC")
                .map { ($0["id"], $0["report"]) }
        }
    }

    /// The id of the oldest of the `keep` newest sessions: sessions with a smaller id are past retention. Nil when
    /// there are no more than `keep` sessions.
    public func retentionCutoff(keep: Int) throws -> Int64? {
        guard keep >= 1 else { throw StoreError.invalidArgument("retention keeps at least 1 run, not \(keep)") }
        return try read { db in
            guard try Int.fetchOne(db, sql: "SELECT count(*) FROM sessions") ?? 0 > keep else { return nil }
            return try Int64.fetchOne(
                db, sql: "SELECT id FROM sessions ORDER BY id DESC LIMIT 1 OFFSET ?", arguments: [keep - 1])
        }
    }
}

// MARK: - Stops

extension AgentStore {
    /// Asks runs to stop: the given sessions, every running session of `agent`, or (both nil) every run in flight.
    /// Each run notices within its poll interval, wherever it runs (another process, another daemon). Returns the
    /// sessions asked; an unknown session id throws `unknownSession`.
    @discardableResult
    public func requestStop(session: Int64? = nil, agent: String? = nil, by who: String) throws -> [SessionRecord] {
        let now = Self.now()
        return try write { db in
            if let session { try requireSession(db, session) }
            if let agent { try requireAgent(db, agent) }
            let rows = try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM sessions WHERE status IN ('running', 'needs-approval')
                        AND (CAST(? AS BIGINT) IS NULL OR id = ?) AND (CAST(? AS TEXT) IS NULL OR agent = ?) ORDER BY id
                    """, arguments: [session, session, agent, agent])
            let records = try rows.map(sessionRecord)
            for record in records {
                try db.execute(
                    sql: "UPDATE sessions SET stop_requested = coalesce(stop_requested, ?) WHERE id = ?",
                    arguments: ["\(now) \(who)", record.id])
            }
            return records
        }
    }

    /// Who asked a session to stop ("TIME WHO"), or nil: read by the run's poller several times a second, so it is
    /// one cached SELECT on the primary key.
    public func stopRequest(session: Int64) throws -> String? {
        try readOne { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT stop_requested FROM sessions WHERE id = ?"), arguments: [session])
        }
    }
}

// MARK: - Replayable steps

extension AgentStore {
    /// Stores a run's `seq`-th input action as replayable step JSON (see `RecordedStep`).
    public func recordActionStep(session: Int64, seq: Int, json: String) throws {
        try write { db in
            try requireSession(db, session)
            try db.execute(
                sql: """
                    INSERT INTO action_steps (session_id, seq, step, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (session_id, seq) DO UPDATE SET step = excluded.step, created_at = excluded.created_at
                    """,
                arguments: [session, seq, json, Self.now()])
        }
    }

    /// A run's recorded steps as JSON, in the order they were done; `unknownSession` for a run that does not exist.
    public func actionSteps(session: Int64) throws -> [String] {
        try read { db in
            try requireSession(db, session)
            return try String.fetchAll(
                db, sql: "SELECT step FROM action_steps WHERE session_id = ? ORDER BY seq", arguments: [session])
        }
    }
}

extension AgentStore {
    /// Every run's recorded steps after `id` (0: from the first), oldest first, at most `limit`.
    public func actionSteps(after id: Int64, limit: Int = 200) throws -> [ActionStepRow] {
        try read { db in
            try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT a.\(Self.stepID(db)) AS id, a.session_id, a.step, a.created_at, s.agent, s.pid, g.display
                    FROM action_steps a JOIN sessions s ON s.id = a.session_id LEFT JOIN agents g ON g.name = s.agent
                    WHERE a.\(Self.stepID(db)) > ? ORDER BY a.\(Self.stepID(db)) LIMIT ?
                    """, arguments: [id, limit]
            ).map { row in
                ActionStepRow(
                    id: row["id"], session: row["session_id"], agent: row["agent"], pid: row["pid"],
                    display: row["display"], step: row["step"],
                    createdAt: try date(row["created_at"] as String, "action_steps.created_at"))
            }
        }
    }

    /// The newest recorded step's `id` (0 when there is none): a follower starts after it.
    public func lastActionStepID() throws -> Int64 {
        try read { db in try Int64.fetchOne(db, sql: "SELECT MAX(\(Self.stepID(db))) FROM action_steps") ?? 0 }
    }

    /// The column that orders every run's steps: SQLite's rowid; PostgreSQL's table has an identity column.
    static func stepID(_ db: any SQLConnection) -> String { db.dialect == .sqlite ? "rowid" : "id" }
}

// MARK: - Action frames

extension AgentStore {
    /// Keeps the frame tool call `call` of session `session` acted on (its first input action's), the image once in
    /// `images` by its SHA-256 (a static screen acted on ten times, or the screenshot the model was sent of it, is one
    /// row); a second frame for the same call is ignored.
    public func recordActionFrame(session: Int64, call: String, mediaType: String, data: Data) throws {
        let name = SHA256.hex(data)
        let now = Self.now()
        try write { db in
            try requireSession(db, session)
            try db.execute(
                sql: """
                    INSERT INTO action_frames (session_id, call_id, sha256, media_type, created_at)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """, arguments: [session, call, name, mediaType, now])
            guard db.changesCount > 0 else { return }  // the call has its frame: no image for nothing
            try db.cachedStatement(
                sql: """
                    INSERT INTO images (sha256, media_type, data, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT DO NOTHING
                    """
            ).execute(arguments: [name, mediaType, data, now])
        }
    }
}

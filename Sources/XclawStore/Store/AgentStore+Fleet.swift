import Foundation
import XclawBase
import XclawMessages

// MARK: - The fleet (PostgreSQL only)

extension AgentStore: FleetStore {
    /// The channel every queue change is announced on (a run queued, claimed back or ended).
    static let fleetChannel = "xclaw_fleet"

    /// The fleet's pool, or `noFleet` on SQLite.
    private func fleetPool() throws -> PostgresPool {
        guard case .postgres(let pool) = engine else { throw StoreError.noFleet(path: path) }
        return pool
    }

    /// Runs `body` in a write transaction (the fleet's write lock held) on the fleet's database.
    private func fleetWrite<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let pool = try fleetPool()
        do { return try pool.write(body) } catch { throw Self.storeError(error, path: path) }
    }

    /// Runs `body` in a snapshot read on the fleet's database.
    private func fleetRead<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let pool = try fleetPool()
        do { return try pool.read(body) } catch { throw Self.storeError(error, path: path) }
    }

    public func registerWorker(_ info: WorkerInfo) throws {
        guard !info.name.isEmpty, info.name.count <= 64, info.slots >= 1 else {
            throw StoreError.invalidArgument(
                "a worker needs a name of 1–64 characters and at least one slot (got \"\(info.name)\", "
                    + "\(info.slots) slots)")
        }
        try fleetWrite { db in
            if let row = try SQLRow.fetchOne(
                db, sql: "SELECT host, pid, state FROM workers WHERE name = ?", arguments: [info.name])
            {
                let host: String = row["host"], pid: Int32 = row["pid"], state: String = row["state"]
                // A live holder is another worker, unless it is this very process, or a process of this host that
                // is gone (this worker restarted before anyone noticed): then its runs are settled as lost first.
                if state == WorkerState.up.rawValue {
                    let samePlace = host == info.host
                    guard samePlace, pid == info.pid || !Subprocess.isRunning(pid) else {
                        throw StoreError.workerNameTaken(info.name, host: host)
                    }
                }
            }
            // A worker that registers has no run in flight (a new process; or one the fleet declared lost, which
            // stopped its runs first): any run still recorded as its own was cut off with its last process. The pid
            // alone cannot tell: in a container the worker is always pid 1.
            _ = try settleLostRuns(db, worker: info.name, reason: "its worker \(info.name) restarted")
            try db.execute(
                sql: """
                    INSERT INTO workers (name, host, pid, version, labels, slots, displays, apps, level, state,
                        started_at, heartbeat_at, ended_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'up', now(), now(), NULL)
                    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                        version = excluded.version, labels = excluded.labels, slots = excluded.slots,
                        displays = excluded.displays, apps = excluded.apps, level = excluded.level, state = 'up',
                        started_at = now(),
                        heartbeat_at = now(), ended_at = NULL
                    """,
                arguments: [
                    info.name, info.host, info.pid, info.version, Self.json(info.labels), info.slots,
                    Self.json(info.displays), Self.json(info.apps), info.level,
                ])
        }
    }

    public func heartbeat(worker: String) throws -> Bool {
        let pool = try fleetPool()
        do {
            return try pool.single { db in
                try db.execute(
                    sql: "UPDATE workers SET heartbeat_at = now() WHERE name = ? AND state = 'up'", arguments: [worker])
                return db.changesCount == 1
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    public func leaveWorker(_ name: String) throws {
        try fleetWrite { db in
            try db.execute(
                sql: "UPDATE workers SET state = 'left', ended_at = now() WHERE name = ? AND state = 'up'",
                arguments: [name])
        }
    }

    public func workers() throws -> [WorkerRecord] {
        try fleetRead { db in
            try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT w.*, extract(epoch FROM w.started_at)::float8 AS started_epoch,
                        extract(epoch FROM w.heartbeat_at)::float8 AS heartbeat_epoch,
                        extract(epoch FROM w.ended_at)::float8 AS ended_epoch,
                        (SELECT count(*) FROM fleet_runs r WHERE r.worker = w.name AND r.status = 'running') AS busy
                    FROM workers w ORDER BY w.name
                    """
            ).map(workerRecord)
        }
    }

    public func markLostWorkers(timeout: Duration) throws -> [LostWorker] {
        let seconds = timeout / .seconds(1)
        /// Runs in flight on a worker that is not up (it left, or was lost, while one was being claimed or ended).
        let orphans =
            "SELECT DISTINCT r.worker FROM fleet_runs r WHERE r.status = 'running' AND NOT EXISTS "
            + "(SELECT 1 FROM workers w WHERE w.name = r.worker AND w.state = 'up')"
        let stale = """
            FROM workers WHERE state = 'up' AND heartbeat_at < now() - make_interval(secs => ?1)
              AND pg_postmaster_start_time() < now() - make_interval(secs => ?1)
            """
        // Every worker asks every few seconds: a read first, and the write (the fleet's lock) only for a loss.
        let suspects = try fleetRead { db in
            try String.fetchAll(db, sql: "SELECT name \(stale)", arguments: [seconds]).count
                + String.fetchAll(db, sql: orphans).count
        }
        if suspects == 0 { return [] }
        return try fleetWrite { db in
            let names = try String.fetchAll(
                db,
                sql: "UPDATE workers SET state = 'lost', ended_at = now() WHERE name IN (SELECT name \(stale)) "
                    + "RETURNING name", arguments: [seconds])
            var lost = try names.sorted().map { name in
                let reason = "its worker \(name) sent no heartbeat for \(Int(seconds.rounded())) s (lost)"
                return LostWorker(name: name, runs: try settleLostRuns(db, worker: name, reason: reason))
            }
            for name in try String.fetchAll(db, sql: orphans).sorted() {
                let reason = "its worker \(name) stopped serving while the run was in flight"
                lost.append(LostWorker(name: name, runs: try settleLostRuns(db, worker: name, reason: reason)))
            }
            return lost
        }
    }

    /// A lost worker's running runs: `lost` (never run again: a click must not happen twice), or `queued` again
    /// when they asked for it; their sessions `interrupted`, naming the worker.
    private func settleLostRuns(_ db: any SQLConnection, worker: String, reason: String) throws -> [FleetRunRecord] {
        let runs = try SQLRow.fetchAll(
            db,
            sql: """
                UPDATE fleet_runs r SET
                    status = CASE WHEN r.retry_lost <> 0 THEN 'queued' ELSE 'lost' END,
                    worker = CASE WHEN r.retry_lost <> 0 THEN NULL ELSE r.worker END,
                    finished_at = CASE WHEN r.retry_lost <> 0 THEN NULL ELSE now() END,
                    error = ?
                WHERE r.worker = ? AND r.status = 'running'
                RETURNING \(Self.fleetColumns("r"))
                """, arguments: [reason, worker]
        ).map(fleetRunRecord)
        let now = Self.now()
        for run in runs {
            guard let session = run.sessionID else { continue }
            try db.execute(
                sql: """
                    UPDATE sessions SET status = 'interrupted', error = ?, ended_at = ?
                    WHERE id = ? AND status IN ('running', 'needs-approval')
                    """, arguments: [reason, now, session])
        }
        if !runs.isEmpty { try notify(db, "lost") }
        return runs.sorted { $0.id < $1.id }
    }

    public func enqueueRun(_ request: FleetRunRequest) throws -> Int64 {
        try fleetWrite { db in
            // A one-shot `run` creates its agent when a worker starts it.
            if request.kind != .run { try requireAgent(db, request.agent) }
            let id = try Int64.fetchOne(
                db,
                sql: """
                    INSERT INTO fleet_runs (kind, agent, arguments, labels, display_size, app, retry_lost,
                        enqueued_by, level, enqueued_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now()) RETURNING id
                    """,
                arguments: [
                    request.kind.rawValue, request.agent, Self.json(request.arguments), Self.json(request.labels),
                    request.displaySize, request.app, request.retryLost, request.enqueuedBy, request.level,
                ])
            guard let id else { throw StoreError.database(path: path, detail: "the queued run got no id") }
            try notify(db, "queued \(id)")
            return id
        }
    }

    public func claimRun(for worker: WorkerInfo) throws -> FleetRunRecord? {
        let pool = try fleetPool()
        do {
            return try pool.writeUnlocked { db in
                try SQLRow.fetchOne(
                    db,
                    sql: """
                        WITH next AS (
                            SELECT q.id FROM fleet_runs q
                            WHERE q.status = 'queued'
                              AND CAST(q.labels AS jsonb) <@ CAST(? AS jsonb)
                              AND (q.display_size IS NULL OR jsonb_exists(CAST(? AS jsonb), q.display_size))
                              AND (q.app IS NULL OR jsonb_exists(CAST(? AS jsonb), q.app))
                              AND q.level <= ?
                              AND EXISTS (SELECT 1 FROM workers w WHERE w.name = ? AND w.state = 'up')
                              AND NOT EXISTS (
                                  SELECT 1 FROM fleet_runs o WHERE o.agent = q.agent
                                  AND (o.status = 'running' OR (o.status = 'queued' AND o.id < q.id)))
                            ORDER BY q.id LIMIT 1
                            FOR UPDATE OF q SKIP LOCKED)
                        UPDATE fleet_runs r SET status = 'running', worker = ?, claimed_at = now(),
                            attempts = r.attempts + 1, error = NULL
                        FROM next WHERE r.id = next.id
                        RETURNING \(Self.fleetColumns("r"))
                        """,
                    arguments: [
                        Self.json(worker.labels), Self.json(worker.displays), Self.json(worker.apps), worker.level,
                        worker.name, worker.name,
                    ]
                ).map(fleetRunRecord)
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    public func attachSession(run: Int64, session: Int64) throws {
        try fleetWrite { db in
            try db.execute(sql: "UPDATE fleet_runs SET session_id = ? WHERE id = ?", arguments: [session, run])
            if db.changesCount == 0 { throw StoreError.unknownFleetRun(run) }
        }
    }

    @discardableResult
    public func finishRun(_ id: Int64, worker: String, status: FleetRunStatus, exitStatus: Int32?, error: String?)
        throws -> Bool
    {
        guard status.isFinal, status != .lost else {
            throw StoreError.invalidArgument(
                "a worker ends a run as completed, failed or cancelled, not \(status.rawValue)")
        }
        return try fleetWrite { db in
            try db.execute(
                sql: """
                    UPDATE fleet_runs SET status = ?, exit_status = ?, error = ?, finished_at = now()
                    WHERE id = ? AND worker = ? AND status = 'running'
                    """, arguments: [status.rawValue, exitStatus, error, id, worker])
            let done = db.changesCount == 1
            if done { try notify(db, "ended \(id)") }
            return done
        }
    }

    @discardableResult
    public func cancelFleetRun(_ id: Int64, by who: String) throws -> FleetRunRecord {
        try fleetWrite { db in
            try db.execute(
                sql: """
                    UPDATE fleet_runs SET status = 'cancelled', finished_at = now(), error = ?
                    WHERE id = ? AND status = 'queued'
                    """, arguments: ["cancelled by \(who) before it started", id])
            if db.changesCount == 1 { try notify(db, "ended \(id)") }
            // Running without a session yet: the session it starts is asked to stop as it is tied to the run.
            try db.execute(
                sql: """
                    UPDATE fleet_runs SET cancel_requested = coalesce(cancel_requested, ?)
                    WHERE id = ? AND status = 'running'
                    """, arguments: ["\(Self.now()) \(who)", id])
        }
        let run = try fleetRun(id)
        if run.status == .running, let session = run.sessionID {
            try requestStop(session: session, agent: nil, by: who)
        }
        return run
    }

    public var hasFleet: Bool { if case .postgres = engine { true } else { false } }

    public func fleetRun(_ id: Int64) throws -> FleetRunRecord {
        try fleetRead { db in
            guard
                let row = try SQLRow.fetchOne(
                    db, sql: "SELECT \(Self.fleetColumns("r")) FROM fleet_runs r WHERE r.id = ?", arguments: [id])
            else { throw StoreError.unknownFleetRun(id) }
            return fleetRunRecord(row)
        }
    }

    public func fleetRuns(status: FleetRunStatus?, limit: Int) throws -> [FleetRunRecord] {
        guard limit >= 1 else { throw StoreError.invalidArgument("the number of runs must be at least 1") }
        return try fleetRead { db in
            try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM (SELECT \(Self.fleetColumns("r")) FROM fleet_runs r
                        WHERE CAST(? AS TEXT) IS NULL OR r.status = ? ORDER BY r.id DESC LIMIT ?) AS newest
                    ORDER BY id
                    """, arguments: [status?.rawValue, status?.rawValue, limit]
            ).map(fleetRunRecord)
        }
    }

    public func waitForFleetChange(timeout: Duration) throws -> Bool {
        let pool = try fleetPool()
        do { return try pool.waitForNotification(channel: Self.fleetChannel, timeout: timeout) } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// The environment variable naming the fleet run a worker executes: set in the command's invocation, so the
    /// first session the command starts is tied to the run (in the transaction that starts it), and the client that
    /// queued the run can follow its output.
    public static let fleetRunVariable = "XCLAW_FLEET_RUN"

    /// Ties a new session to the fleet run this command executes for a worker, if any (PostgreSQL only).
    func attachToFleetRun(_ db: any SQLConnection, session: Int64) throws {
        guard db.dialect == .postgres,
            let run = Invocation.current.environment[Self.fleetRunVariable].flatMap({ Int64($0) })
        else { return }
        try db.execute(
            sql: "UPDATE fleet_runs SET session_id = ? WHERE id = ? AND session_id IS NULL", arguments: [session, run])
        // A cancel that came before the session: the session starts asked to stop.
        try db.execute(
            sql: """
                UPDATE sessions SET stop_requested = coalesce(stop_requested,
                    (SELECT cancel_requested FROM fleet_runs WHERE id = ?))
                WHERE id = ?
                """, arguments: [run, session])
        try notify(db, "session \(run)")
    }

    // MARK: - Rows

    /// Announces a queue change to every listening worker (delivered when the transaction commits).
    private func notify(_ db: any SQLConnection, _ what: String) throws {
        try db.execute(sql: "SELECT pg_notify(?, ?)", arguments: [Self.fleetChannel, what])
    }

    /// The `fleet_runs` columns a record is read from, times as epoch seconds.
    private static func fleetColumns(_ table: String) -> String {
        let t = table
        return """
            \(t).id, \(t).kind, \(t).agent, \(t).arguments, \(t).labels, \(t).display_size, \(t).app, \
            \(t).retry_lost, \(t).status, \(t).worker, \(t).session_id, \(t).exit_status, \(t).error, \(t).attempts, \
            \(t).enqueued_by, \(t).level, extract(epoch FROM \(t).enqueued_at)::float8 AS enqueued_epoch, \
            extract(epoch FROM \(t).claimed_at)::float8 AS claimed_epoch, \
            extract(epoch FROM \(t).finished_at)::float8 AS finished_epoch
            """
    }

    /// A run from its row.
    private func fleetRunRecord(_ row: SQLRow) -> FleetRunRecord {
        let request = FleetRunRequest(
            kind: FleetRunKind(rawValue: row["kind"]) ?? .send, agent: row["agent"],
            arguments: Self.strings(row["arguments"]), labels: Self.labels(row["labels"]),
            displaySize: row["display_size"], app: row["app"], retryLost: row["retry_lost"],
            enqueuedBy: row["enqueued_by"], level: row["level"])
        return FleetRunRecord(
            id: row["id"], request: request, status: FleetRunStatus(rawValue: row["status"]) ?? .failed,
            worker: row["worker"], sessionID: row["session_id"], exitStatus: row["exit_status"], error: row["error"],
            attempts: row["attempts"], enqueuedAt: Date(timeIntervalSince1970: row["enqueued_epoch"]),
            claimedAt: (row["claimed_epoch"] as Double?).map(Date.init(timeIntervalSince1970:)),
            finishedAt: (row["finished_epoch"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    /// A worker from its row.
    private func workerRecord(_ row: SQLRow) -> WorkerRecord {
        let info = WorkerInfo(
            name: row["name"], host: row["host"], pid: row["pid"], version: row["version"],
            labels: Self.labels(row["labels"]), slots: row["slots"], displays: Self.strings(row["displays"]),
            apps: Self.strings(row["apps"]), level: row["level"])
        return WorkerRecord(
            info: info, state: WorkerState(rawValue: row["state"]) ?? .lost, busy: row["busy"],
            startedAt: Date(timeIntervalSince1970: row["started_epoch"]),
            heartbeatAt: Date(timeIntervalSince1970: row["heartbeat_epoch"]),
            endedAt: (row["ended_epoch"] as Double?).map(Date.init(timeIntervalSince1970:)))
    }

    /// A JSON array of strings.
    static func json(_ strings: [String]) -> String { JSONValue.array(strings.map(JSONValue.string)).jsonText }

    /// A JSON object of strings.
    static func json(_ labels: [String: String]) -> String {
        JSONValue.object(labels.mapValues(JSONValue.string)).jsonText
    }

    /// Strings from a JSON array (empty when malformed).
    static func strings(_ text: String) -> [String] {
        ((try? JSONValue.parse(text))?.array ?? []).compactMap(\.string)
    }

    /// Labels from a JSON object (empty when malformed).
    static func labels(_ text: String) -> [String: String] {
        guard case .object(let object)? = try? JSONValue.parse(text) else { return [:] }
        return object.compactMapValues(\.string)
    }
}

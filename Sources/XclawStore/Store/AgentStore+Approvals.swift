import Foundation
import XclawBase
import XclawMessages

// MARK: - Approvals

extension AgentStore: ApprovalStore {
    /// Records that a run waits for a decision on a gated action: the approval row, and the session's status
    /// `needs-approval` so `runs` shows who is waiting. Returns the approval's id.
    public func requestApproval(
        session: Int64, kind: String, tool: String, action: String, detail: String, expiresAt: Date
    ) throws -> Int64 {
        try write { db in
            guard
                let agent = try String.fetchOne(
                    db, sql: "SELECT agent FROM sessions WHERE id = ?", arguments: [session])
            else { throw StoreError.unknownSession(session) }
            try db.execute(
                sql: """
                    INSERT INTO approvals (session_id, agent, kind, tool, action, detail, status, requested_at,
                        expires_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)
                    """,
                arguments: [session, agent, kind, tool, action, detail, Self.now(), StoreDate.format(expiresAt)])
            let id = try db.lastInsertedRowID
            try db.execute(
                sql: "UPDATE sessions SET status = 'needs-approval' WHERE id = ? AND status = 'running'",
                arguments: [session])
            return id
        }
    }

    /// Decides the pending approval of a run (`approved` or `denied`); the run, polling, carries on. Throws
    /// `unknownSession` for a run that does not exist and `notPending` when the run waits for nothing.
    @discardableResult
    public func decideApproval(session: Int64, approve: Bool, by who: String) throws -> ApprovalRecord {
        try write { db in
            try requireSession(db, session)
            guard
                let row = try SQLRow.fetchOne(
                    db,
                    sql: "SELECT * FROM approvals WHERE session_id = ? AND status = 'pending' ORDER BY id DESC LIMIT 1",
                    arguments: [session])
            else { throw StoreError.notPending(session) }
            let id: Int64 = row["id"]
            // Past its deadline the run has denied it (or is about to): a late decision must not look like one.
            if try approvalRecord(row).expiresAt <= Date() { throw StoreError.notPending(session) }
            try db.execute(
                sql: "UPDATE approvals SET status = ?, decided_at = ?, decided_by = ? WHERE id = ?",
                arguments: [approve ? "approved" : "denied", Self.now(), who, id])
            return try approvalRecord(
                SQLRow.fetchOne(db, sql: "SELECT * FROM approvals WHERE id = ?", arguments: [id]) ?? row)
        }
    }

    /// The approval's state; an expired pending one is marked `expired` (denied by the timeout) in the same
    /// transaction, so a late `approve` cannot race the run's own deadline. The session returns to `running` once
    /// the approval is settled.
    public func settleApproval(_ id: Int64, now: Date = Date()) throws -> ApprovalRecord {
        try write { db in
            guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM approvals WHERE id = ?", arguments: [id]) else {
                throw StoreError.invalidArgument("no approval \(id)")
            }
            var record = try approvalRecord(row)
            if record.status == "pending", record.expiresAt <= now {
                try db.execute(
                    sql: "UPDATE approvals SET status = 'expired', decided_at = ?, decided_by = 'timeout' WHERE id = ?",
                    arguments: [Self.now(), id])
                record.status = "expired"
                record.decidedBy = "timeout"
            }
            if record.status != "pending" {
                try db.execute(
                    sql: "UPDATE sessions SET status = 'running' WHERE id = ? AND status = 'needs-approval'",
                    arguments: [record.session])
            }
            return record
        }
    }

    /// Withdraws a pending approval whose run stopped waiting (stopped or cancelled): it is denied by the run.
    public func withdrawApproval(_ id: Int64, reason: String) throws {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE approvals SET status = 'denied', decided_at = ?, decided_by = ? WHERE id = ? AND status = 'pending'
                    """, arguments: [Self.now(), reason, id])
            try db.execute(
                sql: """
                    UPDATE sessions SET status = 'running' WHERE status = 'needs-approval'
                        AND id = (SELECT session_id FROM approvals WHERE id = ?)
                    """, arguments: [id])
        }
    }

    public func approvalStatus(_ id: Int64) throws -> String? {
        try readOne { db in try String.fetchOne(db, sql: "SELECT status FROM approvals WHERE id = ?", arguments: [id]) }
    }

    /// A run's approvals, oldest first (every run's when `session` is nil, pending ones only with `pendingOnly`).
    public func approvals(session: Int64? = nil, pendingOnly: Bool = false) throws -> [ApprovalRecord] {
        try read { db in
            try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM approvals WHERE (CAST(? AS BIGINT) IS NULL OR session_id = ?) AND (? = 0 OR status = 'pending')
                    ORDER BY id
                    """, arguments: [session, session, pendingOnly ? 1 : 0]
            ).map(approvalRecord)
        }
    }

    /// Builds an `ApprovalRecord` from an `approvals` row.
    func approvalRecord(_ row: SQLRow) throws -> ApprovalRecord {
        ApprovalRecord(
            id: row["id"], session: row["session_id"], agent: row["agent"], kind: row["kind"], tool: row["tool"],
            action: row["action"], detail: row["detail"], status: row["status"],
            requestedAt: try date(row["requested_at"] as String, "approvals.requested_at"),
            expiresAt: try date(row["expires_at"] as String, "approvals.expires_at"),
            decidedAt: try dateIfAny(row["decided_at"], "approvals.decided_at"), decidedBy: row["decided_by"])
    }
}

import Foundation
import XclawMessages

@_implementationOnly import GRDB

/// A batch a run took: its session, the input messages, the batch prompt row and the cursor before the claim.
public struct ClaimedBatch: Sendable, Hashable {
    /// The run's session.
    public var session: Int64
    /// The input the run answers, ascending.
    public var pending: [StoredMessage]
    /// The stored batch prompt (what the run sends).
    public var batchMessage: Int64
    /// The cursor before the claim, restored if the run is undone.
    public var previousCursor: Int64
}

// MARK: - Runs

extension AgentStore {
    /// Takes an agent's pending input for a run in ONE transaction: reads the cursor, selects the input after it
    /// (`isInput` decides which user rows are input), advances the cursor, starts the session (remembering both
    /// cursors) and stores the batch prompt `prompt` builds. A crash leaves either nothing or all of it, so input
    /// is never consumed without a trace. Nil when nothing is pending.
    public func claimBatch(
        agent: String, kind: SessionKind, batchSender: String,
        isInput: (StoredMessage) -> Bool,
        prompt: ([StoredMessage]) -> String
    ) throws -> ClaimedBatch? {
        let process = ProcessIdentity.current
        return try write { db in
            try requireAgent(db, agent)
            let previous =
                try Int64.fetchOne(
                    db, sql: "SELECT cursor FROM agent_state WHERE agent = ?",
                    arguments: [agent]) ?? 0
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM messages WHERE agent = ? AND id > ? AND role = 'user' ORDER BY id
                    """, arguments: [agent, previous])
            let pending = try rows.map { try storedMessage($0, db) }.filter(isInput)
            guard let last = pending.last else { return nil }
            let now = Self.now()
            try db.execute(
                sql: """
                    INSERT INTO agent_state (agent, cursor, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT(agent) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at
                    """, arguments: [agent, last.id, now])
            try db.execute(
                sql: """
                    INSERT INTO sessions (agent, kind, status, pid, process, started_at, previous_cursor, claimed_cursor)
                    VALUES (?, ?, 'running', ?, ?, ?, ?, ?)
                    """, arguments: [agent, kind.rawValue, getpid(), process, now, previous, last.id])
            let session = db.lastInsertedRowID
            try db.execute(
                sql: """
                    INSERT INTO messages (agent, role, sender, content, status, session_id, created_at, updated_at)
                    VALUES (?, 'user', ?, ?, 'complete', ?, ?, ?)
                    """,
                arguments: [agent, batchSender, Self.encodeContent([.text(prompt(pending))]), session, now, now])
            return ClaimedBatch(
                session: session, pending: pending, batchMessage: db.lastInsertedRowID,
                previousCursor: previous)
        }
    }

    /// Undoes a run that showed and did nothing, in ONE transaction: removes every message it stored (its batch
    /// prompt included, so the model never sees the batch twice) and puts the cursor back, unless a later run has
    /// moved it since. The batch is then pending again.
    public func rollBackRun(session: Int64) throws {
        try write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT agent, previous_cursor, claimed_cursor FROM sessions WHERE id = ?
                        """, arguments: [session])
            else { throw StoreError.unknownSession(session) }
            let agent: String? = row["agent"]
            let previous: Int64? = row["previous_cursor"]
            let claimed: Int64? = row["claimed_cursor"]
            try db.execute(sql: "DELETE FROM messages WHERE session_id = ?", arguments: [session])
            try Self.deleteOrphanImages(db)
            if let agent, let previous, let claimed {
                try db.execute(
                    sql: "UPDATE agent_state SET cursor = ?, updated_at = ? WHERE agent = ? AND cursor = ?",
                    arguments: [previous, Self.now(), agent, claimed])
            }
        }
    }

    /// How many messages a session stored besides its batch prompt and the rows in `ignoring` (a summary of old
    /// turns is xclaw's, not output that reached the user): its replies and tool results.
    public func outputCount(session: Int64, batchSender: String, ignoring: [String] = []) throws -> Int {
        let senders = [batchSender] + ignoring
        return try read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM messages WHERE session_id = ? AND NOT (role = 'user' AND sender IN (\(
                        Array(repeating: "?", count: senders.count).joined(separator: ", "))))
                    """,
                arguments: StatementArguments([session] + senders.map { $0 as (any DatabaseValueConvertible)? })) ?? 0
        }
    }
}

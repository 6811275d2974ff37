import Foundation
import XclawMessages

@_implementationOnly import GRDB

// MARK: - Run reports

/// What a run report is made of, read in one snapshot: the session, the task it ran for, the input it answered, every
/// message it stored and its steps' usage rows.
public struct RunTranscript: Sendable, Hashable {
    /// The session (the run).
    public var session: SessionRecord
    /// The scheduled task's name (or id) when a schedule sent its input; nil for runs a person asked for.
    public var task: String?
    /// The chat messages its batch answered (what a person or schedule sent), oldest first.
    public var input: [StoredMessage]
    /// What the run stored, oldest first: its batch prompt, the model's replies and the tool results.
    public var messages: [StoredMessage]
    /// Its model requests with their tokens, cost and timings, in order.
    public var steps: [StepRecord]
}

extension AgentStore {
    /// One session by id; `unknownSession` when there is none (never started, or its agent was deleted).
    public func session(_ id: Int64) throws -> SessionRecord {
        try read { db in
            guard
                let row = try Row.fetchOne(
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
                let row = try Row.fetchOne(
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
            let input = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM messages WHERE agent = ? AND id > ? AND id <= ? AND role = 'user'
                        AND session_id IS NULL ORDER BY id
                    """, arguments: [session.agent, previous, claimed]
            ).map { try storedMessage($0, db) }
            let messages = try Row.fetchAll(
                db, sql: "SELECT * FROM messages WHERE session_id = ? ORDER BY id", arguments: [id]
            ).map { try storedMessage($0, db) }
            return RunTranscript(
                session: session, task: row["task_label"], input: input, messages: messages, steps: [])
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
            try Row.fetchAll(db, sql: "SELECT id, report FROM sessions WHERE report IS NOT NULL ORDER BY id DESC")
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

    /// Replaces the screenshots stored in the tool results of finished sessions older than `cutoff` with a text
    /// block saying `placeholder`, so the database stops growing with every run while each conversation stays
    /// valid (a tool result keeps its id and its text). One transaction per message; returns the images replaced.
    @discardableResult
    public func pruneImages(sessionsBefore cutoff: Int64, placeholder: String) throws -> Int {
        let candidates = try read { db in
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id
                    WHERE m.session_id < ? AND s.status NOT IN ('running', 'needs-approval') AND m.role = 'user'
                        AND m.content LIKE '%"type":"image"%' ORDER BY m.id
                    """, arguments: [cutoff])
        }
        var replaced = 0
        for id in candidates {
            replaced += try write { db -> Int in
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM messages WHERE id = ?", arguments: [id])
                else { return 0 }
                let message = try storedMessage(row, db, resolve: false)
                var count = 0
                let content = message.content.map { block -> ContentBlock in
                    guard case .toolResult(var result) = block else { return block }
                    result.content = result.content.map { inner in
                        guard inner.isImage || Self.imageReference(inner) != nil else { return inner }
                        count += 1
                        return .text(placeholder)
                    }
                    return .toolResult(result)
                }
                guard count > 0 else { return 0 }
                try db.execute(
                    sql: "UPDATE messages SET content = ? WHERE id = ?",
                    arguments: [Self.encodeContent(content), id])
                return count
            }
        }
        if replaced > 0 { try deleteUnusedImages() }
        return replaced
    }
}

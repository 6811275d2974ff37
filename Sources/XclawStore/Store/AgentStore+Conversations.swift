import Foundation
import XclawBase
import XclawMessages

// MARK: - Messages

extension AgentStore: ConversationStore {
    /// Appends one message to an agent's conversation and returns its id, the cursor unit: ids only grow and are
    /// never reused (AUTOINCREMENT), so "after id N" is exact where nanoclaw's timestamps skipped equal ones.
    @discardableResult
    public func appendMessage(
        agent: String, role: MessageRole, content: [ContentBlock],
        status: MessageStatus = .complete, sender: String? = nil,
        sessionID: Int64? = nil
    ) throws -> Int64 {
        let now = Self.now()
        return try write { db in
            try requireAgent(db, agent)
            if let sessionID { try requireSession(db, sessionID) }
            let json = try Self.storeContent(content, db)
            try db.cachedStatement(
                sql: """
                    INSERT INTO messages (agent, role, sender, content, status, session_id, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [agent, role.rawValue, sender, json, status.rawValue, sessionID, now, now])
            return try db.lastInsertedRowID
        }
    }

    /// Replaces a message's content and status: the streaming hot path, called for each batch of tokens, so it
    /// is one cached UPDATE in autocommit mode (no fsync under WAL + `synchronous = NORMAL`).
    public func updateMessage(id: Int64, content: [ContentBlock], status: MessageStatus) throws {
        let now = Self.now()
        try writeSingle { db in
            let json = try Self.storeContent(content, db)
            try db.cachedStatement(sql: "UPDATE messages SET content = ?, status = ?, updated_at = ? WHERE id = ?")
                .execute(arguments: [json, status.rawValue, now, id])
            if db.changesCount == 0 { throw StoreError.unknownMessage(id) }
        }
    }

    /// An agent's messages with id greater than `after`, ascending; with `limit`, one page: pass the last id
    /// returned as the next `after` to get the rest, and nothing is ever skipped. With `screenshots: false` the
    /// screenshots stay references (`resolveScreenshots` reads back the ones a run still sends), so a long history
    /// is not loaded only to be pruned.
    public func messages(agent: String, after: Int64 = 0, limit: Int? = nil, screenshots: Bool = true) throws
        -> [StoredMessage]
    {
        let limit = try Self.checkedLimit(limit)
        return try read { db in
            try requireAgent(db, agent)
            return try SQLRow.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM messages WHERE agent = ? AND id > ? ORDER BY id LIMIT ?"),
                arguments: [agent, after, limit]
            ).map { try storedMessage($0, db, resolve: screenshots) }
        }
    }

    /// The pending input after the cursor: user messages with id greater than `after`, ascending, excluding the
    /// tool-result turns a run stores itself (those answer the model, they are not new input).
    public func userMessages(agent: String, after: Int64, limit: Int? = nil) throws -> [StoredMessage] {
        let limit = try Self.checkedLimit(limit)
        return try read { db in
            try requireAgent(db, agent)
            return try SQLRow.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM messages
                        WHERE agent = ? AND id > ? AND role = 'user'
                          AND NOT \(Self.hasToolResult(db))
                        ORDER BY id LIMIT ?
                        """),
                arguments: [agent, after, limit]
            ).map { try storedMessage($0, db) }
        }
    }

    /// One message by id.
    public func message(id: Int64) throws -> StoredMessage {
        try read { db in
            guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM messages WHERE id = ?", arguments: [id]) else {
                throw StoreError.unknownMessage(id)
            }
            return try storedMessage(row, db)
        }
    }

    /// Deletes one message (e.g. an empty partial reply); its id is never handed out again.
    public func deleteMessage(id: Int64) throws {
        try write { db in
            let held = try Bool.fetchOne(
                db, sql: "SELECT content LIKE '%xclaw_image%' FROM messages WHERE id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM messages WHERE id = ?", arguments: [id])
            if db.changesCount == 0 { throw StoreError.unknownMessage(id) }
            if held == true { try Self.deleteOrphanImages(db) }
        }
    }

    /// The content column: the API's JSON array of blocks, keys sorted.
    static func encodeContent(_ content: [ContentBlock]) -> String {
        JSONValue.array(content.map(\.json)).jsonText
    }

    /// A condition true of a `messages` row whose content holds a tool result (a turn a run stores itself).
    static func hasToolResult(_ db: any SQLConnection) -> String {
        switch db.dialect {
        case .sqlite:
            return """
                EXISTS (SELECT 1 FROM json_each(messages.content)
                        WHERE json_extract(json_each.value, '$.type') = 'tool_result')
                """
        case .postgres:
            return """
                EXISTS (SELECT 1 FROM jsonb_array_elements(messages.content::jsonb) AS e
                        WHERE e.value->>'type' = 'tool_result')
                """
        }
    }

    /// The `LIMIT` value (the largest integer = none, which both backends read); a limit below 1 is a caller bug
    /// worth a clear message.
    private static func checkedLimit(_ limit: Int?) throws -> Int {
        guard let limit else { return Int.max }
        guard limit >= 1 else { throw StoreError.invalidArgument("the page size must be at least 1, not \(limit)") }
        return limit
    }

    /// Builds a `StoredMessage` from a `messages` row, its screenshots read back from `images` (or, without
    /// `resolve`, left as references for `resolveNewest`).
    func storedMessage(_ row: SQLRow, _ db: any SQLConnection, resolve: Bool = true) throws -> StoredMessage {
        let id: Int64 = row["id"]
        let text: String = row["content"]
        guard let blocks = (try? JSONValue.parse(text))?.array else {
            throw StoreError.corrupt(path: path, detail: "message \(id) has unreadable content")
        }
        let roleText: String = row["role"]
        let statusText: String = row["status"]
        guard let role = MessageRole(rawValue: roleText), let status = MessageStatus(rawValue: statusText) else {
            throw StoreError.corrupt(path: path, detail: "message \(id) has role \(roleText), status \(statusText)")
        }
        var content = blocks.map(ContentBlock.init(json:))
        if resolve { content = try Self.resolveImages(content, db) { _ in true } }
        return StoredMessage(
            id: id, agent: row["agent"], role: role, sender: row["sender"],
            content: content, status: status,
            sessionID: row["session_id"],
            createdAt: try date(row["created_at"] as String, "messages.created_at"),
            updatedAt: try date(row["updated_at"] as String, "messages.updated_at"))
    }
}

// MARK: - Cursor and state

extension AgentStore {
    /// An agent's cursor, retry count and last error.
    public func state(agent: String) throws -> AgentState {
        try read { db in
            try requireAgent(db, agent)
            guard
                let row = try SQLRow.fetchOne(
                    db, sql: "SELECT * FROM agent_state WHERE agent = ?",
                    arguments: [agent])
            else { return AgentState() }
            return AgentState(cursor: row["cursor"], retryCount: row["retry_count"], lastError: row["last_error"])
        }
    }

    /// Overwrites an agent's state: how a failed run restores the cursor it advanced, and records its error.
    public func setState(agent: String, _ state: AgentState) throws {
        guard state.cursor >= 0, state.retryCount >= 0 else {
            throw StoreError.invalidArgument("the cursor and retry count cannot be negative (\(state))")
        }
        try write { db in
            try requireAgent(db, agent)
            try db.execute(
                sql: """
                    INSERT INTO agent_state (agent, cursor, retry_count, last_error, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(agent) DO UPDATE SET cursor = excluded.cursor, retry_count = excluded.retry_count,
                        last_error = excluded.last_error, updated_at = excluded.updated_at
                    """,
                arguments: [agent, state.cursor, state.retryCount, state.lastError, Self.now()])
        }
    }

    /// Moves the cursor forward to `id` before a run and returns where it was, in one transaction, so the caller
    /// can roll back with `setState` and two processes never both take the same input. It never moves backwards:
    /// if the cursor is already past `id` it stays, and the returned value shows it.
    @discardableResult
    public func advanceCursor(agent: String, to id: Int64) throws -> Int64 {
        try write { db in
            try requireAgent(db, agent)
            let previous =
                try Int64.fetchOne(
                    db, sql: "SELECT cursor FROM agent_state WHERE agent = ?",
                    arguments: [agent]) ?? 0
            try db.execute(
                sql: """
                    INSERT INTO agent_state (agent, cursor, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT(agent) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at
                    """,
                arguments: [agent, max(previous, id), Self.now()])
            return previous
        }
    }
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
            let rows = try SQLRow.fetchAll(
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
                    INSERT INTO sessions (agent, kind, status, pid, process, host, started_at, previous_cursor,
                        claimed_cursor)
                    VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [agent, kind.rawValue, getpid(), process, ProcessIdentity.host, now, previous, last.id])
            let session = try db.lastInsertedRowID
            try attachToFleetRun(db, session: session)
            try db.execute(
                sql: """
                    INSERT INTO messages (agent, role, sender, content, status, session_id, created_at, updated_at)
                    VALUES (?, 'user', ?, ?, 'complete', ?, ?, ?)
                    """,
                arguments: [agent, batchSender, Self.encodeContent([.text(prompt(pending))]), session, now, now])
            return ClaimedBatch(
                session: session, pending: pending, batchMessage: try db.lastInsertedRowID,
                previousCursor: previous)
        }
    }

    /// Undoes a run that showed and did nothing, in ONE transaction: removes every message it stored (its batch
    /// prompt included, so the model never sees the batch twice) and puts the cursor back, unless a later run has
    /// moved it since. The batch is then pending again.
    public func rollBackRun(session: Int64) throws {
        try write { db in
            guard
                let row = try SQLRow.fetchOne(
                    db,
                    sql: """
                        SELECT agent, previous_cursor, claimed_cursor FROM sessions WHERE id = ?
                        """, arguments: [session])
            else { throw StoreError.unknownSession(session) }
            let agent: String? = row["agent"]
            let previous: Int64? = row["previous_cursor"]
            let claimed: Int64? = row["claimed_cursor"]
            try db.execute(sql: "DELETE FROM messages WHERE session_id = ?", arguments: [session])
            try db.execute(sql: "DELETE FROM action_frames WHERE session_id = ?", arguments: [session])
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
                arguments: SQLArguments([session] + senders.map { $0 as (any SQLBindable)? })) ?? 0
        }
    }
}

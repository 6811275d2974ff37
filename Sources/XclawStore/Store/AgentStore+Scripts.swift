import Foundation

// MARK: - Scripts

extension AgentStore: ScriptStore {
    /// The `scripts` columns a record is read from.
    private static let scriptColumns = "id, name, revision, agent, run, steps, body, stored_at, stored_by"

    public func storeScript(
        name: String, revision: Int, agent: String, run: Int64, steps: Int, by: String,
        body: (Int) throws -> String
    ) throws -> (script: StoredScript, created: Bool) {
        guard !name.isEmpty, name.count <= 1024 else {
            throw StoreError.invalidArgument("a script's name has 1 to 1024 characters")
        }
        return try write { db in
            let newest = try SQLRow.fetchOne(
                db,
                sql: "SELECT \(Self.scriptColumns) FROM scripts WHERE name = ? ORDER BY revision DESC LIMIT 1",
                arguments: [name]
            ).map(Self.scriptRecord)
            if let newest, try body(newest.revision) == newest.body { return (newest, false) }
            let chosen = max(revision, (newest?.revision ?? 0) + 1)
            let text = try body(chosen)
            let now = Self.now()
            try db.execute(
                sql: """
                    INSERT INTO scripts (name, revision, agent, run, steps, body, stored_at, stored_by)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [name, chosen, agent, run, steps, text, now, by])
            let id = try db.lastInsertedRowID
            return (
                StoredScript(
                    id: id, name: name, revision: chosen, agent: agent, run: run, steps: steps, body: text,
                    storedAt: StoreDate.parse(now) ?? Date(), storedBy: by), true
            )
        }
    }

    public func script(named name: String, revision: Int? = nil) throws -> StoredScript {
        try read { db in
            let found = try SQLRow.fetchOne(
                db,
                sql: revision == nil
                    ? "SELECT \(Self.scriptColumns) FROM scripts WHERE name = ? ORDER BY revision DESC LIMIT 1"
                    : "SELECT \(Self.scriptColumns) FROM scripts WHERE name = ? AND revision = ?",
                arguments: revision.map { [name, $0] } ?? [name])
            guard let found else {
                let known = try String.fetchAll(db, sql: "SELECT DISTINCT name FROM scripts ORDER BY name")
                throw StoreError.unknownScript(revision.map { "\(name)@\($0)" } ?? name, known: known)
            }
            return try Self.scriptRecord(found)
        }
    }

    public func scripts() throws -> [StoredScript] {
        try read { db in
            try SQLRow.fetchAll(
                db,
                sql: """
                    SELECT \(Self.scriptColumns) FROM scripts s
                    WHERE revision = (SELECT max(revision) FROM scripts t WHERE t.name = s.name) ORDER BY name
                    """
            ).map(Self.scriptRecord)
        }
    }

    /// One `scripts` row.
    private static func scriptRecord(_ row: SQLRow) throws -> StoredScript {
        let stored: String = row["stored_at"]
        return StoredScript(
            id: row["id"], name: row["name"], revision: row["revision"], agent: row["agent"], run: row["run"],
            steps: row["steps"], body: row["body"], storedAt: StoreDate.parse(stored) ?? Date(timeIntervalSince1970: 0),
            storedBy: row["stored_by"])
    }
}

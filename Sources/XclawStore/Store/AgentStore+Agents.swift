import Foundation
import XclawBase
import XclawMessages

// MARK: - Agents

extension AgentStore: AgentDirectory {
    /// Registers a new agent, every setting of `config` with it (a copier needs no follow-up setters), with an empty
    /// conversation and its cursor at 0; refuses a taken or malformed name.
    public func createAgent(_ config: AgentConfig) throws {
        guard AgentConfig.isValidName(config.name) else { throw StoreError.invalidAgentName(config.name) }
        try Self.validate(config)
        let now = Self.now()
        try write { db in
            if try Int.fetchOne(db, sql: "SELECT 1 FROM agents WHERE name = ?", arguments: [config.name]) != nil {
                throw StoreError.agentExists(config.name)
            }
            try db.execute(
                sql: """
                    INSERT INTO agents (name, model, system_prompt, tools, display, memory_notes, created_at,
                        updated_at, dry_run, confirm, setup, kind, approval, effort, thinking, one_shot, dbus_allow)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    config.name, config.model, config.systemPrompt, Self.encodeTools(config.tools),
                    config.display, config.memoryNotes, StoreDate.format(config.createdAt), now, config.dryRun,
                    config.confirm, config.setup, config.kind.rawValue, config.approval, config.effort,
                    config.thinking, config.oneShot, config.dbusAllow,
                ])
            try db.execute(
                sql: "INSERT INTO agent_state (agent, updated_at) VALUES (?, ?)",
                arguments: [config.name, now])
        }
    }

    /// One agent's settings; `unknownAgent` lists the names that exist.
    public func agent(named name: String) throws -> AgentConfig {
        try read { db in
            guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM agents WHERE name = ?", arguments: [name])
            else {
                throw StoreError.unknownAgent(name, known: try knownAgents(db))
            }
            return try agentConfig(row)
        }
    }

    /// Every agent, sorted by name.
    public func agents() throws -> [AgentConfig] {
        try read { db in try SQLRow.fetchAll(db, sql: "SELECT * FROM agents ORDER BY name").map(agentConfig) }
    }

    /// Replaces an agent's settings (all but its name and `createdAt`), found by `config.name`.
    public func updateAgent(_ config: AgentConfig) throws {
        try Self.validate(config)
        try write { db in
            try db.execute(
                sql: """
                    UPDATE agents SET model = ?, system_prompt = ?, tools = ?, display = ?, memory_notes = ?,
                        updated_at = ?, dry_run = ?, confirm = ?, setup = ? WHERE name = ?
                    """,
                arguments: [
                    config.model, config.systemPrompt, Self.encodeTools(config.tools), config.display,
                    config.memoryNotes, Self.now(), config.dryRun, config.confirm, config.setup, config.name,
                ])
            if db.changesCount == 0 { throw StoreError.unknownAgent(config.name, known: try knownAgents(db)) }
        }
    }

    /// Deletes an agent with everything it owns (messages, state, sessions, memory, usage, tasks).
    public func deleteAgent(named name: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM agents WHERE name = ?", arguments: [name])
            if db.changesCount == 0 { throw StoreError.unknownAgent(name, known: try knownAgents(db)) }
            // Its screenshots go with its messages (they may show anything that was on its screen).
            try Self.deleteOrphanImages(db)
        }
    }

    /// Rejects settings no run could use, before they reach the file.
    private static func validate(_ config: AgentConfig) throws {
        if config.model.trimmingCharacters(in: .whitespaces).isEmpty {
            throw StoreError.invalidArgument("agent \"\(config.name)\" needs a model; pass one (see `xclaw models`)")
        }
        if let empty = config.tools.first(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            throw StoreError.invalidArgument("agent \"\(config.name)\" has an empty tool name (\"\(empty)\")")
        }
    }

    /// The tools column: a JSON array of names.
    private static func encodeTools(_ tools: [String]) -> String {
        JSONValue.array(tools.map(JSONValue.string)).jsonText
    }

    /// Builds an `AgentConfig` from an `agents` row.
    private func agentConfig(_ row: SQLRow) throws -> AgentConfig {
        let name: String = row["name"]
        let toolsText: String = row["tools"]
        guard let tools = (try? JSONValue.parse(toolsText))?.array else {
            throw StoreError.corrupt(path: path, detail: "agent \(name) has unreadable tools \(toolsText)")
        }
        var config = AgentConfig(
            name: name, model: row["model"], systemPrompt: row["system_prompt"],
            tools: tools.compactMap(\.string), display: row["display"],
            memoryNotes: row["memory_notes"],
            createdAt: try date(
                row["created_at"] as String,
                "agents.created_at"),
            dryRun: row["dry_run"], confirm: row["confirm"])
        config.approval = row["approval"]
        config.setup = row["setup"]
        config.effort = row["effort"]
        config.thinking = row["thinking"]
        config.contextFrom = row["context_from"] ?? 0
        config.kind = (row["kind"] as String?).flatMap(AgentKind.init(rawValue:)) ?? .agent
        config.oneShot = row["one_shot"] ?? false
        config.dbusAllow = row["dbus_allow"]
        return config
    }

    /// Starts an agent's conversation afresh: its runs send nothing stored before now (`xclaw history` and reports
    /// still show it all). Refused while one of its runs is in flight. Returns how many messages are left out.
    @discardableResult
    public func resetContext(agent name: String) throws -> Int {
        try write { db in
            try requireAgent(db, name)
            if let running = try Int64.fetchOne(
                db,
                sql: """
                    SELECT id FROM sessions WHERE agent = ? AND status IN ('running', 'needs-approval')
                    ORDER BY id LIMIT 1
                    """, arguments: [name])
            {
                throw StoreError.invalidArgument(
                    "agent \(name) has a run in flight (run \(running)): stop it first (`xclaw stop \(running)`) or "
                        + "wait for it to end")
            }
            let last =
                try Int64.fetchOne(db, sql: "SELECT max(id) FROM messages WHERE agent = ?", arguments: [name]) ?? 0
            let previous =
                try Int64.fetchOne(db, sql: "SELECT context_from FROM agents WHERE name = ?", arguments: [name]) ?? 0
            let dropped =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM messages WHERE agent = ? AND id > ?", arguments: [name, previous])
                ?? 0
            try db.execute(
                sql: "UPDATE agents SET context_from = ?, updated_at = ? WHERE name = ?",
                arguments: [last, Self.now(), name])
            return dropped
        }
    }

    /// Sets an agent's thinking setting (nil: the config file's).
    public func setThinking(agent name: String, thinking: String?) throws {
        try setSetting("thinking", of: name, to: thinking)
    }

    /// Sets an agent's effort level (nil: the model's default).
    public func setEffort(agent name: String, effort: String?) throws {
        try setSetting("effort", of: name, to: effort)
    }

    /// Sets one of an agent's optional settings (a column `updateAgent` leaves alone); unknown agents are refused.
    private func setSetting(_ column: String, of name: String, to value: String?) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE agents SET \(column) = ?, updated_at = ? WHERE name = ?",
                arguments: [value, Self.now(), name])
            if db.changesCount == 0 { throw StoreError.unknownAgent(name, known: try knownAgents(db)) }
        }
    }

    /// Sets the kinds of action an agent's runs must have approved (nil: back to the config file's default).
    public func setApproval(agent name: String, policy: String?) throws {
        try setSetting("approval", of: name, to: policy)
    }

    /// Sets the bus names an agent's `dbus_call` may reach (nil: none).
    public func setBusAllow(agent name: String, names: String?) throws {
        try setSetting("dbus_allow", of: name, to: names)
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
            for row in try SQLRow.fetchAll(db, sql: "SELECT key, value FROM memory WHERE agent = ?", arguments: [agent])
            {
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

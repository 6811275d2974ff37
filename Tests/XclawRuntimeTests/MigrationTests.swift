import Foundation
import XCTest
import XclawTesting

@testable import XclawStore

/// A database written by the previous release (schema v4, built here with the sqlite3 shell from the v1–v4
/// migrations) opens under v5 with every row kept: the rebuilt sessions table keeps its ids, so messages and usage
/// still point at their sessions, and the new statuses are accepted. And the one-shot agents of earlier `xclaw run`s
/// are found by their names on both backends.
final class MigrationTests: BackendTestCase {
    func testAVersion4FileKeepsItsSessionsAndTakesTheNewStatuses() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.sqlite").path
        let t = "2026-01-02T03:04:05.000Z"
        let sql = """
            \(Schema.v1)
            ALTER TABLE sessions ADD COLUMN previous_cursor INTEGER;
            ALTER TABLE sessions ADD COLUMN claimed_cursor INTEGER;
            ALTER TABLE agents ADD COLUMN dry_run INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE agents ADD COLUMN confirm INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE tasks ADD COLUMN name TEXT;
            ALTER TABLE tasks ADD COLUMN tz TEXT;
            ALTER TABLE tasks ADD COLUMN catch_up TEXT NOT NULL DEFAULT 'once';
            CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
            INSERT INTO grdb_migrations VALUES ('v1'), ('v2'), ('v3'), ('v4');
            INSERT INTO agents (name, model, created_at, updated_at) VALUES ('alice', 'claude-sonnet-4-5', '\(t)', '\(t)');
            INSERT INTO sessions (id, agent, kind, status, steps, usd, pid, started_at, ended_at, previous_cursor,
                claimed_cursor) VALUES (7, 'alice', 'message', 'completed', 3, 0.25, 1, '\(t)', '\(t)', 0, 1);
            INSERT INTO messages (id, agent, role, sender, content, session_id, created_at, updated_at)
                VALUES (1, 'alice', 'user', 'user', '[{"type":"text","text":"hi"}]', NULL, '\(t)', '\(t)'),
                       (2, 'alice', 'assistant', NULL, '[{"type":"text","text":"hello"}]', 7, '\(t)', '\(t)');
            INSERT INTO usage (agent, session_id, model, input_tokens, output_tokens, usd, created_at)
                VALUES ('alice', 7, 'claude-sonnet-4-5', 10, 5, 0.25, '\(t)');
            """
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [path, sql]
        try shell.run()
        shell.waitUntilExit()
        XCTAssertEqual(shell.terminationStatus, 0)

        let store = try AgentStore(path: path)
        XCTAssertEqual(
            try store.info().migrations,
            [
                "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",
                "v17",
            ])
        // v12: an agent made before kinds existed is a plain agent, and pipelines start empty.
        XCTAssertEqual(try store.agent(named: "alice").kind, .agent)
        XCTAssertEqual(try store.pipelines().count, 0)
        let sessions = try store.sessions(agent: "alice")
        XCTAssertEqual(sessions.map(\.id), [7])
        XCTAssertEqual(sessions.first?.status, .completed)
        XCTAssertEqual(sessions.first?.steps, 3)
        XCTAssertEqual(try store.messages(agent: "alice").map(\.sessionID), [nil, 7])
        // The new statuses are accepted by the rebuilt CHECK, and new ids follow the old ones.
        let next = try store.startSession(agent: "alice", kind: .run)
        XCTAssertGreaterThan(next, 7)
        try store.finishSession(next, status: .stopped, steps: 1, usd: 0)
        XCTAssertEqual(try store.sessions(agent: "alice").last?.status, .stopped)
        // Deleting the agent still cascades through the rebuilt table (its foreign keys are live).
        try store.deleteAgent(named: "alice")
        XCTAssertEqual(try store.sessions(agent: nil).count, 0)
    }

    /// v16 (pg7 on PostgreSQL) marks the agents earlier `xclaw run`s stored as one-shot, by their names
    /// (`run-<time>-<pid>`, a fleet's with `-<hex>`), and no other: a database of the release before, built here
    /// by its own migrations, with their agents in it.
    func testTheOneShotAgentsOfEarlierRunsAreFoundByTheirNames() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let oneShot = ["run-20261127-101010-4242", "run-20261127-101010-4242-0af3"]
        let others = ["run-report", "runner", "run-2026-11-27", "run-20261127-101010-4242-later"]
        let t = "2026-01-02T03:04:05.000Z"
        let rows = (oneShot + others).map { "('\($0)', 'm', '\(t)', '\(t)')" }.joined(separator: ", ")
        let insert = "INSERT INTO agents (name, model, created_at, updated_at) VALUES \(rows)"
        try eachBackend(sqliteFile: directory.appendingPathComponent("old.sqlite").path) {
            if backend == "sqlite" {
                // Every migration, then v16 undone: the file as the release before left it.
                _ = try AgentStore(path: location)
                _ = try shell(
                    """
                    DELETE FROM grdb_migrations WHERE identifier = 'v16'; DROP TABLE action_frames;
                    ALTER TABLE agents DROP COLUMN one_shot; \(insert)
                    """)
            } else {
                let earlier = PostgresSchema.migrations.prefix { $0.id != "pg7" }
                _ = try shell(
                    earlier.map(\.sql).joined(separator: ";\n") + """
                        ;
                        CREATE TABLE xclaw_migrations (id TEXT COLLATE "C" PRIMARY KEY, applied_at TEXT NOT NULL);
                        INSERT INTO xclaw_migrations VALUES \(earlier.map { "('\($0.id)', '\(t)')" }.joined(separator: ", "));
                        \(insert)
                        """)
            }
            let store = try AgentStore.at(location)
            XCTAssertEqual(try store.agents().filter(\.oneShot).map(\.name), oneShot)
            XCTAssertEqual(try store.agents().count, oneShot.count + others.count)
        }
    }
}

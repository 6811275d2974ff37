import Foundation
import XclawBase
import XclawMessages

@_implementationOnly import GRDB

/// The database schema, one migration per released change. Never edit a registered migration: add a new one.
enum Schema {
    /// The migrator every store runs when it opens a file.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: v1) }
        // A run's batch claim: the cursor before and after it, so a failed or interrupted run is undone exactly.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "ALTER TABLE sessions ADD COLUMN previous_cursor INTEGER")
            try db.execute(sql: "ALTER TABLE sessions ADD COLUMN claimed_cursor INTEGER")
        }
        // Input gates stored per agent, as `run --dry-run/--confirm` are per run.
        migrator.registerMigration("v3") { db in
            try db.execute(sql: "ALTER TABLE agents ADD COLUMN dry_run INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: "ALTER TABLE agents ADD COLUMN confirm INTEGER NOT NULL DEFAULT 0")
        }
        // Scheduled tasks by name, in a time zone, with a rule for slots missed while no scheduler ran.
        migrator.registerMigration("v4") { db in
            try db.execute(sql: "ALTER TABLE tasks ADD COLUMN name TEXT")
            try db.execute(sql: "ALTER TABLE tasks ADD COLUMN tz TEXT")
            try db.execute(
                sql:
                    "ALTER TABLE tasks ADD COLUMN catch_up TEXT NOT NULL DEFAULT 'once' CHECK (catch_up IN ('none', 'once'))"
            )
            try db.execute(sql: "CREATE UNIQUE INDEX IF NOT EXISTS tasks_name ON tasks(name) WHERE name IS NOT NULL")
        }
        // Unattended runs: a run can be stopped (emergency stop) or wait for a person's approval; a stop is asked
        // for through the row so any process (another daemon, `xclaw stop`) can ask; each step's timings feed the
        // run report, whose path the session keeps; approvals wait in their own table; agents and tasks can ask
        // for a private display, a setup command and an approval policy. SQLite cannot change a CHECK in place:
        // the sessions table is rebuilt (foreign keys are off during migrations, so the rows referring to it keep
        // their ids).
        migrator.registerMigration("v5") { db in
            try db.execute(sql: v5)
        }
        // Replayable steps: each input action of a run with its anchors, pre- and postcondition (JSON, written by
        // the runtime), in the order they were done.
        migrator.registerMigration("v6") { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS action_steps (
                        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                        seq INTEGER NOT NULL,
                        step TEXT NOT NULL,
                        created_at TEXT NOT NULL,
                        PRIMARY KEY (session_id, seq)
                    )
                    """)
        }
        // A scheduled task can replay a recorded script first and run its agent only when the replay diverges.
        migrator.registerMigration("v7") { db in
            try db.execute(sql: "ALTER TABLE tasks ADD COLUMN replay TEXT")
        }
        // A replay is a run: its session (kind `run`, cost 0 unless a step healed) gets a row here with the script it
        // replayed, the scheduled task that fired it, how many steps replayed, healed or failed, each step's outcome
        // (JSON, written by the runtime) and the screen where it diverged, for its report.
        migrator.registerMigration("v8") { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS replays (
                        session_id INTEGER PRIMARY KEY NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                        script TEXT NOT NULL,
                        revision INTEGER,
                        task TEXT,
                        steps INTEGER NOT NULL DEFAULT 0,
                        replayed INTEGER NOT NULL DEFAULT 0,
                        healed INTEGER NOT NULL DEFAULT 0,
                        failed INTEGER NOT NULL DEFAULT 0,
                        acted INTEGER NOT NULL DEFAULT 0,
                        requests INTEGER NOT NULL DEFAULT 0,
                        diverged_step INTEGER,
                        reason TEXT,
                        log TEXT NOT NULL DEFAULT '[]',
                        screenshot TEXT
                    )
                    """)
        }
        // An agent's effort level (`output_config.effort`).
        migrator.registerMigration("v9") { db in
            try db.execute(sql: "ALTER TABLE agents ADD COLUMN effort TEXT")
        }
        // `agent reset`: the conversation a run sends starts after this message id (history keeps everything).
        migrator.registerMigration("v10") { db in
            try db.execute(sql: "ALTER TABLE agents ADD COLUMN context_from INTEGER NOT NULL DEFAULT 0")
        }
        // Screenshots kept once, by content (`AgentStore+Images`), and an agent's thinking setting. The images of
        // existing messages move out of them here, one message at a time.
        migrator.registerMigration("v11") { db in
            try db.execute(sql: "ALTER TABLE agents ADD COLUMN thinking TEXT")
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS images (
                        sha256 TEXT PRIMARY KEY,
                        media_type TEXT NOT NULL,
                        data BLOB NOT NULL,
                        created_at TEXT NOT NULL
                    )
                    """)
            // One message at a time: a long history's screenshots are never all in memory at once.
            let ids = try Int64.fetchAll(
                db, sql: "SELECT id FROM messages WHERE content LIKE '%\"type\":\"base64\"%' ORDER BY id")
            for id in ids {
                guard
                    let text = try String.fetchOne(
                        db, sql: "SELECT content FROM messages WHERE id = ?", arguments: [id]),
                    let blocks = (try? JSONValue.parse(text))?.array
                else { continue }  // read as corrupt later, as before
                let moved = JSONValue.array(try v11MoveImages(blocks, db)).jsonText
                try db.execute(sql: "UPDATE messages SET content = ? WHERE id = ?", arguments: [moved, id])
            }
        }
        // Multi-agent pipelines: an agent's kind (an orchestrator delegates; a pipeline's
        // own agents are kept out of `xclaw agents`), each pipeline with its task, status, answer and cost, and each
        // delegated subtask as a child record with its parent, role, child agent, status, result, cost and times.
        // The sessions CHECK already has `cancelled`, so no table is rebuilt.
        migrator.registerMigration("v12") { db in
            try db.execute(sql: v12)
        }
        // The host a session runs on: a fleet's database holds several hosts' runs, and a pid means something only
        // on its own host (crash recovery judges only this host's sessions).
        migrator.registerMigration("v13") { db in
            try db.execute(sql: "ALTER TABLE sessions ADD COLUMN host TEXT")
        }
        // The host a pipeline's process runs on, for the same reason.
        migrator.registerMigration("v14") { db in
            try db.execute(sql: "ALTER TABLE pipelines ADD COLUMN host TEXT")
        }
        // Replay scripts kept in the database, by name and revision, so a replay (and the revision a healed replay
        // saves) is the same on every host of a fleet.
        migrator.registerMigration("v15") { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS scripts (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        name TEXT NOT NULL,
                        revision INTEGER NOT NULL,
                        agent TEXT NOT NULL,
                        run INTEGER NOT NULL,
                        steps INTEGER NOT NULL,
                        body TEXT NOT NULL,
                        stored_at TEXT NOT NULL,
                        stored_by TEXT NOT NULL,
                        UNIQUE (name, revision)
                    )
                    """)
        }
        // One-shot agents (`xclaw run`'s `run-<time>-<pid>[-<hex>]`) are marked, so agent lists leave them out unless
        // asked (`agents --all`); the ones already stored are found by that name. And the frame each input action
        // acted on, kept once in `images` by its SHA-256, so a run's report draws every action on the screen it
        // acted on (`sha256` is NULL once retention removed the frame).
        migrator.registerMigration("v16") { db in
            try db.execute(sql: v16)
        }
        // The bus names an agent's generic D-Bus call may reach (NULL: none, so the call stays off).
        migrator.registerMigration("v17") { db in
            try db.execute(sql: "ALTER TABLE agents ADD COLUMN dbus_allow TEXT")
        }
        return migrator
    }

    /// One-shot agents and action frames (see the `v16` registration).
    static let v16 = """
        ALTER TABLE agents ADD COLUMN one_shot INTEGER NOT NULL DEFAULT 0;
        UPDATE agents SET one_shot = 1 WHERE kind = 'agent'
            AND name GLOB 'run-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]-[0-9][0-9][0-9][0-9][0-9][0-9]-[0-9]*'
            AND (substr(name, 21) NOT GLOB '*[^0-9]*'
                OR (substr(name, -5) GLOB '-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]' AND length(name) > 25
                    AND substr(name, 21, length(name) - 25) NOT GLOB '*[^0-9]*'));

        CREATE TABLE IF NOT EXISTS action_frames (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            call_id TEXT NOT NULL,
            sha256 TEXT,
            media_type TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, call_id)
        );
        """

    /// v11's conversion, frozen here (not the store's live code, which may change): each base64 image, at the top
    /// level or in a tool result, becomes a row of `images` and a reference to it.
    private static func v11MoveImages(_ blocks: [JSONValue], _ db: Database) throws -> [JSONValue] {
        try blocks.map { block in
            if block["type"]?.string == "image", block["source"]?["type"]?.string == "base64",
                let data = block["source"]?["data"]?.string, let bytes = Data(base64Encoded: data)
            {
                let media = block["source"]?["media_type"]?.string ?? "image/png"
                let name = SHA256.hex(bytes)
                try db.execute(
                    sql: "INSERT OR IGNORE INTO images (sha256, media_type, data, created_at) VALUES (?, ?, ?, ?)",
                    arguments: [name, media, bytes, StoreDate.format(Date())])
                return [
                    "type": "image",
                    "source": ["type": "xclaw_image", "sha256": .string(name), "media_type": .string(media)],
                ]
            }
            if block["type"]?.string == "tool_result", case .object(var o) = block,
                case .array(let inner)? = o["content"]
            {
                o["content"] = .array(try v11MoveImages(inner, db))
                return .object(o)
            }
            return block
        }
    }

    /// Every table of the first version. Dates are ISO-8601 UTC text with milliseconds (see `StoreDate`).
    /// `IF NOT EXISTS` everywhere so two processes migrating a new file at the same instant cannot fail each other.
    static let v1 = """
        CREATE TABLE IF NOT EXISTS agents (
            name TEXT PRIMARY KEY NOT NULL
                CHECK (length(name) BETWEEN 1 AND 64 AND name NOT GLOB '*[^A-Za-z0-9._-]*'),
            model TEXT NOT NULL,
            system_prompt TEXT NOT NULL DEFAULT '',
            tools TEXT NOT NULL DEFAULT '[]',
            display TEXT,
            memory_notes TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE IF NOT EXISTS sessions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('message', 'task', 'run')),
            status TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
            error TEXT,
            steps INTEGER NOT NULL DEFAULT 0,
            usd REAL NOT NULL DEFAULT 0,
            pid INTEGER NOT NULL,
            process TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT
        );
        CREATE INDEX IF NOT EXISTS sessions_agent_id ON sessions(agent, id);
        CREATE INDEX IF NOT EXISTS sessions_running ON sessions(status) WHERE status = 'running';

        CREATE TABLE IF NOT EXISTS messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            sender TEXT,
            content TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'partial', 'error', 'cancelled')),
            session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS messages_agent_id ON messages(agent, id);
        CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id) WHERE session_id IS NOT NULL;

        CREATE TABLE IF NOT EXISTS agent_state (
            agent TEXT PRIMARY KEY NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            cursor INTEGER NOT NULL DEFAULT 0,
            retry_count INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE IF NOT EXISTS memory (
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (agent, key)
        );

        CREATE TABLE IF NOT EXISTS usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            usd REAL NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS usage_agent ON usage(agent);
        CREATE INDEX IF NOT EXISTS usage_session ON usage(session_id) WHERE session_id IS NOT NULL;

        CREATE TABLE IF NOT EXISTS tasks (
            id TEXT PRIMARY KEY NOT NULL,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            prompt TEXT NOT NULL,
            schedule_type TEXT NOT NULL CHECK (schedule_type IN ('cron', 'interval', 'once')),
            schedule_value TEXT NOT NULL,
            context_mode TEXT NOT NULL DEFAULT 'isolated' CHECK (context_mode IN ('isolated', 'agent')),
            next_run TEXT,
            last_run TEXT,
            last_result TEXT,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'completed')),
            claimed_by TEXT,
            claimed_at TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS tasks_due ON tasks(status, next_run);
        CREATE INDEX IF NOT EXISTS tasks_agent ON tasks(agent);

        CREATE TABLE IF NOT EXISTS task_run_logs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            run_at TEXT NOT NULL,
            duration_ms INTEGER NOT NULL,
            status TEXT NOT NULL,
            result TEXT,
            error TEXT
        );
        CREATE INDEX IF NOT EXISTS task_run_logs_task ON task_run_logs(task_id, run_at);
        """

    /// Multi-agent pipelines (see the `v12` registration).
    static let v12 = """
        ALTER TABLE agents ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent'
            CHECK (kind IN ('agent', 'orchestrator', 'pipeline'));

        CREATE TABLE IF NOT EXISTS pipelines (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            orchestrator TEXT NOT NULL,
            agent TEXT NOT NULL,
            task TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
            result TEXT,
            error TEXT,
            usd REAL NOT NULL DEFAULT 0,
            cancel_requested TEXT,
            pid INTEGER NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT
        );

        CREATE TABLE IF NOT EXISTS subtasks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            pipeline_id INTEGER NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
            parent_id INTEGER REFERENCES subtasks(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            task TEXT NOT NULL,
            agent TEXT NOT NULL,
            display TEXT,
            status TEXT NOT NULL DEFAULT 'waiting'
                CHECK (status IN ('waiting', 'running', 'completed', 'failed', 'cancelled')),
            result TEXT,
            error TEXT,
            steps INTEGER NOT NULL DEFAULT 0,
            usd REAL NOT NULL DEFAULT 0,
            session_id INTEGER,
            created_at TEXT NOT NULL,
            started_at TEXT,
            ended_at TEXT
        );
        CREATE INDEX IF NOT EXISTS subtasks_pipeline ON subtasks(pipeline_id, id);
        CREATE INDEX IF NOT EXISTS subtasks_agent ON subtasks(agent);
        """

    /// Unattended runs (see the `v5` registration).
    static let v5 = """
        CREATE TABLE sessions_v5 (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('message', 'task', 'run')),
            status TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'interrupted', 'stopped',
                    'needs-approval')),
            error TEXT,
            steps INTEGER NOT NULL DEFAULT 0,
            usd REAL NOT NULL DEFAULT 0,
            pid INTEGER NOT NULL,
            process TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            previous_cursor INTEGER,
            claimed_cursor INTEGER,
            stop_requested TEXT,
            report TEXT,
            model TEXT
        );
        INSERT INTO sessions_v5 (id, agent, kind, status, error, steps, usd, pid, process, started_at, ended_at,
            previous_cursor, claimed_cursor)
            SELECT id, agent, kind, status, error, steps, usd, pid, process, started_at, ended_at, previous_cursor,
                claimed_cursor FROM sessions;
        DROP TABLE sessions;
        ALTER TABLE sessions_v5 RENAME TO sessions;
        CREATE INDEX IF NOT EXISTS sessions_agent_id ON sessions(agent, id);
        CREATE INDEX IF NOT EXISTS sessions_running ON sessions(status) WHERE status IN ('running', 'needs-approval');

        ALTER TABLE usage ADD COLUMN step INTEGER;
        ALTER TABLE usage ADD COLUMN model_ms REAL;
        ALTER TABLE usage ADD COLUMN tool_ms REAL;
        ALTER TABLE usage ADD COLUMN stop_reason TEXT;

        CREATE TABLE IF NOT EXISTS approvals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            tool TEXT NOT NULL,
            action TEXT NOT NULL,
            detail TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
            requested_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            decided_at TEXT,
            decided_by TEXT
        );
        CREATE INDEX IF NOT EXISTS approvals_session ON approvals(session_id, id);
        CREATE INDEX IF NOT EXISTS approvals_pending ON approvals(status) WHERE status = 'pending';

        ALTER TABLE agents ADD COLUMN setup TEXT;
        ALTER TABLE agents ADD COLUMN approval TEXT;
        ALTER TABLE tasks ADD COLUMN display TEXT;
        ALTER TABLE tasks ADD COLUMN setup TEXT;
        """
}

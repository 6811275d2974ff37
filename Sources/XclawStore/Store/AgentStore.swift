import Foundation
import XclawBase
import XclawMessages

// Implementation-only: GRDB's SQL operator overloads (`+`, `==`…) must not reach modules that import XclawStore,
// where they make ordinary expressions too slow to type-check. No GRDB type appears in this module's API, and the
// only GRDB-typed stored property (`engine`, whose SQLite case holds a class reference) is internal, so the layout
// warning is harmless here.
@_implementationOnly import GRDB

/// The connections of one backend.
enum StoreEngine: Sendable {
    /// SQLite: one writer and up to five concurrent readers on one file.
    case sqlite(DatabasePool)
    /// PostgreSQL: a pool of libpq connections.
    case postgres(PostgresPool)
}

/// xclaw's persistent state (agents, conversations, cursors, sessions, memory, usage, scheduled tasks) in one
/// database that several xclaw processes share safely. Two backends run the same queries (`SQLConnection`):
/// - SQLite, the embedded default: one file, WAL, `synchronous = NORMAL`, foreign keys on, a 5 s busy timeout, every
///   multi-statement change in one `BEGIN IMMEDIATE` transaction;
/// - PostgreSQL, for a fleet (`init(postgres:)`): reads in REPEATABLE READ snapshots, writes in transactions that take
///   one advisory lock, so they take turns fleet-wide exactly as SQLite's writers do.
/// All methods are synchronous and thread-safe; call them from any non-isolated context. Dates are stored as
/// ISO-8601 UTC text with milliseconds.
public final class AgentStore: Sendable {
    /// The database file this store reads and writes, as given to `init`, or the PostgreSQL URL without its
    /// password: for error messages and `xclaw` output.
    public let path: String
    /// The backend's connections.
    let engine: StoreEngine

    /// How long a write waits for another process's write lock before failing with `StoreError.locked`.
    static let busyTimeout: TimeInterval = 5

    /// Opens the database at `path`, creating it (and missing parent directories, mode 0700; the file 0600) if
    /// needed, and migrates it to the current schema, so callers can use it at once.
    public init(path: String) throws {
        self.path = path
        try Self.prepareFile(path)
        var config = Configuration()
        config.label = "xclaw.store"
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(Self.busyTimeout)
        config.prepareDatabase { db in
            // DatabasePool sets this when it turns WAL on; repeated for connections opened on an existing WAL file.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        }
        let pool = try Self.openPool(path: path, configuration: config)
        engine = .sqlite(pool)
        try migrate(pool)
    }

    /// Connects to a PostgreSQL database and migrates it to the current schema. A server that is down or refuses
    /// the login fails at once (`StoreError.unreachable`); later, a server that restarts is waited for.
    public init(postgres url: PostgresURL) throws {
        path = url.redacted
        let path = self.path
        do {
            engine = .postgres(
                try PostgresPool.shared(url: url) { pool in try pool.withConnection { try PostgresSchema.migrate($0) } }
            )
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Opens the store `location` names: a `postgres://` URL, or an SQLite file's path.
    public static func at(_ location: String) throws -> AgentStore {
        if PostgresURL.isPostgres(location) { return try AgentStore(postgres: PostgresURL(location)) }
        return try AgentStore(path: location)
    }

    /// Where xclaw keeps its database unless told otherwise: `$XCLAW_DB` (a leading `~/` expanded), else
    /// `$XDG_DATA_HOME/xclaw/xclaw.sqlite`, else `~/.local/share/xclaw/xclaw.sqlite` (agents and history are user
    /// data, so the XDG data directory).
    public static func defaultPath(environment: [String: String] = Invocation.current.environment) -> String {
        XclawPaths.database(environment)
    }

    // MARK: - Opening

    /// Creates missing parent directories (0700) and the file itself (0600) so history is private from the start:
    /// SQLite would create the file world-readable under the usual umask, and its -wal/-shm copy the file's mode.
    /// An existing file is never opened here: closing a descriptor drops every POSIX lock this process holds on the
    /// file, so a second store in a process whose first store is open (the daemon's scheduler and the `send` it
    /// runs) would strip the first one's locks, and another process could then checkpoint and delete the WAL under
    /// it (its writes lost, "disk I/O error", "malformed").
    private static func prepareFile(_ path: String) throws {
        guard !path.isEmpty else { throw StoreError.invalidArgument("the database path is empty; set XCLAW_DB") }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty { try makeDirectories(parent, for: path) }
        if access(path, F_OK) == 0 { return }
        // O_EXCL: only a file no descriptor of this process can have open yet is opened and closed.
        let fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o600)
        if fd < 0 && errno == EEXIST { return }  // another process created it just now
        guard fd >= 0 else {
            let reason = Errno.current.description
            throw StoreError.unwritable(path: path, detail: reason)
        }
        close(fd)
    }

    /// `mkdir -p` with mode 0700 for the directories it creates; existing ones are left as they are.
    private static func makeDirectories(_ directory: String, for path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw StoreError.unwritable(path: path, detail: "\(directory) is a file, not a directory")
            }
            return
        }
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != directory { try makeDirectories(parent, for: path) }
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            let reason = Errno.current.description
            throw StoreError.unwritable(path: path, detail: "cannot create \(directory): \(reason)")
        }
    }

    /// Opens the pool, trying again for up to the busy timeout while it fails on a race with another opener.
    private static func openPool(path: String, configuration: Configuration) throws -> DatabasePool {
        let deadline = ContinuousClock.now + .seconds(busyTimeout)
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration)
            } catch let error where isRaceWithAnotherOpener(error, path: path) && ContinuousClock.now < deadline {
                // A short, uneven pause, so openers that failed together do not meet again.
                Thread.sleep(forTimeInterval: .random(in: 0.001...0.01))
            } catch {
                throw storeError(error, path: path)
            }
        }
    }

    /// Whether opening failed on something another store does for a moment only, so a second try succeeds:
    /// - SQLITE_BUSY: the first open of a new file turns WAL on (`PRAGMA journal_mode = WAL`) by upgrading a read
    ///   lock to a write lock; when another opener is making the same switch, SQLite fails the upgrade at once
    ///   (waiting with the read lock held could deadlock) instead of calling the busy handler, so the timeout never
    ///   applies.
    /// - The -wal file gone: GRDB checks that it exists, then reads its size; when another store's last connection
    ///   closes in between, SQLite deletes the file.
    private static func isRaceWithAnotherOpener(_ error: Error, path: String) -> Bool {
        if let error = error as? DatabaseError { return error.resultCode == .SQLITE_BUSY }
        let error = error as NSError
        return error.domain == NSCocoaErrorDomain && error.code == CocoaError.fileReadNoSuchFile.rawValue
            && error.userInfo[NSFilePathErrorKey] as? String == path + "-wal"
    }

    /// Runs the migrations, one opener at a time. GRDB reads which migrations are applied, then applies the others
    /// one transaction each: two openers of a new file (processes, or stores of one process) could both apply the
    /// same one, and the loser failed ("duplicate column name") as often as it lost a race, more than the retries
    /// allowed with four openers. An `flock` on a file beside the database (`<db>.locks/migrate.lock`, where the
    /// agents' locks live; never the database file, whose closing would drop this process's SQLite locks) makes them
    /// take turns; the retries stay for a lock that cannot be had (a read-only folder).
    private func migrate(_ pool: DatabasePool) throws {
        let turn = Self.migrationTurn(path)
        defer {
            if let turn {
                flock(turn, LOCK_UN)
                close(turn)
            }
        }
        let migrator = Schema.migrator
        for attempt in 1... {
            do {
                try migrator.migrate(pool)
                return
            } catch let error as DatabaseError where attempt < 3 && error.resultCode != .SQLITE_NOTADB {
                continue
            } catch {
                throw Self.storeError(error, path: path)
            }
        }
    }

    /// The migration lock's descriptor, held (blocking: migrations take milliseconds); nil when it cannot be made.
    private static func migrationTurn(_ path: String) -> Int32? {
        let directory = path + ".locks"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return nil }
        let fd = open(directory + "/migrate.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            close(fd)
            return nil
        }
        return fd
    }

    // MARK: - Access and errors

    /// A consistent snapshot read; the backend's errors become `StoreError`.
    func read<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        do {
            switch engine {
            case .sqlite(let pool): return try pool.read { try body(GRDBConnection($0)) }
            case .postgres(let pool): return try pool.read(body)
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// One query that needs no snapshot of its own, for the pollers (a run's stop request, several times a second):
    /// SQLite reads it as `read` does; PostgreSQL runs it alone, one round trip instead of three (BEGIN, it, COMMIT).
    func readOne<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        guard case .postgres(let pool) = engine else { return try read(body) }
        do { return try pool.single(body) } catch { throw Self.storeError(error, path: path) }
    }

    /// One write transaction (SQLite's IMMEDIATE; PostgreSQL's under the write lock), so read-then-write sequences
    /// are atomic across processes and hosts.
    func write<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        do {
            switch engine {
            case .sqlite(let pool): return try pool.write { try body(GRDBConnection($0)) }
            case .postgres(let pool): return try pool.write(body)
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// One statement in autocommit mode: the cheapest durable write, for the streaming hot path.
    func writeSingle<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        do {
            switch engine {
            case .sqlite(let pool): return try pool.writeWithoutTransaction { try body(GRDBConnection($0)) }
            case .postgres(let pool): return try pool.single(body)
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Maps the backend's errors to what the user can act on; StoreErrors pass through.
    static func storeError(_ error: Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PostgresError {
            switch error.state {
            case "55P03", "40P01", "40001":
                return .database(path: path, detail: error.message + " (another xclaw held a lock; try again)")
            case "42501", "53100", "25006": return .unwritable(path: path, detail: error.message)
            default: return .database(path: path, detail: error.message)
            }
        }
        guard let error = error as? DatabaseError else { return .database(path: path, detail: "\(error)") }
        let detail = error.message ?? "\(error.resultCode)"
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .locked(path: path)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .corrupt(path: path, detail: detail)
        case .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_IOERR, .SQLITE_PERM, .SQLITE_FULL, .SQLITE_AUTH:
            return .unwritable(path: path, detail: detail)
        default: return .database(path: path, detail: detail)
        }
    }

    /// Throws `unknownAgent` (with the known names) unless `name` exists.
    func requireAgent(_ db: any SQLConnection, _ name: String) throws {
        let found = try Int.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM agents WHERE name = ?"),
            arguments: [name])
        if found == nil { throw StoreError.unknownAgent(name, known: try knownAgents(db)) }
    }

    /// Every agent name, sorted, for "unknown agent" messages.
    func knownAgents(_ db: any SQLConnection) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM agents ORDER BY name")
    }

    /// Reads a stored date; a malformed one means the file was edited or damaged.
    func date(_ text: String, _ column: String) throws -> Date {
        guard let date = StoreDate.parse(text) else {
            throw StoreError.corrupt(path: path, detail: "\(column) holds \"\(text)\", not an ISO-8601 date")
        }
        return date
    }

    /// Reads an optional stored date.
    func dateIfAny(_ text: String?, _ column: String) throws -> Date? {
        guard let text else { return nil }
        return try date(text, column)
    }

    /// Now, as stored.
    static func now() -> String { StoreDate.format(Date()) }
}

// MARK: - Diagnostics

/// How the database is set up, for a `doctor`/status command and to verify the setup in tests.
public struct StoreInfo: Sendable, Hashable, Codable {
    /// The database file, or the PostgreSQL URL without its password.
    public var path: String
    /// `sqlite` or `postgresql`.
    public var backend: String
    /// Its tables, sorted (SQLite's and GRDB's bookkeeping tables left out).
    public var tables: [String]
    /// The applied migrations, oldest first (e.g. `["v1"]`).
    public var migrations: [String]
    /// The journal mode; `wal` lets readers and one writer in several processes work at once (PostgreSQL: `wal`).
    public var journalMode: String
    /// The writer's `synchronous` level by name (`NORMAL` under WAL: no fsync per commit, no corruption on crash).
    public var synchronous: String
    /// Whether foreign keys (and so cascading deletes) are enforced.
    public var foreignKeys: Bool
    /// How long a write waits for another process's lock, in milliseconds (PostgreSQL: 0, it waits its turn).
    public var busyTimeoutMs: Int
}

extension AgentStore {
    /// Reads the schema and the writer connection's settings.
    public func info() throws -> StoreInfo {
        do {
            switch engine {
            case .sqlite(let pool):
                return try pool.writeWithoutTransaction { db in
                    let tables = try String.fetchAll(
                        db,
                        sql: """
                            SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                            AND name NOT LIKE 'grdb_%' ORDER BY name
                            """)
                    let levels = ["OFF", "NORMAL", "FULL", "EXTRA"]
                    let sync = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
                    return StoreInfo(
                        path: path, backend: "sqlite", tables: tables,
                        migrations: try Schema.migrator.appliedMigrations(db),
                        journalMode: try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "",
                        synchronous: levels.indices.contains(sync) ? levels[sync] : String(sync),
                        foreignKeys: try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") ?? false,
                        busyTimeoutMs: try Int.fetchOne(db, sql: "PRAGMA busy_timeout") ?? 0)
                }
            case .postgres(let pool):
                return try pool.withConnection { db in
                    let tables = try String.fetchAll(
                        db,
                        sql: """
                            SELECT table_name::text FROM information_schema.tables
                            WHERE table_schema = current_schema() AND table_name <> 'xclaw_migrations'
                            ORDER BY table_name COLLATE "C"
                            """)
                    return StoreInfo(
                        path: path, backend: "postgresql", tables: tables, migrations: try PostgresSchema.applied(db),
                        journalMode: "wal",
                        synchronous: (try String.fetchOne(db, sql: "SHOW synchronous_commit") ?? "").uppercased(),
                        foreignKeys: true, busyTimeoutMs: 0)
                }
            }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }
}

extension AgentStore: StoreBackend {}

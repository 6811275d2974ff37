import Foundation
import XclawBase

/// A hold on one agent's runs, across every process on the database (and, on PostgreSQL, every host of the fleet):
/// while it lives no other holder gets one. Released when dropped, and by the system when the holder dies (the
/// kernel drops a `flock`; PostgreSQL drops a session's advisory lock with its connection).
public final class AgentHold: Sendable {
    /// Gives the hold up.
    private let release: @Sendable () -> Void

    init(release: @escaping @Sendable () -> Void) { self.release = release }

    deinit { release() }
}

extension AgentStore {
    /// Takes the hold on `agent` if no one has it; nil when another process (or host) does. SQLite: an advisory
    /// `flock` on `<db>.locks/AGENT.lock`. PostgreSQL: a session advisory lock on a connection kept for the hold.
    public func tryHoldAgent(_ agent: String) throws -> AgentHold? {
        switch engine {
        case .sqlite: return try Self.tryFileHold(database: path, agent: agent)
        case .postgres(let pool): return try pool.tryAdvisoryHold(key: agent)
        }
    }

    /// The SQLite backend's hold: a file lock beside the database.
    private static func tryFileHold(database: String, agent: String) throws -> AgentHold? {
        let directory = database + ".locks"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw StoreError.unwritable(path: database, detail: "cannot create \(directory): \(Errno.current)")
        }
        let path = directory + "/" + agent + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError.unwritable(path: database, detail: "cannot open the agent lock \(path): \(Errno.current)")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return AgentHold {
            flock(fd, LOCK_UN)
            close(fd)
        }
    }
}

extension PostgresPool {
    /// The first key of every agent hold's two-key advisory lock (the second is the name's hash), apart from the
    /// write lock's and the migrations' one-key locks.
    static let agentHoldClass: Int32 = 0x7863_6C61

    /// Tries a session advisory lock named by `key` on a pooled connection, kept out of the pool while held (and
    /// given back, unlocked, when the hold ends).
    func tryAdvisoryHold(key: String) throws -> AgentHold? {
        let connection = try checkOut()
        let taken: Bool
        do {
            taken =
                try Bool.fetchOne(
                    connection, sql: "SELECT pg_try_advisory_lock(CAST(? AS INTEGER), hashtext(?))",
                    arguments: [Int64(Self.agentHoldClass), key]) ?? false
        } catch {
            checkIn(connection)
            throw error
        }
        guard taken else {
            checkIn(connection)
            return nil
        }
        let box = HeldConnection(connection)
        return AgentHold { [self] in
            guard let held = box.take() else { return }
            // Unlocked, it can serve others; if that fails the connection is closed, which unlocks it too.
            if (try? held.execute(
                sql: "SELECT pg_advisory_unlock(CAST(? AS INTEGER), hashtext(?))",
                arguments: [Int64(Self.agentHoldClass), key])) != nil
            {
                checkIn(held)
            }
        }
    }
}

/// A connection a hold keeps until it is released (one owner: the hold).
private final class HeldConnection: @unchecked Sendable {
    // Safe because: the hold's release, its only user, runs once (AgentHold's deinit).
    private var connection: PostgresConnection?
    init(_ connection: PostgresConnection) { self.connection = connection }
    /// The connection, once.
    func take() -> PostgresConnection? {
        defer { connection = nil }
        return connection
    }
}

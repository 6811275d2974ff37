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
    /// given back, unlocked, when the hold ends). The server drops such a lock with its connection, so a keeper
    /// looks at the connection once a second and, when it is gone (the server restarted), takes the lock again on
    /// a new one, before another holder can.
    func tryAdvisoryHold(key: String) throws -> AgentHold? {
        let connection = try checkOut()
        let taken: Bool
        do {
            taken = try Self.tryLock(connection, key: key)
        } catch {
            checkIn(connection)
            throw error
        }
        guard taken else {
            checkIn(connection)
            return nil
        }
        let keeper = HoldKeeper(connection)
        Thread { [self] in
            while keeper.keep({ try self.retake(key: key) }) { Thread.sleep(forTimeInterval: 1) }
        }.start()
        return AgentHold { [self] in
            guard let held = keeper.release() else { return }
            // Unlocked, it can serve others; if that fails the connection is closed, which unlocks it too.
            if (try? held.execute(
                sql: "SELECT pg_advisory_unlock(CAST(? AS INTEGER), hashtext(?))",
                arguments: [Int64(Self.agentHoldClass), key])) != nil
            {
                checkIn(held)
            }
        }
    }

    /// Takes the hold's lock on `connection`; false when another session has it.
    private static func tryLock(_ connection: PostgresConnection, key: String) throws -> Bool {
        try Bool.fetchOne(
            connection, sql: "SELECT pg_try_advisory_lock(CAST(? AS INTEGER), hashtext(?))",
            arguments: [Int64(agentHoldClass), key]) ?? false
    }

    /// A new connection holding the lock again, or nil when the server is still away or another session took it.
    private func retake(key: String) throws -> PostgresConnection? {
        let connection = try PostgresConnection(url: url)
        return try Self.tryLock(connection, key: key) ? connection : nil
    }
}

/// The connection a hold keeps until it is released, and its keeper's look at it.
private final class HoldKeeper: @unchecked Sendable {
    // Safe because: every access to `connection` and `released` happens under `lock`.
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var released = false

    init(_ connection: PostgresConnection) { self.connection = connection }

    /// One look, from the keeper's thread: a connection that broke (its lock went with it) is replaced by one that
    /// `retake` returns holding the lock again; false once the hold is released (the keeper stops).
    func keep(_ retake: () throws -> PostgresConnection?) -> Bool {
        let healthy: Bool? = lock.withLock {
            if released { return nil }
            // Reading what the server sent needs no round trip, and finds a connection the server closed.
            if let connection, (try? connection.notifications()) != nil, !connection.isBroken { return true }
            connection = nil
            return false
        }
        guard let healthy else { return false }
        if healthy { return true }
        // Connecting may wait for the server: outside the lock, so a release never waits for it.
        let fresh = (try? retake()) ?? nil
        return lock.withLock {
            // Released meanwhile: the fresh connection is dropped, and its lock with it.
            if released { return false }
            connection = fresh
            return true
        }
    }

    /// The connection (nil when it broke and was not taken again), once; the keeper stops.
    func release() -> PostgresConnection? {
        lock.withLock {
            released = true
            defer { connection = nil }
            return connection
        }
    }
}

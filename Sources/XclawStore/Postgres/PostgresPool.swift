import Foundation
import Synchronization

/// The PostgreSQL backend's connections: opened on demand, reused, dropped when broken, and transactions with the
/// same guarantees the SQLite backend gives. A lost server (a restart) is waited for with backoff, up to
/// `outageTolerance`, when a transaction can be run again without doing anything twice.
final class PostgresPool: Sendable {
    /// Where the server is.
    let url: PostgresURL
    /// How long a transaction waits for a server that went away before it fails.
    let outageTolerance: Duration
    /// Connections not in use.
    private let idle = Mutex<[PostgresConnectionBox]>([])
    /// At most this many idle connections are kept.
    private static let keptIdle = 8

    /// The lock key every write transaction takes (`pg_advisory_xact_lock`): writes of the whole fleet take turns,
    /// as SQLite's writers do, so a read-then-write inside one (claiming a batch, a cursor) stays atomic.
    static let writeLockKey: Int64 = 0x78636C_6177_0001
    /// The lock key migrations take (session-level), so two openers of a new database take turns.
    static let migrationLockKey: Int64 = 0x78636C_6177_0002

    /// Opens one connection at once, so a wrong URL or a server that is down fails here with a clear message.
    init(url: PostgresURL, outageTolerance: Duration = .seconds(60)) throws {
        self.url = url
        self.outageTolerance = outageTolerance
        let first = try PostgresConnection(url: url)
        idle.withLock { $0.append(PostgresConnectionBox(first)) }
    }

    /// The pools of this process by URL, each migrated once: every command a daemon or a worker runs opens the store
    /// anew, and a new server connection costs the server a process (a few milliseconds) and the schema check two
    /// round trips, per command.
    private static let shared = Mutex<[String: PostgresPool]>([:])

    /// This process's pool for `url`, made (connected, and migrated by `migrate`) on first use.
    static func shared(url: PostgresURL, migrate: (PostgresPool) throws -> Void) throws -> PostgresPool {
        if let pool = shared.withLock({ $0[url.text] }) { return pool }
        let pool = try PostgresPool(url: url)
        try migrate(pool)
        return shared.withLock { pools in
            if let existing = pools[url.text] { return existing }  // another thread made one meanwhile
            pools[url.text] = pool
            return pool
        }
    }

    /// Runs `body` on a connection of its own; the connection goes back to the pool unless it broke.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// A consistent snapshot read: REPEATABLE READ, READ ONLY.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction(begin: ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"], writes: false, body)
    }

    /// A write transaction holding the fleet's write lock until it commits.
    func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction(begin: ["BEGIN", "SELECT pg_advisory_xact_lock(\(Self.writeLockKey))"], writes: true, body)
    }

    /// A write transaction without the fleet's write lock, for the queue's own claims: they lock the rows they take
    /// (`FOR UPDATE SKIP LOCKED`), so workers claiming at once do not wait on each other.
    func writeUnlocked<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction(begin: ["BEGIN"], writes: true, body)
    }

    /// One statement in autocommit mode, run again after a lost connection: for statements that do the same when
    /// run twice (the streaming update of a message's content).
    func single<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try retrying { try withConnection(body) }
    }

    /// Runs `body` between `begin` and COMMIT (ROLLBACK when it throws), again after a lost connection. The `begin`
    /// statements go with the body's first statement, in its round trip, and a read-only transaction's COMMIT is
    /// not waited for (its answer is read before the connection's next statement): a one-query read costs one round
    /// trip, not three. When the connection is lost while a write's COMMIT is under way, the transaction asks the
    /// server, once it is back, what became of it (`txid_status` of its transaction id): committed, its result
    /// stands; aborted, it runs again. So a restart of the server neither loses a write nor makes it twice.
    private func transaction<T>(begin: [String], writes: Bool, _ body: (PostgresConnection) throws -> T) throws -> T {
        try retrying {
            var result: T?
            var committing = false
            var transactionID: Int64?
            var backend: Int64?
            do {
                return try withConnection { connection in
                    connection.open(
                        lazily: writes
                            ? begin + ["SELECT txid_current()::text || ':' || pg_backend_pid()::text"] : begin)
                    let value: T
                    do {
                        value = try body(connection)
                    } catch {
                        if connection.opened, !connection.isBroken { try? connection.executeScript("ROLLBACK") }
                        connection.dropOpening()
                        throw error
                    }
                    // A body that ran nothing began nothing.
                    guard connection.opened else {
                        connection.dropOpening()
                        return value
                    }
                    guard writes else {
                        try connection.commitLater()
                        return value
                    }
                    let parts = connection.openingValue?.split(separator: ":").compactMap { Int64($0) } ?? []
                    transactionID = parts.first
                    backend = parts.count == 2 ? parts[1] : nil
                    result = value
                    committing = true
                    try connection.executeScript("COMMIT")
                    return value
                }
            } catch StoreError.unreachable(let url, let detail) where committing {
                guard let transactionID, let result else { throw StoreError.unreachable(url: url, detail: detail) }
                if try committed(transactionID, backend: backend, url: url) { return result }
                throw StoreError.unreachable(url: url, detail: detail)  // it rolled back: run it again
            }
        }
    }

    /// Whether transaction `id` committed, asked once the server answers again (within `outageTolerance`). When it
    /// stays away, the outcome is unknown: that is an error of its own, never a reason to run the transaction again.
    /// While the server says "in progress" (it never got the COMMIT, and the old session idles in its transaction,
    /// holding its locks), that session is ended (`pg_terminate_backend`, allowed on one's own sessions), which aborts
    /// the transaction.
    private func committed(_ id: Int64, backend: Int64?, url: String) throws -> Bool {
        let deadline = ContinuousClock.now + outageTolerance
        while true {
            do {
                let status = try withConnection { try $0.scalar("SELECT txid_status(\(id))") }
                if status == "committed" { return true }
                if status != "in progress" { return false }  // aborted, or nil: never committed
                if let backend {
                    _ = try withConnection { try $0.scalar("SELECT pg_terminate_backend(\(backend))") }
                }
                guard ContinuousClock.now < deadline else {
                    throw StoreError.database(
                        path: url,
                        detail: "a change cut off while it was being committed was still in progress after "
                            + "\(outageTolerance); `xclaw runs` shows what was recorded")
                }
            } catch let error as PostgresError where error.state == "22023" {
                // "transaction ID … is in the future": the server came back from a crash without ever having
                // logged it, so it never committed.
                return false
            } catch StoreError.unreachable(_, let detail) {
                guard ContinuousClock.now < deadline else {
                    throw StoreError.database(
                        path: url,
                        detail: "the server went away while a change was being committed, and did not come back in "
                            + "time to say whether it was (\(detail)); `xclaw runs` shows what was recorded")
                }
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// Runs `attempt` again, with backoff, while the server is unreachable, for up to `outageTolerance`.
    private func retrying<T>(_ attempt: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + outageTolerance
        var pause = Duration.milliseconds(50)
        while true {
            do {
                return try attempt()
            } catch StoreError.unreachable(let url, let detail) {
                // The server went away: the idle connections went with it, and each would cost a round of backoff.
                idle.withLock { $0.removeAll() }
                guard ContinuousClock.now + pause < deadline else {
                    throw StoreError.unreachable(url: url, detail: detail)
                }
                Thread.sleep(forTimeInterval: pause / .seconds(1))
                pause = min(pause * 2, .seconds(2))
            }
        }
    }

    /// Listening connections by channel, each used by one waiter at a time (taken out while it waits, so waiters of
    /// one process, such as a daemon's followers, each keep one of their own).
    private let listeners = Mutex<[String: [PostgresConnectionBox]]>([:])

    /// Waits until a notification arrives on `channel` or `timeout` passes; true when one arrived. A waiter with no
    /// listening connection free starts one and returns true at once, so a caller that checks its work after each
    /// return misses nothing sent before it listened. A lost connection is dropped (the next wait listens anew) and
    /// reads as a wake-up.
    func waitForNotification(channel: String, timeout: Duration) throws -> Bool {
        guard let box = listeners.withLock({ $0[channel]?.popLast() }) else {
            do {
                let connection = try PostgresConnection(url: url)
                try connection.executeScript("LISTEN \(channel)")
                giveBack(PostgresConnectionBox(connection), channel: channel)
            } catch StoreError.unreachable {
                // The server is away (restarting): wait a little, as a poll would; the caller's next query waits
                // for the server with backoff, or fails when it stays away.
                Thread.sleep(forTimeInterval: min(timeout, .milliseconds(500)) / .seconds(1))
                return false
            }
            return true
        }
        let connection = box.connection
        do {
            if try !connection.notifications().isEmpty {
                giveBack(box, channel: channel)
                return true
            }
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(max(0, min(timeout / .milliseconds(1), 3_600_000)))
            let ready = poll(&descriptor, 1, milliseconds)
            let woken = try ready > 0 && !connection.notifications().isEmpty
            giveBack(box, channel: channel)
            return woken
        } catch {
            return true  // the connection went away: dropped, and the caller looks at its work again
        }
    }

    /// Keeps a listening connection for the next waiter (at most `keptIdle` per channel), and starts the drain.
    private func giveBack(_ box: PostgresConnectionBox, channel: String) {
        listeners.withLock { all in
            if all[channel, default: []].count < Self.keptIdle { all[channel, default: []].append(box) }
        }
        if !draining.exchange(true, ordering: .relaxed) {
            Thread { [weak self] in
                while let self {
                    self.drainIdleListeners()
                    Thread.sleep(forTimeInterval: 1)
                }
            }.start()
        }
    }

    /// Whether the drain runs.
    private let draining = Atomic<Bool>(false)

    /// Reads what the server sent to the listening connections nobody waits on. A listener that never reads holds
    /// back the server's notification queue for everyone (PostgreSQL frees it only past the slowest listener, and
    /// NOTIFY fails once it is full). What is read here is dropped: every waiter looks at its work before it waits,
    /// so a notification matters only to a waiter that is waiting.
    private func drainIdleListeners() {
        let idle = listeners.withLock { all -> [(String, PostgresConnectionBox)] in
            let taken = all.flatMap { channel, boxes in boxes.map { (channel, $0) } }
            all.removeAll()
            return taken
        }
        for (channel, box) in idle {
            guard (try? box.connection.notifications()) != nil else { continue }  // broken: dropped
            listeners.withLock { all in
                if all[channel, default: []].count < Self.keptIdle { all[channel, default: []].append(box) }
            }
        }
    }

    /// An idle connection, or a new one.
    func checkOut() throws -> PostgresConnection {
        if let box = idle.withLock({ $0.popLast() }) { return box.connection }
        return try PostgresConnection(url: url)
    }

    /// Returns a connection to the pool, or closes it when it broke or enough are idle.
    func checkIn(_ connection: PostgresConnection) {
        // A connection left inside a transaction (a BEGIN that failed half-way) would fail whatever comes next.
        guard !connection.isBroken, connection.isIdle else { return }
        let box = PostgresConnectionBox(connection)
        idle.withLock { connections in
            if connections.count < Self.keptIdle { connections.append(box) }
        }
    }
}

/// A connection handed between threads through the pool, which gives it to one user at a time.
private struct PostgresConnectionBox: @unchecked Sendable {
    let connection: PostgresConnection
    init(_ connection: PostgresConnection) { self.connection = connection }
}

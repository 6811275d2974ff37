import Foundation
import XCTest
import XclawBase
import XclawStore
import XclawTesting

/// A store in a fresh directory of its own, removed with `remove()`: the runtime tests' SQLite file.
struct TemporaryStore {
    /// The directory.
    let directory: URL
    /// The store, `db.sqlite` in it.
    let store: AgentStore

    /// Creates the directory (named after `prefix`, this process and a random part) and opens the store in it.
    init(_ prefix: String) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("xclaw-\(prefix)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try AgentStore(path: directory.appendingPathComponent("db.sqlite").path)
    }

    /// Deletes the directory and the store in it.
    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// A test case whose store tests run once per backend, with the same assertions: SQLite in a file of the test's
/// directory, then a fresh database of the tests' own PostgreSQL server (`PostgresTestServer`). A failure names the
/// backend it happened on.
class BackendTestCase: XCTestCase {
    /// The backend running now.
    private(set) var backend = "sqlite"
    /// Where it keeps the database: a file path or a PostgreSQL URL (`AgentStore.at` opens either).
    private(set) var location = ""

    /// Runs `body` once per backend, `location` set to a fresh database (`sqliteFile` for SQLite).
    func eachBackend(sqliteFile: String, _ body: () throws -> Void) throws {
        for name in ["sqlite", "postgresql"] {
            backend = name
            location = name == "sqlite" ? sqliteFile : try PostgresTestServer.shared().newDatabase()
            try body()
        }
    }

    /// Runs `sql` on the backend's database with that backend's own shell (sqlite3 or psql), as another program
    /// would, and returns what it printed (columns separated by `|`).
    func shell(_ sql: String) throws -> String {
        if backend == "postgresql" { return try PostgresTestServer.shared().query(sql, url: location) }
        let outcome = try Subprocess.run(
            ["/usr/bin/sqlite3", "-cmd", ".timeout 5000", location, sql], timeout: .seconds(30))
        guard outcome.ending == .exited(0) else {
            throw PostgresTestServer.Failure(
                description: "sqlite3 \(sql) failed: " + String(decoding: outcome.stderr, as: UTF8.self))
        }
        return String(decoding: outcome.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    override func recordFailure(
        withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool
    ) {
        super.recordFailure(
            withDescription: "[\(backend)] " + description, inFile: filePath, atLine: lineNumber, expected: expected)
    }
}

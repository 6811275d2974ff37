import Foundation
import Synchronization
import XCTest
import XclawMessages
import XclawMockAPI
import XclawTesting

/// The CLI on the fleet's store: `XCLAW_DATABASE_URL` or the config file's `database` selects a PostgreSQL database
/// (the tests' own server), every command works on it as on SQLite, two processes' runs of one agent take turns,
/// and the URL's password appears nowhere: not in output, errors, `--json`, nor the database.
final class PostgresCLITests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-pgcli-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// A password for the URL, built from parts so no secret-looking literal sits in the source.
    private let password = "pg" + "-" + "PASSWORD" + "-7Hq"

    /// A fresh database's URL with a password in it (the tests' server trusts its socket, so it is never checked,
    /// only carried: exactly what must not leak).
    private func databaseURL() throws -> String {
        let url = try PostgresTestServer.shared().newDatabase()
        return url.replacingOccurrences(of: "postgresql:///", with: "postgresql://xclaw:\(password)@/")
    }

    /// The environment of a user on a machine with no SQLite file: home, config and data in the test's directory.
    private func environment(_ server: MockMessagesServer?, database: String?) -> [String: String] {
        var e = [
            "HOME": dir.path, "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "XDG_DATA_HOME": dir.appendingPathComponent("data").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "ANTHROPIC_API_KEY": "sk-" + "ant-pg-SECRET",
        ]
        if let server { e["ANTHROPIC_BASE_URL"] = server.baseURL }
        if let database { e["XCLAW_DATABASE_URL"] = database }
        return e
    }

    /// Asserts the password is in none of `results`' output.
    private func assertNoPassword(_ results: [CLIResult], file: StaticString = #filePath, line: UInt = #line) {
        for r in results {
            XCTAssertFalse(r.text.contains(password), r.text, file: file, line: line)
            XCTAssertFalse(r.stderr.contains(password), r.stderr, file: file, line: line)
        }
    }

    func testAgentsRunsAndHistoryLiveInPostgres() throws {
        let url = try databaseURL()
        let server = try MockMessagesServer(replies: [.stream(.turn(blocks: [.text("Hello from the fleet.")]))])
        defer { server.stop() }
        let e = environment(server, database: url)
        let create = try runCLI(
            ["agent", "create", "bob", "--tools", "memory"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(create.status, 0, create.stderr)
        let sent = try runCLI(["send", "bob", "hi"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(sent.status, 0, sent.stderr)
        XCTAssertTrue(sent.text.contains("Hello from the fleet."), sent.text)
        let runs = try runCLI(["runs", "--json"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(runs.status, 0, runs.stderr)
        let list = try XCTUnwrap(try JSONValue.parse(runs.stdout).array, runs.text)
        XCTAssertEqual(list.count, 1)
        XCTAssertEqual(list.first?["agent"]?.string, "bob")
        XCTAssertEqual(list.first?["status"]?.string, "completed")
        let history = try runCLI(["history", "bob", "--json"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(history.status, 0, history.stderr)
        XCTAssertTrue(history.text.contains("Hello from the fleet."), history.text)
        // The rows are in PostgreSQL, and no SQLite file was made beside.
        let count = try PostgresTestServer.shared().query(
            "SELECT count(*) FROM messages WHERE role = 'assistant' AND content LIKE '%Hello from the fleet.%'",
            url: url)
        XCTAssertEqual(count, "1")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.path + "/data/xclaw/xclaw.sqlite"))
        let dump = try PostgresTestServer.shared().query(
            "SELECT string_agg(content, ' ') FROM messages", url: url)
        XCTAssertFalse(dump.contains(password))
        assertNoPassword([create, sent, runs, history])
    }

    func testTheConfigFilesDatabaseSelectsPostgres() throws {
        let url = try databaseURL()
        let config = dir.appendingPathComponent("config/xclaw")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try "database = \"\(url)\"\n".write(
            to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        let e = environment(nil, database: nil)
        let removed = ["XCLAW_DB", "XCLAW_DATABASE_URL"]
        let create = try runCLI(["agent", "create", "carol"], environment: e, removing: removed)
        XCTAssertEqual(create.status, 0, create.stderr)
        XCTAssertEqual(try PostgresTestServer.shared().query("SELECT name FROM agents", url: url), "carol")
        let agents = try runCLI(["agents", "--json"], environment: e, removing: removed)
        XCTAssertEqual(try JSONValue.parse(agents.stdout).array?.first?["name"]?.string, "carol")
        assertNoPassword([create, agents])
    }

    func testAnUnreachableOrMalformedDatabaseIsAClearErrorWithoutThePassword() throws {
        // Port 9 (discard) on loopback: nothing listens there.
        let down = "postgresql://xclaw:\(password)@127.0.0.1:9/fleet"
        let text = try runCLI(["agents"], environment: environment(nil, database: down), removing: ["XCLAW_DB"])
        XCTAssertEqual(text.status, 5, text.stderr)
        XCTAssertTrue(text.stderr.contains("cannot reach the PostgreSQL database"), text.stderr)
        XCTAssertTrue(text.stderr.contains("postgresql://xclaw:***@127.0.0.1:9/fleet"), text.stderr)
        let json = try runCLI(
            ["agents", "--json"], environment: environment(nil, database: down), removing: ["XCLAW_DB"])
        XCTAssertEqual(json.status, 5, json.stderr)
        let error = try JSONValue.parse(json.stdout)
        XCTAssertNotNil(error["error"]?.string ?? error["error"]?["message"]?.string, json.text)
        let malformed = "postgres://xclaw:\(password)@[bad"
        let bad = try runCLI(["agents"], environment: environment(nil, database: malformed), removing: ["XCLAW_DB"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("not a valid URL"), bad.stderr)
        assertNoPassword([text, json, bad])
    }

    /// Two processes send to one agent at once: the fleet-wide hold makes their runs take turns (PostgreSQL's
    /// advisory lock, not a file beside a database), and every message is answered (the first run may take both as
    /// one batch, then the second finds nothing left: that is the queue's rule, not a loss).
    func testTwoProcessesRunsOfOneAgentTakeTurns() throws {
        let url = try databaseURL()
        /// A reply that streams slowly, so the other process's run would overlap it without the hold.
        func slow(_ text: String) -> MockReply {
            var stream = MockStream.turn(blocks: [.text(text)])
            stream.chunking = .perFrame
            stream.interChunkDelay = .milliseconds(60)
            return .stream(stream)
        }
        let server = try MockMessagesServer(replies: [slow("first"), slow("second")])
        defer { server.stop() }
        let e = environment(server, database: url)
        let create = try runCLI(
            ["agent", "create", "dan", "--tools", "memory"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(create.status, 0, create.stderr)
        let results = Mutex<[(status: Int32, stderr: String)]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let r = try? runCLI(["send", "dan", "message \(i)"], environment: e, removing: ["XCLAW_DB"])
            results.withLock { $0.append((r?.status ?? -1, r?.stderr ?? "not run")) }
        }
        for r in results.withLock({ $0 }) { XCTAssertEqual(r.status, 0, r.stderr) }
        let runs = try runCLI(["runs", "--json"], environment: e, removing: ["XCLAW_DB"])
        let sessions = try XCTUnwrap(try JSONValue.parse(runs.stdout).array)
        XCTAssertEqual(sessions.count, server.requests.count, runs.text)
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let spans = sessions.compactMap { s -> (Date, Date)? in
            guard let start = s["started_at"]?.string.flatMap(iso.date(from:)), let ms = s["duration_ms"]?.double
            else { return nil }
            return (start, start.addingTimeInterval(ms / 1000))
        }.sorted { $0.0 < $1.0 }
        XCTAssertEqual(spans.count, sessions.count)
        for (a, b) in zip(spans, spans.dropFirst()) { XCTAssertLessThanOrEqual(a.1, b.0, "runs overlapped: \(spans)") }
        let asked = server.requests.map { String(decoding: $0.body, as: UTF8.self) }.joined()
        XCTAssertTrue(asked.contains("message 0") && asked.contains("message 1"), "a message was never answered")
    }

    /// Bad fleet input is refused before anything starts, with exit 2 and a message that says what to do; an unknown
    /// fleet run is "not found" (1); a fleet command on SQLite says how to get a fleet.
    func testBadFleetInputIsAClearUsageError() throws {
        let url = try databaseURL()
        let e = environment(nil, database: url)
        let cases: [(arguments: [String], environment: [String: String], says: String)] = [
            (["daemon", "run", "--worker", "--slots", "0"], [:], "--slots must be from 1 to 64"),
            (["daemon", "run", "--name", "w1"], [:], "add --worker"),
            (["daemon", "run", "--worker", "--label", "nokey"], [:], "--label takes KEY=VALUE"),
            (["daemon", "run", "--worker", "--display-size", "12"], [:], "--display-size takes WIDTHxHEIGHT"),
            (["daemon", "run", "--worker"], ["XCLAW_FLEET_LOST_AFTER": "0"], "XCLAW_FLEET_LOST_AFTER must be"),
            (["fleet", "runs", "--status", "bogus"], [:], "--status is one of"),
            (["send", "bob", "hi", "--needs-label", "x"], [:], "--needs-label takes KEY=VALUE"),
            (["send", "bob", "hi", "--local", "--no-wait"], [:], "--local runs here"),
        ]
        for (arguments, extra, says) in cases {
            let r = try runCLI(arguments, environment: e.merging(extra) { $1 }, removing: ["XCLAW_DB"])
            XCTAssertEqual(r.status, 2, "\(arguments): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(says), "\(arguments): \(r.stderr)")
        }
        let unknown = try runCLI(["fleet", "cancel", "999", "--json"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(unknown.status, 1, unknown.stderr)
        XCTAssertNotNil(try JSONValue.parse(unknown.stdout)["error"], unknown.text)
        // SQLite: no fleet, and the message says what to set.
        let sqlite = environment(nil, database: nil).merging(["XCLAW_DB": dir.path + "/one.sqlite"]) { $1 }
        let none = try runCLI(["fleet"], environment: sqlite, removing: ["XCLAW_DATABASE_URL"])
        XCTAssertEqual(none.status, 2, none.stderr)
        XCTAssertTrue(none.stderr.contains("XCLAW_DATABASE_URL"), none.stderr)
    }
}

import Foundation
import XCTest
import XclawBase
import XclawStore
import XclawTesting
import XclawTimeTesting

/// The web view's Fleet page, in a real headless Chromium (`web/fleet.py`), on a daemon whose database is the fleet's
/// PostgreSQL: its workers with their state and slots, the lost worker and its lost run, the queue; the database's
/// password nowhere on the page.
final class FleetWebTests: XCTestCase {
    private static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("web")

    func testTheFleetPageShowsWorkersSlotsTheLostAndTheQueue() throws {
        let python = try PythonVenv.testClients()
        let secret = "web" + "-PASSWORD-" + "9Zk"
        let plain = try PostgresTestServer.shared().newDatabase()
        let url = plain.replacingOccurrences(of: "postgresql:///", with: "postgresql://xclaw:\(secret)@/")
        let store = try AgentStore(postgres: PostgresURL(url))
        try store.createAgent(AgentConfig(name: "clerk", model: "claude-sonnet-4-5", tools: []))
        let alive = WorkerInfo(
            name: "alive", host: "host-a", pid: getpid(), version: "test", labels: ["zone": "eu"], slots: 2,
            displays: ["1920x1080"], apps: ["xterm"])
        let gone = WorkerInfo(
            name: "gone", host: "host-b", pid: getpid(), version: "test", labels: [:], slots: 1, displays: [],
            apps: [])
        for w in [alive, gone] { try store.registerWorker(w) }
        let lostRun = try store.enqueueRun(
            FleetRunRequest(kind: .send, agent: "clerk", arguments: ["send", "--", "clerk", "x"], enqueuedBy: "t"))
        XCTAssertEqual(try store.claimRun(for: gone)?.id, lostRun)
        let queued = try store.enqueueRun(
            FleetRunRequest(
                kind: .send, agent: "clerk", arguments: ["send", "--", "clerk", "y"], labels: ["gpu": "yes"],
                enqueuedBy: "t"))
        try PostgresTestServer.shared().sql(
            "UPDATE workers SET heartbeat_at = now() - interval '1 minute' WHERE name = 'gone'", url: url)
        eventually("the gone worker is declared lost") {
            ((try? store.markLostWorkers(timeout: .seconds(2))) ?? []).count == 1
        }

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-fleetweb-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let daemon = try WebViewDaemon(state: dir, environment: ["XCLAW_DATABASE_URL": url])
        defer { daemon.stop() }
        let config: [String: Any] = ["page_url": daemon.pageURL, "secret": secret]
        let outcome = try Subprocess.run(
            [
                python, Self.scripts.appendingPathComponent("fleet.py").path,
                String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self),
            ],
            timeout: .seconds(120))
        guard outcome.ending == .exited(0),
            let result = try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any]
        else { return XCTFail("fleet.py ended \(outcome.ending): " + String(decoding: outcome.stderr, as: UTF8.self)) }
        XCTAssertEqual(result["errors"] as? [String], [], "\(result)")
        XCTAssertEqual(result["page_exceptions"] as? [String], [])
        let workers = result["workers"] as? [[String]] ?? []
        XCTAssertEqual(workers.map { $0[0] }, ["alive", "gone"])
        XCTAssertEqual(workers.map { $0[1] }, ["up", "lost"])
        XCTAssertTrue(workers.first?[2].contains("0 / 2 busy") ?? false, "\(workers)")
        XCTAssertTrue(workers.first?[2].contains("zone=eu") ?? false, "\(workers)")
        XCTAssertEqual(result["lost_workers"] as? [String], ["gone"])
        let lost = result["lost_runs"] as? [[Any]] ?? []
        XCTAssertEqual(lost.first?.first as? Int, Int(lostRun))
        XCTAssertTrue((lost.first?.last as? String)?.contains("gone") ?? false, "\(lost)")
        let runs = result["runs"] as? [[Any]] ?? []
        XCTAssertEqual(runs.map { $0.first as? Int }, [Int(queued), Int(lostRun)], "newest first")
        XCTAssertEqual(runs.map { $0.last as? String }, ["queued", "lost"])
        XCTAssertEqual(result["nav"] as? Bool, true)
        XCTAssertEqual(result["secret_on_page"] as? Bool, false, "the database password is not on the page")
        XCTAssertFalse(daemon.logText.contains(secret), "nor in the daemon's log")
    }
}

import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawTesting
import XclawTimeTesting

/// What the fleet's command-line tests share: a directory, the workers they start (killed at the end), and the
/// environments of a worker and of a client on "another host".
class FleetTestCase: XCTestCase {
    var dir: URL!
    var workers: [FleetWorker] = []

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-fleetcli-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        workers.forEach { $0.kill() }
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// What the workers and the client share: the database and the model; a 3 s heartbeat deadline, so a loss shows
    /// quickly.
    func shared(_ url: String, _ server: MockMessagesServer) -> [String: String] {
        [
            "XCLAW_DATABASE_URL": url, "ANTHROPIC_BASE_URL": server.baseURL,
            "ANTHROPIC_API_KEY": "sk-" + "ant-fleet-SECRET", "XCLAW_FLEET_LOST_AFTER": "3",
        ]
    }

    /// The client's environment: a host of its own, no daemon.
    func client(_ url: String, _ server: MockMessagesServer) -> [String: String] {
        shared(url, server).merging([
            "HOME": dir.path, "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "XDG_DATA_HOME": dir.appendingPathComponent("data").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
        ]) { $1 }
    }

    /// Starts a worker and waits until the fleet lists it up.
    func startWorker(
        _ name: String, _ arguments: [String], _ url: String, _ server: MockMessagesServer,
        environment: [String: String] = [:]
    ) throws -> FleetWorker {
        let worker = try FleetWorker(
            name: name, state: dir.appendingPathComponent("worker-\(name)"), arguments: arguments,
            environment: shared(url, server).merging(environment) { $1 })
        workers.append(worker)
        let e = client(url, server)
        eventually("worker \(name) registers (its log: \(worker.logText))", within: .seconds(30)) {
            (try? fleetWorkers(e))?.contains { $0["name"]?.string == name && $0["state"]?.string == "up" } ?? false
        }
        return worker
    }

    /// Starts `xclaw ARGUMENTS` on the client's host in the background: a command that follows its fleet run.
    func startFollower(_ arguments: [String], _ e: [String: String]) throws -> Subprocess {
        try Subprocess.spawn(
            [productsDirectory.appendingPathComponent("xclaw").path] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(e) { $1 }.filter { $0.key != "XCLAW_DB" })
    }

    /// `xclaw fleet --json`.
    func fleetWorkers(_ e: [String: String]) throws -> [JSONValue] {
        let r = try runCLI(["fleet", "--json"], environment: e, removing: ["XCLAW_DB"])
        return try JSONValue.parse(r.stdout).array ?? []
    }

    /// `xclaw fleet runs --json`.
    func fleetRuns(_ e: [String: String]) throws -> [JSONValue] {
        let r = try runCLI(["fleet", "runs", "--json"], environment: e, removing: ["XCLAW_DB"])
        return try JSONValue.parse(r.stdout).array ?? []
    }

}

/// A fleet on this machine: worker daemons (`xclaw daemon run --worker`, each in a state directory of its own) on
/// the tests' own PostgreSQL server, a loopback model, and a client with no daemon that sends from "another host".
/// `send` is queued, claimed by a worker and followed to its end; `fleet` lists the workers; a run asking for a label
/// no worker has waits and is cancelled; a worker stopped leaves; a worker killed mid-run is lost within its
/// deadline, its run recorded lost (never run again) while the other worker goes on.
final class FleetCLITests: FleetTestCase {
    func testASendIsQueuedClaimedByAWorkerAndFollowedToItsEnd() throws {
        let url = try PostgresTestServer.shared().newDatabase()
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text("Answered by a worker.")])), .stream(.turn(blocks: [.text("Again.")])),
        ])
        defer { server.stop() }
        let e = client(url, server)
        XCTAssertEqual(
            try runCLI(["agent", "create", "bob", "--tools", "memory"], environment: e, removing: ["XCLAW_DB"]).status,
            0)
        _ = try startWorker("w1", ["--label", "zone=eu", "--slots", "2"], url, server)
        _ = try startWorker("w2", [], url, server)
        let listed = try fleetWorkers(e)
        XCTAssertEqual(listed.map { $0["name"]?.string }, ["w1", "w2"])
        XCTAssertEqual(listed.first?["labels"]?["zone"]?.string, "eu")
        XCTAssertEqual(listed.first?["slots"]?.double, 2)
        XCTAssertEqual(listed.first?["free"]?.double, 2)

        let sent = try runCLI(["send", "bob", "hello fleet"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(sent.status, 0, sent.stderr)
        XCTAssertTrue(sent.text.contains("Answered by a worker."), sent.text)
        XCTAssertTrue(sent.stderr.contains("queued as fleet run 1"), sent.stderr)
        var runs = try fleetRuns(e)
        XCTAssertEqual(runs.count, 1)
        XCTAssertEqual(runs.first?["status"]?.string, "completed")
        XCTAssertTrue(["w1", "w2"].contains(runs.first?["worker"]?.string ?? ""), "\(runs)")
        XCTAssertNotNil(runs.first?["session"]?.double, "the run's session is tied to it")
        // `runs` and `history` on the client's host show what the worker did.
        let history = try runCLI(["history", "bob", "--json"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertTrue(history.text.contains("Answered by a worker."), history.text)

        // --no-wait prints the id; the run completes without anyone following it.
        let queued = try runCLI(["send", "bob", "again", "--no-wait"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(queued.status, 0, queued.stderr)
        XCTAssertEqual(queued.text.trimmingCharacters(in: .whitespacesAndNewlines), "2")
        eventually("run 2 completes") {
            (try? fleetRuns(e))?.first { $0["id"]?.double == 2 }?["status"]?.string == "completed"
        }

        // A run no worker can serve waits in the queue, and is cancelled.
        let picky = try runCLI(
            ["send", "bob", "only in the US", "--needs-label", "zone=us", "--no-wait"], environment: e,
            removing: ["XCLAW_DB"])
        XCTAssertEqual(picky.text.trimmingCharacters(in: .whitespacesAndNewlines), "3")
        Thread.sleep(forTimeInterval: 0.5)
        runs = try fleetRuns(e)
        XCTAssertEqual(runs.first { $0["id"]?.double == 3 }?["status"]?.string, "queued")
        let cancel = try runCLI(["fleet", "cancel", "3", "--json"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(cancel.status, 0, cancel.stderr)
        XCTAssertEqual(try JSONValue.parse(cancel.stdout)["status"]?.string, "cancelled")
        XCTAssertEqual(try fleetRuns(e).first { $0["id"]?.double == 3 }?["status"]?.string, "cancelled")
        XCTAssertEqual(server.requests.count, 2, "the cancelled run never reached the model")

        // Every --json output follows its schema (docs/json), the database's description included.
        let outputs = try [
            ("fleet-workers", ["fleet", "--json"]), ("fleet-runs", ["fleet", "runs", "--json"]),
            ("db-info", ["db", "info", "--json"]), ("db-migrate", ["db", "migrate", "--json"]),
        ].map { schema, arguments in
            JSONSchemas.Check(
                name: arguments.joined(separator: " "), schema: schema,
                stdout: try runCLI(arguments, environment: e, removing: ["XCLAW_DB"]).stdout)
        }
        let checks = outputs + [JSONSchemas.Check(name: "fleet cancel", schema: "fleet-cancel", stdout: cancel.stdout)]
        XCTAssertEqual(try JSONSchemas.errors(checks), [])
        let info = try JSONValue.parse(outputs[2].stdout)
        XCTAssertEqual(info["backend"]?.string, "postgresql")
        XCTAssertEqual(
            info["migrations"]?.array?.compactMap(\.string), ["pg1", "pg2", "pg3", "pg4", "pg5", "pg6", "pg7", "pg8"])
        XCTAssertTrue(info["tables"]?.array?.contains(.string("fleet_runs")) ?? false)

        // Readiness: the worker's heartbeat is fresh; a name that is not a worker is not ready.
        let ready = try runCLI(["fleet", "ready", "--name", "w1"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(ready.status, 0, ready.stderr)
        XCTAssertEqual(
            try runCLI(["fleet", "ready", "--name", "nobody"], environment: e, removing: ["XCLAW_DB"]).status, 1)

        // A worker stopped as systemd stops it leaves the fleet.
        workers[1].stop()
        XCTAssertEqual(try fleetWorkers(e).first { $0["name"]?.string == "w2" }?["state"]?.string, "left")
        XCTAssertEqual(
            try runCLI(["fleet", "ready", "--name", "w2"], environment: e, removing: ["XCLAW_DB"]).status, 1)
    }

    func testAWorkerKilledMidRunIsLostItsRunRecordedLostAndTheOtherGoesOn() throws {
        let url = try PostgresTestServer.shared().newDatabase()
        // The first request never ends: the run is in flight when its worker dies. The next one answers.
        let server = try MockMessagesServer(replies: [.hang, .stream(.turn(blocks: [.text("Still here.")]))])
        defer { server.stop() }
        let e = client(url, server)
        for agent in ["clicker", "other"] {
            XCTAssertEqual(
                try runCLI(["agent", "create", agent, "--tools", "memory"], environment: e, removing: ["XCLAW_DB"])
                    .status, 0)
        }
        let victim = try startWorker("victim", ["--label", "doomed=yes"], url, server)
        _ = try startWorker("survivor", [], url, server)
        let follow = try startFollower(["send", "clicker", "click it", "--needs-label", "doomed=yes"], e)
        eventually("the run is in flight on the victim", within: .seconds(30)) {
            server.requests.count == 1
                && (try? fleetRuns(e))?.first?["worker"]?.string == "victim"
        }
        victim.kill()
        eventually("the victim is declared lost", within: .seconds(35)) {
            (try? fleetWorkers(e))?.first { $0["name"]?.string == "victim" }?["state"]?.string == "lost"
        }
        let lost = try XCTUnwrap(try fleetRuns(e).first)
        XCTAssertEqual(lost["status"]?.string, "lost")
        XCTAssertTrue(lost["error"]?.string?.contains("victim") ?? false, "\(lost)")
        let (out, err, _) = follow.read(until: .now + .seconds(30))
        XCTAssertEqual(follow.wait(deadline: .now + .seconds(10)), .exited(5), String(decoding: err, as: UTF8.self))
        XCTAssertTrue(String(decoding: err, as: UTF8.self).contains("was lost"), String(decoding: out, as: UTF8.self))
        // The survivor goes on; the lost run is not run again.
        let next = try runCLI(["send", "other", "are you there"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.text.contains("Still here."), next.text)
        XCTAssertEqual(server.requests.count, 2, "the lost run reached the model once")
        XCTAssertEqual(try fleetRuns(e).first?["status"]?.string, "lost")
    }

    /// PostgreSQL restarts while a worker runs a reply: the worker, its run and the follower wait for it and go on;
    /// the run completes once, recorded once, and nobody is declared lost.
    func testPostgreSQLRestartingMidRunLosesNothingAndDoublesNothing() throws {
        let url = try PostgresTestServer.shared().newDatabase()
        var stream = MockStream.turn(blocks: [.text("Through the restart.")])
        stream.chunking = .perFrame
        stream.interChunkDelay = .milliseconds(400)
        let server = try MockMessagesServer(replies: [.stream(stream)])
        defer { server.stop() }
        let e = client(url, server)
        XCTAssertEqual(
            try runCLI(["agent", "create", "eve", "--tools", "memory"], environment: e, removing: ["XCLAW_DB"]).status,
            0)
        _ = try startWorker("steady", [], url, server)
        _ = try startWorker("other", [], url, server)
        let follow = try startFollower(["send", "eve", "through a restart"], e)
        eventually("the reply is streaming", within: .seconds(30)) { server.requests.count == 1 }
        try PostgresTestServer.shared().restart(downFor: .milliseconds(500))
        let (out, err, _) = follow.read(until: .now + .seconds(90))
        XCTAssertEqual(follow.wait(deadline: .now + .seconds(10)), .exited(0), String(decoding: err, as: UTF8.self))
        XCTAssertTrue(String(decoding: out, as: UTF8.self).contains("Through the restart."))
        let runs = try fleetRuns(e)
        XCTAssertEqual(runs.count, 1)
        XCTAssertEqual(runs.first?["status"]?.string, "completed")
        XCTAssertEqual(runs.first?["attempts"]?.double, 1, "claimed once")
        XCTAssertEqual(server.requests.count, 1, "the model was asked once")
        let replies = try PostgresTestServer.shared().query(
            "SELECT count(*) FROM messages WHERE role = 'assistant' AND content LIKE '%Through the restart.%'", url: url
        )
        XCTAssertEqual(replies, "1", "the reply was recorded once")
        XCTAssertEqual(Set(try fleetWorkers(e).map { $0["state"]?.string }), ["up"], "nobody was declared lost")
    }

    /// `xclaw stop` on the client's host reaches a run on a worker (through the run's stop request in the database,
    /// which the worker's run polls): the run ends as stopped, the fleet run as cancelled, the follower with 130.
    func testStopOnAnyHostReachesARunOnAWorker() throws {
        let url = try PostgresTestServer.shared().newDatabase()
        let server = try MockMessagesServer(replies: [.hang])
        defer { server.stop() }
        let e = client(url, server)
        XCTAssertEqual(
            try runCLI(["agent", "create", "ann", "--tools", "memory"], environment: e, removing: ["XCLAW_DB"]).status,
            0)
        _ = try startWorker("busy", [], url, server)
        let follow = try startFollower(["send", "ann", "wait for me"], e)
        eventually("the run waits for the model on the worker", within: .seconds(30)) {
            server.requests.count == 1 && (try? fleetRuns(e))?.first?["session"]?.double != nil
        }
        let stop = try runCLI(["stop", "--all", "--json"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(stop.status, 0, stop.stderr)
        let (_, err, _) = follow.read(until: .now + .seconds(30))
        XCTAssertEqual(follow.wait(deadline: .now + .seconds(10)), .exited(130), String(decoding: err, as: UTF8.self))
        let run = try XCTUnwrap(try fleetRuns(e).first)
        XCTAssertEqual(run["status"]?.string, "cancelled")
        let runs = try JSONValue.parse(try runCLI(["runs", "--json"], environment: e, removing: ["XCLAW_DB"]).stdout)
        XCTAssertEqual(runs.array?.first?["status"]?.string, "stopped", "the worker's run was stopped")
    }

    /// `xclaw pipeline run` with workers up: queued, its orchestrator and the researcher it delegates to run on a
    /// worker, and the answer comes back to the host that asked, as a pipeline run there prints it.
    func testAPipelineIsQueuedRunOnAWorkerAndItsAnswerComesBack() throws {
        let url = try PostgresTestServer.shared().newDatabase()
        let server = try MockMessagesServer { request, _ in
            let body = String(decoding: request.body, as: UTF8.self)
            if body.contains("You are the orchestrator") {
                return request.toolResults.isEmpty
                    ? .stream(
                        .turn(
                            blocks: [
                                .toolUse(id: "d1", name: "delegate", input: #"{"role":"researcher","task":"find it"}"#)
                            ], stopReason: "tool_use"))
                    : .text("The answer from the fleet: 42.")
            }
            return .text("Fact: 42.")
        }
        defer { server.stop() }
        let e = client(url, server)
        _ = try startWorker("planner", [], url, server)
        let answer = try runCLI(["pipeline", "run", "what is the answer?"], environment: e, removing: ["XCLAW_DB"])
        XCTAssertEqual(answer.status, 0, answer.stderr)
        XCTAssertEqual(answer.text.trimmingCharacters(in: .whitespacesAndNewlines), "The answer from the fleet: 42.")
        XCTAssertTrue(answer.stderr.contains("queued as fleet run"), answer.stderr)
        let run = try XCTUnwrap(try fleetRuns(e).first)
        XCTAssertEqual(run["kind"]?.string, "pipeline")
        XCTAssertEqual(run["status"]?.string, "completed")
        XCTAssertEqual(run["worker"]?.string, "planner")
        let pipelines = try JSONValue.parse(
            try runCLI(["pipeline", "list", "--json"], environment: e, removing: ["XCLAW_DB"]).stdout)
        XCTAssertEqual(pipelines.array?.first?["status"]?.string, "completed", "\(pipelines)")
    }
}

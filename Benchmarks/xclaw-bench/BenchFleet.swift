import ArgumentParser
import Foundation
import Synchronization
import XclawBase
import XclawCommandLine
import XclawMockAPI
import XclawPolling
import XclawScreen
import XclawStore
import XclawTesting

/// `xclaw bench fleet`: a fleet on this machine — worker daemons (each in a state directory of its own, as on other
/// hosts), one PostgreSQL server of the bench's own, the loopback model answering at once — measured against the
/// issue's targets: dispatch latency (enqueue → the worker's first model request), a burst from three clients (each run
/// once, in order per agent, spread over the workers), throughput, a worker killed mid-run, PostgreSQL restarted
/// mid-burst, scheduled slots over several minutes, and one worker on PostgreSQL against the SQLite daemon, side by
/// side in the same run. Run as root with `ip` and `nsenter`, every party is a host of its own: a network namespace
/// the bench makes (`BenchNetwork`), PostgreSQL reached over TCP; else, or with `--no-netns`, all share this one.
struct BenchFleet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Benchmark a fleet: 3 workers on PostgreSQL; latency, a 300-run burst, faults, schedules, and "
            + "one worker against the SQLite daemon.")
    @Option(help: "Workers.") var workers = 3
    @Option(help: "Slots per worker.") var slots = 4
    @Option(help: "Agents.") var agents = 30
    @Option(help: "Runs in the burst, queued by three clients at once.") var runs = 300
    @Option(help: "Runs queued one at a time into an idle fleet, for the dispatch latency.") var latencyRuns = 40
    @Option(help: "Sends of the one-worker against SQLite-daemon comparison.") var compare = 90
    @Option(help: "Seconds the scheduled tasks run (0: skip).") var scheduleSeconds = 300
    @Flag(help: "Skip the worker killed mid-run (it waits for the 30 s heartbeat deadline).") var skipKill = false
    @Flag(help: "One network namespace for all, PostgreSQL on its Unix socket (as without root).") var noNetns = false
    @Flag(help: "Print one JSON object.") var json = false
    /// Set on the bench the namespaced layout runs inside the clients' namespace: the pid of the bench that made them.
    @Option(help: .hidden) var netnsOf: Int32?

    func validate() throws {
        guard (2...200).contains(workers), slots >= 1, agents >= 1, runs >= 3, latencyRuns >= 1, compare >= 3,
            scheduleSeconds >= 0
        else {
            throw ValidationError(
                "--workers must be from 2 to 200, --runs and --compare at least 3, the rest at least 1")
        }
    }

    func run() throws {
        if let owner = netnsOf {
            let network = BenchNetwork(owner: owner, workers: workers)
            network.leaveWithOwner()
            return try measure(on: FleetHosts(network: network, reason: ""))
        }
        if noNetns { return try measure(on: FleetHosts(network: nil, reason: "--no-netns")) }
        if let why = BenchNetwork.unavailable() { return try measure(on: FleetHosts(network: nil, reason: why)) }
        for pid in BenchNetwork.removeLeftovers() {
            printError("xclaw bench fleet: removed the namespaces of an earlier run that ended (pid \(pid))")
        }
        // The measuring runs again inside the clients' namespace (this process's threads cannot all move), and this
        // one removes the namespaces however it ends.
        let network = BenchNetwork(owner: getpid(), workers: workers)
        let ending: Subprocess.Termination
        do {
            ending = try network.host(["fleet"] + passedOn + ["--netns-of", String(getpid())])
        } catch let error as BenchNetworkError {
            return try measure(on: FleetHosts(network: nil, reason: "making them failed: \(error)"))
        }
        switch ending {
        case .exited(0): return
        case .exited(let status): throw ExitCode(status)
        case .signalled(let signal): throw ExitCode(128 + signal)
        case .timedOut, .unknown: throw ExitCode(ExitStatus.internal.rawValue)
        }
    }

    /// The options again, for the bench run inside the namespaces.
    private var passedOn: [String] {
        [
            "--workers", "\(workers)", "--slots", "\(slots)", "--agents", "\(agents)", "--runs", "\(runs)",
            "--latency-runs", "\(latencyRuns)", "--compare", "\(compare)", "--schedule-seconds", "\(scheduleSeconds)",
        ] + (skipKill ? ["--skip-kill"] : []) + (json ? ["--json"] : [])
    }

    /// The whole measure, with the parties where `hosts` puts them.
    private func measure(on hosts: FleetHosts) throws {
        let postgres = try hosts.database()
        // The bench leaves with _exit, like every xclaw binary: atexit would never stop the server.
        defer { postgres.stop() }
        let model = try hosts.model()
        defer { model.server.stop() }
        let dir = hosts.directory
        defer { try? FileManager.default.removeItem(at: dir) }
        var report = BenchReport(benchmark: "fleet", display: "no display", screen: Size(width: 0, height: 0))
        report.notes.append(hosts.note)
        let names = (0..<agents).map { "agent\($0)" }

        // The fleet: N workers on one database; worker 0 is the one killed later (its label draws that run).
        let url = try postgres.newDatabase()
        let store = try AgentStore(postgres: PostgresURL(url))
        for n in names { try store.createAgent(AgentConfig(name: n, model: "claude-sonnet-4-5", tools: [])) }
        let environment = [
            "XCLAW_DATABASE_URL": url, "ANTHROPIC_BASE_URL": model.server.baseURL,
            "ANTHROPIC_API_KEY": "sk-" + "ant-bench-fleet",
        ]
        let fleet = try (0..<workers).map { i in
            try FleetWorker(
                name: "worker\(i)", state: dir.appendingPathComponent("w\(i)"),
                arguments: ["--slots", String(slots)] + (i == 0 ? ["--label", "victim=yes"] : []),
                environment: environment, launcher: hosts.launcher("w\(i)"))
        }
        defer { fleet.forEach { $0.kill() } }
        try waitUntil("\(workers) workers up", seconds: 60) {
            try store.workers().filter { $0.state == .up }.count == workers
        }

        // Dispatch latency: one run at a time into an idle fleet.
        var latencies: [Duration] = []
        for i in 0..<latencyRuns {
            let token = "tok-l-\(i)"
            let queued = Date()
            let id = try store.enqueueRun(Self.send(names[i % names.count], token))
            try waitUntil("run \(id) ends", seconds: 60) { try store.fleetRun(id).status.isFinal }
            guard let seen = model.firstSeen(token) else { throw ValidationError("run \(id) never reached the model") }
            latencies.append(.milliseconds(Int((seen.timeIntervalSince(queued) * 1000).rounded())))
        }
        report.rows.append(
            BenchRow(
                "PostgreSQL fleet, \(workers) workers × \(slots) slots, LISTEN/NOTIFY",
                "enqueue → the worker's first model request (idle fleet)", latencies.map { Sample(elapsed: $0) }))

        // The burst: three clients queue `runs` runs at once over all agents.
        let clients = try (0..<3).map { _ in try AgentStore(postgres: PostgresURL(url)) }
        let perClient = runs / 3
        let queuedAt = Mutex<[String: Date]>([:])
        let burstStart = Date()
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { c in
            for i in 0..<perClient {
                let token = "tok-b\(c)-\(i)"
                queuedAt.withLock { $0[token] = Date() }
                do { _ = try clients[c].enqueueRun(Self.send(names[(c * perClient + i) % names.count], token)) } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        let burstTokens = queuedAt.withLock { Set($0.keys) }
        try waitUntil("the burst ends", seconds: 600) {
            try store.fleetRuns(status: nil, limit: 100_000).filter { !$0.status.isFinal }.isEmpty
        }
        let burstSeconds = Date().timeIntervalSince(burstStart)
        let all = try store.fleetRuns(status: nil, limit: 100_000).filter {
            burstTokens.contains($0.request.arguments.last ?? "")
        }
        let completed = all.filter { $0.status == .completed }.count
        let claimedTwice = all.filter { $0.attempts != 1 }.count
        let asked = burstTokens.map { model.count($0) }
        let doubled = asked.filter { $0 > 1 }.count, never = asked.filter { $0 == 0 }.count
        var outOfOrder = 0
        for agent in Set(all.map(\.request.agent)) {
            let order = all.filter { $0.request.agent == agent }.sorted {
                ($0.claimedAt ?? .distantPast) < ($1.claimedAt ?? .distantPast)
            }
            if order.map(\.id) != order.map(\.id).sorted() { outOfOrder += 1 }
        }
        let spread = Dictionary(grouping: all, by: { $0.worker ?? "-" }).mapValues(\.count).sorted { $0.key < $1.key }
        report.notes.append(
            String(
                format: "burst: %d runs queued by 3 clients at once over %d agents: %d completed, %d claimed more "
                    + "than once, %d asked the model twice, %d never, %d agents out of order, %.1f s = %.0f runs/s; "
                    + "spread %@; enqueue errors %d", all.count, agents, completed, claimedTwice, doubled, never,
                outOfOrder, burstSeconds, Double(all.count) / burstSeconds,
                spread.map { "\($0.key) \($0.value)" }.joined(separator: ", "), failures.withLock { $0.count }))

        // PostgreSQL restarted in the middle of a burst: every run ends once, none lost, none doubled.
        let restartTokens = (0..<60).map { "tok-r-\($0)" }
        for (i, token) in restartTokens.enumerated() {
            _ = try store.enqueueRun(Self.send(names[i % names.count], token))
        }
        try waitUntil("a third of them ran", seconds: 120) { restartTokens.filter { model.count($0) > 0 }.count >= 20 }
        try postgres.restart(downFor: .seconds(1))
        try waitUntil("the rest ran", seconds: 300) {
            try store.fleetRuns(status: nil, limit: 100_000).filter { !$0.status.isFinal }.isEmpty
        }
        let afterRestart = try store.fleetRuns(status: nil, limit: 100_000).filter {
            restartTokens.contains($0.request.arguments.last ?? "")
        }
        let restartCompleted = afterRestart.filter { $0.status == .completed }.count
        let restartLost = afterRestart.filter { $0.status == .lost }.count
        let restartDoubled = restartTokens.filter { model.count($0) > 1 }.count
        let workersLost = try store.workers().filter { $0.state == .lost }.count
        let otherwise = afterRestart.filter { $0.status != .completed }.map {
            "run \($0.id) \($0.status.rawValue): \($0.error ?? "")"
        }
        report.notes.append(
            "PostgreSQL restarted (down 1 s) mid-burst of \(restartTokens.count) runs: \(restartCompleted) completed, "
                + "\(restartLost) lost, \(restartDoubled) doubled, workers lost \(workersLost)"
                + (otherwise.isEmpty ? "" : "; " + otherwise.joined(separator: "; ")))

        // A worker killed (SIGKILL) in the middle of a run: that run is recorded lost, the others go on.
        if !skipKill {
            let doomed = try store.enqueueRun(
                FleetRunRequest(
                    kind: .send, agent: names[0],
                    arguments: ["send", "--sender", "bench", "--", names[0], "HANG tok-k"],
                    labels: ["victim": "yes"], enqueuedBy: "bench"))
            try waitUntil("the doomed run reaches the model", seconds: 60) { model.count("tok-k") == 1 }
            let killed = Date()
            fleet[0].kill()
            let others = (1..<13).map { "tok-k-\($0)" }
            for (i, token) in others.enumerated() {
                _ = try store.enqueueRun(Self.send(names[1 + i % (names.count - 1)], token))
            }
            try waitUntil("the doomed run is lost", seconds: 120) { try store.fleetRun(doomed).status == .lost }
            let lostAfter = Date().timeIntervalSince(killed)
            try waitUntil("the others end", seconds: 120) {
                try store.fleetRuns(status: nil, limit: 100_000).filter { !$0.status.isFinal }.isEmpty
            }
            let rest = try store.fleetRuns(status: nil, limit: 100_000).filter {
                others.contains($0.request.arguments.last ?? "")
            }
            report.notes.append(
                String(
                    format: "kill -9 of worker0 mid-run: its run recorded lost after %.1f s (deadline 30 s); the "
                        + "other %d runs: %d completed, %d doubled; the lost run asked the model %d time(s)",
                    lostAfter, others.count, rest.filter { $0.status == .completed }.count,
                    others.filter { model.count($0) > 1 }.count, model.count("tok-k")))
        }

        // `xclaw stop` from another host: the stop request, through the database, to a run waiting on the model on a
        // worker, until that run has ended and its worker recorded it.
        var stops: [Duration] = []
        for i in 0..<5 {
            let token = "tok-s-\(i)"
            let id = try store.enqueueRun(
                FleetRunRequest(
                    kind: .send, agent: names[2 + i],
                    arguments: ["send", "--sender", "bench", "--", names[2 + i], "HANG \(token)"],
                    enqueuedBy: "bench"))
            try waitUntil("run \(id) waits on the model", seconds: 60) {
                try model.count(token) == 1 && store.fleetRun(id).sessionID != nil
            }
            guard let session = try store.fleetRun(id).sessionID else { continue }
            let asked = ContinuousClock.now
            try store.requestStop(session: session, agent: nil, by: "bench")
            try waitUntil("run \(id) stops", seconds: 30) { try store.fleetRun(id).status.isFinal }
            stops.append(ContinuousClock.now - asked)
        }
        report.rows.append(
            BenchRow(
                "PostgreSQL fleet, \(workers) workers × \(slots) slots, LISTEN/NOTIFY",
                "stop asked on another host → the worker's run ended and recorded", stops.map { Sample(elapsed: $0) }))

        // An approval given on another host: a click the agent's policy gates waits on a worker until the store
        // records the decision, then happens (the fixture's window reports the press).
        try measureApprovals(store: store, model: model, into: &report)

        // Scheduled slots over the remaining workers: each slot fires once fleet-wide.
        if scheduleSeconds > 0 {
            try measureSchedules(store: store, names: names, into: &report)
        }

        // One worker on PostgreSQL against the SQLite daemon: the same `xclaw send` from three clients at once.
        try compareSingle(hosts: hosts, dir: dir, postgres: postgres, model: model, names: names, into: &report)
        try emitBench(report, json: json) { report.table }
    }

    /// A `send` run for the fleet, as `xclaw send` queues it, with `token` as its message.
    static func send(_ agent: String, _ token: String) -> FleetRunRequest {
        FleetRunRequest(
            kind: .send, agent: agent, arguments: ["send", "--sender", "bench", "--", agent, token], enqueuedBy: "bench"
        )
    }

    /// Five gated clicks on a private display, each approved through the store as `xclaw approve` on another host
    /// does: from the decision to the press the fixture's window reports.
    private func measureApprovals(store: AgentStore, model: TokenModel, into report: inout BenchReport) throws {
        let display = try TestDisplay(size: Size(width: 1280, height: 800))
        defer { display.stop() }
        let button = Rect(x: 400, y: 300, width: 160, height: 40)
        let fixture = try Fixture(
            display: display.name, title: "files", frame: Rect(x: 100, y: 100, width: 800, height: 500),
            extra: ["--button", "300,200,160,40:Delete"])
        defer { fixture.stop() }
        var config = AgentConfig(name: "gated", model: "claude-sonnet-4-5", tools: ["computer"])
        (config.display, config.approval) = (display.name, "all")
        try store.createAgent(config)
        // The model (1280x800 is sent unscaled) clicks the button's middle.
        model.clickOn = button.center
        defer { model.clickOn = nil }
        var waits: [Duration] = []
        for i in 0..<5 {
            fixture.clear()
            let id = try store.enqueueRun(Self.send("gated", "CLICK tok-a-\(i)"))
            var session: Int64?
            try waitUntil("run \(id) waits for approval", seconds: 60) {
                session = try store.fleetRun(id).sessionID
                return try session.map { try store.session($0).status == .needsApproval } ?? false
            }
            guard let session else { continue }
            let asked = ContinuousClock.now
            _ = try store.decideApproval(session: session, approve: true, by: "bench")
            guard !fixture.wait(for: .buttonPress, timeout: 30).isEmpty else {
                throw ValidationError("the approved click of run \(id) never reached the window")
            }
            waits.append(ContinuousClock.now - asked)
            try waitUntil("run \(id) ends", seconds: 60) { try store.fleetRun(id).status.isFinal }
        }
        report.rows.append(
            BenchRow(
                "PostgreSQL fleet, \(workers) workers × \(slots) slots, LISTEN/NOTIFY",
                "approval given on another host → the gated click on a worker", waits.map { Sample(elapsed: $0) }))
    }

    /// 20 tasks (a third one-shot, the rest every 60 s on a grid from their creation) fire on the workers for
    /// `scheduleSeconds`, then are paused half-way between grid points; every slot due by then must have fired once.
    private func measureSchedules(store: AgentStore, names: [String], into report: inout BenchReport) throws {
        let start = Date()
        var expected: [String: Int] = [:]
        let end = start.addingTimeInterval(Double(scheduleSeconds) + 30)
        for i in 0..<20 {
            let once = i % 3 == 0
            let first = start.addingTimeInterval(Double(5 + i % 10))
            let task = try store.createTask(
                agent: names[i % names.count], prompt: "scheduled \(i)", scheduleType: once ? .once : .interval,
                scheduleValue: once ? StoreDate.format(first) : "60000", contextMode: .isolated, nextRun: first,
                name: "slot\(i)", createdAt: start)
            // The first slot, then the grid points start + 60 s × k up to the pause.
            expected[task.id] = once ? 1 : 1 + Int(end.timeIntervalSince(start) / 60)
        }
        Thread.sleep(forTimeInterval: end.timeIntervalSinceNow)
        for id in expected.keys { try store.setTaskStatus(id, .paused, nextRun: nil) }
        Thread.sleep(forTimeInterval: 20)  // the last fires end and log
        var wrong: [String] = []
        var total = 0
        for (id, fires) in expected {
            let logs = try store.taskRunLogs(taskID: id)
            total += logs.count
            if logs.count != fires { wrong.append("\(id.prefix(8)): \(logs.count) of \(fires)") }
        }
        report.notes.append(
            "scheduled: 20 tasks (7 one-shot, 13 every 60 s) over the workers for \(Int(end.timeIntervalSince(start))) s: "
                + "\(total) slots fired, \(expected.values.reduce(0, +)) due; wrong: "
                + (wrong.isEmpty ? "none" : wrong.sorted().joined(separator: "; ")))
    }

    /// `compare` sends by three concurrent clients, through one PostgreSQL worker and through the SQLite daemon.
    private func compareSingle(
        hosts: FleetHosts, dir: URL, postgres: PostgresTestServer, model: TokenModel, names: [String],
        into report: inout BenchReport
    ) throws {
        let xclaw = productsDirectory.appendingPathComponent("xclaw").path
        let base = ProcessInfo.processInfo.environment.filter { $0.key != "XCLAW_DB" && $0.key != "XCLAW_DATABASE_URL" }
            .merging(["ANTHROPIC_BASE_URL": model.server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-bench-fleet"]) {
                $1
            }
        /// Three clients, each sending its share one after another; the per-send times and the wall time.
        func sends(_ environment: [String: String], tag: String) throws -> (samples: [Sample], seconds: Double) {
            let times = Mutex<[Duration]>([])
            let errors = Mutex<[String]>([])
            let start = ContinuousClock.now
            DispatchQueue.concurrentPerform(iterations: 3) { c in
                for i in 0..<(compare / 3) {
                    let agent = names[(c * 7 + i) % names.count]
                    let began = ContinuousClock.now
                    do {
                        let outcome = try Subprocess.run(
                            [xclaw, "send", agent, "tok-\(tag)\(c)-\(i)"], timeout: .seconds(120),
                            environment: environment)
                        if outcome.ending != .exited(0) {
                            errors.withLock { $0.append(String(decoding: outcome.stderr.suffix(300), as: UTF8.self)) }
                        }
                    } catch { errors.withLock { $0.append("\(error)") } }
                    times.withLock { $0.append(ContinuousClock.now - began) }
                }
            }
            let seconds = (ContinuousClock.now - start) / .seconds(1)
            if let first = errors.withLock({ $0.first }) { throw ValidationError("a send failed: \(first)") }
            return (times.withLock { $0 }.map { Sample(elapsed: $0) }, seconds)
        }

        // SQLite: one daemon serving `send` through the front, on one file.
        let sqliteState = dir.appendingPathComponent("sqlite")
        let sqliteEnv = base.merging([
            "XCLAW_STATE_DIR": sqliteState.path, "XCLAW_DB": sqliteState.appendingPathComponent("db.sqlite").path,
            "XDG_DATA_HOME": sqliteState.appendingPathComponent("data").path, "HOME": sqliteState.path,
            "XDG_CONFIG_HOME": sqliteState.appendingPathComponent("config").path,
        ]) { $1 }
        try FileManager.default.createDirectory(at: sqliteState, withIntermediateDirectories: true)
        let sqliteStore = try AgentStore(path: sqliteState.appendingPathComponent("db.sqlite").path)
        for n in names { try sqliteStore.createAgent(AgentConfig(name: n, model: "claude-sonnet-4-5", tools: [])) }
        /// A plain daemon (not a worker) in `environment`'s state directory, answering.
        func startDaemon(_ environment: [String: String], _ what: String) throws -> Subprocess {
            let daemon = try Subprocess.spawn(
                [
                    productsDirectory.appendingPathComponent("xclaw-core").path, "daemon", "run", "--parent",
                    String(getpid()),
                ],
                stdout: .null, stderr: .null, environment: environment)
            try waitUntil("\(what) answers", seconds: 30) {
                try Subprocess.run([xclaw, "daemon", "status"], timeout: .seconds(10), environment: environment)
                    .ending == .exited(0)
            }
            return daemon
        }
        let daemon = try startDaemon(sqliteEnv, "the SQLite daemon")
        defer { _ = daemon.kill() }
        let sqlite = try sends(sqliteEnv, tag: "s")

        // PostgreSQL: one worker; the clients on a host of their own, with its daemon: `send` is queued and followed.
        let url = try postgres.newDatabase()
        let pgStore = try AgentStore(postgres: PostgresURL(url))
        for n in names { try pgStore.createAgent(AgentConfig(name: n, model: "claude-sonnet-4-5", tools: [])) }
        let worker = try FleetWorker(
            name: "single", state: dir.appendingPathComponent("single"), arguments: ["--slots", "3"],
            environment: [
                "XCLAW_DATABASE_URL": url, "ANTHROPIC_BASE_URL": model.server.baseURL,
                "ANTHROPIC_API_KEY": "sk-" + "ant-bench-fleet",
            ], launcher: hosts.launcher("single"))
        defer { worker.kill() }
        try waitUntil("the single worker is up", seconds: 60) { try pgStore.workers().first?.state == .up }
        let clientState = dir.appendingPathComponent("client")
        let pgEnv = base.merging([
            "XCLAW_DATABASE_URL": url, "XCLAW_STATE_DIR": clientState.path, "HOME": clientState.path,
            "XDG_DATA_HOME": clientState.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": clientState.appendingPathComponent("config").path,
        ]) { $1 }
        let clientDaemon = try startDaemon(pgEnv, "the client's daemon")
        defer { _ = clientDaemon.kill() }
        let pg = try sends(pgEnv, tag: "p")

        report.rows.append(BenchRow("SQLite daemon (one host)", "`xclaw send`, 3 clients at once", sqlite.samples))
        report.rows.append(
            BenchRow(
                "PostgreSQL, one worker × 3 slots",
                "`xclaw send`, 3 clients at once (queued; followed by the client's daemon)", pg.samples))
        report.notes.append(
            String(
                format: "one worker against the SQLite daemon, %d sends each: %.1f against %.1f sends/s (%.2fx)",
                compare, Double(compare) / pg.seconds, Double(compare) / sqlite.seconds, sqlite.seconds / pg.seconds))
    }

    /// Polls `condition` every 20 ms for up to `seconds`; throws naming `what` when it never holds.
    private func waitUntil(_ what: String, seconds: Int, _ condition: () throws -> Bool) throws {
        guard try poll(within: .seconds(seconds), condition) else {
            throw ValidationError("\(what): not within \(seconds) s")
        }
    }
}

/// The loopback model for the fleet bench: answers every request at once with "ok" (and never answers a message
/// holding "HANG"), and notes when each message token (`tok-…`) first reached it and how often.
final class TokenModel: Sendable {
    /// The server.
    let server: MockMessagesServer
    /// First arrival and count per token.
    private let table: TokenTable

    /// Where a message holding "CLICK" has the model click (nil: it answers "ok" like any other).
    var clickOn: Point? {
        get { click.point.withLock { $0 } }
        set { click.point.withLock { $0 = newValue } }
    }
    private let click: ClickTarget

    /// The point, shared with the server's handler.
    private final class ClickTarget: Sendable {
        let point = Mutex<Point?>(nil)
    }

    /// A model listening on `host` (an address of this thread's network namespace).
    init(host: String = "127.0.0.1") throws {
        let seen = TokenTable()
        table = seen
        let click = ClickTarget()
        self.click = click
        server = try MockMessagesServer(host: host) { request, _ in
            let last =
                request.messages.last.flatMap { try? JSONSerialization.data(withJSONObject: $0) }
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
            let tokens = Set(last.matches(of: /tok-[a-z0-9-]+/).map { String($0.output) })
            seen.note(tokens, at: request.receivedAt)
            // Only the newest text hangs: a stopped run's message stays in its agent's conversation, and the next
            // message to that agent is sent in the same user turn after it.
            let content = (request.messages.last?["content"] as? [Any])?.last ?? request.messages.last?["content"]
            let newest =
                content.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: .fragmentsAllowed) }
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
            // (A tool result's screenshot is base64 text, which may spell anything.)
            if request.toolResults.isEmpty, newest.contains("HANG") { return .hang }
            if newest.contains("CLICK"), request.toolResults.isEmpty, let point = click.point.withLock({ $0 }) {
                return .leftClick(x: point.x, y: point.y)
            }
            return .stream(.turn(blocks: [.text("ok")]))
        }
    }

    /// When `token` first reached the model.
    func firstSeen(_ token: String) -> Date? { table.entries.withLock { $0[token]?.first } }

    /// How many requests carried `token` as new input.
    func count(_ token: String) -> Int { table.entries.withLock { $0[token]?.count ?? 0 } }
}

/// When each token first reached the model, and how often.
final class TokenTable: Sendable {
    /// Token → first arrival and count.
    let entries = Mutex<[String: (first: Date, count: Int)]>([:])

    /// Notes one request carrying `tokens`.
    func note(_ tokens: Set<String>, at time: Date) {
        entries.withLock { table in
            for token in tokens {
                let entry = table[token]
                table[token] = (entry?.first ?? time, (entry?.count ?? 0) + 1)
            }
        }
    }
}

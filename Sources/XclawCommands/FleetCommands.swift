import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawDaemonServices
import XclawMessages
import XclawStore

/// `xclaw fleet`: the workers of the fleet's database, and its queue of runs.
struct FleetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "List the fleet's workers (`fleet runs`: its queue) when the database is PostgreSQL.",
        discussion: """
            Examples:
              xclaw fleet  # the workers, as xclaw fleet workers
              xclaw fleet runs --status queued
            """,
        subcommands: [FleetWorkers.self, FleetRuns.self, FleetCancel.self, FleetReady.self],
        defaultSubcommand: FleetWorkers.self)
}

/// `xclaw fleet [workers]`.
struct FleetWorkers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workers",
        abstract: "List the workers: name, host, state, slots busy/total, labels, last heartbeat.",
        discussion: """
            Each --json row: name, host, pid, version, state (up, left, lost), slots, busy, free, labels, displays, \
            apps, started_at, heartbeat_at, heartbeat_age_s, ended_at, level (the command-line level it runs: it \
            claims runs queued at that level or below). Exit 2 when the database is SQLite (no fleet).
            Examples:
              xclaw fleet workers
              xclaw fleet workers --db postgres://xclaw@db.internal/xclaw --json
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    /// One worker.
    struct Row: Encodable {
        var name, host: String
        var pid: Int32
        var version, state: String
        var slots, busy, free: Int
        var labels: [String: String]
        var displays, apps: [String]
        var started_at, heartbeat_at: String
        var heartbeat_age_s: Double
        var ended_at: String?
        var level: Int

        /// Every row has every field (`ended_at` null while up).
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(host, forKey: .host)
            try c.encode(pid, forKey: .pid)
            try c.encode(version, forKey: .version)
            try c.encode(state, forKey: .state)
            try c.encode(slots, forKey: .slots)
            try c.encode(busy, forKey: .busy)
            try c.encode(free, forKey: .free)
            try c.encode(labels, forKey: .labels)
            try c.encode(displays, forKey: .displays)
            try c.encode(apps, forKey: .apps)
            try c.encode(started_at, forKey: .started_at)
            try c.encode(heartbeat_at, forKey: .heartbeat_at)
            try c.encode(heartbeat_age_s, forKey: .heartbeat_age_s)
            try c.encode(ended_at, forKey: .ended_at)
            try c.encode(level, forKey: .level)
        }

        private enum CodingKeys: String, CodingKey {
            case name, host, pid, version, state, slots, busy, free, labels, displays, apps, started_at
            case heartbeat_at, heartbeat_age_s, ended_at, level
        }
    }

    func run() throws {
        let store = try storeOptions.open(reportRecovered: false)
        let now = Date()
        let rows = try store.workers().map { w in
            Row(
                name: w.info.name, host: w.info.host, pid: w.info.pid, version: w.info.version, state: w.state.rawValue,
                slots: w.info.slots, busy: w.busy, free: w.state == .up ? max(0, w.info.slots - w.busy) : 0,
                labels: w.info.labels, displays: w.info.displays, apps: w.info.apps,
                started_at: StoreDate.format(w.startedAt), heartbeat_at: StoreDate.format(w.heartbeatAt),
                heartbeat_age_s: (now.timeIntervalSince(w.heartbeatAt) * 10).rounded() / 10,
                ended_at: w.endedAt.map(StoreDate.format), level: w.info.level)
        }
        try emit(rows, json: json) {
            if rows.isEmpty { return "no workers yet: start one with `xclaw daemon run --worker`" }
            return rows.map { r in
                [
                    r.name, r.host, r.state, "\(r.busy)/\(r.slots) busy",
                    r.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","),
                    String(format: "heartbeat %.1f s ago", r.heartbeat_age_s),
                ].filter { !$0.isEmpty }.joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

/// `xclaw fleet runs`.
struct FleetRuns: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runs",
        abstract: "List the fleet's queued and past runs, oldest first.",
        discussion: """
            Each --json row: id, kind, agent, status (queued, running, completed, failed, lost, cancelled), worker, \
            session, exit_status, error, attempts, enqueued_by, enqueued_at, claimed_at, finished_at, level (the \
            command-line level a worker needs: a run waits for a worker of that level or above).
            Examples:
              xclaw fleet runs --status queued
              xclaw fleet runs --last 20 --json
            """)
    @Option(help: "Only runs with this status.") var status: String?
    @Option(help: "Only the newest N (default 100).") var last = 100
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        try requireRange(last, 1...100_000, "--last", "runs")
        if let status, FleetRunStatus(rawValue: status) == nil {
            throw ValidationError(
                "--status is one of \(FleetRunStatus.allCases.map(\.rawValue).joined(separator: ", ")), not \(status)")
        }
    }

    /// One run.
    struct Row: Encodable {
        var id: Int64
        var kind, agent, status: String
        var worker: String?
        var session: Int64?
        var exit_status: Int32?
        var error: String?
        var attempts: Int
        var enqueued_by, enqueued_at: String
        var claimed_at, finished_at: String?
        var level: Int

        /// Every row has every field.
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(kind, forKey: .kind)
            try c.encode(agent, forKey: .agent)
            try c.encode(status, forKey: .status)
            try c.encode(worker, forKey: .worker)
            try c.encode(session, forKey: .session)
            try c.encode(exit_status, forKey: .exit_status)
            try c.encode(error, forKey: .error)
            try c.encode(attempts, forKey: .attempts)
            try c.encode(enqueued_by, forKey: .enqueued_by)
            try c.encode(enqueued_at, forKey: .enqueued_at)
            try c.encode(claimed_at, forKey: .claimed_at)
            try c.encode(finished_at, forKey: .finished_at)
            try c.encode(level, forKey: .level)
        }

        private enum CodingKeys: String, CodingKey {
            case id, kind, agent, status, worker, session, exit_status, error, attempts, enqueued_by, enqueued_at
            case claimed_at, finished_at, level
        }

        init(_ r: FleetRunRecord) {
            (id, kind, agent, status) = (r.id, r.request.kind.rawValue, r.request.agent, r.status.rawValue)
            (worker, session, exit_status, error, attempts) = (r.worker, r.sessionID, r.exitStatus, r.error, r.attempts)
            (enqueued_by, enqueued_at) = (r.request.enqueuedBy, StoreDate.format(r.enqueuedAt))
            (claimed_at, finished_at) = (r.claimedAt.map(StoreDate.format), r.finishedAt.map(StoreDate.format))
            level = r.request.level
        }
    }

    func run() throws {
        let store = try storeOptions.open(reportRecovered: false)
        let rows = try store.fleetRuns(status: status.flatMap(FleetRunStatus.init(rawValue:)), limit: last).map(
            Row.init)
        try emit(rows, json: json) {
            rows.map { r in
                [
                    "\(r.id)", r.kind, r.agent, r.status, r.worker ?? "-", r.session.map { "run \($0)" } ?? "-",
                    r.error ?? "",
                ].joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

/// `xclaw fleet cancel ID`.
struct FleetCancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a queued fleet run, or stop a running one (on whichever worker).",
        discussion: """
            Examples:
              xclaw fleet cancel 31  # its id in xclaw fleet runs
            """)
    @Argument(help: "The fleet run's id (`xclaw fleet runs`).") var id: Int64
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON (the run as `fleet runs --json` shows it).") var json = false

    func run() throws {
        let store = try storeOptions.open(reportRecovered: false)
        let run = try store.cancelFleetRun(id, by: FleetDispatch.who())
        try emit(FleetRuns.Row(run), json: json) {
            switch run.status {
            case .cancelled: return "fleet run \(id) cancelled"
            case .running: return "fleet run \(id) asked to stop on \(run.worker ?? "its worker")"
            default: return "fleet run \(id) had ended (\(run.status.rawValue))"
            }
        }
    }
}

/// `xclaw fleet ready`: a worker's readiness, for a probe (Kubernetes' readinessProbe, a load balancer's check).
struct FleetReady: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ready",
        abstract: "Exit 0 when the worker is up with a fresh heartbeat, 1 when not (for readiness probes).",
        discussion: """
            Fresh: within --within seconds (default: a third of XCLAW_FLEET_LOST_AFTER, so 10 s).
            Examples:
              xclaw fleet ready  # this host's worker; a readiness probe's command
              xclaw fleet ready --name worker-2 --within 30
            """)
    @Option(help: "The worker (default: this host's name, a worker's default name).") var name: String?
    @Option(help: "The heartbeat's greatest age, in seconds.") var within: Double?
    @OptionGroup var storeOptions: StoreOptions

    func validate() throws { try requireRange(within, 0.1...3600, "--within", "s") }

    func run() throws {
        let store = try storeOptions.open(reportRecovered: false)
        let name = self.name ?? ProcessInfo.processInfo.hostName
        let lostAfter = try FleetWorkerOptions.lostAfter(Invocation.current.environment)
        let limit = within ?? (lostAfter / .seconds(1)) / 3
        guard let worker = try store.workers().first(where: { $0.info.name == name }) else {
            printError("xclaw: no worker named \(name) in the fleet")
            throw ExitCode(ExitStatus.notFound.rawValue)
        }
        let age = Date().timeIntervalSince(worker.heartbeatAt)
        guard worker.state == .up, age <= limit else {
            printError(
                "xclaw: worker \(name) is \(worker.state.rawValue), its last heartbeat \(String(format: "%.1f", age)) s "
                    + "ago (ready within \(String(format: "%.1f", limit)) s)")
            throw ExitCode(ExitStatus.notFound.rawValue)
        }
        writeOut("ready\n")
    }
}

/// The options of a command a fleet can run for you: where it may run, and whether to wait for it.
struct FleetOptions: ParsableArguments {
    @Flag(help: "Run here even when the database is a fleet's (default: queue it when workers are up).")
    var local = false
    @Flag(help: "With a fleet: print the fleet run's id and return at once.") var noWait = false
    @Option(
        name: .customLong("needs-label"), help: ArgumentHelp("Only a worker with this label.", valueName: "key=value"))
    var labels: [String] = []
    @Option(
        name: .customLong("needs-display"),
        help: ArgumentHelp("Only a worker that can start this display size.", valueName: "WxH"))
    var displaySize: String?
    @Option(
        name: .customLong("needs-app"), help: ArgumentHelp("Only a worker with this application.", valueName: "name"))
    var app: String?
    @Flag(help: "If its worker is lost, run it again elsewhere (for replays and read-only agents).") var retryLost =
        false

    /// Whether any fleet option was given (then the command is queued even with no worker up yet).
    var asked: Bool { noWait || !labels.isEmpty || displaySize != nil || app != nil || retryLost }

    func validate() throws {
        if local && asked {
            throw ValidationError("--local runs here: --no-wait, --needs-* and --retry-lost are for a fleet run")
        }
        for label in labels where !label.contains("=") || label.hasPrefix("=") {
            throw ValidationError("--needs-label takes KEY=VALUE, not \"\(label)\"")
        }
    }

    /// The required labels.
    var requiredLabels: [String: String] {
        Dictionary(
            labels.compactMap { label in
                label.firstIndex(of: "=").map { (String(label[..<$0]), String(label[label.index(after: $0)...])) }
            }, uniquingKeysWith: { $1 })
    }
}

/// Whether a command goes to the fleet, and following a fleet run from the host that queued it.
enum FleetDispatch {
    /// An option and its value for a command line a worker runs: `--option=value`, so a value that starts with "-"
    /// stays a value; an empty value as two arguments, since the parser reads `--option=` as no value at all.
    static func option(_ name: String, _ value: String) -> [String] {
        value.isEmpty ? [name, ""] : ["\(name)=\(value)"]
    }

    /// Who queues (`user@host`), for `fleet runs`.
    static func who() -> String {
        let user = Invocation.current.environment["USER"] ?? String(getuid())
        return "\(user)@\(ProcessInfo.processInfo.hostName)"
    }

    /// The store, when this command should be queued for the fleet rather than run here: the database is
    /// PostgreSQL, this is not a worker executing a fleet run, `--local` was not given, and a worker is up (or a
    /// fleet option asked for the queue).
    static func queueing(_ storeOptions: StoreOptions, _ options: FleetOptions) throws -> AgentStore? {
        let environment = Invocation.current.environment
        guard !options.local, environment[AgentStore.fleetRunVariable] == nil,
            PostgresURL.isPostgres(storeOptions.db ?? AgentStore.defaultPath())
        else { return nil }
        let store = try storeOptions.open(recover: false)
        guard store.hasFleet else { return nil }
        if options.asked { return store }
        return try store.workers().contains { $0.state == .up } ? store : nil
    }

    /// Queues `arguments` (an xclaw command line) for `agent` and, unless `--no-wait`, follows it to its end:
    /// the run's replies are printed as they stream in (with `answerOnly`, its last reply once it ended, as a
    /// pipeline prints its answer), and its exit status becomes this command's.
    static func run(
        _ kind: FleetRunKind, agent: String, arguments: [String], store: AgentStore, options: FleetOptions,
        answerOnly: Bool = false, raw: Bool = false
    ) throws {
        guard let id = try enqueue(kind, agent: agent, arguments: arguments, store: store, options: options) else {
            return
        }
        let status = try follow(id, store: store, answerOnly: answerOnly, raw: raw)
        if status != 0 { throw ExitCode(status) }
    }

    /// Queues `arguments` for `agent` (which must exist, unless the run creates it: a one-shot `run`); with
    /// `--no-wait` prints the fleet run's id and returns nil, else says on stderr how to cancel it and returns it.
    static func enqueue(
        _ kind: FleetRunKind, agent: String, arguments: [String], store: AgentStore, options: FleetOptions
    ) throws -> Int64? {
        let id = try store.enqueueRun(
            FleetRunRequest(
                kind: kind, agent: agent, arguments: arguments, labels: options.requiredLabels,
                displaySize: options.displaySize, app: options.app, retryLost: options.retryLost, enqueuedBy: who()))
        if options.noWait {
            writeOut("\(id)\n")
            return nil
        }
        printError("xclaw: queued as fleet run \(id); `xclaw fleet cancel \(id)` stops it")
        return id
    }

    /// Prints a fleet run's replies as they are stored, until it ends; returns its exit status (5 when its worker
    /// was lost). Ctrl-C cancels it (queued) or asks it to stop (running), and waits for it to end.
    static func follow(_ id: Int64, store: AgentStore, answerOnly: Bool = false, raw: Bool = false) throws -> Int32 {
        let interrupted = CancelFlag()
        let watch = Interrupt.watch([SIGINT, SIGTERM]) { _ in interrupted.set() }
        defer { watch.stop() }
        var asked = false
        var printed: [Int64: String] = [:]
        var ended: Set<Int64> = []
        // The agent's messages are read from here on, without their screenshots: each poll reads only what is new
        // or still streaming, not the whole run again.
        var from: (agent: String, after: Int64)?
        /// The run's replies not read to their end yet, oldest first. (The session's agent, which is not always the
        /// run's: a pipeline's orchestrator runs as a copy of its own.)
        /// Set for a replay, which has no replies to read.
        var replay = false
        func replies(session: Int64) throws -> [StoredMessage] {
            if from == nil, !replay {
                let transcript = try store.runTranscript(session: session)
                replay = transcript.session.replay != nil
                if replay { return [] }
                from = (transcript.session.agent, transcript.input.first.map { $0.id - 1 } ?? 0)
            }
            guard let (agent, after) = from else { return [] }
            let fresh = try store.messages(agent: agent, after: after, screenshots: false)
                .filter { $0.sessionID == session && $0.role == .assistant }
            // Everything up to the first reply still streaming is done: the next poll starts after it.
            if let done = fresh.prefix(while: { $0.status != .partial }).last { from = (agent, done.id) }
            return fresh
        }
        while true {
            let run = try store.fleetRun(id)
            if interrupted.isSet && !asked {
                asked = true
                _ = try store.cancelFleetRun(id, by: who())
            }
            if answerOnly, run.status.isFinal, let session = run.sessionID,
                let answer = try replies(session: session).last(where: { !$0.message.text.isEmpty })
            {
                writeOut(TerminalOutput.clean(answer.message.text, raw: raw) + "\n")
            }
            if !answerOnly, let session = run.sessionID {
                for message in try replies(session: session) {
                    let text = message.message.text
                    let before = printed[message.id] ?? ""
                    if text.count > before.count, text.hasPrefix(before) {
                        writeOut(TerminalOutput.clean(String(text.dropFirst(before.count)), raw: raw))
                    }
                    printed[message.id] = text
                    if message.status != .partial, !text.isEmpty, ended.insert(message.id).inserted { writeOut("\n") }
                }
            }
            if run.status.isFinal {
                switch run.status {
                case .completed: return 0
                case .lost:
                    printError("xclaw: fleet run \(id) was lost: \(run.error ?? "its worker stopped"); not run again")
                    return ExitStatus.internal.rawValue
                case .cancelled:
                    printError("xclaw: fleet run \(id) was cancelled")
                    return run.exitStatus ?? ExitStatus.interrupted
                default:
                    printError("xclaw: fleet run \(id) failed: \(run.error ?? "on its worker")")
                    return run.exitStatus ?? ExitStatus.internal.rawValue
                }
            }
            // Queue changes wake at once; stored reply text is read again ten times a second.
            _ = try store.waitForFleetChange(timeout: .milliseconds(100))
        }
    }
}

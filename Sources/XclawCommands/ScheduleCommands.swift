import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawDaemonServices
import XclawRuntime
import XclawStore

/// `xclaw schedule`: prompts an agent gets on a schedule, fired by the daemon.
struct ScheduleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Send an agent a prompt on a schedule (cron, interval or once); the daemon fires them.",
        discussion: """
            Each run is `xclaw send AGENT PROMPT --sender schedule:NAME` inside the daemon (`xclaw daemon start`), which
            fires the tasks of its database ($XCLAW_DB when it started, else the default); what the runs print goes to
            schedule.log in the state directory. A slot fires at most once, also with two daemons on one database or
            across a restart. Slots missed while no daemon ran fire once (--catch-up once) or not at all (none).
            A task's --display and --setup replace the agent's for its runs; with --display new[:WxH] each run gets its
            own Xvfb and accessibility bus, stopped with what the setup started when the run ends (also when it fails,
            is stopped, or xclaw is killed).
            Exit 1: no such agent or task; 2: a schedule, time zone or name that cannot be used (the message says
            how to write it).
            Examples:
              xclaw schedule add bot 'Check the build page' --cron '*/15 8-18 * * mon-fri' --name build
              xclaw schedule list
            """,
        subcommands: [Add.self, List.self, Show.self, Pause.self, Resume.self, Remove.self, RunNow.self])

    /// One task as `list` and `show --json` print it.
    struct Row: Encodable {
        var id: String
        var name: String?
        var agent: String
        var prompt: String
        var schedule: String
        var tz: String?
        var catch_up: String
        var status: String
        var next_run: String?
        var last_run: String?
        var last_result: String?
        var display: String?
        var setup: String?
        var replay: String?

        init(_ task: TaskRecord) {
            id = task.id
            name = task.name
            agent = task.agent
            prompt = task.prompt
            schedule = ScheduleCommand.describe(task)
            tz = task.timeZone
            catch_up = task.catchUp.rawValue
            status = task.status.rawValue
            next_run = task.nextRun.map(StoreDate.format)
            last_run = task.lastRun.map(StoreDate.format)
            last_result = task.lastResult
            (display, setup, replay) = (task.display, task.setup, task.replay)
        }
    }

    /// The store and the task a command names by id or name.
    static func task(_ idOrName: String, in options: StoreOptions) throws -> (AgentStore, TaskRecord) {
        let store = try options.open()
        return (store, try store.task(idOrName))
    }

    /// "cron */15 * * * *", "every 2h", "at 2026-12-01T08:00:00.000Z".
    static func describe(_ task: TaskRecord) -> String {
        switch task.scheduleType {
        case .cron: return "cron \(task.scheduleValue)"
        case .interval: return "every \(Self.duration((Int(task.scheduleValue) ?? 0) / 1000))"
        case .once: return "at \(task.scheduleValue)"
        }
    }

    /// Seconds as `1h30m`.
    static func duration(_ seconds: Int) -> String {
        var rest = seconds, out = ""
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] where rest >= size {
            out += "\(rest / size)\(unit)"
            rest %= size
        }
        return out.isEmpty ? "0s" : out
    }

    /// `schedule add`.
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Schedule a prompt for an agent.",
            discussion: """
                Examples:
                  xclaw schedule add bot 'Send the report' --at '2026-12-01 09:00' --tz America/New_York
                  xclaw schedule add bot 'Answer the dialog' --every 1h --display new --setup 'zenity --question &'
                """)
        @Argument(help: "The agent.") var agent: String
        @Argument(help: "The prompt each run sends.") var prompt: String
        @Option(help: "A cron expression: minute hour day-of-month month day-of-week.") var cron: String?
        @Option(help: "An interval: 30s, 10m, 2h, 1h30m, 1d (at least 1 minute).") var every: String?
        @Option(help: "Once, at a time: 2026-12-01 09:00, 09:00 (the next), or an ISO 8601 instant.") var at: String?
        @Option(help: "The IANA time zone of --cron and --at (default: UTC).") var tz: String?
        @Option(help: "A name to refer to it by (unique).") var name: String?
        @Option(help: "Slots missed while no daemon ran: once (one run for them all) or none.") var catchUp:
            TaskCatchUp =
                .once
        @Option(
            help: ArgumentHelp(
                "The display its runs work on instead of the agent's: a name (:1), or `new` / `new:WxH` for a "
                    + "private Xvfb and accessibility bus started for each run and stopped after it.")) var display:
            String?
        @Option(
            help: ArgumentHelp(
                "Instead of the agent's setup command (\"\": none). " + RunDisplayOptions.setupHelp)) var setup: String?
        @Option(
            help: ArgumentHelp(
                "A script (`xclaw script export RUN -o FILE`) each run replays first, without the model; the agent "
                    + "runs the prompt only when the replay diverges. On a fleet's database the script is stored "
                    + "there (as HOST:PATH), so any worker can replay it.")) var replay: String?
        @OptionGroup var storeOptions: StoreOptions
        @Flag var json = false

        func validate() throws {
            if [cron, every, at].compactMap({ $0 }).count != 1 {
                throw ValidationError("give exactly one of --cron, --every and --at")
            }
            if tz != nil && every != nil { throw ValidationError("--tz goes with --cron or --at, not --every") }
            try RunDisplayOptions.check(display: display)
            if let replay {
                let script: ReplayScript
                do { script = try ReplayScript.read(replay, resolved: Invocation.current.resolve(replay)) } catch {
                    throw ValidationError("\(error)")
                }
                // A scheduled replay has nobody to give it a password (never recorded).
                if let step = script.steps.firstIndex(where: { $0.parameter != nil && $0.text == nil }) {
                    throw ValidationError(
                        "step \(step + 1) of \(replay) types a password, which is never recorded and a schedule "
                            + "cannot be given: schedule the agent without --replay")
                }
                if display?.hasPrefix("new") == true {
                    throw ValidationError("--replay works on a display that stays; not with --display new")
                }
            }
        }

        func run() throws {
            let now = Date()
            let type: TaskScheduleType, value: String, schedule: TaskSchedule
            do {
                let zone = try TaskScheduler.zone(tz)
                if let cron {
                    let expression = try CronExpression(cron)
                    (type, value, schedule) = (.cron, expression.description, .cron(expression, zone: zone))
                } else if let every {
                    let seconds = try TaskSchedule.seconds(every)
                    guard seconds >= 60 else { throw ValidationError("--every is at least 1m") }
                    // The grid's anchor is the task's creation, stored as `now` below.
                    (type, value, schedule) = (.interval, "\(seconds * 1000)", .interval(seconds: seconds, anchor: now))
                } else {
                    let instant = try TaskSchedule.instant(at ?? "", in: zone, now: now)
                    guard instant > now else {
                        throw ValidationError("--at \(at ?? "") is in the past (\(StoreDate.format(instant)))")
                    }
                    (type, value, schedule) = (.once, StoreDate.format(instant), .once(instant))
                }
            } catch let error as CronExpression.ParseError {
                throw ValidationError(error.description)
            } catch let error as TaskSchedule.ParseError {
                throw ValidationError(error.description)
            }
            guard let first = schedule.next(after: now) else {
                throw ValidationError("that schedule never fires")
            }
            let store = try storeOptions.open()
            // A fleet's workers cannot read this host's files: the script is kept in the database and the task
            // names it there; each fire replays its newest revision (`script save` or a healed replay adds one).
            var replay = self.replay.map { Invocation.current.resolve($0) }
            if let path = replay, store.hasFleet {
                let script = try ReplayScript.read(path, resolved: path)
                replay = DaemonScheduling.storedPrefix + (try FleetScripts.store(script, file: path, in: store).name)
            }
            let task = try store.createTask(
                agent: agent, prompt: prompt, scheduleType: type, scheduleValue: value, contextMode: .agent,
                nextRun: first, name: name, timeZone: tz, catchUp: catchUp, createdAt: now, display: display,
                setup: setup, replay: replay)
            try emit(Row(task), json: json) { "\(task.id) next \(StoreDate.format(first))" }
        }
    }

    /// `schedule list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List scheduled tasks (one agent's, or all).",
            discussion: """
                Examples:
                  xclaw schedule list  # id, name, agent, schedule, status, next and last run, prompt
                  xclaw schedule list bot --json
                """)
        @Argument(help: "Only this agent's.") var agent: String?
        @OptionGroup var storeOptions: StoreOptions
        @Flag var json = false

        func run() throws {
            let rows = try storeOptions.open().tasks(agent: agent).map(Row.init)
            try emit(rows, json: json) {
                rows.map { r in
                    [
                        r.id, r.name ?? "-", r.agent, r.schedule + (r.tz.map { " \($0)" } ?? ""), r.status,
                        "next " + (r.next_run ?? "-"), "last " + (r.last_result ?? "-"), UntrustedText.quoted(r.prompt),
                    ].joined(separator: "\t")
                }.joined(separator: "\n")
            }
        }
    }

    /// `schedule show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show a task and its runs.",
            discussion: """
                Examples:
                  xclaw schedule show build
                  xclaw schedule show build --json
                """)
        @Argument(help: "Its id or name.") var task: String
        @OptionGroup var storeOptions: StoreOptions
        @Flag var json = false

        /// A task with its history.
        struct Shown: Encodable {
            var task: Row
            var runs: [TaskRunLog]
        }

        func run() throws {
            let (store, record) = try ScheduleCommand.task(task, in: storeOptions)
            let shown = Shown(task: Row(record), runs: try store.taskRunLogs(taskID: record.id))
            try emit(shown, json: json) {
                let r = shown.task
                return
                    ([
                        "\(r.id) \(r.name ?? "") → \(r.agent): \(r.schedule)\(r.tz.map { " (\($0))" } ?? "")",
                        "status \(r.status), next \(r.next_run ?? "-"), catch-up \(r.catch_up)",
                        "prompt \(UntrustedText.quoted(r.prompt))",
                    ]
                    + (r.display.map { ["display \($0)"] } ?? [])
                    + (r.setup.map { ["setup \(UntrustedText.quoted($0))"] } ?? [])
                    + shown.runs.map { run in
                        "  \(StoreDate.format(run.runAt)) \(run.status) \(run.durationMs) ms"
                            + (run.error.map { " \($0)" } ?? "")
                    }).joined(separator: "\n")
            }
        }
    }

    /// `schedule pause`.
    struct Pause: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause", abstract: "Stop a task firing (it is kept).",
            discussion: """
                Examples:
                  xclaw schedule pause build  # xclaw schedule resume build lets it fire again
                """)
        @Argument(help: "Its id or name.") var task: String
        @OptionGroup var storeOptions: StoreOptions

        func run() throws {
            let (store, record) = try ScheduleCommand.task(task, in: storeOptions)
            try store.setTaskStatus(record.id, .paused, nextRun: record.nextRun)
            writeOut("paused \(record.name ?? record.id)\n")
        }
    }

    /// `schedule resume`.
    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "resume",
            abstract: "Let a paused task fire again, from its next slot after now.",
            discussion: """
                Examples:
                  xclaw schedule resume build
                """)
        @Argument(help: "Its id or name.") var task: String
        @OptionGroup var storeOptions: StoreOptions

        func run() throws {
            let (store, record) = try ScheduleCommand.task(task, in: storeOptions)
            guard let next = TaskScheduler.nextRun(record, after: Date()) else {
                throw ValidationError("\(record.name ?? record.id) has no slot left to fire at")
            }
            try store.setTaskStatus(record.id, .active, nextRun: next)
            writeOut("resumed \(record.name ?? record.id), next \(StoreDate.format(next))\n")
        }
    }

    /// `schedule remove`.
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Delete a task and its run history.",
            discussion: """
                Examples:
                  xclaw schedule remove build
                """)
        @Argument(help: "Its id or name.") var task: String
        @OptionGroup var storeOptions: StoreOptions

        func run() throws {
            let (store, record) = try ScheduleCommand.task(task, in: storeOptions)
            try store.deleteTask(record.id)
            writeOut("removed \(record.name ?? record.id)\n")
        }
    }

    /// `schedule run-now`.
    struct RunNow: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run-now",
            abstract:
                "Run a task now (here, or on a worker when a fleet's workers are up; its reply is printed), and record "
                + "the run; its schedule is unchanged.",
            discussion: """
                Examples:
                  xclaw schedule run-now build  # try a task once before its first slot
                """)
        @Argument(help: "Its id or name.") var task: String
        @OptionGroup var storeOptions: StoreOptions

        func run() throws {
            let (store, record) = try ScheduleCommand.task(task, in: storeOptions)
            let label = record.name ?? record.id
            let started = Date(), clock = ContinuousClock.now
            // The task's script first, without the model, as when the daemon fires it.
            if let result = DaemonScheduling.replayFirst(
                record, label: label, databaseArguments: storeOptions.db.map { ["--db", $0] } ?? [], store: store,
                log: 2,
                logPath: "stderr",
                { CommandRunner.run(Xclaw.self, arguments: $0) })
            {
                try store.recordTaskRun(
                    taskID: record.id, runAt: started,
                    durationMs: Int((ContinuousClock.now - clock) / .milliseconds(1)), status: result.status,
                    result: (result.result ?? "") + " (run-now)", error: result.error)
                if result.status != "completed" {
                    throw ExitCode(result.result == "the replay was stopped" ? Send.stoppedStatus : 1)
                }
                return
            }
            var arguments = ["send", "--sender", "schedule:\(label)"]
            if let db = storeOptions.db { arguments += ["--db", db] }
            // `--` first: a prompt may start with "-".
            arguments += ["--", record.agent, record.prompt]
            let mark = try RunReports.mark(store: store)
            let status = CommandRunner.run(Xclaw.self, arguments: arguments)
            // Kept like the daemon's scheduled runs; a report that cannot be written does not fail the run.
            do {
                let retention = try ReportRetention.configured()
                for path in try RunReports.keepScheduled(
                    agent: record.agent, task: label, after: mark, store: store, retention: retention)
                {
                    printError("xclaw: run report \(path)")
                }
            } catch { printError("xclaw: the run report could not be written: \(error)") }
            try store.recordTaskRun(
                taskID: record.id, runAt: started, durationMs: Int((ContinuousClock.now - clock) / .milliseconds(1)),
                status: status == 0 ? "completed" : "failed", result: "exit \(status) (run-now)",
                error: status == 0 ? nil : "exit \(status)")
            if status != 0 { throw ExitCode(status) }
        }
    }
}

extension TaskCatchUp: ExpressibleByArgument {}

/// `xclaw runs`.
struct Runs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runs",
        abstract: "List agent runs, oldest first, with the scheduled task each ran for.",
        discussion: """
            Each --json row: id, agent, task (its name or id; null for runs a person asked for), status (running, \
            completed, failed, cancelled, interrupted, stopped, needs-approval), started_at, duration_ms, steps, \
            cost_usd, report (the kept report's path: written after every scheduled run and by `xclaw report RUN`; \
            else null), replay (null for an agent's run; for `xclaw replay`: script, revision, steps, replayed and \
            healed (done without and with the model), failed, acted, model_requests, diverged_step, reason).
            Examples:
              xclaw runs bot --last 10
              xclaw runs --task build --json
            """)
    @Argument(help: "Only this agent's.") var agent: String?
    @Option(help: "Only this task's runs (its name or id).") var task: String?
    @Option(help: "Only the newest N runs (still listed oldest first).") var last: Int?
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    func validate() throws { try requireRange(last, 1...1_000_000, "--last", "runs") }

    /// One run.
    struct Row: Encodable {
        var id: Int64
        var agent: String
        var task: String?
        var status: String
        var started_at: String
        var duration_ms: Int?
        var steps: Int
        var cost_usd: Double
        var report: String?
        var replay: ReplaySummary?

        /// Encodes `task`, `report` and `replay` as null rather than leaving them out: every row has every field.
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(agent, forKey: .agent)
            try c.encode(task, forKey: .task)
            try c.encode(status, forKey: .status)
            try c.encode(started_at, forKey: .started_at)
            try c.encode(duration_ms, forKey: .duration_ms)
            try c.encode(steps, forKey: .steps)
            try c.encode(cost_usd, forKey: .cost_usd)
            try c.encode(report, forKey: .report)
            try c.encode(replay, forKey: .replay)
        }

        private enum CodingKeys: String, CodingKey {
            case id, agent, task, status, started_at, duration_ms, steps, cost_usd, report, replay
        }
    }

    func run() throws {
        let store = try storeOptions.open()
        // A task named by its id lists under its name, as its runs record it.
        let label = try task.map { wanted in (try? store.task(wanted)).map { $0.name ?? $0.id } ?? wanted }
        let rows = try store.runs(agent: agent, task: label).suffix(last ?? .max).map { session, task in
            Row(
                id: session.id, agent: session.agent, task: task, status: session.status.rawValue,
                started_at: StoreDate.format(session.startedAt),
                duration_ms: session.endedAt.map { Int(($0.timeIntervalSince(session.startedAt) * 1000).rounded()) },
                steps: session.steps, cost_usd: session.usd, report: session.report, replay: session.replay)
        }
        try emit(rows, json: json) {
            rows.map { r in
                [
                    "\(r.id)", r.agent, r.task ?? "-", r.status, r.started_at,
                    r.duration_ms.map { "\($0) ms" } ?? "-",
                    r.replay.map {
                        "replay \($0.replayed)+\($0.healed) healed/\($0.steps) steps"
                            + ($0.failed > 0 ? ", failed" : "")
                    } ?? "\(r.steps) steps",
                    String(format: "$%.4f", r.cost_usd),
                    r.report ?? "-",
                ].joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

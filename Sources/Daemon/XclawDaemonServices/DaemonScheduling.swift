import Foundation
import Logging
import Synchronization
import XclawBase
import XclawDaemon
import XclawRuntime
import XclawStore

/// The daemon's scheduler: a thread that fires the scheduled tasks of the daemon's database ($XCLAW_DB when it
/// started, else the default) when they are due, each as `xclaw send AGENT PROMPT --sender schedule:NAME` run inside
/// the daemon, its output appended to `schedule.log` in the state directory.
public enum DaemonScheduling {
    private static let logger = Logger(label: "xclaw.schedule")

    /// Starts the thread; it ends when the server stops.
    public static func start(_ server: DaemonServer) {
        let path = AgentStore.defaultPath()
        let hostname = ProcessInfo.processInfo.hostName
        // A daemon a command started stays while a schedule is still to fire (it would not fire without it).
        let pending = PendingSchedules()
        server.keepAlive { pending.value.load(ordering: .relaxed) }
        Thread {
            var scheduler: TaskScheduler?
            // Since when the schedules could not be read: a database that never answers (unreachable, newer than
            // this xclaw, corrupt) keeps an idle daemon a minute, not for ever.
            var unknownSince: ContinuousClock.Instant? = .now
            while !server.isStopping {
                // The database may not exist yet: a file is opened (not created) once an xclaw command made it; a
                // fleet's PostgreSQL database is opened as soon as the server answers.
                let exists = PostgresURL.isPostgres(path) || FileManager.default.fileExists(atPath: path)
                if scheduler == nil, exists, let store = try? AgentStore.at(path) {
                    scheduler = TaskScheduler(store: store, claimer: "daemon \(getpid())@\(hostname)")
                }
                // No database yet: no schedule to keep the daemon for.
                if !exists {
                    pending.value.store(false, ordering: .relaxed)
                    unknownSince = nil
                }
                // Each second: a read to see whether anything is due (tasks another process added included),
                // a claim only then. The claim, the runs and their reports are the daemon's work: it re-executes
                // itself only between ticks (a tick refused meanwhile is the new image's first).
                if let scheduler {
                    // A tick that could not read the schedules (a busy database) keeps what was known.
                    if let scheduled = server.activity.run({ tick(scheduler, database: path, on: server) }) ?? nil {
                        pending.value.store(scheduled, ordering: .relaxed)
                        unknownSince = nil
                    } else if unknownSince == nil {
                        unknownSince = .now
                    }
                }
                if let since = unknownSince, exists, ContinuousClock.now - since > .seconds(60) {
                    pending.value.store(false, ordering: .relaxed)
                }
                Thread.sleep(forTimeInterval: 1)
            }
        }.start()
    }

    /// Whether the database has a schedule still to fire, as of the last tick.
    private final class PendingSchedules: Sendable {
        /// True until a tick read the schedules: a daemon whose database is not open yet does not leave on that.
        let value = Atomic<Bool>(true)
    }

    /// Claims and runs the tasks due now, if any; whether a schedule is still to fire (one that just ran may have
    /// been the last: the next tick tells), nil when the schedules could not be read.
    private static func tick(_ scheduler: TaskScheduler, database path: String, on server: DaemonServer) -> Bool? {
        let next: Date?
        do { next = try scheduler.store.nextDueTime() } catch { return nil }
        guard let due = next else { return false }
        guard due <= Date() else { return true }
        do {
            try scheduler.tick(
                now: Date(),
                failed: { task, error in
                    logger.error(
                        "a scheduled run could not be recorded",
                        metadata: ["task": "\(task.name ?? task.id)", "error": "\(error)"])
                }
            ) { task in run(task, database: path, store: scheduler.store, on: server) }
        } catch {
            logger.error("scheduling failed", metadata: ["error": "\(error)"])
        }
        return true
    }

    /// One run of a task, as `send` does it, with the exit status as its outcome; then its report, through the
    /// scheduler's `store`.
    static func run(
        _ task: TaskRecord, database: String, store: any StoreBackend, on server: DaemonServer
    ) -> TaskRunResult {
        let logPath = (try? DaemonPaths.scheduleLog()) ?? "/dev/null"
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { if log >= 0 { close(log) } }
        let label = task.name ?? task.id
        if log >= 0 {
            let header = "\n== \(StoreDate.format(Date())) task \(label) → \(task.agent)\n"
            _ = header.withCString { write(log, $0, strlen($0)) }
        }
        // A replay first, without the model: when it does every step, the agent is not asked at all; when it stops
        // before doing anything, the agent runs the prompt; when it stopped midway, nothing more runs (the agent
        // would repeat what the replay did).
        if let result = replayFirst(
            task, label: label, databaseArguments: databaseOption(database), store: store, log: log, logPath: logPath,
            {
                server.runOwn($0, log: log >= 0 ? log : 2)
            })
        {
            return result
        }
        let mark = DaemonReports.mark(store)
        let status = server.runOwn(
            // Options first and `--` before the prompt: a prompt may start with "-".
            ["send", "--sender", "schedule:\(label)"] + databaseOption(database) + ["--", task.agent, task.prompt],
            log: log >= 0 ? log : 2)
        logger.info("scheduled run", metadata: ["task": "\(label)", "exit": "\(status)"])
        DaemonReports.keep(agent: task.agent, task: label, after: mark, store: store)
        return status == 0
            ? TaskRunResult(
                status: "completed", result: task.replay == nil ? "exit 0" : "the replay diverged; the agent ran")
            : TaskRunResult(status: "failed", result: "exit \(status)", error: "exit \(status); see \(logPath)")
    }

    /// How a task names a script stored in the database rather than a file (a file's path is absolute).
    public static let storedPrefix = "stored:"

    /// A task's replay, first, without the model: a result when it did every step (completed), or stopped midway or
    /// could not start (failed: the agent would repeat what it did); nil when the agent must run the prompt (no
    /// script, a private display, or the replay diverged before its first step). `runner` runs an xclaw command
    /// with `databaseArguments` (`--db FILE`, or nothing: see `databaseOption`).
    public static func replayFirst(
        _ task: TaskRecord, label: String, databaseArguments: [String], store: any StoreBackend, log: Int32,
        logPath: String,
        _ runner: ([String]) -> Int32
    ) -> TaskRunResult? {
        let display = task.display ?? (try? store.agent(named: task.agent))?.display
        guard let script = task.replay, display?.hasPrefix("new") != true else { return nil }
        // The replay is a run of the task's agent, tied to the task: `runs --task` lists it, and its report is
        // kept like the agent's.
        let mark = DaemonReports.mark(store)
        // A fleet's task names a script stored in the database (`schedule add --replay` stored it there).
        let source =
            script.hasPrefix(storedPrefix) ? ["--stored", String(script.dropFirst(storedPrefix.count))] : [script]
        let replayed = runner(
            ["replay"] + source + ["--heal", "never", "--json", "--agent", task.agent, "--task", label]
                + databaseArguments + (display.map { ["--display", $0] } ?? []))
        logger.info("scheduled replay", metadata: ["task": "\(label)", "exit": "\(replayed)"])
        DaemonReports.keep(agent: task.agent, task: label, after: mark, store: store)
        let run = (try? store.runs(agent: task.agent, task: label))?.last {
            $0.session.id > (mark ?? 0) && $0.session.replay != nil
        }?.session
        let summary = run?.replay
        let done = summary.map { $0.replayed + $0.healed }
        let acted = summary?.acted ?? 0
        if replayed == 0 {
            return TaskRunResult(
                status: "completed",
                result: "replayed \(done.map(String.init) ?? "every") step(s) without the model"
                    + (run.map { " (run \($0.id))" } ?? ""))
        }
        // How `replay` exits when a stop ended it (what Ctrl-C gives).
        if replayed == ExitStatus.interrupted || run?.status == .stopped {
            return TaskRunResult(
                status: "failed", result: "the replay was stopped", error: run?.error ?? "stopped; see \(logPath)")
        }
        guard run != nil else {
            return TaskRunResult(
                status: "failed", result: "the replay could not start (exit \(replayed))",
                error: "the replay of \(script) could not start (exit \(replayed)); see \(logPath)")
        }
        // Something was done on the screen (a step may have acted before its check failed), or the agent would
        // need the same approval the replay was refused: the agent is not run.
        if acted > 0 || summary?.reason?.hasPrefix(Replayer.approvalReason) == true {
            return TaskRunResult(
                status: "failed",
                result: "the replay diverged after \(done.map(String.init) ?? "some") step(s)"
                    + (run.map { " (run \($0.id))" } ?? ""),
                error: "the replay stopped"
                    + (summary?.reason.map { " (\($0))" } ?? "")
                    + (acted > 0
                        ? "; the agent was not run, as it would repeat what was done" : "; the agent was not run")
                    + "; see \(logPath)")
        }
        if log >= 0 {
            let note = "replay diverged before its first step: the agent runs the prompt\n"
            _ = note.withCString { write(log, $0, strlen($0)) }
        }
        return nil
    }

    /// `--db FILE` for a command the daemon runs; nothing for a PostgreSQL URL, which the command finds where the
    /// daemon found it (the environment or the config file) and which must not appear on a command line, where any
    /// user's `ps` reads it, password and all.
    static func databaseOption(_ database: String) -> [String] {
        PostgresURL.isPostgres(database) ? [] : ["--db", database]
    }
}

import Foundation
import Logging
import XclawBase
import XclawDaemon
import XclawRuntime
import XclawStore

/// The daemon's scheduler: a thread that fires the scheduled tasks of the daemon's database ($XCLAW_DB when it
/// started, else the default) when they are due, each as `xclaw send AGENT PROMPT --sender schedule:NAME` run inside
/// the daemon, its output appended to `schedule.log` in the state directory.
enum DaemonScheduling {
    private static let logger = Logger(label: "xclaw.schedule")

    /// Starts the thread; it ends when the server stops.
    static func start(_ server: DaemonServer) {
        let path = AgentStore.defaultPath()
        let hostname = ProcessInfo.processInfo.hostName
        Thread {
            var scheduler: TaskScheduler?
            while !server.isStopping {
                // The database may not exist yet: it is opened (not created) once an xclaw command made it.
                if scheduler == nil, FileManager.default.fileExists(atPath: path),
                    let store = try? AgentStore(path: path)
                {
                    scheduler = TaskScheduler(store: store, claimer: "daemon \(getpid())@\(hostname)")
                }
                // Each second: a read to see whether anything is due (tasks another process added included),
                // a claim only then.
                if let scheduler, let due = try? scheduler.store.nextDueTime(), due <= Date() {
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
                }
                Thread.sleep(forTimeInterval: 1)
            }
        }.start()
    }

    /// One run of a task, as `send` does it, with the exit status as its outcome; then its report, through the
    /// scheduler's `store`.
    static func run(
        _ task: TaskRecord, database: String, store: AgentStore, on server: DaemonServer
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
        let display = task.display ?? (try? store.agent(named: task.agent))?.display
        if let script = task.replay, display?.hasPrefix("new") != true {
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-replay-\(UUID().uuidString)")
            let fd = open(out.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            defer { try? FileManager.default.removeItem(at: out) }
            let replayed = server.runOwn(
                ["replay", script, "--heal", "never", "--json", "--db", database]
                    + (display.map { ["--display", $0] } ?? []),
                log: fd >= 0 ? fd : 2)
            if fd >= 0 { close(fd) }
            let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            if log >= 0 { _ = text.withCString { write(log, $0, strlen($0)) } }
            logger.info("scheduled replay", metadata: ["task": "\(label)", "exit": "\(replayed)"])
            if replayed == 0 { return TaskRunResult(status: "completed", result: "replayed without the model") }
            // The replay's JSON (its stderr follows it in the same file): how many steps it did.
            let done = text.firstMatch(of: /"replayed"\s*:\s*(\d+)/).flatMap { Int($0.1) }
            if done != 0 {
                return TaskRunResult(
                    status: "failed", result: "the replay diverged after \(done.map(String.init) ?? "some") step(s)",
                    error:
                        "the replay stopped midway; the agent was not run, as it would repeat those steps; see \(logPath)"
                )
            }
            if log >= 0 {
                let note = "replay diverged before its first step: the agent runs the prompt\n"
                _ = note.withCString { write(log, $0, strlen($0)) }
            }
        }
        let mark = DaemonReports.mark(store)
        let status = server.runOwn(
            // Options first and `--` before the prompt: a prompt may start with "-".
            ["send", "--sender", "schedule:\(label)", "--db", database, "--", task.agent, task.prompt],
            log: log >= 0 ? log : 2)
        logger.info("scheduled run", metadata: ["task": "\(label)", "exit": "\(status)"])
        DaemonReports.keep(agent: task.agent, task: label, after: mark, store: store)
        return status == 0
            ? TaskRunResult(
                status: "completed", result: task.replay == nil ? "exit 0" : "the replay diverged; the agent ran")
            : TaskRunResult(status: "failed", result: "exit \(status)", error: "exit \(status); see \(logPath)")
    }
}

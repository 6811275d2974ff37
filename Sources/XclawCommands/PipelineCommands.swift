import ArgumentParser
import Foundation
import XclawBase
import XclawClient
import XclawCommandLine
import XclawMessages
import XclawRuntime
import XclawScreen
import XclawStore

/// `xclaw pipeline`: run a task through an orchestrator that delegates subtasks to role agents, and follow, list or
/// cancel pipelines.
struct PipelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "Run a task as a pipeline: an orchestrator delegates subtasks to role agents running in parallel.",
        discussion: """
            `xclaw pipeline "TASK"` is `xclaw pipeline run "TASK"`. The roles are researcher, coder, writer, analyst \
            and screen-operator (Models/roles), plus your own in $XDG_CONFIG_HOME/xclaw/roles/NAME.md.
            Examples:
              xclaw pipeline 'Compare the three backup tools in the wiki and draft a recommendation'
              xclaw pipeline show 7 --follow  # the subtask tree, again as it changes
            """,
        subcommands: [PipelineRun.self, PipelineList.self, PipelineShow.self, PipelineCancel.self],
        defaultSubcommand: PipelineRun.self)
}

/// `xclaw pipeline run "TASK"`.
struct PipelineRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a pipeline: progress on stderr as subtasks start and finish, the final answer on stdout.",
        discussion: """
            Without --orchestrator it uses the agent `orchestrator`, created on first use (kind orchestrator, the \
            catalog's default model). Up to 5 subtasks run at once; the others wait for a slot. Subtasks with screen \
            tools take turns on the orchestrator's display, or get a private one when delegated with display "new".
            Exit: 0 answered (a partial answer included); 1 no such orchestrator; 2 bad usage; 4 the orchestrator's \
            run failed; 130 cancelled (`xclaw pipeline cancel`, Ctrl-C).
            Examples:
              xclaw pipeline run 'Compare the three backup tools in the wiki and draft a recommendation'
              xclaw pipeline run "File last month's invoices" --orchestrator lead  # an orchestrator of your own
            """)
    @Argument(help: "The task.") var task: String
    @Option(help: "The orchestrator agent (`xclaw agent create NAME --kind orchestrator`).") var orchestrator: String?
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption
    @Flag(help: "Print the finished pipeline (its tree, answer and cost) as JSON instead of the answer.")
    var json = false
    @OptionGroup var fleet: FleetOptions

    func validate() throws {
        if task.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw ValidationError("the task is empty: say what the pipeline should do")
        }
        if json && fleet.asked {
            throw ValidationError("--json prints the pipeline's tree, which only a pipeline run here has: add --local")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        // With a fleet: the same command, run by a worker, queued behind the orchestrator's other pipelines; the
        // answer comes back as it does here. (--json, the tree, stays a run on this host.)
        if !json, let store = try FleetDispatch.queueing(storeOptions, fleet) {
            let name =
                try orchestrator ?? PipelineRunner.defaultOrchestrator(store: store, catalog: ModelCatalog.load()).0
            try FleetDispatch.run(
                .pipeline, agent: name,
                arguments: ["pipeline", "run"] + FleetDispatch.option("--orchestrator", name) + ["--", task],
                store: store, options: fleet, answerOnly: true, raw: rawOption.raw)
            return
        }
        let store = try storeOptions.open()
        try store.recoverPipelines()
        let catalog = try ModelCatalog.load()
        let name: String
        if let orchestrator {
            name = orchestrator
        } else {
            let (chosen, created) = try PipelineRunner.defaultOrchestrator(store: store, catalog: catalog)
            let model = try store.agent(named: chosen).model
            printError(
                created
                    ? "xclaw: no --orchestrator: created the default orchestrator agent \(chosen) (\(model)); change it "
                        + "with `xclaw agent set \(chosen)`"
                    : "xclaw: no --orchestrator: using the default orchestrator agent \(chosen) (\(model))")
            name = chosen
        }
        let client = ClaudeClient(configuration: try ClientConfiguration.load())
        var builder = AgentBuilder(store: store, client: client, catalog: catalog)
        builder.screenshotCap = try ImageSizing.configuredCap()
        builder.screenshotEncoding = try ImageEncoding.configured()
        let progress = PipelineProgress()
        let runner = PipelineRunner(
            builder: builder, roles: try RoleCatalog.load(), guardSettings: try GuardSettings.fromConfig(),
            events: { progress.handle($0) }, serviceEvents: { progress.handle($0) })
        let id = try runner.start(task: task, orchestrator: name)
        let record = CancellableRun.execute(onInterrupt: {
            _ = try? store.requestPipelineCancel(id, by: "Ctrl-C on xclaw pipeline (pid \(Invocation.current.pid))")
        }) {
            let record = await runner.run(id)
            await runner.waitUntilIdle()
            return record
        }
        if json {
            try emit(try PipelineTree(record, subtasks: store.subtasks(pipeline: id)), json: true) { "" }
        } else if let result = record.result {
            try emit(result, json: false, raw: rawOption.raw) { result }
        }
        switch record.status {
        case .completed: return
        case .cancelled: throw ExitCode(CancellableRun.interruptedStatus)
        default:
            throw AgentRunError.failed(
                "pipeline \(id) \(record.status.rawValue): \(record.error ?? "no reason recorded"); "
                    + "`xclaw pipeline show \(id)` shows its subtasks", .api)
        }
    }
}

/// `xclaw pipeline list`.
struct PipelineList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List pipelines, oldest first: status, subtasks, duration, cost, task (--json: each with its tree).",
        discussion: """
            Examples:
              xclaw pipeline list
              xclaw pipeline list --json
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let store = try storeOptions.open()
        try store.recoverPipelines()
        let trees = try store.pipelines().map { try PipelineTree($0, subtasks: store.subtasks(pipeline: $0.id)) }
        try emit(trees, json: json) {
            trees.isEmpty
                ? "no pipelines yet; start one with `xclaw pipeline \"TASK\"`"
                : trees.map { tree in
                    "\(tree.id)\t\(tree.status)\t\(tree.subtasks.count) subtask(s)\t\(PipelineTree.seconds(tree.duration_ms))"
                        + "\t\(PipelineTree.dollars(tree.cost_usd))\t\(UntrustedText.quoted(tree.task, limit: 60))"
                }.joined(separator: "\n")
        }
    }
}

/// `xclaw pipeline show ID`.
struct PipelineShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a pipeline's subtask tree: each node's status, duration and cost (--follow: until it ends).",
        discussion: """
            Exit: 0 shown; 1 no such pipeline; 2 bad usage.
            Examples:
              xclaw pipeline show 7  # each node's status, duration and cost
              xclaw pipeline show 7 --follow  # shown again as it changes, until it ends
            """)
    @Argument(help: "The pipeline's id (from `xclaw pipeline list`).") var id: Int64
    @Flag(name: [.long, .customLong("live")], help: "Show the tree again as it changes, until the pipeline ends.")
    var follow = false
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption
    @Flag(help: "Print JSON (with --follow: once, when it ends).") var json = false

    func run() throws {
        let store = try storeOptions.open()
        try store.recoverPipelines()
        var shown = ""
        while true {
            let tree = try PipelineTree(store.pipeline(id), subtasks: store.subtasks(pipeline: id))
            let ended = tree.status != PipelineStatus.running.rawValue
            if json {
                if ended || !follow { return try emit(tree, json: true) { "" } }
            } else {
                let text = tree.text
                if text != shown {
                    try emit(tree, json: false, raw: rawOption.raw) { (shown.isEmpty ? "" : "\n") + text }
                    shown = text
                }
                if ended || !follow { return }
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }
}

/// `xclaw pipeline cancel ID`.
struct PipelineCancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a pipeline: every run in flight stops (held keys and buttons released) and is recorded "
            + "cancelled, and the subtasks still waiting never start.",
        discussion: """
            It asks through the database, like `xclaw stop`, so it reaches a pipeline wherever it runs.
            Exit: 0 cancelled (or it had ended); 1 no such pipeline, or it did not end within --wait; 2 bad usage.
            Examples:
              xclaw pipeline cancel 7
              xclaw pipeline cancel 7 --wait 0  # ask and return at once
            """)
    @Argument(help: "The pipeline's id (from `xclaw pipeline list`).") var id: Int64
    @Option(help: "Seconds to wait for it to end (0: ask and return).") var wait: Double = 5
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    /// What the cancel did.
    struct Outcome: Encodable {
        var id: Int64
        var status: String
        var runs_stopped: Int
        var cancelled_ms: Int?
    }

    func validate() throws {
        guard wait >= 0, wait <= 3600 else { throw ValidationError("--wait takes seconds from 0 to 3600") }
    }

    func run() throws {
        let store = try storeOptions.open()
        try store.recoverPipelines()
        let asked = ContinuousClock.now
        let sessions = try store.requestPipelineCancel(
            id, by: "xclaw pipeline cancel (pid \(Invocation.current.pid))")
        var outcome = Outcome(
            id: id, status: try store.pipeline(id).status.rawValue, runs_stopped: 0, cancelled_ms: nil)
        if outcome.status != PipelineStatus.running.rawValue {
            return try emit(outcome, json: json) { "pipeline \(id) is not running (it ended \(outcome.status))" }
        }
        let deadline = asked + .milliseconds(Int64(wait * 1000))
        while wait > 0 {
            let pipeline = try store.pipeline(id)
            // Done when the pipeline ended, or at least every run that was asked has (the pipeline then ends at once).
            let runsEnded = try sessions.allSatisfy { try store.session($0.id).status.isFinal }
            if pipeline.status.isFinal || (runsEnded && !sessions.isEmpty) {
                outcome.status = pipeline.status.isFinal ? pipeline.status.rawValue : "cancelled"
                outcome.cancelled_ms = Int((ContinuousClock.now - asked).milliseconds.rounded())
                break
            }
            if ContinuousClock.now >= deadline { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        outcome.runs_stopped = sessions.count
        try emit(outcome, json: json) {
            outcome.cancelled_ms.map {
                "pipeline \(id) cancelled: \(sessions.count) run(s) stopped in \($0) ms"
            } ?? "pipeline \(id): cancel requested (\(sessions.count) run(s) asked to stop)"
        }
        if wait > 0, outcome.cancelled_ms == nil {
            throw AgentRunError.failed(
                "pipeline \(id) had not ended after \(wait) s: its process may be blocked; `xclaw pipeline show \(id)` "
                    + "shows its subtasks", .notFound)
        }
    }
}

/// A pipeline and its subtasks as `show` and `--json` print them.
struct PipelineTree: Encodable {
    /// One subtask.
    struct Node: Encodable {
        var id: Int64
        var parent: Int64?
        var role: String
        var task: String
        var agent: String
        var display: String?
        var status: String
        var result: String?
        var error: String?
        var steps: Int
        var cost_usd: Double
        var run: Int64?
        var started_at: String?
        var ended_at: String?
        var duration_ms: Int?
    }

    var id: Int64
    var orchestrator: String
    var agent: String
    var task: String
    var status: String
    var result: String?
    var error: String?
    var cost_usd: Double
    var started_at: String
    var ended_at: String?
    var duration_ms: Int
    var subtasks: [Node]

    init(_ record: PipelineRecord, subtasks: [SubtaskRecord]) {
        (id, orchestrator, agent, task) = (record.id, record.orchestrator, record.agent, record.task)
        (status, result, error) = (record.status.rawValue, record.result, record.error)
        // A running pipeline's cost so far: what its subtasks recorded.
        cost_usd = record.status.isFinal ? record.usd : subtasks.map(\.usd).reduce(0, +)
        started_at = StoreDate.format(record.startedAt)
        ended_at = record.endedAt.map(StoreDate.format)
        duration_ms = Self.milliseconds(record.startedAt, record.endedAt ?? Date())
        self.subtasks = subtasks.map { s in
            Node(
                id: s.id, parent: s.parent, role: s.role, task: s.task, agent: s.agent, display: s.display,
                status: s.status.rawValue, result: s.result, error: s.error, steps: s.steps, cost_usd: s.usd,
                run: s.session, started_at: s.startedAt.map(StoreDate.format),
                ended_at: s.endedAt.map(StoreDate.format),
                duration_ms: s.startedAt.map { Self.milliseconds($0, s.endedAt ?? Date()) })
        }
    }

    /// The tree, one line per node.
    var text: String {
        var lines = [
            "pipeline \(id)  \(status)  \(Self.seconds(duration_ms))  \(Self.dollars(cost_usd))  orchestrator \(orchestrator)  "
                + UntrustedText.quoted(task, limit: 80)
        ]
        for (i, node) in subtasks.enumerated() {
            let branch = i == subtasks.count - 1 ? "└─" : "├─"
            let time = node.duration_ms.map(Self.seconds) ?? "not started"
            lines.append(
                "\(branch) \(node.id) \(node.role)  \(node.status)  \(time)  \(Self.dollars(node.cost_usd))  "
                    + UntrustedText.quoted(node.task, limit: 60)
                    + (node.error.map { "  error: " + UntrustedText.quoted($0, limit: 120) } ?? ""))
        }
        if let error { lines.append("error: " + UntrustedText.quoted(error, limit: 300)) }
        return lines.joined(separator: "\n")
    }

    static func milliseconds(_ from: Date, _ to: Date) -> Int {
        max(0, Int((to.timeIntervalSince(from) * 1000).rounded()))
    }
    static func seconds(_ ms: Int) -> String { String(format: "%.1f s", Double(ms) / 1000) }
    static func dollars(_ usd: Double) -> String { String(format: "$%.4f", usd) }
}

/// Prints a pipeline's progress to stderr: a line as each subtask is delegated, starts and ends, and the notices
/// and failures of its runs.
final class PipelineProgress: Sendable {
    func handle(_ event: PipelineEvent) {
        switch event {
        case .started(let id, let orchestrator, let agent):
            printError("pipeline \(id): started (orchestrator \(orchestrator), its run is agent \(agent))")
        case .delegated(let s):
            printError(
                "pipeline \(s.pipeline): subtask \(s.id) \(s.role) delegated: \(UntrustedText.quoted(s.task, limit: 80))"
                    + (s.display.map { " on display \($0)" } ?? ""))
        case .subtaskStarted(let pipeline, let id, let role, _):
            printError("pipeline \(pipeline): subtask \(id) \(role) started")
        case .subtaskFinished(let s):
            let ms = s.startedAt.map { PipelineTree.milliseconds($0, s.endedAt ?? Date()) } ?? 0
            printError(
                "pipeline \(s.pipeline): subtask \(s.id) \(s.role) \(s.status.rawValue) in "
                    + "\(PipelineTree.seconds(ms)), \(PipelineTree.dollars(s.usd))"
                    + (s.error.map { ": " + UntrustedText.quoted($0, limit: 160) } ?? ""))
        case .finished(let p):
            let ms = PipelineTree.milliseconds(p.startedAt, p.endedAt ?? Date())
            printError(
                "pipeline \(p.id): \(p.status.rawValue) in \(PipelineTree.seconds(ms)), \(PipelineTree.dollars(p.usd))")
        }
    }

    func handle(_ event: ServiceEvent) {
        switch event {
        case .retry(let agent, let notice): printError("xclaw: \(agent): \(notice)")
        case .notice(let agent, let text): printError("xclaw: \(agent): \(text)")
        case .failed(let agent, let message, _, _): printError("xclaw: \(agent): \(message)")
        default: break
        }
    }
}

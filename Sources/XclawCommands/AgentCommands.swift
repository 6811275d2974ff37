import ArgumentParser
import Dispatch
import Foundation
import XclawAgent
import XclawBase
import XclawClient
import XclawCommandLine
import XclawMessages
import XclawRuntime
import XclawScreen
import XclawServices
import XclawSkills
import XclawStore

/// Where the agents' database is.
struct StoreOptions: ParsableArguments {
    @Option(
        help: """
            The database: an SQLite file or a postgres:// URL (default: $XCLAW_DATABASE_URL, else $XCLAW_DB, else \
            the config file's `database`, else $XDG_DATA_HOME/xclaw/xclaw.sqlite).
            """) var db: String?

    /// Opens it (creating it on first use) and, with `recover`, marks runs a killed process left behind as
    /// interrupted (a command that only queues a run for the fleet leaves that to the commands that run one).
    func open(reportRecovered: Bool = true, recover: Bool = true) throws -> AgentStore {
        let store = try AgentStore.at(db ?? AgentStore.defaultPath())
        guard recover else { return store }
        let recovered = try AgentService.recover(store: store)
        if reportRecovered {
            for (s, undone) in recovered {
                printError(
                    "xclaw: a run of \(s.agent) (session \(s.id)) was interrupted when its process ended; "
                        + (undone
                            ? "it had not answered yet, so its messages will be answered by the agent's next run"
                            : "what it had done is kept (a cut reply is marked partial); send a message to continue"))
            }
        }
        return store
    }
}

/// `xclaw agent`: create and delete agents.
struct AgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Create, change or delete an agent (its own model, tools, system prompt, display and history).",
        discussion: """
            Examples:
              xclaw agent create clerk --tools computer,screen_snapshot,type_text,memory --display :1
              xclaw agent set clerk --model claude-opus-5
            """,
        subcommands: [AgentCreate.self, AgentSet.self, AgentReset.self, AgentDelete.self])
}

/// `xclaw agent create`.
struct AgentCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create an agent.",
        discussion: """
            Examples:
              xclaw agent create clerk --tools computer,screen_snapshot,type_text --system clerk.txt --display :1
              xclaw agent create tester --tools computer --display new:1280x800 --setup 'xterm &'  # a display per run
            """)
    @Argument(help: "Its name: letters, digits, '.', '_', '-'.") var name: String
    @Option(help: "Model id (see `xclaw models`); default: the catalog's default.") var model: String?
    @Option(help: "Tools, comma-separated, or `all`; default: the safe set.") var tools: String?
    @Option(help: "A file with the agent's own instructions.") var system: String?
    @Option(
        help: ArgumentHelp(
            "The X display it works on (default: $DISPLAY when it runs); `new` or `new:WxH` (e.g. new:1280x800): a "
                + "private Xvfb and accessibility bus started for each run (default size 1920x1080) and stopped after it."
        )) var display: String?
    @Option(help: ArgumentHelp(RunDisplayOptions.setupHelp)) var setup: String?
    @Flag(help: "Its runs plan and log only: input tools inject nothing (`send --no-dry-run` overrides it).")
    var dryRun = false
    @Flag(help: "Its runs ask on the terminal before every input action (`send --no-confirm` overrides it).")
    var confirm = false
    @Option(help: ArgumentHelp(ApprovalHelp.text)) var approval: String?
    @Option(help: ArgumentHelp(EffortHelp.text)) var effort: String?
    @Option(help: ArgumentHelp(ThinkingHelp.text)) var thinking: String?
    @Option(help: ArgumentHelp(BusAllowHelp.text)) var dbusAllow: String?
    @Option(
        help: ArgumentHelp(
            "agent, or orchestrator: its pipelines (`xclaw pipeline --orchestrator NAME`) split a task into subtasks "
                + "it delegates to role agents; its tools default to none besides `delegate`.")) var kind: Kind = .agent
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print the agent as JSON.") var json = false

    /// The kinds a person creates (a pipeline's own agents are made by the pipeline).
    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case agent, orchestrator
    }

    func validate() throws {
        try ApprovalHelp.check(approval)
        try ThinkingHelp.parse(thinking)
        try RunDisplayOptions.check(display: display)
        try BusAllowHelp.check(dbusAllow)
    }

    func run() throws {
        let catalog = try ModelCatalog.load()
        let info = try catalog.model(model ?? catalog.default)
        try EffortHelp.check(effort, info)
        try ThinkingHelp.check(thinking, info, effort: effort)
        // An orchestrator works through its subtasks' agents: no screen tools unless asked for.
        let names = kind == .orchestrator && tools == nil ? [] : try ToolSelection.names(tools)
        let prompt = try system.map(readSystemFile) ?? ""
        let store = try storeOptions.open()
        var config = AgentConfig(
            name: name, model: info.id, systemPrompt: prompt, tools: names, display: display,
            memoryNotes: "", createdAt: Date(), dryRun: dryRun, confirm: confirm)
        config.setup = setup.flatMap { $0.isEmpty ? nil : $0 }
        config.kind = kind == .orchestrator ? .orchestrator : .agent
        config.approval = try approval.map(ApprovalHelp.normalized)
        config.effort = effort
        config.thinking = try ThinkingHelp.parse(thinking)?.rawValue
        config.dbusAllow = try BusAllowHelp.normalized(dbusAllow)
        try BusAllowHelp.requireList(tools: config.tools, allow: config.dbusAllow)
        try store.createAgent(config)
        let gates = (dryRun ? ", dry run" : "") + (confirm ? ", asks before input" : "")
        let created = try store.agent(named: name)
        try emit(created, json: json) {
            "created \(kind == .orchestrator ? "orchestrator" : "agent") \(name): \(info.id), tools "
                + (kind == .orchestrator ? (names + ["delegate"]) : names).joined(separator: ",") + gates
        }
    }
}

/// The `--effort` option of `run`, `send` and `agent create|set`.
enum EffortHelp {
    /// Its help.
    static let text =
        "How much effort the model spends (output_config.effort): low, medium, high, xhigh or max, as the model "
        + "takes them (`xclaw models`); default: the model's own."

    /// Refuses a level the model does not take (exit 2), naming the ones it does.
    static func check(_ level: String?, _ model: ModelInfo) throws {
        guard let level else { return }
        do { _ = try model.checkEffort(level) } catch { throw ValidationError("--effort: \(error)") }
    }
}

/// The `--thinking` option of `run`, `send` and `agent create|set`.
enum ThinkingHelp {
    /// Its help.
    static let text =
        "Extended thinking: on (sent in the form the model takes: adaptive, or a token budget), off, or auto (send "
        + "nothing: the model's own default); default: `thinking` in the config file, else auto."

    /// The mode, or a usage error (exit 2).
    @discardableResult
    static func parse(_ text: String?) throws -> ThinkingMode? {
        guard let text else { return nil }
        do { return try ThinkingMode.parse(text) } catch { throw ValidationError("--thinking: \(error)") }
    }

    /// Refuses a setting the model does not take (exit 2), saying what it takes.
    static func check(_ text: String?, _ model: ModelInfo, effort: String?) throws {
        guard let mode = try parse(text) else { return }
        do { _ = try model.thinkingPlan(mode, effort: effort, maxTokens: 4096) } catch {
            throw ValidationError("--thinking: \(error)")
        }
    }
}

/// The `--approval` option of `agent create|set`.
enum ApprovalHelp {
    /// Its help.
    static let text =
        "The kinds of action its runs must have approved: all, none, or a comma-separated list of "
        + ApprovalKind.allCases.map(\.rawValue).joined(separator: ", ")
        + " (default: `approval` in the config file, else all)."

    /// Refuses a policy that does not parse (exit 2), naming the valid kinds.
    static func check(_ text: String?) throws {
        guard let text else { return }
        do { _ = try ApprovalPolicy.parse(text) } catch { throw ValidationError("--approval: \(error)") }
    }

    /// The policy as stored (`all`, `none`, or the kinds in a fixed order).
    static func normalized(_ text: String) throws -> String { try ApprovalPolicy.parse(text).text }
}

/// The `--dbus-allow` option of `agent create|set` and `run`.
enum BusAllowHelp {
    /// Its help.
    static let text =
        "The bus names its dbus_call tool may reach: well-known names, or a family such as org.mpris.MediaPlayer2.*, "
        + "comma-separated (default: none, so dbus_call cannot be used)."

    /// Refuses a list that does not parse (exit 2), saying how to write one.
    static func check(_ text: String?) throws {
        guard let text else { return }
        do { _ = try BusAllowList.parse(text) } catch { throw ValidationError("--dbus-allow: \(error)") }
    }

    /// The list as stored (nil when empty).
    static func normalized(_ text: String?) throws -> String? {
        guard let text else { return nil }
        let list = try BusAllowList.parse(text)
        return list.isEmpty ? nil : list.text
    }

    /// Refuses `dbus_call` among the tools with nothing allowed (exit 2): it could call nothing.
    static func requireList(tools: [String], allow: String?) throws {
        if tools.contains("dbus_call"), allow == nil {
            throw ValidationError(
                "dbus_call needs --dbus-allow with the bus names it may call (e.g. --dbus-allow "
                    + "'org.mpris.MediaPlayer2.*'), or leave it out of --tools")
        }
    }
}

/// What `--display new[:WxH]` and `--setup` share on `agent`, `schedule add` and `run`.
enum RunDisplayOptions {
    /// The help of `--setup`.
    static let setupHelp =
        "A shell command each run starts with, before the model is asked anything: /bin/sh -c, in the caller's "
        + "directory, with DISPLAY (and the display's D-Bus session bus) set to the run's display, e.g. \"xterm &\". "
        + "It must exit within 60 s (put apps in the background with &); a non-zero exit fails the run. What it "
        + "leaves running is ended when the run ends."

    /// Refuses a malformed `new:` display as bad usage, saying how to write it.
    static func check(display: String?) throws {
        do { _ = try RunDisplay.privateSize(display) } catch let error as RunDisplayError {
            throw ValidationError("--display: \(error.description)")
        }
    }
}

/// The text of a `--system FILE`; an unreadable file is bad usage.
func readSystemFile(_ path: String) throws -> String {
    do { return try String(contentsOfFile: Invocation.current.resolve(path), encoding: .utf8) } catch {
        throw ValidationError("cannot read --system \(path): \(error.localizedDescription)")
    }
}

/// `xclaw agent set`: change what `agent create` chose; what is not named stays.
struct AgentSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change an agent's model, tools, instructions, display or input gates.",
        discussion: """
            Examples:
              xclaw agent set careful --no-dry-run --confirm  # act, but ask before each input action
              xclaw agent set bot --approval delete,send
            """)
    @Argument(help: "The agent.") var name: String
    @Option(help: "Model id (see `xclaw models`).") var model: String?
    @Option(help: "Tools, comma-separated, or `all`.") var tools: String?
    @Option(help: "A file with the agent's own instructions (an empty file removes them).") var system: String?
    @Option(
        help: ArgumentHelp(
            "The X display it works on; `new` or `new:WxH` for a private one per run; `none` for $DISPLAY when it "
                + "runs.")) var display: String?
    @Option(help: ArgumentHelp(RunDisplayOptions.setupHelp + " An empty one (\"\") removes it.")) var setup: String?
    @Flag(inversion: .prefixedNo, help: "Its runs plan and log only, or act.") var dryRun: Bool?
    @Flag(inversion: .prefixedNo, help: "Its runs ask before every input action, or do not.") var confirm: Bool?
    @Option(help: ArgumentHelp(ApprovalHelp.text + " `default`: the config file's again.")) var approval: String?
    @Option(help: ArgumentHelp(EffortHelp.text + " `default`: the model's again.")) var effort: String?
    @Option(help: ArgumentHelp(ThinkingHelp.text + " `default`: the config file's again.")) var thinking: String?
    @Option(help: ArgumentHelp(BusAllowHelp.text + " It replaces the list; `none` empties it.")) var dbusAllow: String?
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print the agent as JSON.") var json = false

    func validate() throws {
        try BusAllowHelp.check(dbusAllow)
        if approval != "default" { try ApprovalHelp.check(approval) }
        if thinking != "default" { try ThinkingHelp.parse(thinking) }
        try RunDisplayOptions.check(display: display)
    }

    func run() throws {
        let store = try storeOptions.open()
        var config = try store.agent(named: name)
        // Read once, and only when a change needs it: it reads the overlay and the API cache from disk.
        lazy var catalog = Result { try ModelCatalog.load() }
        if let model { config.model = try catalog.get().model(model).id }
        // The effort (new, or kept) must suit the model (new, or kept).
        let level = effort == "default" ? nil : effort ?? config.effort
        if effort != nil || model != nil { try EffortHelp.check(level, try catalog.get().model(config.model)) }
        let thought = thinking == "default" ? nil : try ThinkingHelp.parse(thinking)?.rawValue ?? config.thinking
        if thinking != nil || model != nil || effort != nil {
            try ThinkingHelp.check(thought, try catalog.get().model(config.model), effort: level)
        }
        if let tools { config.tools = try ToolSelection.names(tools) }
        if let system { config.systemPrompt = try readSystemFile(system) }
        if let display { config.display = display == "none" ? nil : display }
        if let setup { config.setup = setup.isEmpty ? nil : setup }
        if let dryRun { config.dryRun = dryRun }
        if let confirm { config.confirm = confirm }
        if let dbusAllow { config.dbusAllow = try BusAllowHelp.normalized(dbusAllow) }
        try BusAllowHelp.requireList(tools: config.tools, allow: config.dbusAllow)
        try store.updateAgent(config)
        if dbusAllow != nil { try store.setBusAllow(agent: name, names: config.dbusAllow) }
        if effort != nil { try store.setEffort(agent: name, effort: level) }
        if thinking != nil { try store.setThinking(agent: name, thinking: thought) }
        if let approval {
            try store.setApproval(agent: name, policy: approval == "default" ? nil : ApprovalHelp.normalized(approval))
            config = try store.agent(named: name)
        }
        let gates = [config.dryRun ? "dry run" : nil, config.confirm ? "asks before input" : nil].compactMap { $0 }
        try emit(config, json: json) {
            "agent \(name): \(config.model), tools \(config.tools.joined(separator: ","))"
                + (gates.isEmpty ? "" : ", " + gates.joined(separator: ", "))
        }
    }
}

/// `xclaw agent reset`: a long-lived agent starts its conversation afresh.
struct AgentReset: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Start an agent's conversation afresh: its next run sends nothing from before (history keeps it).",
        discussion: """
            Its model, tools, memory and history stay; `xclaw history` and reports still show every earlier message. \
            Exit: 0 reset; 1 no such agent, or one of its runs is in flight (stop it first).
            Examples:
              xclaw agent reset clerk
            """)
    @Argument(help: "The agent.") var name: String
    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
        let store = try storeOptions.open()
        let dropped: Int
        do { dropped = try store.resetContext(agent: name) } catch StoreError.invalidArgument(let why) {
            throw AgentRunError.failed(why, .notFound)
        }
        writeOut(
            "agent \(name) starts afresh: \(dropped) earlier message(s) stay in its history but are no longer sent\n")
    }
}

/// `xclaw agent delete`.
struct AgentDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an agent and its history.",
        discussion: """
            Examples:
              xclaw agent delete notes
            """)
    @Argument(help: "The agent.") var name: String
    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
        try storeOptions.open().deleteAgent(named: name)
        writeOut("deleted agent \(name)\n")
    }
}

/// `xclaw agents`.
struct Agents: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agents", abstract: "List the agents.",
        discussion: """
            The one-shot agents `xclaw run` records its runs as (`run-<time>-<pid>`, `one_shot` in --json) and the \
            pipelines' own agents are left out unless --all is given.
            Examples:
              xclaw agents
              xclaw agents --all --json  # one-shot runs' and pipelines' own agents too
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false
    @Flag(
        help:
            "Include the one-shot agents of `xclaw run` and pipelines' own agents (`xclaw history` shows each one)."
    )
    var all = false

    func run() throws {
        let stored = try storeOptions.open().agents()
        let agents = stored.filter { all || Self.listed($0) }
        let hidden = stored.count - agents.count
        try emit(agents, json: json) {
            agents.isEmpty
                ? "no agents: create one with `xclaw agent create NAME`"
                : agents.map {
                    let gates = [
                        $0.dryRun ? "dry-run" : nil, $0.confirm ? "confirm" : nil, $0.oneShot ? "one-shot" : nil,
                    ]
                    .compactMap { $0 }
                    return "\($0.name)\t\($0.model)\t\($0.display ?? "$DISPLAY")\t\($0.tools.joined(separator: ","))"
                        + (gates.isEmpty ? "" : "\t" + gates.joined(separator: ","))
                }
                .joined(separator: "\n")
        }
        // A note for the person, not a row: scripts reading the list see only the agents.
        if !json && hidden > 0 {
            printError("xclaw: \(hidden) one-shot or pipeline agent(s) not listed; --all lists them")
        }
    }

    /// Whether a default listing shows the agent: not a one-shot run's, not a pipeline's own.
    static func listed(_ agent: AgentConfig) -> Bool { !agent.oneShot && agent.kind != .pipeline }
}

/// `send` and `chat` override an agent's stored input gates for one call.
struct GateOptions: ParsableArguments {
    @Flag(
        inversion: .prefixedNo,
        help: "Plan and log only, or not, for this call (default: the agent's setting from `agent create --dry-run`).")
    var dryRun: Bool?
    @Flag(
        inversion: .prefixedNo,
        help: "Ask on the terminal before each input action, or not (default: the agent's setting).")
    var confirm: Bool?

    /// The gates of `config` with this call's overrides; refuses asking without a terminal to ask on.
    func context(for config: AgentConfig) throws -> ToolContext {
        let dryRun = self.dryRun ?? config.dryRun
        let confirm = self.confirm ?? config.confirm
        if confirm && !dryRun && !TerminalPrompt.available {
            throw ValidationError(
                "agent \(config.name) asks before each input action (--confirm) and there is no terminal to ask on: "
                    + "run it in a terminal, or pass --no-confirm (or --dry-run)")
        }
        let ask: @Sendable (String) async -> Bool = { question in
            confirm ? await TerminalPrompt.ask("xclaw: \(question)? [y/N] ") : true
        }
        return ToolContext(dryRun: dryRun, confirm: ask, ask: TerminalPrompt.approver)
    }
}

/// Tool names from `--tools`, from the tool table; unknown names are bad usage.
enum ToolSelection {
    static func names(_ tools: String?) throws -> [String] {
        do { return try SkillCatalog.select(tools) } catch SkillError.unknownTools(let unknown, let valid) {
            throw ValidationError(
                "unknown tool(s) \(unknown.joined(separator: ", ")); valid: \(valid.joined(separator: ", "))")
        }
    }
}

/// Builds the agent service `send` and `chat` use, through the runtime's one builder: tools per agent on its display
/// (screen tools take turns per display), memory in the store, events printed like `xclaw run` prints them.
enum ServiceFactory {
    /// What `send` and `chat` start with: the store (an unknown agent is refused before anything runs), a printer,
    /// and the service; a closed output pipe must not kill a run between an action and its record.
    static func open(
        _ options: StoreOptions, agent: String, raw: Bool, gates: GateOptions, effort: String? = nil,
        thinking: String? = nil
    ) throws -> (AgentStore, RunPrinter, AgentService) {
        signal(SIGPIPE, SIG_IGN)
        let store = try options.open()
        let config = try store.agent(named: agent)
        if config.kind == .orchestrator {
            // Its `delegate` tool exists only in a pipeline's run.
            throw ValidationError(
                "agent \(agent) is an orchestrator: give it a task with `xclaw pipeline \"TASK\" --orchestrator \(agent)`"
            )
        }
        _ = try gates.context(for: config)  // refuse an impossible gate before anything is sent
        let catalog = try ModelCatalog.load()  // once: it reads the overlay and the API cache from disk
        let info = try catalog.model(config.model)
        try EffortHelp.check(effort, info)
        try ThinkingHelp.check(thinking, info, effort: effort ?? config.effort)
        let mode = try ThinkingHelp.parse(thinking)
        let printer = RunPrinter(raw: raw)
        let client = ClaudeClient(configuration: try ClientConfiguration.load())
        var builder = AgentBuilder(store: store, client: client, catalog: catalog)
        builder.screenshotCap = try ImageSizing.configuredCap()
        builder.screenshotEncoding = try ImageEncoding.configured()
        let service = builder.service(
            runOptions: { model, system in
                var options = RunOptions(model: model, system: system)
                options.effort = effort
                options.thinking = mode
                return options
            },
            context: { config in (try? gates.context(for: config)) ?? ToolContext(dryRun: true) },
            guardSettings: try GuardSettings.fromConfig(),
            events: { printer.handle($0) })
        return (store, printer, service)
    }
}

/// Prints service events: reply text to stdout as it streams, the rest to stderr.
/// Safe because its lists are touched only under `lock`, and `streamed` is itself safe.
final class RunPrinter: @unchecked Sendable {
    private let streamed: StreamedText
    private let lock = NSLock()
    private var failures: [(String, ExitStatus)] = []
    private var outcomes: [RunOutcome] = []
    private var reports: [StepReport] = []
    let quiet: Bool

    init(quiet: Bool = false, raw: Bool = false) {
        self.quiet = quiet
        streamed = StreamedText(raw: raw)
    }

    func handle(_ event: ServiceEvent) {
        switch event {
        case .text(_, let t): if !quiet { streamed.write(t) }
        case .retry(_, let notice):
            streamed.restart()
            printError("xclaw: \(notice)")
        case .tool(_, let name, let input):
            streamed.breakLine()
            printError("  → \(name) \(ToolSummary.describe(name, input))")
        case .toolError(_, _, let message):
            printError("    ✗ \(message.prefix(200))")
        case .step(_, let step):
            streamed.endReply()
            lock.withLock { reports.append(step) }
            let what = step.context == StepReport.summarised ? "summary of earlier turns" : "step \(step.step)"
            printError(
                "  · \(what): \(ToolSummary.usage(step.usage)) · $\(String(format: "%.4f", step.costUSD))"
                    + " · \(step.requestBytes / 1024) KB, \(step.images) image(s) · model \(Int(step.modelMs)) ms")
        case .finished(_, _, let outcome):
            streamed.endReply()
            lock.withLock { outcomes.append(outcome) }
            if case .stopped(let why) = outcome { printError("xclaw: the run was \(why)") }
        case .notice(let agent, let text):
            streamed.breakLine()
            printError("xclaw: \(agent): \(text)")
        case .failed(let agent, let message, let willRetry, let status):
            streamed.endReply()
            if willRetry { printError("xclaw: \(agent): \(message) (will retry)") }
            if !willRetry { lock.withLock { failures.append((message, status)) } }
        }
    }

    /// Ends an open line.
    func finish() { streamed.endReply() }

    /// Failures that will not be retried, with the exit status each calls for (printed once, by the command).
    var finalFailures: [(message: String, status: ExitStatus)] { lock.withLock { failures.map { ($0.0, $0.1) } } }
    /// Every step reported, in order.
    var steps: [StepReport] { lock.withLock { reports } }
    /// The outcomes of the runs that ended.
    var finishedOutcomes: [RunOutcome] { lock.withLock { outcomes } }
}

/// `xclaw send`: queue a message for an agent and stream its reply.
struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a message to an agent and stream its reply (the message and reply are stored).",
        discussion: """
            Exit: 0 replied; 1 no such agent, or its setup command failed; 4 the reply failed; 130 interrupted (or \
            stopped by `xclaw stop`, the stop hotkey or the failsafe), 143 on SIGTERM (the turn is cancelled and \
            recorded). With a fleet (workers up on the PostgreSQL database) the message is queued and a worker \
            answers it; the reply streams here, and its exit status is this command's (5 when its worker was lost).
            Examples:
              xclaw send clerk 'File the invoice in the open dialog as INV-2041'  # streams the reply
              xclaw send careful 'Try it for real' --no-dry-run  # this message only
            """)
    /// The exit status of a run an emergency stop ended: what Ctrl-C gives, since a person stopped it.
    static let stoppedStatus = ExitStatus.interrupted
    @Argument(help: "The agent.") var name: String
    @Argument(help: "The message.") var message: String
    @Option(help: "Who the message is from.") var sender = "user"
    @Option(help: ArgumentHelp(EffortHelp.text + " For this message only (default: the agent's).")) var effort: String?
    @Option(help: ArgumentHelp(ThinkingHelp.text + " For this message only (default: the agent's)."))
    var thinking: String?
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption
    @OptionGroup var gates: GateOptions
    @OptionGroup var fleet: FleetOptions

    func run() throws {
        if let store = try FleetDispatch.queueing(storeOptions, fleet) {
            // The same command, run by a worker; the options that change the run go with it.
            // `--option=value`, so a value starting with "-" stays a value on the worker.
            var arguments = ["send"] + FleetDispatch.option("--sender", sender)
            if let effort { arguments += FleetDispatch.option("--effort", effort) }
            if let thinking { arguments += FleetDispatch.option("--thinking", thinking) }
            if let dryRun = gates.dryRun { arguments.append(dryRun ? "--dry-run" : "--no-dry-run") }
            if let confirm = gates.confirm { arguments.append(confirm ? "--confirm" : "--no-confirm") }
            try FleetDispatch.run(
                .send, agent: name, arguments: arguments + ["--", name, message], store: store, options: fleet,
                raw: rawOption.raw)
            return
        }
        let (store, printer, service) = try ServiceFactory.open(
            storeOptions, agent: name, raw: rawOption.raw, gates: gates, effort: effort, thinking: thinking)
        let (name, message, sender) = (self.name, self.message, self.sender)
        let interrupted = CancelFlag()
        let result: Result<Int64, any Error> = CancellableRun.execute(onInterrupt: {
            interrupted.set()
            Task { await service.queue.cancel(agent: name) }
        }) {
            do {
                let id = try await service.send(agent: name, text: message, sender: sender)
                await service.waitUntilIdle()
                return .success(id)
            } catch { return .failure(error) }
        }
        printer.finish()
        let sent = try result.get()
        if interrupted.isSet { throw ExitCode(CancellableRun.interruptedStatus) }
        if printer.finishedOutcomes.contains(where: { if case .stopped = $0 { true } else { false } }) {
            throw ExitCode(Self.stoppedStatus)
        }
        if let failure = printer.finalFailures.last { throw AgentRunError.failed(failure.message, failure.status) }
        if printer.finishedOutcomes.isEmpty, try store.state(agent: name).cursor >= sent {
            // Another xclaw process took the message into its own run while this one waited for the agent.
            printError(
                "xclaw: \(name) answered this message in a run of another xclaw process; "
                    + "see `xclaw history \(name)`")
        }
    }
}

/// A reply that failed for good, with the exit status of its cause (4 for API errors).
enum AgentRunError: ClassifiedError {
    case failed(String, ExitStatus)
    var exitStatus: ExitStatus {
        switch self {
        case .failed(_, let status): return status
        }
    }
    var description: String {
        switch self {
        case .failed(let why, _): return why
        }
    }
}

/// `xclaw chat`: talk to an agent line by line.
struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Talk to an agent interactively: each line is a message; Ctrl-C cancels the reply in progress "
            + "(not the program); Ctrl-D or /exit quits.",
        discussion: """
            Examples:
              xclaw chat notes
            """)
    @Argument(help: "The agent.") var name: String
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption
    @OptionGroup var gates: GateOptions

    func run() throws {
        let (_, printer, service) = try ServiceFactory.open(storeOptions, agent: name, raw: rawOption.raw, gates: gates)
        let name = self.name
        let turn = ResultBox<CancelFlag>()
        let watch = Interrupt.watch([SIGINT]) { _ in
            if let current = turn.value, !current.isSet {
                current.set()
                printError("\nxclaw: cancelling this reply")
                Task { await service.queue.cancel(agent: name) }
            } else {
                printError("\n(Ctrl-D or /exit to quit)")
            }
        }
        defer { watch.stop() }
        while true {
            Invocation.current.write(.stderr, Data("\(name)> ".utf8))
            guard let line = Invocation.current.readLine() else { break }
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            if text == "/exit" || text == "/quit" { break }
            turn.value = CancelFlag()
            let (_, wait) = Blocking.start { () async -> Result<Void, any Error> in
                do {
                    try await service.send(agent: name, text: text)
                    await service.waitUntilIdle()
                    return .success(())
                } catch { return .failure(error) }
            }
            let result = wait()
            turn.value = nil
            printer.finish()
            if case .failure(let error) = result { printError("xclaw: \(error)") }
        }
    }
}

/// `xclaw history`.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show an agent's stored messages (partial and failed ones marked).",
        discussion: """
            Examples:
              xclaw history clerk --last 20
              xclaw history clerk --json
            """)
    @Argument(help: "The agent.") var name: String
    @Option(help: "Only the last N messages.") var last: Int?
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption
    @Flag(help: "Print JSON (as `xclaw export --format json`).") var json = false

    func validate() throws { try requireRange(last, 0...Int.max, "--last", "messages") }

    func run() throws {
        let store = try storeOptions.open()
        _ = try store.agent(named: name)
        // Batch prompts repeat the chat messages they carried to the model: the history shows the messages.
        var messages = Transcript.shown(try store.messages(agent: name).filter { !Conversation.isBatch($0) })
        if let last { messages = Array(messages.suffix(max(0, last))) }
        if json {
            try emit(messages.map(ExportedMessage.init), json: true) { "" }
            return
        }
        for m in messages {
            let who = Transcript.who(m)
            let mark = m.status == .complete ? "" : " [\(m.status.rawValue)]"
            writeOut(
                TerminalOutput.clean(
                    "#\(m.id) \(ExportedMessage.timestamp(m.createdAt)) \(who)\(mark): \(Transcript.plain(m.content))",
                    raw: rawOption.raw) + "\n")
        }
    }
}

/// One message as `export --format json` and `history --json` print it.
struct ExportedMessage: Codable {
    var id: Int64
    var role: String
    var sender: String?
    var status: String
    var timestamp: String
    var content: JSONValue

    init(_ m: StoredMessage) {
        id = m.id
        role = m.role.rawValue
        sender = m.sender
        status = m.status.rawValue
        timestamp = Self.timestamp(m.createdAt)
        content = .array(m.content.map(\.json))
    }

    static func timestamp(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }
}

/// Text renderings of stored content.
enum Transcript {
    /// The messages as any view shows them: text typed into a password field masked (`SecretText`).
    static func shown(_ messages: [StoredMessage]) -> [StoredMessage] {
        zip(messages, SecretText.masking(messages.map(\.content))).map { message, content in
            var shown = message
            shown.content = content
            return shown
        }
    }

    /// Who wrote a stored message: its sender, "tool results" or "assistant".
    static func who(_ m: StoredMessage) -> String {
        m.role == .user ? (Conversation.isToolResults(m) ? "tool results" : (m.sender ?? "user")) : "assistant"
    }

    /// One line per block, for the terminal.
    static func plain(_ content: [ContentBlock]) -> String {
        content.map { block -> String in
            switch block {
            case .text(let t): return t
            case .image: return "[image]"
            case .toolUse(_, let name, let input): return "[\(name) \(input.jsonText)]"
            case .toolResult(let r):
                return "[result\(r.isError ? " (error)" : "")] " + plain(r.content)
            case .thinking: return "[thinking]"
            case .redactedThinking: return "[redacted thinking]"
            case .other(let v): return "[\(v["type"]?.string ?? "block")]"
            }
        }.joined(separator: " ")
    }

    /// Markdown: every text block verbatim, tool calls as JSON code blocks, images noted.
    static func markdown(agent: String, _ messages: [StoredMessage]) -> String {
        var out = "# xclaw agent \(agent)\n"
        for m in messages {
            let who = who(m)
            let mark = m.status == .complete ? "" : " (\(m.status.rawValue))"
            out += "\n## #\(m.id) \(who)\(mark) — \(ExportedMessage.timestamp(m.createdAt))\n\n"
            out += blocks(m.content)
        }
        return out
    }

    private static func blocks(_ content: [ContentBlock]) -> String {
        var out = ""
        for block in content {
            switch block {
            case .text(let t): out += t + "\n\n"
            case .image: out += "*[image]*\n\n"
            case .toolUse(_, let name, let input): out += "Tool call `\(name)`:\n\n```json\n\(input.jsonText)\n```\n\n"
            case .toolResult(let r): out += "Result\(r.isError ? " (error)" : ""):\n\n" + blocks(r.content)
            case .thinking(let t, _): out += "> thinking: " + t.replacingOccurrences(of: "\n", with: "\n> ") + "\n\n"
            case .redactedThinking: out += "*[redacted thinking]*\n\n"
            case .other(let v): out += "```json\n\(v.jsonText)\n```\n\n"
            }
        }
        return out
    }
}

/// `xclaw export`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Export an agent's conversation as Markdown or JSON.",
        discussion: """
            Examples:
              xclaw export clerk -o clerk.md
              xclaw export clerk --format json
            """)
    enum Format: String, ExpressibleByArgument, CaseIterable { case md, json }
    @Argument(help: "The agent.") var name: String
    @Option(help: "md or json.") var format: Format = .md
    @Option(name: .shortAndLong, help: "Write to this file instead of stdout.") var output: String?
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption

    func run() throws {
        let store = try storeOptions.open()
        _ = try store.agent(named: name)
        let messages = Transcript.shown(try store.messages(agent: name).filter { !Conversation.isBatch($0) })
        let data: Data
        switch format {
        case .md: data = Data(Transcript.markdown(agent: name, messages).utf8)
        case .json:
            let encoder = JSONEncoder.xclaw
            encoder.outputFormatting.insert(.prettyPrinted)
            data = try encoder.encode(messages.map(ExportedMessage.init)) + Data("\n".utf8)
        }
        if let output {
            // Private, as the database is: the whole conversation, screen text included.
            do { try PrivateFiles.write(data, to: Invocation.current.resolve(output)) } catch let error
                as PrivateFileError
            {
                throw ValidationError("cannot write \(output): \(error.reason)")
            }
            printError("xclaw: wrote \(messages.count) messages to \(output)")
        } else {
            writeOut(
                TerminalOutput.passesRaw(rawOption.raw)
                    ? data : Data(UntrustedText.forTerminal(String(decoding: data, as: UTF8.self)).utf8))
        }
    }
}

/// `xclaw usage`.
struct UsageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usage",
        abstract: "Tokens and USD per agent, or per run of one agent.",
        discussion: """
            Per agent, the one-shot agents of `xclaw run` and pipelines' own agents are left out unless --all is \
            given (their total is noted on stderr).
            Examples:
              xclaw usage
              xclaw usage clerk --json  # each of its runs
            """)
    @Argument(help: "One agent: list its runs.") var name: String?
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "Per agent: include the one-shot agents of `xclaw run` and pipelines' own agents.") var all = false

    func run() throws {
        let store = try storeOptions.open()
        if let name {
            _ = try store.agent(named: name)
            let runs = try store.usageBySession(agent: name)
            try emit(runs.map(RunUsage.init), json: json) {
                runs.isEmpty
                    ? "no runs yet"
                    : runs.map { r in
                        "session \(r.session.id) \(r.session.status.rawValue): \(ToolSummary.usage(r.usage)) · $\(String(format: "%.4f", r.usd))"
                    }.joined(separator: "\n")
            }
        } else {
            let listed = Set(try store.agents().filter { all || Agents.listed($0) }.map(\.name))
            let every = try store.usageSummary()
            let rows = every.filter { listed.contains($0.agent) }
            try emit(rows, json: json) {
                rows.isEmpty
                    ? "no usage yet"
                    : rows.map { r in
                        "\(r.agent): \(r.requests) request(s) in \(r.sessions) run(s); \(ToolSummary.usage(r.usage)) · "
                            + "$\(String(format: "%.4f", r.usd))"
                    }.joined(separator: "\n")
            }
            let hidden = every.filter { !listed.contains($0.agent) }
            if !json && !hidden.isEmpty {
                printError(
                    "xclaw: \(hidden.count) one-shot or pipeline agent(s) not listed ("
                        + "$\(String(format: "%.4f", hidden.reduce(0) { $0 + $1.usd }))); --all lists them")
            }
        }
    }
}

/// One run's usage, for `usage NAME --json`.
struct RunUsage: Encodable {
    var run: Int64
    var status: String
    var requests: Int
    var usage: Usage
    var cost_usd: Double

    init(_ r: SessionUsage) {
        run = r.session.id
        status = r.session.status.rawValue
        requests = r.requests
        usage = r.usage
        cost_usd = r.usd
    }
}

/// `xclaw memory AGENT`: the notes an agent keeps with its `memory` tool.
struct MemoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "memory", abstract: "List the notes an agent keeps with its memory tool.",
        discussion: """
            Exit: 0 listed (no notes is not an error); 1 no such agent; 2 bad usage.
            Examples:
              xclaw memory clerk
              xclaw memory clerk --json
            """)
    @Argument(help: "The agent.") var name: String
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON ({key: value}).") var json = false

    func run() throws {
        let store = try storeOptions.open()
        _ = try store.agent(named: name)
        let notes = try store.memoryList(agent: name)
        try emit(notes, json: json) {
            notes.isEmpty
                ? "\(name) keeps no notes"
                : notes.keys.sorted().map { "\(UntrustedText.quoted($0))\t\(UntrustedText.quoted(notes[$0] ?? ""))" }
                    .joined(separator: "\n")
        }
    }
}

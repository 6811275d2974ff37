import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawClient
import XclawCommandLine
import XclawMessages
import XclawPerception
import XclawRuntime
import XclawScreen
import XclawSkills
import XclawStore

/// `xclaw run`: Claude drives the screen until the task is done.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Let Claude do a task on the screen: it sees screenshots and acts through xclaw's tools.",
        discussion: """
            Needs ANTHROPIC_API_KEY (or `api_key = ...` in ~/.config/xclaw/config, mode 600); ANTHROPIC_BASE_URL \
            points it at a proxy. The model's text streams to stdout; each step's tokens and cost, retries and the \
            summary go to stderr. Every action is written to a JSON-lines action log (--log). Ctrl-C stops the run \
            at once and still answers every pending tool call, so the conversation stays valid; a second Ctrl-C \
            exits immediately.
            The run is recorded as a one-shot agent (`xclaw history run-…`, `xclaw runs`, `xclaw report`), which \
            `xclaw agents` and the web view's dashboard list only when asked for all (`--all`).
            --display new (or new:WxH) runs it on a private Xvfb with an accessibility bus, started for the run \
            (1920x1080 unless given) and stopped after it, with whatever --setup started on it.
            Tools (--tools, comma-separated; default: the safe set): \(SkillCatalog.allToolNames.joined(separator: ", ")).
            Exit: 0 done; 1 step limit reached, the model refused or the --setup command failed; 2 bad usage; \
            3 display; 4 API error (4 also for an invalid API key); 130 interrupted or stopped (`xclaw stop`, the stop hotkey, the failsafe; \
            143 on SIGTERM).
            With a fleet (workers up on the PostgreSQL database) the run is queued and a worker does it; its replies \
            stream here and its exit status is this command's (5 when its worker was lost). --confirm, --log and \
            --json need --local (a run on this host).
            Examples:
              xclaw run 'Open xcalc and compute 12*34' --display :1
              xclaw run 'Answer the dialog' --display new:1280x800 --setup 'zenity --question &'  # a display of its own
            """)

    @Argument(help: "What to do, in words.") var task: String
    @Option(help: "Model id (see `xclaw models`); default: the catalog's default.") var model: String?
    @Option(help: "Stop after this many model requests.") var maxSteps = 50
    @Option(help: "Enabled tools, comma-separated, or `all`; default: the safe set.") var tools: String?
    @Option(help: ArgumentHelp(BusAllowHelp.text)) var dbusAllow: String?
    @Flag(help: "Plan and log only: take screenshots but inject no input.") var dryRun = false
    @Flag(help: "Ask on the terminal before each input action.") var confirm = false
    @Option(help: "Keep this many most recent screenshots in the conversation.") var keepScreenshots = 3
    @Option(help: "max_tokens per request.") var maxTokens = 4096
    @Option(help: "Settled = unchanged for this many ms after an action; raise it for apps slow to repaint.")
    var settleMs = 24
    @Option(help: "Action log file (JSON lines); default: $XDG_STATE_HOME/xclaw/runs/<time>.jsonl.") var log: String?
    @Option(help: "A file whose text is added to the system prompt.") var system: String?
    @Flag(help: "Print a JSON summary on stdout instead of streaming text.") var json = false
    @Option(help: ArgumentHelp(RunDisplayOptions.setupHelp)) var setup: String?
    @Option(
        help:
            "Screenshot size: native (as large as the model takes: 2576 px for high-resolution models, else the 1568 px / 1568-tile rule), 1080p, 720p or WxH to trade accuracy for cost; default: screenshot_size in the config file, else native."
    )
    var screenshotSize: String?
    @Option(
        help:
            "Screenshot encoding: png (exact pixels) or jpeg[:QUALITY] (1-100, default 80): several times fewer bytes a request, the same tokens; default: screenshot_format in the config file, else png."
    )
    var screenshotFormat: String?
    @Option(help: ArgumentHelp(EffortHelp.text)) var effort: String?
    @Option(help: ArgumentHelp(ThinkingHelp.text)) var thinking: String?
    @OptionGroup var target: DisplayOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var rawOption: RawOption
    @OptionGroup var fleet: FleetOptions
    /// The one-shot agent's name, chosen by the host that queued the run for the fleet.
    @Option(help: .hidden) var agentName: String?
    /// The system prompt's extra text, read by the host that queued the run from its `--system` file.
    @Option(help: .hidden) var systemText: String?

    func validate() throws {
        if system != nil && systemText != nil { throw ValidationError("--system and --system-text exclude each other") }
        try requireRange(maxSteps, 1...100_000, "--max-steps", "")
        try requireRange(keepScreenshots, 1...1_000, "--keep-screenshots", "")
        try requireRange(maxTokens, 1...1_000_000, "--max-tokens", "")
        try requireRange(settleMs, 1...5000, "--settle-ms", "ms")
        try RunDisplayOptions.check(display: target.display)
        try BusAllowHelp.check(dbusAllow)
        try ThinkingHelp.parse(thinking)
        if let screenshotSize {
            do { _ = try ImageSizing.cap(parsing: screenshotSize) } catch { throw ValidationError("\(error)") }
        }
        if let screenshotFormat {
            do { _ = try ImageEncoding.parse(screenshotFormat) } catch { throw ValidationError("\(error)") }
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)  // `xclaw run … | head` must not kill the run between an action and its log line
        let catalog = try ModelCatalog.load()
        let info = try catalog.model(model ?? catalog.default)
        try EffortHelp.check(effort, info)
        try ThinkingHelp.check(thinking, info, effort: effort)
        let names = try ToolSelection.names(tools)
        let extraSystem = try system.map(readSystemFile) ?? systemText
        if let store = try FleetDispatch.queueing(storeOptions, fleet) {
            return try queue(store, system: extraSystem)
        }
        if confirm && !TerminalPrompt.available {
            throw ValidationError("--confirm needs a terminal to ask on (/dev/tty is not available)")
        }
        let configuration = try ClientConfiguration.load()
        let client = ClaudeClient(configuration: configuration)

        // A private display (`--display new`) and the setup command, ended when the run is over; the connection to a
        // private one is the run's own, never one the daemon keeps.
        let surroundings =
            try RunDisplay.isNeeded(display: target.display, setup: setup)
            ? RunDisplay.start(display: target.display, setup: setup) : nil
        defer { surroundings?.tearDown() }
        // Tools that need no screen (memory, list_apps, the web tools) run without a display.
        let drivesScreen = surroundings != nil || names.contains { SkillCatalog.screenToolNames.contains($0) }
        let connection =
            try drivesScreen
            ? surroundings?.started.map { try DisplayConnection(name: $0.name) } ?? target.connect() : nil
        let sideQuestions = UsageLedger()
        let store = try storeOptions.open()
        let agent = agentName ?? Self.agentName()
        var builder = AgentBuilder(
            store: store, client: client, catalog: catalog, settleQuiet: .milliseconds(settleMs),
            visionUsage: { sideQuestions.add($0) })
        builder.screenshotCap = try screenshotSize.map(ImageSizing.cap(parsing:)) ?? ImageSizing.configuredCap()
        builder.screenshotEncoding = try screenshotFormat.map(ImageEncoding.parse) ?? ImageEncoding.configured()
        let session = try connection.map { try builder.session(display: $0.name, connection: $0) }
        var config = AgentConfig(
            name: agent, model: info.id, systemPrompt: extraSystem ?? "", tools: names,
            display: connection?.name)
        config.oneShot = true  // kept with its history, left out of agent lists unless all are asked for
        config.dbusAllow = try BusAllowHelp.normalized(dbusAllow)
        try BusAllowHelp.requireList(tools: config.tools, allow: config.dbusAllow)
        let prepared = try usageErrors { try builder.prepare(config, session: session, dryRun: dryRun) }
        let actionLog = try ActionLog(path: Invocation.current.resolve(log ?? ActionLog.defaultPath()))
        let confirming = confirm
        let ask: @Sendable (String) async -> Bool = { question in
            confirming ? await TerminalPrompt.ask("xclaw: \(question)? [y/N] ") : true
        }
        let context = ToolContext(
            dryRun: dryRun, confirm: ask, log: { actionLog.append($0) }, ask: TerminalPrompt.approver)

        // A one-shot agent, recorded like any other: its task, replies, tool results, usage and session.
        try store.createAgent(config)
        let printer = RunPrinter(quiet: json, raw: rawOption.raw)
        let (maxSteps, maxTokens, keep, effort) = (self.maxSteps, self.maxTokens, keepScreenshots, self.effort)
        let thinking = try ThinkingHelp.parse(self.thinking)
        let service = builder.service(
            queue: QueueConfiguration(maxConcurrent: 1, maxRetries: 0), prepared: prepared,
            runOptions: { model, system in
                var options = RunOptions(
                    model: model, system: system, maxSteps: maxSteps, maxTokens: maxTokens, keepImages: keep)
                options.effort = effort
                options.thinking = thinking
                return options
            },
            context: { _ in context }, guardSettings: try GuardSettings.fromConfig(), events: { printer.handle($0) })
        let task = self.task
        let sent: Result<Void, any Error> = CancellableRun.execute(onInterrupt: {
            Task { await service.queue.cancel(agent: agent) }
        }) {
            do {
                try await service.send(agent: agent, text: task)
                await service.waitUntilIdle()
                return .success(())
            } catch { return .failure(error) }
        }
        printer.finish()
        actionLog.close()
        try sent.get()
        let steps = printer.steps
        let failure = printer.finalFailures.last
        let outcome = printer.finishedOutcomes.last ?? .failed(failure?.message ?? "the run did not finish")
        let side = sideQuestions.total
        let usage = steps.reduce(Usage()) { $0 + $1.usage } + side.usage
        let cost = steps.reduce(0) { $0 + $1.costUSD } + info.price.cost(of: side.usage)
        let sideNote = side.count == 0 ? "" : " (incl. \(side.count) vision question(s))"
        printError(
            "xclaw: \(outcome) in \(steps.count) step(s); \(ToolSummary.usage(usage)); "
                + "$\(String(format: "%.4f", cost))\(sideNote) (\(info.id)); recorded as agent \(agent); "
                + "action log \(actionLog.path)")
        if json {
            let last = try store.messages(agent: agent).last { $0.role == .assistant && $0.status == .complete }
            let summary = RunSummary(
                outcome: "\(outcome)", text: last.map { Message(role: .assistant, content: $0.content).text } ?? "",
                steps: steps, usage: usage, cost_usd: cost, model: info.id, agent: agent,
                action_log: actionLog.path)
            try emit(summary, json: true) { "" }
        }
        switch outcome {
        case .completed: return
        case .refused, .maxSteps: throw ExitCode(ExitStatus.notFound.rawValue)
        case .cancelled: throw ExitCode(CancellableRun.interruptedStatus)
        case .stopped: throw ExitCode(Send.stoppedStatus)
        case .failed(let why): throw AgentRunError.failed(why, failure?.status ?? .api)
        }
    }

    /// Queues the run for the fleet and follows its replies: a worker runs the same command line, with the one-shot
    /// agent's name chosen here (so the run is followed and listed under it) and the `--system` file's text read
    /// here. What only this host has is refused: a terminal to confirm on, an action log file, the JSON summary.
    private func queue(_ store: AgentStore, system: String?) throws {
        for (given, option) in [(confirm, "--confirm"), (log != nil, "--log"), (json, "--json")] where given {
            throw ValidationError(
                "\(option) is for a run on this host, and with workers up the run is queued for the fleet: add --local")
        }
        // Another host may queue a run in the same second with the same pid: a random part keeps the names apart.
        let agent = Self.agentName() + String(format: "-%04x", UInt16.random(in: 0...UInt16.max))
        // `--option=value`, so a value starting with "-" (a system prompt's bullet) stays a value on the worker.
        var arguments = ["run"] + FleetDispatch.option("--agent-name", agent) + ["--max-steps=\(maxSteps)"]
        arguments += ["--keep-screenshots=\(keepScreenshots)", "--max-tokens=\(maxTokens)", "--settle-ms=\(settleMs)"]
        let passed: [(String, String?)] = [
            ("--model", model), ("--tools", tools), ("--system-text", system), ("--setup", setup),
            ("--screenshot-size", screenshotSize), ("--screenshot-format", screenshotFormat), ("--effort", effort),
            ("--thinking", thinking), ("--display", target.display), ("--dbus-allow", dbusAllow),
        ]
        for case (let option, let value?) in passed { arguments += FleetDispatch.option(option, value) }
        if dryRun { arguments.append("--dry-run") }
        try FleetDispatch.run(
            .run, agent: agent, arguments: arguments + ["--", task], store: store, options: fleet, raw: rawOption.raw)
    }

    /// A name for the one-shot agent: `run-<UTC time>-<pid>` (the asking CLI's pid in the daemon), unique per process
    /// and second.
    static func agentName(now: Date = Date()) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        return "run-\(f.string(from: now))-\(Invocation.current.pid)"
    }
}

/// Tokens of the vision side questions (analyze_screen, find_and_tap), which are not steps of the loop.
final class UsageLedger: Sendable {
    private let state = Mutex((sum: Usage(), requests: 0))

    /// Adds one request's tokens.
    func add(_ usage: Usage) {
        state.withLock {
            $0.sum = $0.sum + usage; $0.requests += 1
        }
    }

    /// The total and the number of requests.
    var total: (usage: Usage, count: Int) { state.withLock { ($0.sum, $0.requests) } }
}

/// A wrong catalog entry found while building the agent is bad usage, reported as ArgumentParser reports it.
func usageErrors<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as BuildError { throw ValidationError(error.description) }
}

/// The JSON summary of a run (`--json`; usage and cost include the vision side questions).
struct RunSummary: Encodable {
    var outcome: String
    var text: String
    var steps: [StepReport]
    var usage: Usage
    var cost_usd: Double
    var model: String
    var agent: String
    var action_log: String
}

/// `xclaw models`: the catalog.
struct Models: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "models",
        abstract:
            "List the models xclaw knows: computer-use tool version, prices per MTok, screenshot size, thinking and "
            + "effort; retired ones with their successor.",
        discussion: """
            --refresh asks the API (needs ANTHROPIC_API_KEY) and caches what it says in \
            $XDG_STATE_HOME/xclaw/models-cache.json; later runs use those limits and levels. Exit: 0 listed; 2 an \
            unreadable catalog or cache, or --refresh without an API key; 4 the API failed (the cache stays as it was).
            Examples:
              xclaw models  # tool version, prices, screenshot size and tokens, thinking, effort (* = default)
              xclaw models --refresh --screen 2560x1440
            """)
    @Flag(
        help:
            "First read what the API serves (GET /v1/models, every page) and cache each model's limits, thinking form and effort levels, which then win over the built-in table."
    )
    var refresh = false
    @Option(
        help:
            "The screen whose screenshot size and token cost each model's line shows (WxH); screenshot_size in the config file caps it as it caps runs."
    )
    var screen = "1920x1080"
    @Flag(help: "Print JSON.") var json = false

    /// A model's entry with what one screenshot of `--screen` costs it.
    struct Entry: Encodable {
        var info: ModelInfo
        var screenshot: Shot?
        struct Shot: Encodable {
            var width: Int
            var height: Int
            var tokens: Int
        }
        func encode(to encoder: Encoder) throws {
            try info.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encodeIfPresent(screenshot, forKey: .screenshot)
        }
        enum Keys: String, CodingKey { case screenshot }
    }

    /// The catalog as `--json` prints it.
    struct Listing: Encodable {
        var `default`: String
        var screen: String
        var models: [Entry]
    }

    func validate() throws {
        guard screenSize != nil else { throw ValidationError("--screen is WxH (e.g. 1920x1080), not \(screen)") }
    }

    private var screenSize: Size? {
        let parts = screen.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (1...32_767).contains(parts[0]), (1...32_767).contains(parts[1]) else { return nil }
        return Size(width: parts[0], height: parts[1])
    }

    func run() throws {
        if refresh {
            let client = ClaudeClient(configuration: try ClientConfiguration.load())
            let listed = try Blocking.wait { try await client.listModels() }
            let capabilities = listed.compactMap(ModelCapabilities.init(api:))
            try ModelCapabilities.write(capabilities)
            printError(
                "xclaw: the API serves \(capabilities.count) model(s); their capabilities are cached in "
                    + ModelCapabilities.cachePath())
        }
        let catalog = try ModelCatalog.load()
        let cap = try ImageSizing.configuredCap()
        let display = screenSize ?? Size(width: 1920, height: 1080)
        // Tokens follow the model: the size it is sent at (its sizing rule, the configured cap), then pixels / 750.
        let entries = catalog.models.map { m -> Entry in
            guard m.retired == nil, m.vision else { return Entry(info: m) }
            let size = ScreenGeometry(screen: display, sizing: AgentBuilder.sizing(for: m, cap: cap)).model
            return Entry(
                info: m,
                screenshot: .init(width: size.width, height: size.height, tokens: ImageSizing.tokens(size)))
        }
        let listing = Listing(default: catalog.default, screen: "\(display.width)x\(display.height)", models: entries)
        try emit(listing, json: json) {
            entries.map { e in
                let m = e.info
                let mark = m.id == catalog.default ? "*" : " "
                if let successor = m.retired {
                    return
                        "\(mark) \(m.id.padding(toLength: 28, withPad: " ", startingAt: 0)) retired: use \(successor)"
                }
                let screenshots =
                    e.screenshot.map { "screenshots \($0.width)x\($0.height) ≈\($0.tokens) tokens" } ?? "no images"
                let effort =
                    (m.effort ?? []).isEmpty ? "no effort" : "effort \((m.effort ?? []).joined(separator: "/"))"
                let context = m.compaction == true ? "server compaction" : "xclaw summary"
                return "\(mark) \(m.id.padding(toLength: 28, withPad: " ", startingAt: 0)) \(m.computerTool)  "
                    + "$\(fmt(m.price.input))/$\(fmt(m.price.output)) per MTok in/out, cache read $\(fmt(m.price.cacheRead))"
                    + "; \(screenshots); thinking \(m.thinking ?? "none"); \(effort); \(context)"
            }.joined(separator: "\n") + "\n(screenshots of a \(display.width)x\(display.height) screen: --screen WxH)"
        }
    }

    private func fmt(_ v: Double) -> String { v.rounded() == v ? String(Int(v)) : String(v) }
}

/// Runs async work from a synchronous command; the first Ctrl-C (or SIGTERM) cancels it, which the run answers by
/// finishing cleanly; a second one exits at once.
enum CancellableRun {
    /// The first signal that stopped the run (0: none), so the command exits 130 for Ctrl-C and 143 for SIGTERM.
    private static let received = Atomic<Int32>(0)

    /// The exit status a stopped run ends with: 128 + the signal that stopped it (130 when none was recorded).
    /// Served by the daemon, only this request's forwarded signals count: `received` is the daemon process's and
    /// still held an earlier request's SIGTERM (a pipeline cancelled from another process then exited 143, not 130).
    static var interruptedStatus: Int32 {
        if let hub = Invocation.current.interrupts { return 128 + (hub.raised != 0 ? hub.raised : SIGINT) }
        let signal = received.load(ordering: .sequentiallyConsistent)
        return 128 + (signal == 0 ? SIGINT : signal)
    }

    static func execute<T: Sendable>(
        onInterrupt: (@Sendable () -> Void)? = nil,
        _ body: @escaping @Sendable () async -> T
    ) -> T {
        // The watch comes first, so a signal right after the work started stops it instead of ending the process
        // with the run left unrecorded; one before the task exists cancels it as soon as it does.
        let started = Mutex<(task: Task<Void, Never>?, cancelled: Bool)>((nil, false))
        let hits = Atomic<Int>(0)
        // SIGHUP too: a terminal that closes, or (served) an asker that is gone, cancels the run cleanly.
        let watch = Interrupt.watch([SIGINT, SIGTERM, SIGHUP]) { sig in
            if hits.add(1, ordering: .sequentiallyConsistent).newValue == 1 {
                received.store(sig, ordering: .sequentiallyConsistent)
                let name = sig == SIGINT ? "interrupted" : sig == SIGTERM ? "terminated" : "hung up"
                printError("\nxclaw: \(name); stopping (Ctrl-C again to quit at once)")
                if let onInterrupt {
                    onInterrupt()
                } else {
                    started.withLock { started in
                        if let task = started.task { task.cancel() } else { started.cancelled = true }
                    }
                }
            } else {
                Interrupt.exitNow(sig)
            }
        }
        let (task, wait) = Blocking.start(body)
        started.withLock { started in
            started.task = task
            if started.cancelled { task.cancel() }
        }
        let value = wait()
        watch.stop()
        return value
    }
}

/// Streams the model's text to stdout unbuffered and remembers whether a line is open, so stderr lines start on
/// their own line in a terminal. Write errors (a closed pipe) are ignored: the run and its log go on.
/// Safe because its state and the writes to stdout happen only under `lock`, so lines never interleave.
final class StreamedText: @unchecked Sendable {
    /// The model's text goes out byte for byte (`--raw`, stdout not a terminal); else its control characters are
    /// shown escaped, so a reply cannot clear the screen or draw a fake prompt.
    private let raw: Bool
    /// The command's world, kept because the text arrives on the agent's tasks.
    private let invocation = Invocation.current
    init(raw: Bool = false) { self.raw = TerminalOutput.passesRaw(raw) }
    private let lock = NSLock()
    private var open = false
    private var replyStarted = false

    /// Writes model text as it arrives.
    func write(_ text: String) {
        lock.withLock {
            put(text)
            if let last = text.last { open = last != "\n" }
            if !text.isEmpty { replyStarted = true }
        }
    }

    /// Ends an open line.
    func breakLine() {
        lock.withLock {
            if open { put("\n"); open = false }
        }
    }

    /// A reply is complete: the next text belongs to the next one.
    func endReply() {
        breakLine()
        lock.withLock { replyStarted = false }
    }

    /// A request is retried after part of its reply was printed: mark the restart so the repeat is not mistaken
    /// for the model saying it twice.
    func restart() {
        breakLine()
        lock.withLock {
            if replyStarted { put("[reply interrupted; it starts again]\n") }
            replyStarted = false
        }
    }

    private func put(_ text: String) {
        let shown = raw ? text : UntrustedText.forTerminal(text)
        invocation.write(.stdout, Data(shown.utf8))
    }
}

/// Yes/no questions on the controlling terminal (not stdin, which may be a pipe).
enum TerminalPrompt {
    /// Whether there is a terminal to ask on.
    static var available: Bool {
        let fd = openTerminal(Invocation.current)
        if fd < 0 { return false }
        close(fd)
        return true
    }

    /// The approval gate's way to ask the person at the terminal, or nil when there is none (the run is
    /// unattended, and a gated action waits for `xclaw approve|deny`).
    static var approver: (@Sendable (String) async -> Bool)? {
        guard available else { return nil }
        return { @Sendable question in await ask(question) }
    }

    /// The command's terminal: the one the CLI passed to the daemon, else `/dev/tty`.
    private static func openTerminal(_ invocation: Invocation) -> Int32 {
        if let terminal = invocation.terminal { return fcntl(terminal, F_DUPFD_CLOEXEC, 3) }
        return Invocation.isServed ? -1 : open("/dev/tty", O_RDWR | O_CLOEXEC)
    }

    /// Asks on its own thread, so the wait blocks none of the concurrency pool's threads, and gives up (no) as
    /// soon as the run is cancelled.
    static func ask(_ question: String) async -> Bool {
        let cancelled = CancelFlag()
        let invocation = Invocation.current
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
                Thread { done.resume(returning: askBlocking(question, invocation, cancelled: cancelled)) }.start()
            }
        } onCancel: {
            cancelled.set()
        }
    }

    /// Reads one line from /dev/tty, polling so a cancellation is noticed within 100 ms.
    private static func askBlocking(_ question: String, _ invocation: Invocation, cancelled: CancelFlag) -> Bool {
        let fd = openTerminal(invocation)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        func say(_ text: String) { _ = text.withCString { write(fd, $0, strlen($0)) } }
        // The question quotes what would be typed, whole and escaped; long ones are shown in lines of 100
        // characters so nothing scrolls out of view unseen.
        let safe = UntrustedText.forTerminal(question, tabs: false)
        if safe.count > 160 {
            var rest = Substring(safe)
            var lines: [String] = []
            while !rest.isEmpty {
                lines.append(String(rest.prefix(100)))
                rest = rest.dropFirst(100)
            }
            say(lines.joined(separator: "\n  ") + "\n")
        } else {
            say(safe)
        }
        var line = [UInt8]()
        while !cancelled.isSet {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 100)
            if ready < 0 && errno != EINTR { return false }
            guard ready > 0 else { continue }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return false }
            if byte == 10 { break }
            line.append(byte)
        }
        if cancelled.isSet { say("\n"); return false }
        let answer = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        return answer == "y" || answer == "yes"
    }
}

/// Short descriptions of tool calls and token counts for the terminal.
enum ToolSummary {
    /// A call as the terminal shows it while it starts: what it types is masked, since whether it goes into a
    /// password field is not known yet (terminals and CI logs keep what they show).
    static func describe(_ tool: String, _ input: JSONValue) -> String {
        let text = SecretText.maskingTyped(tool: tool, input).jsonText
        return text.count > 160 ? String(text.prefix(157)) + "..." : text
    }

    static func usage(_ u: Usage) -> String {
        "\(u.inputTokens) in + \(u.cacheReadInputTokens) cache read + \(u.cacheCreationInputTokens) cache write / "
            + "\(u.outputTokens) out"
    }
}

import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawScreen
import XclawSkills
import XclawStore

/// What the service reports while agents work, for the terminal.
public enum ServiceEvent: Sendable {
    /// Streamed reply text.
    case text(agent: String, String)
    /// A request is retried (overloaded, rate limited, network).
    case retry(agent: String, RetryNotice)
    /// A tool is about to run.
    case tool(agent: String, name: String, input: JSONValue)
    /// A tool failed; the model was told.
    case toolError(agent: String, name: String, message: String)
    /// One model request finished.
    case step(agent: String, StepReport)
    /// A run ended.
    case finished(agent: String, session: Int64, outcome: RunOutcome)
    /// Something the person running the agent should know now (a run waits for approval, the stop is not armed).
    case notice(agent: String, String)
    /// A run failed and will be retried later, or failed for good: the user is told either way; `status` is the
    /// exit status a command ending on it returns.
    case failed(agent: String, message: String, willRetry: Bool, status: ExitStatus)
}

/// Runs agents from the store: a message batch after the agent's cursor becomes a run of the agent loop, streamed
/// into the store as it arrives; the queue serializes each agent and runs different agents in parallel.
public final class AgentService: Sendable {
    /// The store.
    public let store: any StoreBackend
    /// The model transport.
    public let client: any MessageStreaming
    /// Model ids → tool versions and prices.
    public let catalog: ModelCatalog
    /// Builds an agent's tools (the screen tools for its display, memory on the store).
    public let tools: @Sendable (AgentConfig) throws -> [any AgentTool]
    /// Builds an agent's system prompt (the screen part depends on its display).
    public let systemPrompt: @Sendable (AgentConfig) throws -> String
    /// The tool context of a run: dry-run, confirmation, the action log.
    public let context: @Sendable (AgentConfig) -> ToolContext
    /// Prepares what a run works in before its tools are built (a private display, the setup command) and gives the
    /// config to build them from; its `tearDown` runs when the run is over, however it ends.
    public let environment: @Sendable (AgentConfig, ClaimedBatch) async throws -> RunEnvironment
    /// Where events go.
    public let events: @Sendable (ServiceEvent) -> Void
    /// How long a streamed reply may go unsaved: each save is one UPDATE of the partial message.
    public let saveInterval: Duration
    /// The per-agent queue.
    public let queue: AgentQueue
    /// The emergency stop and approval settings every run of this service is guarded by.
    public let guardSettings: GuardSettings
    /// How often the queue retries a failed batch (0: never; then failures are reported at once).
    private let queueRetries: Int
    /// Give-ups being recorded, awaited by `waitUntilIdle`.
    private let recording = Mutex<[Task<Void, Never>]>([])
    private let runOptions: @Sendable (ModelInfo, String) -> RunOptions

    /// Creates a service; `queue` settings cap the parallel runs and set the retry backoff.
    public init(
        store: any StoreBackend, client: any MessageStreaming, catalog: ModelCatalog,
        queue configuration: QueueConfiguration = QueueConfiguration(),
        saveInterval: Duration = .milliseconds(100),
        runOptions: @escaping @Sendable (ModelInfo, String) -> RunOptions = { RunOptions(model: $0, system: $1) },
        tools: @escaping @Sendable (AgentConfig) throws -> [any AgentTool],
        systemPrompt: @escaping @Sendable (AgentConfig) throws -> String,
        context: @escaping @Sendable (AgentConfig) -> ToolContext = { _ in ToolContext() },
        guardSettings: GuardSettings = GuardSettings(),
        environment: @escaping @Sendable (AgentConfig, ClaimedBatch) async throws -> RunEnvironment = { config, _ in
            RunEnvironment(config: config)
        },
        events: @escaping @Sendable (ServiceEvent) -> Void = { _ in }
    ) {
        self.guardSettings = guardSettings
        self.store = store
        self.environment = environment
        self.client = client
        self.catalog = catalog
        self.tools = tools
        self.systemPrompt = systemPrompt
        self.context = context
        self.events = events
        self.saveInterval = saveInterval
        self.runOptions = runOptions
        queueRetries = configuration.maxRetries
        let box = ServiceBox()
        queue = AgentQueue(
            configuration: configuration,
            processor: { agent, work in
                guard let service = box.service else { return .failure("the service is gone") }
                return await service.process(agent: agent, work: work)
            },
            events: { event in
                if case .gaveUp(let agent, let reason) = event { box.service?.gaveUp(agent: agent, reason: reason) }
            })
        box.service = self
    }

    /// Stores a user message and queues the agent; returns the message id.
    @discardableResult
    public func send(agent: String, text: String, sender: String = "user") async throws -> Int64 {
        _ = try store.agent(named: agent)
        let id = try store.appendMessage(
            agent: agent, role: .user, content: [.text(text)], status: .complete, sender: sender, sessionID: nil)
        await queue.enqueueMessages(agent: agent)
        return id
    }

    /// Runs one queued batch for `agent`: the batch is claimed (cursor advanced, session and batch prompt stored)
    /// in one transaction before the run, undone if the run failed before anything reached the user (so it is
    /// retried), kept otherwise (so nothing runs twice).
    func process(agent: String, work: QueueWork) async -> ProcessOutcome {
        // Another process may be running this agent: wait for it, then take whatever it left pending.
        let lock: AgentLock
        do { lock = try await AgentLock.acquire(store: store, agent: agent) } catch is CancellationError {
            return .success
        } catch {
            return .failure("\(error)")
        }
        defer { withExtendedLifetime(lock) {} }
        let claim: ClaimedBatch
        var config: AgentConfig
        do {
            config = try store.agent(named: agent)
            guard
                let claimed = try store.claimBatch(
                    agent: agent, kind: .message, batchSender: Conversation.batchSender,
                    isInput: Conversation.isChat, prompt: { Conversation.batch($0) })
            else { return .success }
            claim = claimed
        } catch {
            return fail(agent: agent, session: nil, error: error, reachedUser: false)
        }
        let session = claim.session
        let surroundings: RunEnvironment
        // A stop asked while the private display and the setup command start (up to a minute) ends them too.
        let setupStop = StopPoller(store: store, session: session, poll: guardSettings.poll)
        let environment = self.environment
        let preparing = Task { [config] in try await environment(config, claim) }
        setupStop.watch { preparing.cancel() }
        let prepared = await withTaskCancellationHandler {
            await preparing.result
        } onCancel: {
            preparing.cancel()
        }
        setupStop.finish()
        if let why = setupStop.reason {
            if case .success(let ready) = prepared { ready.tearDown() }
            try? store.finishSession(session, status: .stopped, error: why, steps: 0, usd: 0)
            events(.finished(agent: agent, session: session, outcome: .stopped(why)))
            return .success
        }
        do { surroundings = try prepared.get() } catch is CancellationError {
            // Stopped during its setup: nothing reached the user, so its batch is pending again.
            try? store.finishSession(session, status: .cancelled, error: nil, steps: 0, usd: 0)
            try? store.rollBackRun(session: session)
            events(.finished(agent: agent, session: session, outcome: .cancelled))
            return .success
        } catch {
            return fail(agent: agent, session: session, error: error, reachedUser: false)
        }
        defer { surroundings.tearDown() }
        config = surroundings.config
        let model: ModelInfo, registry: ToolRegistry, options: RunOptions, conversation: [Message]
        do {
            model = try catalog.model(config.model)
            registry = ToolRegistry(try tools(config))
            var chosen = runOptions(model, try systemPrompt(config))
            // Only what came after the last `agent reset`, with only the screenshots the run would still send.
            conversation = try store.resolveScreenshots(
                Conversation.build(
                    try store.messages(agent: agent, after: config.contextFrom, limit: nil, screenshots: false)),
                keep: chosen.keepImages, chunk: chosen.imageChunk, removed: ImagePruner.placeholder)
            // The call's effort, else the agent's, checked against the model it runs on now.
            chosen.effort = try (chosen.effort ?? config.effort).map { try model.checkEffort($0) }
            // Thinking: the call's, else the agent's, else the config file's; checked against the model now.
            let environment = Invocation.current.environment
            chosen.thinking =
                try chosen.thinking ?? config.thinking.map(ThinkingMode.parse)
                ?? ConfigValues.value("thinking", environment: environment).map(ThinkingMode.parse)
            _ = try model.thinkingPlan(chosen.thinking ?? .auto, effort: chosen.effort, maxTokens: chosen.maxTokens)
            chosen.context = try ContextSettings.policy(for: model, environment: environment)
            options = chosen
        } catch {
            return fail(agent: agent, session: session, error: error, reachedUser: false)
        }
        let recorder = RunRecorder(
            store: store, agent: agent, session: session, model: model,
            saveInterval: saveInterval, events: events)
        let runner = AgentRunner(client: client, registry: registry, options: options)
        let prompt = claim.pending.map { Message(role: .user, content: $0.content).text }.joined(separator: "\n")
        let (result, stopped) = await guarded(
            runner, conversation: conversation, config: config, session: session, prompt: prompt,
            observer: recorder.observer)
        recorder.finish(result.outcome)
        let steps = result.steps.filter { $0.context != StepReport.summarised }.count  // its cost counts, not a step
        let usd = result.costUSD
        // The store refusing a write mid-run (disk full, locked) means the history lacks part of the run: say so.
        let lost = recorder.storeError.map { "the store could not save part of this run: \($0)" }
        if let stopped {
            // `xclaw pipeline cancel` stops a pipeline's runs the way `xclaw stop` does; they are recorded cancelled.
            let status: SessionStatus = stopped.contains(PipelineRecord.cancelMarker) ? .cancelled : .stopped
            do { try store.finishSession(session, status: status, error: stopped, steps: steps, usd: usd) } catch {
                events(
                    .failed(
                        agent: agent, message: "cannot record the end of session \(session): \(error)",
                        willRetry: false, status: .internal))
            }
            events(.finished(agent: agent, session: session, outcome: .stopped(stopped)))
            return .success
        }
        switch result.outcome {
        case .completed, .refused, .maxSteps, .cancelled, .stopped:
            let status: SessionStatus = result.outcome == .cancelled ? .cancelled : (lost == nil ? .completed : .failed)
            do { try store.finishSession(session, status: status, error: lost, steps: steps, usd: usd) } catch {
                events(
                    .failed(
                        agent: agent, message: "cannot record the end of session \(session): \(error)",
                        willRetry: false, status: .internal))
            }
            if let lost { events(.failed(agent: agent, message: lost, willRetry: false, status: .internal)) }
            events(.finished(agent: agent, session: session, outcome: result.outcome))
            return .success
        case .failed:
            return fail(
                agent: agent, session: session, error: result.error ?? ClientError.badResponse("the run failed"),
                reachedUser: recorder.reachedUser, steps: steps, usd: usd)
        }
    }

    /// Runs the loop under the run's guard: a stop request, the hotkey or the failsafe cancels it, and gated actions
    /// wait for approval. Returns the result and, when the run was stopped, why (its held keys and buttons are then
    /// released).
    private func guarded(
        _ runner: AgentRunner, conversation: [Message], config: AgentConfig, session: Int64, prompt: String,
        observer: RunObserver
    ) async -> (RunResult, stopped: String?) {
        let agent = config.name
        let drivesScreen = config.tools.contains { SkillCatalog.screenToolNames.contains($0) }
        let display = drivesScreen ? try? DisplayConnection.resolveName(config.display) : nil
        let handle = RunHandle()
        let events = self.events
        let notice: @Sendable (String) -> Void = { events(.notice(agent: agent, $0)) }
        let runGuard = RunGuard(
            store: store, session: session, display: display, settings: guardSettings, events: notice,
            cancel: { handle.cancel() })
        var context = context(config)
        // An agent's own policy wins; one that no longer parses gates everything (fail closed). Service tools
        // (calendar, contacts) act without a screen and are gated too; a tool that never acts never asks.
        let policy = config.approval.map { (try? ApprovalPolicy.parse($0)) ?? .all } ?? guardSettings.policy
        if !policy.kinds.isEmpty, !context.dryRun {
            context.gate = runGuard.gate(policy: policy, ask: context.ask, events: notice)
        }
        // Every run's input actions are kept as replayable steps unless `record = off` (each costs two snapshots).
        if ConfigValues.value("record", environment: Invocation.current.environment)?.lowercased() != "off" {
            context.recordStep = StepKeeper(store: store, session: session, prompt: prompt).keep
        }
        // And the frame each call acted on, for the run's report (the recording's look reused, else one capture).
        let frames = ActionFrameKeeper(store: store, session: session)
        context.frames = frames
        let run = Task { [context] in await runner.run(messages: conversation, context: context, observer: observer) }
        handle.set(run)
        var result = await withTaskCancellationHandler {
            await run.value
        } onCancel: {
            run.cancel()
        }
        await frames.flush()  // the run's frames are stored before it is recorded ended (and its report written)
        runGuard.finish()
        guard let why = runGuard.stopReason else { return (result, nil) }
        if let display, let connection = try? DisplayConnection(name: display),
            let input = try? InputController(connection: connection)
        {
            _ = try? input.releaseEverything()
        }
        result.outcome = .stopped(why)
        return (result, why)
    }

    /// Ends a failed run. Before anything reached the user and when a later try may work, the run is undone and the
    /// queue retries it; otherwise the failure is written where the user reads replies, and not retried.
    private func fail(
        agent: String, session: Int64?, error: any Error, reachedUser: Bool, steps: Int = 0,
        usd: Double = 0
    ) -> ProcessOutcome {
        let why = "\(error)"
        let status = (error as? ClassifiedError)?.exitStatus ?? .internal
        let retry = !reachedUser && !Self.isPermanent(error) && queueRetries > 0
        if let session {
            try? store.finishSession(session, status: .failed, error: why, steps: steps, usd: usd)
            if !reachedUser {
                do { try store.rollBackRun(session: session) } catch {
                    events(
                        .failed(
                            agent: agent, message: "cannot undo session \(session): \(error)", willRetry: false,
                            status: .internal))
                }
            }
        }
        if retry {
            events(.failed(agent: agent, message: why, willRetry: true, status: status))
            return .failure(why)
        }
        _ = try? store.appendMessage(
            agent: agent, role: .assistant, content: [.text("xclaw: this reply failed: \(why)")],
            status: .error, sender: nil, sessionID: nil)
        events(.failed(agent: agent, message: why, willRetry: false, status: status))
        return .success
    }

    /// Errors a later run would not fix, or that were already retried: a bad key, a request the API refuses, an
    /// unknown model, a missing display or OCR data, a broken store — and every failure of the client, which retried
    /// transient ones itself within its retry budget (stacking the queue's backoff on top made a reply take hours
    /// against a silent server).
    static func isPermanent(_ error: any Error) -> Bool {
        if error is ClientError { return true }
        if error is CancellationError { return false }
        // Anything else classified (catalog, screen, store, skills) is about this machine or its data, not the
        // moment: retrying would fail the same way.
        return error is ClassifiedError
    }

    /// The queue stopped retrying: record the failure where the user reads the agent's replies. Runs off the
    /// queue's actor, which must not wait on SQLite; `waitUntilIdle` waits for it, so a command never exits
    /// before the failure is recorded and reported.
    func gaveUp(agent: String, reason: String) {
        let store = self.store, events = self.events, invocation = Invocation.served
        let record = Task.detached {
            await Invocation.$served.withValue(invocation) { Self.recordGiveUp(store, events, agent, reason) }
        }
        recording.withLock { $0.append(record) }
    }

    private static func recordGiveUp(
        _ store: any StoreBackend, _ events: @Sendable (ServiceEvent) -> Void, _ agent: String, _ reason: String
    ) {
        let text = "xclaw: giving up after repeated failures (\(reason)); send a new message to try again"
        _ = try? store.appendMessage(
            agent: agent, role: .assistant, content: [.text(text)], status: .error, sender: nil,
            sessionID: nil)
        events(.failed(agent: agent, message: text, willRetry: false, status: .api))
    }

    /// Waits until the queue is idle and every give-up it reported is recorded.
    public func waitUntilIdle() async {
        while true {
            await queue.waitUntilIdle()
            let pending = recording.withLock { list in
                defer { list = [] }
                return list
            }
            if pending.isEmpty { return }
            for task in pending { await task.value }
        }
    }

    /// Marks runs a killed process left behind, and undoes those that had stored nothing yet, so their input is
    /// answered by the next run; returns each with whether it was undone.
    public static func recover(store: any StoreBackend) throws -> [(session: SessionRecord, undone: Bool)] {
        try store.recoverInterrupted().map { session in
            guard session.kind == .message,
                try store.outputCount(
                    session: session.id, batchSender: Conversation.batchSender,
                    ignoring: [Conversation.summarySender]) == 0
            else {
                return (session, false)
            }
            try store.rollBackRun(session: session.id)
            return (session, true)
        }
    }
}

/// The task of a run, cancellable before it exists: a stop that comes first cancels it as soon as it is set.
private final class RunHandle: Sendable {
    private let state = Mutex<(task: Task<RunResult, Never>?, cancelled: Bool)>((nil, false))
    /// Remembers the run's task (cancelling it at once when a stop came first).
    func set(_ task: Task<RunResult, Never>) {
        let cancelled = state.withLock { s in
            s.task = task
            return s.cancelled
        }
        if cancelled { task.cancel() }
    }
    /// Cancels the run.
    func cancel() {
        let task = state.withLock { s in
            s.cancelled = true
            return s.task
        }
        task?.cancel()
    }
}

/// Lets the queue's processor reach the service that owns the queue.
/// Safe because the weak reference (which `Mutex` cannot hold) is read and written only under `lock`.
private final class ServiceBox: @unchecked Sendable {
    private let lock = NSLock()
    private weak var stored: AgentService?
    var service: AgentService? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// Persists one run as it happens: the reply's text while it streams (a partial message, saved at most every
/// `saveInterval`), each finished message, each step's usage. A kill -9 leaves the partial reply in the store.
/// Safe because its mutable state is touched only under `lock`; everything else is immutable.
final class RunRecorder: @unchecked Sendable {
    let store: any StoreBackend
    let agent: String
    let session: Int64
    let model: ModelInfo
    let saveInterval: Duration
    let events: @Sendable (ServiceEvent) -> Void
    private let lock = NSLock()
    private var buffer = ""
    private var row: Int64?
    private var lastSave = ContinuousClock.now
    private var reached = false
    private var firstStoreError: String?

    init(
        store: any StoreBackend, agent: String, session: Int64, model: ModelInfo, saveInterval: Duration,
        events: @escaping @Sendable (ServiceEvent) -> Void
    ) {
        self.store = store
        self.agent = agent
        self.session = session
        self.model = model
        self.saveInterval = saveInterval
        self.events = events
    }

    /// True once text was shown or a tool ran: a rerun would repeat it.
    var reachedUser: Bool { lock.withLock { reached } }
    /// The first write the store refused during the run, if any.
    var storeError: String? { lock.withLock { firstStoreError } }

    /// Runs a store write; remembers the first failure instead of dropping it.
    private func save(_ body: () throws -> Void) {
        do { try body() } catch { if firstStoreError == nil { firstStoreError = "\(error)" } }
    }

    /// The callbacks the runner calls.
    var observer: RunObserver {
        let agent = self.agent
        let events = self.events
        return RunObserver(
            text: { [self] t in
                events(.text(agent: agent, t))
                streamed(t)
            },
            retry: { [self] notice in
                events(.retry(agent: agent, notice))
                lock.withLock { buffer = "" }
            },
            toolStarted: { [self] name, input in
                lock.withLock { reached = true }
                events(.tool(agent: agent, name: name, input: input))
            },
            toolFinished: { name, result, _ in
                if result.isError {
                    let text = result.content.compactMap {
                        if case .text(let t) = $0 { return t }; return nil
                    }
                    .joined(separator: " ")
                    events(.toolError(agent: agent, name: name, message: text))
                }
            },
            stepFinished: { [self] step in
                lock.withLock {
                    save {
                        try store.recordUsage(
                            agent: agent, sessionID: session, model: model.id, usage: step.usage,
                            usd: step.costUSD,
                            timing: StepTiming(
                                step: step.step, modelMs: step.modelMs, toolMs: step.toolMs,
                                stopReason: step.stopReason))
                    }
                }
                events(.step(agent: agent, step))
            },
            appended: { [self] message in appended(message) },
            summarised: { [self] summary in
                lock.withLock {
                    save {
                        try store.appendMessage(
                            agent: agent, role: .user, content: [.text(summary)], status: .complete,
                            sender: Conversation.summarySender, sessionID: session)
                    }
                }
            },
            notice: { text in events(.notice(agent: agent, text)) })
    }

    /// Accumulates streamed text and saves it as a partial reply now and then.
    private func streamed(_ text: String) {
        lock.withLock {
            reached = true
            buffer += text
            let now = ContinuousClock.now
            if row == nil {
                save {
                    row = try store.appendMessage(
                        agent: agent, role: .assistant, content: [.text(buffer)],
                        status: .partial, sender: nil, sessionID: session)
                }
                lastSave = now
            } else if let row, now - lastSave >= saveInterval {
                save { try store.updateMessage(id: row, content: [.text(buffer)], status: .partial) }
                lastSave = now
            }
        }
    }

    /// Saves a finished message: the reply replaces its partial row; tool results are a new row.
    private func appended(_ message: Message) {
        lock.withLock {
            if message.role == .assistant {
                save {
                    if let row {
                        try store.updateMessage(id: row, content: message.content, status: .complete)
                    } else {
                        try store.appendMessage(
                            agent: agent, role: .assistant, content: message.content, status: .complete,
                            sender: nil, sessionID: session)
                    }
                }
                row = nil
                buffer = ""
            } else {
                save {
                    try store.appendMessage(
                        agent: agent, role: .user, content: message.content, status: .complete,
                        sender: "tool",
                        sessionID: session)
                }
            }
        }
    }

    /// Marks a reply cut short by cancellation or failure (a finished reply already replaced its partial row).
    func finish(_ outcome: RunOutcome) {
        lock.withLock {
            guard let row else { return }
            let status: MessageStatus
            switch outcome {
            case .cancelled, .stopped: status = .cancelled
            case .failed: status = .error
            default: status = .partial  // streamed text whose message never completed (e.g. the step limit)
            }
            save { try store.updateMessage(id: row, content: buffer.isEmpty ? [] : [.text(buffer)], status: status) }
            self.row = nil
        }
    }
}

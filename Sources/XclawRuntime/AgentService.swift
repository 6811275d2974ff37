import Foundation
import XclawAgent
import XclawBase
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
    /// A run failed and will be retried later, or failed for good: the user is told either way; `status` is the
    /// exit status a command ending on it returns.
    case failed(agent: String, message: String, willRetry: Bool, status: ExitStatus)
}

/// Runs agents from the store: a message batch after the agent's cursor becomes a run of the agent loop, streamed
/// into the store as it arrives; the queue serializes each agent and runs different agents in parallel.
public final class AgentService: Sendable {
    /// The store.
    public let store: AgentStore
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
    /// Where events go.
    public let events: @Sendable (ServiceEvent) -> Void
    /// How long a streamed reply may go unsaved: each save is one UPDATE of the partial message.
    public let saveInterval: Duration
    /// The per-agent queue.
    public let queue: AgentQueue
    private let runOptions: @Sendable (ModelInfo, String) -> RunOptions

    /// Creates a service; `queue` settings cap the parallel runs and set the retry backoff.
    public init(store: AgentStore, client: any MessageStreaming, catalog: ModelCatalog,
                queue configuration: QueueConfiguration = QueueConfiguration(),
                saveInterval: Duration = .milliseconds(100),
                runOptions: @escaping @Sendable (ModelInfo, String) -> RunOptions = { RunOptions(model: $0, system: $1) },
                tools: @escaping @Sendable (AgentConfig) throws -> [any AgentTool],
                systemPrompt: @escaping @Sendable (AgentConfig) throws -> String,
                context: @escaping @Sendable (AgentConfig) -> ToolContext = { _ in ToolContext() },
                events: @escaping @Sendable (ServiceEvent) -> Void = { _ in }) {
        self.store = store
        self.client = client
        self.catalog = catalog
        self.tools = tools
        self.systemPrompt = systemPrompt
        self.context = context
        self.events = events
        self.saveInterval = saveInterval
        self.runOptions = runOptions
        let box = ServiceBox()
        queue = AgentQueue(configuration: configuration, processor: { agent, work in
            guard let service = box.service else { return .failure("the service is gone") }
            return await service.process(agent: agent, work: work)
        }, events: { event in
            if case .gaveUp(let agent, let reason) = event { box.service?.gaveUp(agent: agent, reason: reason) }
        })
        box.service = self
    }

    /// Stores a user message and queues the agent; returns the message id.
    @discardableResult
    public func send(agent: String, text: String, sender: String = "user") async throws -> Int64 {
        _ = try store.agent(named: agent)
        let id = try store.appendMessage(agent: agent, role: .user, content: [.text(text)], sender: sender)
        await queue.enqueueMessages(agent: agent)
        return id
    }

    /// Runs one queued batch for `agent`: advance the cursor first, roll it back if the run failed before anything
    /// reached the user (so the batch is retried), keep it otherwise (so nothing runs twice).
    func process(agent: String, work: QueueWork) async -> ProcessOutcome {
        // Another process may be running this agent: wait for it, then take whatever it left pending.
        let lock: AgentLock
        do { lock = try await AgentLock.acquire(database: store.path, agent: agent) } catch is CancellationError {
            return .success
        } catch {
            return .failure("cannot lock agent \(agent): \(error.localizedDescription)")
        }
        defer { withExtendedLifetime(lock) {} }
        let config: AgentConfig
        let pending: [StoredMessage]
        let previous: Int64
        do {
            config = try store.agent(named: agent)
            let state = try store.state(agent: agent)
            pending = try store.userMessages(agent: agent, after: state.cursor).filter(Conversation.isChat)
            guard let last = pending.last else { return .success }
            previous = try store.advanceCursor(agent: agent, to: last.id)
        } catch {
            return .failure("\(error)")
        }
        var session: Int64 = 0
        var batchRow: Int64?
        do {
            session = try store.startSession(agent: agent, kind: "message")
            let model = try catalog.model(config.model)
            // The prompt this run sends is stored first, so a rebuild later shows exactly what the model saw.
            batchRow = try store.appendMessage(agent: agent, role: .user, content: [.text(Conversation.batch(pending))],
                                               sender: Conversation.batchSender, sessionID: session)
            let conversation = Conversation.build(try store.messages(agent: agent))
            let registry = ToolRegistry(try tools(config))
            let options = runOptions(model, try systemPrompt(config))
            let runner = AgentRunner(client: client, registry: registry, options: options)
            let recorder = RunRecorder(store: store, agent: agent, session: session, model: model,
                                       saveInterval: saveInterval, events: events)
            let result = await runner.run(messages: conversation, context: context(config), observer: recorder.observer)
            recorder.finish(result.outcome)
            let steps = result.steps.count, usd = result.costUSD
            switch result.outcome {
            case .completed, .refused, .maxSteps:
                try store.finishSession(session, status: "completed", steps: steps, usd: usd)
                events(.finished(agent: agent, session: session, outcome: result.outcome))
                return .success
            case .cancelled:
                try store.finishSession(session, status: "cancelled", steps: steps, usd: usd)
                events(.finished(agent: agent, session: session, outcome: .cancelled))
                return .success
            case .failed(let why):
                let status = (result.error as? ClassifiedError)?.exitStatus ?? .api
                if recorder.reachedUser || Self.isPermanent(result.error) {
                    // Something was already shown or done (a rerun would repeat it), or the API refused the request
                    // itself (a rerun would fail the same way): tell the user instead.
                    try store.finishSession(session, status: "failed", error: why, steps: steps, usd: usd)
                    _ = try store.appendMessage(agent: agent, role: .assistant,
                                                content: [.text("xclaw: this reply failed: \(why)")], status: .error,
                                                sessionID: session)
                    events(.failed(agent: agent, message: why, willRetry: false, status: status))
                    return .success
                }
                try store.finishSession(session, status: "failed", error: why, steps: steps, usd: usd)
                try rollBack(agent: agent, to: previous, batch: batchRow)
                events(.failed(agent: agent, message: why, willRetry: true, status: status))
                return .failure(why)
            }
        } catch {
            if session != 0 { try? store.finishSession(session, status: "failed", error: "\(error)", steps: 0, usd: 0) }
            try? rollBack(agent: agent, to: previous, batch: batchRow)
            events(.failed(agent: agent, message: "\(error)", willRetry: true,
                           status: (error as? ClassifiedError)?.exitStatus ?? .internal))
            return .failure("\(error)")
        }
    }

    /// Puts the cursor back so the queue's retry hands the same batch to the next run, and removes the batch prompt
    /// this run stored (the retry stores its own; the model must not see the batch twice).
    private func rollBack(agent: String, to previous: Int64, batch: Int64?) throws {
        if let batch { try store.deleteMessage(id: batch) }
        var state = try store.state(agent: agent)
        state.cursor = previous
        try store.setState(agent: agent, state)
    }

    /// Errors a later retry cannot fix: a bad key, a request the API refuses (400/403/404/413). Overload, rate
    /// limits and network trouble are worth another run later.
    static func isPermanent(_ error: (any Error)?) -> Bool {
        switch error as? ClientError {
        case .invalidAPIKey?, .api?, .noAPIKey?, .insecureConfig?, .badConfig?: return true
        default: return false
        }
    }

    /// The queue stopped retrying: record the failure where the user reads the agent's replies.
    func gaveUp(agent: String, reason: String) {
        let text = "xclaw: giving up after repeated failures (\(reason)); send a new message to try again"
        _ = try? store.appendMessage(agent: agent, role: .assistant, content: [.text(text)], status: .error)
        events(.failed(agent: agent, message: text, willRetry: false, status: .api))
    }
}

/// Lets the queue's processor reach the service that owns the queue.
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
final class RunRecorder: @unchecked Sendable {
    let store: AgentStore
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

    init(store: AgentStore, agent: String, session: Int64, model: ModelInfo, saveInterval: Duration,
         events: @escaping @Sendable (ServiceEvent) -> Void) {
        self.store = store
        self.agent = agent
        self.session = session
        self.model = model
        self.saveInterval = saveInterval
        self.events = events
    }

    /// True once text was shown or a tool ran: a rerun would repeat it.
    var reachedUser: Bool { lock.withLock { reached } }

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
                    let text = result.content.compactMap { if case .text(let t) = $0 { return t }; return nil }
                        .joined(separator: " ")
                    events(.toolError(agent: agent, name: name, message: text))
                }
            },
            stepFinished: { [self] step in
                try? store.recordUsage(agent: agent, sessionID: session, model: model.id, usage: step.usage,
                                       usd: step.costUSD)
                events(.step(agent: agent, step))
            },
            appended: { [self] message in appended(message) })
    }

    /// Accumulates streamed text and saves it as a partial reply now and then.
    private func streamed(_ text: String) {
        lock.withLock {
            reached = true
            buffer += text
            let now = ContinuousClock.now
            if row == nil {
                row = try? store.appendMessage(agent: agent, role: .assistant, content: [.text(buffer)],
                                               status: .partial, sessionID: session)
                lastSave = now
            } else if let row, now - lastSave >= saveInterval {
                try? store.updateMessage(id: row, content: [.text(buffer)], status: .partial)
                lastSave = now
            }
        }
    }

    /// Saves a finished message: the reply replaces its partial row; tool results are a new row.
    private func appended(_ message: Message) {
        lock.withLock {
            if message.role == .assistant {
                if let row {
                    try? store.updateMessage(id: row, content: message.content, status: .complete)
                } else {
                    _ = try? store.appendMessage(agent: agent, role: .assistant, content: message.content,
                                                 sessionID: session)
                }
                row = nil
                buffer = ""
            } else {
                _ = try? store.appendMessage(agent: agent, role: .user, content: message.content, sender: "tool",
                                             sessionID: session)
            }
        }
    }

    /// Marks a reply cut short by cancellation or failure.
    func finish(_ outcome: RunOutcome) {
        lock.withLock {
            guard let row else { return }
            let status: MessageStatus = outcome == .cancelled ? .cancelled : .error
            try? store.updateMessage(id: row, content: buffer.isEmpty ? [] : [.text(buffer)], status: status)
            self.row = nil
        }
    }
}

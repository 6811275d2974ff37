import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawMessages
import XclawSkills
import XclawStore

/// What a pipeline reports while it runs, for the terminal.
public enum PipelineEvent: Sendable {
    /// The pipeline started, run by its own agent made from the orchestrator's settings.
    case started(pipeline: Int64, orchestrator: String, agent: String)
    /// The orchestrator delegated a subtask; it waits for a slot.
    case delegated(SubtaskRecord)
    /// A subtask's run took a slot.
    case subtaskStarted(pipeline: Int64, subtask: Int64, role: String, agent: String)
    /// A subtask ended (its record has the status, result or error, steps and cost).
    case subtaskFinished(SubtaskRecord)
    /// The pipeline ended.
    case finished(PipelineRecord)
}

/// Why a pipeline cannot start.
public enum PipelineError: ClassifiedError, Equatable {
    /// The agent named as orchestrator is another kind of agent.
    case notAnOrchestrator(String)

    /// The user named the wrong agent.
    public var exitStatus: ExitStatus { .usage }

    /// The message, saying how to make one.
    public var description: String {
        switch self {
        case .notAnOrchestrator(let name):
            return "agent \(name) is not an orchestrator; create one with `xclaw agent create NAME --kind "
                + "orchestrator`, or leave --orchestrator out to use the default one"
        }
    }
}

/// Runs pipelines: each pipeline's orchestrator run gets the `delegate` tool, and each delegated subtask runs as a
/// child agent in a slot of the children's queue (at most `cap` at once, the rest waiting in order), in the same
/// process, through the same service machinery as any agent run: its session, stop and approval guard, recorded
/// steps, a private display when it asks for `new`, and screen tools that take turns on a shared display.
public final class PipelineRunner: Sendable {
    /// The store holding pipelines, subtasks and their agents.
    public let store: any StoreBackend
    /// The roles subtasks run as.
    public let roles: RoleCatalog
    /// Runs the orchestrators (one pipeline agent each).
    public let orchestrators: AgentService
    /// Runs the subtasks: its queue's cap bounds the children running at once.
    public let children: AgentService
    private let waiters: RunWaiters
    private let events: @Sendable (PipelineEvent) -> Void
    /// How often a running pipeline looks for a cancel request.
    private let poll: Duration

    /// A runner whose services come from `builder`: `cap` subtasks at once (the queue's default 5), failures
    /// reported at once instead of retried (the orchestrator decides what to do about them).
    public init(
        builder: AgentBuilder, roles: RoleCatalog, cap: Int = QueueConfiguration().maxConcurrent,
        runOptions: @escaping @Sendable (ModelInfo, String) -> RunOptions = { RunOptions(model: $0, system: $1) },
        context: @escaping @Sendable (AgentConfig) -> ToolContext = { _ in ToolContext() },
        guardSettings: GuardSettings = GuardSettings(),
        events: @escaping @Sendable (PipelineEvent) -> Void = { _ in },
        serviceEvents: @escaping @Sendable (ServiceEvent) -> Void = { _ in }
    ) {
        let store = builder.store
        let waiters = RunWaiters()
        let route: @Sendable (ServiceEvent) -> Void = { event in
            waiters.observe(event)
            serviceEvents(event)
        }
        let environments = RunEnvironments(store: store)
        let children = builder.service(
            queue: QueueConfiguration(maxConcurrent: cap, maxRetries: 0), runOptions: runOptions, context: context,
            guardSettings: guardSettings,
            environment: { config, batch in
                // The slot is taken: the subtask runs from now (a subtask cancelled while it waited does not).
                guard try store.startSubtask(agent: config.name, session: batch.session) else {
                    throw CancellationError()
                }
                if let subtask = try store.subtask(agent: config.name) {
                    events(
                        .subtaskStarted(
                            pipeline: subtask.pipeline, subtask: subtask.id, role: subtask.role, agent: config.name))
                }
                return try await environments.prepare(config, batch: batch)
            }, events: route)
        let delegation = Delegation(
            store: store, roles: roles, children: children, waiters: waiters, events: events)
        orchestrators = builder.service(
            queue: QueueConfiguration(maxConcurrent: cap, maxRetries: 0), runOptions: runOptions, context: context,
            guardSettings: guardSettings,
            extraTools: { config in
                guard config.kind == .pipeline, let id = PipelineNames.pipeline(ofAgent: config.name) else {
                    return []
                }
                return [DelegateTool(pipeline: id, orchestrator: config, delegation: delegation)]
            }, events: route)
        (self.store, self.roles, self.children, self.waiters, self.events) = (store, roles, children, waiters, events)
        poll = guardSettings.poll
    }

    /// The orchestrator a pipeline uses when none is named: the agent `orchestrator`, created (kind orchestrator,
    /// the catalog's default model, no tools but `delegate`) when it does not exist. Returns its name and whether it
    /// was created now.
    public static func defaultOrchestrator(store: any StoreBackend, catalog: ModelCatalog) throws -> (String, Bool) {
        let name = PipelineNames.defaultOrchestrator
        if let existing = try? store.agent(named: name) {
            guard existing.kind == .orchestrator else { throw PipelineError.notAnOrchestrator(name) }
            return (name, false)
        }
        var config = AgentConfig(name: name, model: try catalog.model(catalog.default).id, tools: [])
        config.kind = .orchestrator
        do { try store.createAgent(config) } catch StoreError.agentExists {
            return (name, false)  // another process created it just now
        }
        return (name, true)
    }

    /// Records a pipeline for `task` and makes its own agent from the orchestrator's settings (its model, display,
    /// tools and instructions, with the orchestration prompt first); returns the pipeline's id.
    public func start(task: String, orchestrator: String) throws -> Int64 {
        let template = try store.agent(named: orchestrator)
        guard template.kind == .orchestrator else { throw PipelineError.notAnOrchestrator(orchestrator) }
        let id = try store.createPipeline(orchestrator: orchestrator, agent: "", task: task, pid: getpid())
        let agent = PipelineNames.agent(ofPipeline: id)
        try store.setPipelineAgent(id, agent: agent)
        var config = template
        config.name = agent
        config.kind = .pipeline
        config.createdAt = Date()
        config.systemPrompt =
            OrchestratorPrompt.text(roles: roles)
            + (template.systemPrompt.isEmpty ? "" : "\n\n" + template.systemPrompt)
        do {
            try store.createAgent(config)  // with the template's approval, effort and thinking
        } catch {
            try? store.finishPipeline(id, status: .failed, result: nil, error: "\(error)")
            throw error
        }
        events(.started(pipeline: id, orchestrator: orchestrator, agent: agent))
        return id
    }

    /// Runs a started pipeline to its end and returns its final record: the orchestrator's answer (completed), why
    /// it failed, or that it was cancelled. A cancel request in the store (`xclaw pipeline cancel`, from any
    /// process) stops every run in flight within the guard's poll and every subtask still waiting at once.
    public func run(_ id: Int64) async -> PipelineRecord {
        let agent = PipelineNames.agent(ofPipeline: id)
        let watcher = Task.detached { [self] in await watchForCancel(id) }
        defer { watcher.cancel() }
        waiters.register(agent)
        let end: RunWaiters.End
        do {
            _ = try await orchestrators.send(agent: agent, text: (try store.pipeline(id)).task, sender: "pipeline")
            end = await withTaskCancellationHandler {
                await waiters.wait(agent)
            } onCancel: { [store] in
                _ = try? store.requestPipelineCancel(id, by: "the pipeline's caller was interrupted")
            }
        } catch {
            waiters.forget(agent)
            end = .failed("\(error)")
        }
        let cancelled = (try? store.pipelineCancelRequest(id)) ?? nil
        var status: PipelineStatus, result: String?, error: String?
        switch end {
        case .finished(let session, .completed):
            (status, result, error) = (.completed, try? store.finalText(agent: agent, session: session), nil)
        case .finished(_, let outcome):
            status = cancelled != nil || outcome == .cancelled ? .cancelled : .failed
            error = cancelled.map { "cancelled: \(Self.who($0))" } ?? outcome.description
        case .failed(let why):
            (status, error) = (cancelled != nil ? .cancelled : .failed, why)
        }
        // Whatever the orchestrator left running or waiting ends with it (its tool calls are answered by now).
        await closeSubtasks(of: id)
        do { try store.finishPipeline(id, status: status, result: result, error: error) } catch {
            try? store.finishPipeline(id, status: .failed, result: nil, error: "\(error)")
        }
        let record =
            (try? store.pipeline(id))
            ?? PipelineRecord(
                id: id, orchestrator: "", agent: agent, task: "", status: status, result: result, error: error, usd: 0,
                cancelRequested: cancelled, pid: getpid(), startedAt: Date(), endedAt: Date())
        events(.finished(record))
        return record
    }

    /// Runs started pipelines at once (their subtasks share the children's cap); their final records, in no order.
    public func run(all ids: [Int64]) async -> [PipelineRecord] {
        await withTaskGroup(of: PipelineRecord.self) { group in
            for id in ids { group.addTask { await self.run(id) } }
            var records: [PipelineRecord] = []
            for await record in group { records.append(record) }
            return records
        }
    }

    /// Waits until neither queue has anything running or waiting.
    public func waitUntilIdle() async {
        await orchestrators.waitUntilIdle()
        await children.waitUntilIdle()
    }

    /// Polls the pipeline's cancel request; once it is there, stops its runs in flight (again each poll, so a
    /// subtask that took its slot meanwhile is reached too) and cancels the subtasks still waiting for a slot.
    private func watchForCancel(_ id: Int64) async {
        while !Task.isCancelled {
            if (try? store.pipelineCancelRequest(id)) ?? nil != nil {
                _ = try? store.restopPipelineRuns(id)
                for subtask in (try? store.subtasks(pipeline: id)) ?? [] where subtask.status == .waiting {
                    await Delegation.cancelWaiting(subtask, store: store, children: children, waiters: waiters)
                }
            }
            try? await Task.sleep(for: poll)
        }
    }

    /// Waits until every subtask of pipeline `id` is closed in the store, stopping through the store those still
    /// running (each delegate call waits for its subtask, so this is a safety net), for at most a few seconds; the
    /// pipeline's end closes what is left.
    private func closeSubtasks(of id: Int64) async {
        let deadline = ContinuousClock.now + .seconds(5)
        var asked = false
        while ContinuousClock.now < deadline {
            let open = ((try? store.subtasks(pipeline: id)) ?? []).filter { !$0.status.isFinal }
            if open.isEmpty { return }
            if !asked {
                for subtask in open where subtask.status == .running {
                    _ = try? store.requestStop(session: nil, agent: subtask.agent, by: "its pipeline ending")
                }
                asked = true
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The WHO of a "TIME WHO" request.
    static func who(_ request: String) -> String {
        request.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init) ?? request
    }
}

/// The names a pipeline's agents get, so the runner can tell which pipeline an agent belongs to.
public enum PipelineNames {
    /// The orchestrator `xclaw pipeline` uses without `--orchestrator`.
    public static let defaultOrchestrator = "orchestrator"

    /// The agent of pipeline `id` (its orchestrator's run).
    public static func agent(ofPipeline id: Int64) -> String { "pipeline-\(id)" }

    /// The pipeline whose own agent this is, or nil.
    public static func pipeline(ofAgent name: String) -> Int64? {
        guard name.hasPrefix("pipeline-") else { return nil }
        return Int64(name.dropFirst("pipeline-".count))
    }
}

/// The orchestrator's instructions, with the roles it can delegate to.
public enum OrchestratorPrompt {
    /// What a failed subtask's tool result and the system prompt both tell the orchestrator to do.
    public static let partialAnswer =
        "finish with a partial answer: give what the other subtasks found, and name what is missing and why"

    /// The prompt for the roles of `roles`.
    public static func text(roles: RoleCatalog) -> String {
        let list = roles.names.compactMap { roles.roles[$0] }.map { role in
            "- \(role.name): \(role.summary.isEmpty ? "(no description)" : role.summary)"
                + (role.tools.isEmpty ? "" : " (tools: \(role.tools.joined(separator: ", ")))")
        }.joined(separator: "\n")
        return """
            You are the orchestrator of a team of agents. Split the user's task into subtasks and hand each to a \
            specialist with the delegate tool; then combine their results into the answer.
            Roles:
            \(list)
            - Each specialist sees only its own task, not this conversation: give it everything it needs.
            - Delegate independent subtasks in the same reply: several delegate calls in one reply run in parallel \
            (up to 5 at a time; the rest wait for a slot). Delegate a subtask that needs another's result after that \
            result came back.
            - Subtasks with screen tools take turns on one display; pass display "new" to give one a private desktop.
            - Each subtask's result comes back as the result of its delegate call. When a subtask failed, its result \
            is an error: do not present its part as done. Delegate it again only if the error suggests that another \
            try can work; otherwise \(partialAnswer).
            - Your last message is the answer the user reads.
            """
    }
}

/// What the `delegate` tools of one runner share: the store, the roles, the children's service and the waiters.
struct Delegation: Sendable {
    let store: any StoreBackend
    let roles: RoleCatalog
    let children: AgentService
    let waiters: RunWaiters
    let events: @Sendable (PipelineEvent) -> Void

    /// Cancels a subtask that waits for a slot: recorded `cancelled`, taken out of the queue, its waiter answered.
    static func cancelWaiting(
        _ subtask: SubtaskRecord, store: any StoreBackend, children: AgentService, waiters: RunWaiters
    ) async {
        try? store.finishSubtask(
            subtask.id, status: .cancelled, result: nil, error: "cancelled before it started", steps: 0, usd: 0)
        let wasRunning = await children.queue.cancel(agent: subtask.agent)
        // A run that had just taken its slot finds its subtask cancelled and ends; its event answers the waiter.
        if !wasRunning { waiters.resolve(subtask.agent, .failed("cancelled before it started")) }
    }
}

/// The orchestrator's `delegate` tool: one subtask as a child agent in its own queue slot, whose final answer is
/// the call's result. Several calls in one turn run at once.
struct DelegateTool: AgentTool {
    let pipeline: Int64
    let orchestrator: AgentConfig
    let delegation: Delegation

    var name: String { "delegate" }
    var runsConcurrently: Bool { true }
    var description: String {
        "Hand one subtask to a specialist agent and get its answer back as this call's result. role: one of "
            + delegation.roles.names.joined(separator: ", ")
            + ". task: everything the specialist needs (it does not see this conversation). agent: run it with the "
            + "settings (model, tools, instructions) of this existing agent instead. tools: the tool names it gets "
            + "instead of the role's. display: \"new\" for a private desktop of its own; default: yours, shared in "
            + "turns. Call it several times in one reply to run subtasks in parallel."
    }
    var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "role": ["type": "string", "description": "The specialist's role."],
                "task": ["type": "string", "description": "The subtask, self-contained."],
                "agent": ["type": "string", "description": "An existing agent whose settings it runs with."],
                "tools": ["type": "array", "items": ["type": "string"], "description": "Its tools."],
                "display": ["type": "string", "description": "\"new\" for a private display."],
            ],
            "required": ["role", "task"],
        ]
    }

    func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let (store, children, waiters) = (delegation.store, delegation.children, delegation.waiters)
        let roleName = input["role"]?.string ?? ""
        let task = (input["task"]?.string ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !task.isEmpty else { throw ToolError("delegate needs a task: say what the specialist must do") }
        let role: AgentRole
        do { role = try delegation.roles.role(roleName) } catch { throw ToolError("\(error)") }
        if (try? store.pipelineCancelRequest(pipeline)) ?? nil != nil {
            throw ToolError("the pipeline is being cancelled: delegate nothing more and end your turn")
        }
        let config = try childConfig(role: role, input: input)
        let created = try store.createSubtask(
            pipeline: pipeline, parent: nil, role: role.name, task: task,
            agentPrefix: PipelineNames.agent(ofPipeline: pipeline), display: config.display)
        var child = config
        child.name = created.agent
        try store.createAgent(child)
        if let record = try store.subtask(agent: created.agent) { delegation.events(.delegated(record)) }
        waiters.register(created.agent)
        let end: RunWaiters.End
        do {
            _ = try await children.send(agent: created.agent, text: task, sender: "orchestrator")
            end = await withTaskCancellationHandler {
                await waiters.wait(created.agent)
            } onCancel: {
                // The orchestrator's run ends: a waiting subtask leaves the queue, a running one is stopped through
                // the store, so its guard releases what it holds.
                Task.detached {
                    guard let record = try? store.subtask(agent: created.agent) else { return }
                    if record.status == .waiting {
                        await Delegation.cancelWaiting(record, store: store, children: children, waiters: waiters)
                    } else {
                        _ = try? store.requestStop(
                            session: nil, agent: created.agent, by: "its orchestrator's run ending")
                    }
                }
            }
        } catch {
            waiters.forget(created.agent)
            end = .failed("\(error)")
        }
        return try finish(subtask: created.id, agent: created.agent, role: role.name, end: end)
    }

    /// The child's settings: the named agent's, else the orchestrator's model and display with the role's prompt and
    /// tools; `tools` and `display` from the call win.
    private func childConfig(role: AgentRole, input: JSONValue) throws -> AgentConfig {
        var config: AgentConfig
        if let name = input["agent"]?.string {
            do { config = try delegation.store.agent(named: name) } catch { throw ToolError("\(error)") }
            config.systemPrompt = role.prompt + (config.systemPrompt.isEmpty ? "" : "\n\n" + config.systemPrompt)
        } else {
            config = AgentConfig(
                name: "", model: orchestrator.model, systemPrompt: role.prompt, tools: role.tools,
                display: orchestrator.display, dryRun: orchestrator.dryRun, confirm: orchestrator.confirm)
            config.approval = orchestrator.approval
        }
        config.systemPrompt +=
            "\n\nYou work on one subtask an orchestrator delegated to you; your last message is your answer to it."
        config.kind = .pipeline
        config.createdAt = Date()
        config.contextFrom = 0
        if let tools = input["tools"]?.array {
            let names = tools.compactMap(\.string)
            let valid = Set(SkillCatalog.allToolNames)
            let unknown = names.filter { !valid.contains($0) }
            guard unknown.isEmpty else {
                throw ToolError(
                    "unknown tool(s) \(unknown.joined(separator: ", ")); valid: "
                        + SkillCatalog.allToolNames.joined(separator: ", "))
            }
            config.tools = names
        }
        if let display = input["display"]?.string, !display.isEmpty {
            guard display == "new" || display.hasPrefix("new:") || display.hasPrefix(":") else {
                throw ToolError("display must be \"new\" (or new:WxH, or a display like :1), not \"\(display)\"")
            }
            config.display = display
        }
        return config
    }

    /// Records how the subtask ended and gives the orchestrator its answer, or an error result that says what to do.
    private func finish(subtask: Int64, agent: String, role: String, end: RunWaiters.End) throws -> ToolOutput {
        let store = delegation.store
        let record = try? store.subtask(agent: agent)
        let session = record?.session.flatMap { try? store.session($0) }
        let (steps, usd) = (session?.steps ?? 0, session?.usd ?? 0)
        var status: PipelineStatus, result: String?, error: String?
        switch end {
        case .finished(let id, .completed):
            let text = (try? store.finalText(agent: agent, session: id)) ?? ""
            (status, result) = (.completed, text)
        case .finished(_, let outcome):
            let cancelled: Bool
            switch outcome {
            case .cancelled: cancelled = true
            case .stopped(let why): cancelled = why.contains(PipelineRecord.cancelMarker)
            default: cancelled = false
            }
            (status, error) = (cancelled ? .cancelled : .failed, outcome.description)
        case .failed(let why):
            (status, error) = (record?.status == .cancelled ? .cancelled : .failed, why)
        }
        try? store.finishSubtask(subtask, status: status, result: result, error: error, steps: steps, usd: usd)
        if let done = try? store.subtask(agent: agent) { delegation.events(.subtaskFinished(done)) }
        // Cancelled with its pipeline: the orchestrator's run ends here, cancelled as by a person's interrupt, rather
        // than taking one more turn that its own stop request (polled) may not reach in time: under load one such
        // turn completed the orchestrator, and the cancelled pipeline ended "completed".
        if (try? store.pipelineCancelRequest(pipeline)) ?? nil != nil { throw CancellationError() }
        if status == .completed { return .text(result ?? "") }
        throw ToolError(
            "subtask \(subtask) (\(role)) \(status == .cancelled ? "was cancelled" : "failed"): "
                + (error ?? "no reason given") + ". Its result is missing: \(OrchestratorPrompt.partialAnswer).")
    }
}

/// Waits for the end of runs by agent name: the services' events resolve them (a run's `finished`, or a failure
/// that will not be retried), the first end wins, and an end that comes before the wait is kept.
final class RunWaiters: Sendable {
    /// How a run ended.
    enum End: Sendable {
        /// The run ended in `session` with this outcome.
        case finished(session: Int64, outcome: RunOutcome)
        /// The run failed before or without a `finished` event.
        case failed(String)
    }

    private struct Entry {
        var end: End?
        var continuation: CheckedContinuation<End, Never>?
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Starts listening for `agent`'s end (before its run is queued, so no end is missed).
    func register(_ agent: String) { entries.withLock { $0[agent] = Entry() } }

    /// Stops listening for `agent`.
    func forget(_ agent: String) { _ = entries.withLock { $0.removeValue(forKey: agent) } }

    /// Takes the service events that end runs.
    func observe(_ event: ServiceEvent) {
        switch event {
        case .finished(let agent, let session, let outcome):
            resolve(agent, .finished(session: session, outcome: outcome))
        case .failed(let agent, let message, false, _): resolve(agent, .failed(message))
        default: break
        }
    }

    /// Records `agent`'s end unless one was recorded, resuming its waiter.
    func resolve(_ agent: String, _ end: End) {
        let continuation: CheckedContinuation<End, Never>? = entries.withLock { entries in
            guard var entry = entries[agent], entry.end == nil else { return nil }
            entry.end = end
            if let waiting = entry.continuation {
                entries[agent] = nil
                return waiting
            }
            entries[agent] = entry
            return nil
        }
        continuation?.resume(returning: end)
    }

    /// Waits for `agent`'s end (registered first).
    func wait(_ agent: String) async -> End {
        await withCheckedContinuation { continuation in
            let ready: End? = entries.withLock { entries in
                if let end = entries[agent]?.end {
                    entries[agent] = nil
                    return end
                }
                entries[agent, default: Entry()].continuation = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

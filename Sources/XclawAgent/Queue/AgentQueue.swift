import Foundation
import XclawBase
import XclawMessages

/// What a run is asked to do, so tasks can be ordered before messages and de-duplicated by id.
public enum QueueWork: Sendable, Hashable {
    /// Read and answer every message that arrived since the agent's cursor (one run covers any number of them).
    case messages
    /// Run one scheduled task; at most one copy per id is running or pending for an agent.
    case task(id: String)
}

/// How a run ended, so the queue knows whether to retry.
public enum ProcessOutcome: Sendable, Equatable {
    /// The work is done; the retry count starts over.
    case success
    /// The work failed for the given reason; messages work is retried with backoff, tasks are not.
    case failure(String)
}

/// The queue's limits, separate from the queue so callers and tests can tune them.
public struct QueueConfiguration: Sendable {
    /// Runs allowed at once across all agents, so a burst of agents cannot exhaust the machine or the API quota.
    public var maxConcurrent: Int
    /// Retries of failed messages work before giving up until the agent's next message.
    public var maxRetries: Int
    /// First retry delay, doubled per retry (5, 10, 20, 40, 80 s), so a failing API is not hammered.
    public var retryBase: Duration

    /// What the backoff waits on: the real clock, or a test clock so the retry schedule is tested without waiting
    /// (the scheduler takes the same seam).
    public var clock: any Clock<Duration>

    /// Defaults are nanoclaw's proven figures: 5 runs at once, 5 retries, 5 s base backoff.
    public init(
        maxConcurrent: Int = 5, maxRetries: Int = 5, retryBase: Duration = .seconds(5),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.maxRetries = max(0, maxRetries)
        self.retryBase = retryBase
        self.clock = clock
    }
}

/// What the queue did, so the runtime can log it and tell the user about failures.
public enum QueueEvent: Sendable {
    /// A run began (it holds a slot until it ends).
    case started(agent: String, work: QueueWork)
    /// A run ended without being cancelled.
    case finished(agent: String, work: QueueWork, outcome: ProcessOutcome)
    /// Failed messages work runs again after `delay`; `attempt` counts from 1, so the user can be told.
    case retryScheduled(agent: String, attempt: Int, delay: Duration)
    /// Retries are exhausted, so the user must be told; nothing more happens until the agent's next message.
    case gaveUp(agent: String, reason: String)
    /// A run stopped because `cancel(agent:)` cancelled it; it is not retried.
    case cancelled(agent: String)
}

/// Keeps one run per agent and a global cap, so an agent never answers twice at once and bursts stay bounded.
public actor AgentQueue {
    /// Does one run's real work outside the actor; must return within about a second of its task being cancelled.
    public typealias Processor = @Sendable (_ agent: String, _ work: QueueWork) async -> ProcessOutcome

    /// The books of one agent; dropped when the agent has nothing running, pending or scheduled.
    private struct AgentState {
        var running: QueueWork?
        var runTask: Task<Void, Never>?
        var runToken: UInt64 = 0
        var cancelRequested = false
        var pendingMessages = false
        var pendingTasks: [String] = []
        var retryCount = 0
        var retryTimer: Task<Void, Never>?
        var retryToken: UInt64 = 0

        var hasPending: Bool { pendingMessages || !pendingTasks.isEmpty }
        var isEmpty: Bool { running == nil && !hasPending && retryTimer == nil && retryCount == 0 }
    }

    private let configuration: QueueConfiguration
    private let processor: Processor
    private let events: (@Sendable (QueueEvent) -> Void)?
    private var agents: [String: AgentState] = [:]
    private var waitingList: [String] = []
    private var running = 0
    private var scheduledRetries = 0
    private var nextToken: UInt64 = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    /// `events` is called in order on the actor, so it must return quickly (log, or hand off to another task).
    public init(
        configuration: QueueConfiguration = .init(), processor: @escaping Processor,
        events: (@Sendable (QueueEvent) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.processor = processor
        self.events = events
    }

    /// Runs in progress, so callers can show load; never above `maxConcurrent`.
    public var activeCount: Int { running }

    /// Agents waiting for a free slot, first come first served, each listed once.
    public var waiting: [String] { waitingList }

    /// New messages may exist: bursts coalesce into one run that reads them all; resets retries (that run covers them).
    public func enqueueMessages(agent: String) {
        var state = agents[agent] ?? AgentState()
        state.retryCount = 0
        if state.retryTimer != nil { cancelRetryTimer(&state) }
        agents[agent] = state
        requestMessagesRun(agent)
    }

    /// Queues a scheduled task; skipped if that id is running or pending for the agent, so it never runs twice.
    public func enqueueTask(agent: String, id: String) {
        var state = agents[agent] ?? AgentState()
        if state.running == .task(id: id) || state.pendingTasks.contains(id) { return }
        if state.running != nil || waitingList.contains(agent) {
            state.pendingTasks.append(id)
            agents[agent] = state
        } else if running >= configuration.maxConcurrent {
            state.pendingTasks.append(id)
            agents[agent] = state
            waitingList.append(agent)
        } else {
            agents[agent] = state
            start(agent, .task(id: id))
        }
    }

    /// Real cancel: cancels the in-flight run, drops pending work and retries; true if a run was in flight.
    @discardableResult
    public func cancel(agent: String) -> Bool {
        guard var state = agents[agent] else { return false }
        state.pendingMessages = false
        state.pendingTasks = []
        state.retryCount = 0
        if state.retryTimer != nil { cancelRetryTimer(&state) }
        waitingList.removeAll { $0 == agent }
        var wasRunning = false
        // The run keeps its slot until the processor returns, so the agent never runs twice at once; work
        // enqueued after this call runs once it has.
        if state.running != nil {
            wasRunning = true
            state.cancelRequested = true
            state.runTask?.cancel()
        }
        agents[agent] = state
        settle(agent)
        drainWaiting()
        resumeIdleWaitersIfIdle()
        return wasRunning
    }

    /// Lets shutdown and tests wait until nothing runs, waits or is scheduled to retry (not cancellable).
    public func waitUntilIdle() async {
        if isIdle { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    // MARK: - Bookkeeping

    private var isIdle: Bool { running == 0 && waitingList.isEmpty && scheduledRetries == 0 }

    /// Asks for a messages run without touching the retry count (a fresh signal or a retry firing).
    private func requestMessagesRun(_ agent: String) {
        var state = agents[agent] ?? AgentState()
        if state.running != nil || waitingList.contains(agent) {
            state.pendingMessages = true
            agents[agent] = state
        } else if running >= configuration.maxConcurrent {
            state.pendingMessages = true
            agents[agent] = state
            waitingList.append(agent)
        } else {
            agents[agent] = state
            start(agent, .messages)
        }
    }

    /// Takes a slot for the agent (unless it already holds its own) and launches the processor in its own task.
    private func start(_ agent: String, _ work: QueueWork, keepingSlot: Bool = false) {
        var state = agents[agent] ?? AgentState()
        if !keepingSlot { running += 1 }
        nextToken &+= 1
        let token = nextToken
        state.running = work
        state.runToken = token
        state.cancelRequested = false
        // A messages run reads everything unprocessed, so it serves as any scheduled retry.
        if work == .messages, state.retryTimer != nil { cancelRetryTimer(&state) }
        events?(.started(agent: agent, work: work))
        let processor = self.processor
        // Detached, so the processor never runs on the actor, and cancellable by `cancel(agent:)`; in the request's
        // world (`Invocation`), which a detached task would otherwise lose, so a daemon's run writes to its asker.
        let invocation = Invocation.served
        state.runTask = Task.detached { [weak self] in
            let outcome = await Invocation.$served.withValue(invocation) { await processor(agent, work) }
            await self?.runEnded(agent: agent, token: token, outcome: outcome)
        }
        agents[agent] = state
    }

    private func runEnded(agent: String, token: UInt64, outcome: ProcessOutcome) {
        guard var state = agents[agent], state.runToken == token, let work = state.running else { return }
        state.running = nil
        state.runTask = nil
        if state.cancelRequested {
            state.cancelRequested = false
            agents[agent] = state
            events?(.cancelled(agent: agent))
        } else {
            agents[agent] = state
            events?(.finished(agent: agent, work: work, outcome: outcome))
            handleOutcome(agent: agent, work: work, outcome: outcome)
        }
        state = agents[agent] ?? AgentState()
        // The agent's own work keeps its slot: tasks first, then messages.
        if !state.pendingTasks.isEmpty {
            let id = state.pendingTasks.removeFirst()
            agents[agent] = state
            start(agent, .task(id: id), keepingSlot: true)
        } else if state.pendingMessages {
            state.pendingMessages = false
            agents[agent] = state
            start(agent, .messages, keepingSlot: true)
        } else {
            running -= 1
            settle(agent)
            drainWaiting()
        }
        resumeIdleWaitersIfIdle()
    }

    private func handleOutcome(agent: String, work: QueueWork, outcome: ProcessOutcome) {
        guard var state = agents[agent] else { return }
        switch (work, outcome) {
        case (.messages, .success):
            state.retryCount = 0
        case (.messages, .failure(let reason)):
            if state.retryCount >= configuration.maxRetries {
                state.retryCount = 0
                agents[agent] = state
                events?(.gaveUp(agent: agent, reason: reason))
                return
            }
            state.retryCount += 1
            let attempt = state.retryCount
            let delay = configuration.retryBase * (1 << min(attempt - 1, 30))
            if state.retryTimer != nil { cancelRetryTimer(&state) }
            nextToken &+= 1
            let token = nextToken
            state.retryToken = token
            let clock = configuration.clock
            state.retryTimer = Task { [weak self] in
                do { try await clock.sleep(for: delay) } catch { return }
                await self?.retryFired(agent: agent, token: token)
            }
            scheduledRetries += 1
            agents[agent] = state
            events?(.retryScheduled(agent: agent, attempt: attempt, delay: delay))
            return
        default:
            break  // Task outcomes are reported by the `finished` event and never retried.
        }
        agents[agent] = state
    }

    private func retryFired(agent: String, token: UInt64) {
        guard var state = agents[agent], state.retryTimer != nil, state.retryToken == token else { return }
        state.retryTimer = nil
        scheduledRetries -= 1
        agents[agent] = state
        requestMessagesRun(agent)
        resumeIdleWaitersIfIdle()
    }

    private func cancelRetryTimer(_ state: inout AgentState) {
        state.retryTimer?.cancel()
        state.retryTimer = nil
        scheduledRetries -= 1
    }

    /// Gives free slots to waiting agents in arrival order; each runs its tasks before its messages.
    private func drainWaiting() {
        while running < configuration.maxConcurrent, !waitingList.isEmpty {
            let agent = waitingList.removeFirst()
            guard var state = agents[agent], state.running == nil else { continue }
            if !state.pendingTasks.isEmpty {
                let id = state.pendingTasks.removeFirst()
                agents[agent] = state
                start(agent, .task(id: id))
            } else if state.pendingMessages {
                state.pendingMessages = false
                agents[agent] = state
                start(agent, .messages)
            } else {
                settle(agent)
            }
        }
    }

    /// Forgets an agent with nothing left, so the books do not grow with every agent ever seen.
    private func settle(_ agent: String) {
        if let state = agents[agent], state.isEmpty, !waitingList.contains(agent) { agents[agent] = nil }
    }

    private func resumeIdleWaitersIfIdle() {
        guard isIdle, !idleWaiters.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}

import Foundation

/// Where a pipeline or a subtask is; stored as its raw value. All but `waiting` and `running` are final.
public enum PipelineStatus: String, Sendable, Codable, CaseIterable {
    /// A subtask created and queued, waiting for a free slot (pipelines never wait).
    case waiting
    /// Its run is in progress.
    case running
    /// It ended with an answer.
    case completed
    /// It ended with an error.
    case failed
    /// `xclaw pipeline cancel` (or the orchestrator's own end) cancelled it.
    case cancelled

    /// True for every status a pipeline or subtask ends in.
    public var isFinal: Bool { self != .waiting && self != .running }
}

/// One pipeline: a task an orchestrator splits into delegated subtasks.
public struct PipelineRecord: Sendable, Hashable, Codable {
    /// The pipeline's id, printed when it starts.
    public var id: Int64
    /// The orchestrator agent whose settings it runs with.
    public var orchestrator: String
    /// The pipeline's own agent (its orchestrator's run and conversation).
    public var agent: String
    /// The task it was given.
    public var task: String
    /// Where it is.
    public var status: PipelineStatus
    /// The final answer, once completed.
    public var result: String?
    /// Why it failed or was cancelled.
    public var error: String?
    /// What it cost in USD: the orchestrator's runs and every subtask's.
    public var usd: Double
    /// Who asked it to cancel ("TIME WHO"), or nil.
    public var cancelRequested: String?
    /// The process that runs it.
    public var pid: Int32
    /// When it started.
    public var startedAt: Date
    /// When it ended; nil while running.
    public var endedAt: Date?

    /// A record value (the store makes these; a runner that cannot read one back makes its own).
    public init(
        id: Int64, orchestrator: String, agent: String, task: String, status: PipelineStatus, result: String?,
        error: String?, usd: Double, cancelRequested: String?, pid: Int32, startedAt: Date, endedAt: Date?
    ) {
        (self.id, self.orchestrator, self.agent, self.task, self.status) = (id, orchestrator, agent, task, status)
        (self.result, self.error, self.usd, self.cancelRequested) = (result, error, usd, cancelRequested)
        (self.pid, self.startedAt, self.endedAt) = (pid, startedAt, endedAt)
    }
}

/// One delegated subtask of a pipeline: a child record of its pipeline (and of another subtask when nested).
public struct SubtaskRecord: Sendable, Hashable, Codable {
    /// The subtask's id.
    public var id: Int64
    /// Its pipeline.
    public var pipeline: Int64
    /// The subtask that delegated it, or nil for the orchestrator's own.
    public var parent: Int64?
    /// The role it runs as (`researcher`, `screen-operator`, ...).
    public var role: String
    /// What it was asked to do.
    public var task: String
    /// The child agent that runs it (its conversation is `xclaw history AGENT`).
    public var agent: String
    /// The display it asked for (`new` for a private one), or nil for the orchestrator's.
    public var display: String?
    /// Where it is.
    public var status: PipelineStatus
    /// Its answer, once completed.
    public var result: String?
    /// Why it failed or was cancelled.
    public var error: String?
    /// Model requests it made.
    public var steps: Int
    /// What it cost in USD.
    public var usd: Double
    /// Its run's session, once started.
    public var session: Int64?
    /// When it was delegated.
    public var createdAt: Date
    /// When its run took a slot.
    public var startedAt: Date?
    /// When it ended.
    public var endedAt: Date?
}

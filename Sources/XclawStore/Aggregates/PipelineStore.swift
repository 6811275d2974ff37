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

    /// What a stop request written by `xclaw pipeline cancel` says after the time, so the run is recorded
    /// `cancelled` rather than `stopped`, whichever backend wrote it.
    public static let cancelMarker = "pipeline cancel"
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

/// Pipelines and their subtasks: an orchestrator's delegations, their status, cost and cancellation.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol PipelineStore: AnyObject, Sendable {
    /// Records a new pipeline run by `agent` (its own agent, made from `orchestrator`'s settings); returns its id.
    func createPipeline(orchestrator: String, agent: String, task: String, pid: Int32) throws -> Int64

    /// Gives a pipeline its own agent's name once its id is known (the name carries the id).
    func setPipelineAgent(_ id: Int64, agent: String) throws

    /// Records how a pipeline ended; its cost is its own agent's sessions plus every subtask's. Subtasks still open
    /// are closed as `cancelled` in the same transaction, so every tree in the store is complete.
    func finishPipeline(_ id: Int64, status: PipelineStatus, result: String?, error: String?) throws

    /// Every pipeline, oldest first.
    func pipelines() throws -> [PipelineRecord]

    /// One pipeline; `unknownPipeline` when there is none.
    func pipeline(_ id: Int64) throws -> PipelineRecord

    /// A pipeline's subtasks in the order they were delegated.
    func subtasks(pipeline: Int64) throws -> [SubtaskRecord]

    /// The subtask run by the child agent `agent`, or nil.
    func subtask(agent: String) throws -> SubtaskRecord?

    /// The text of the last complete reply a session stored: a run's answer.
    func finalText(agent: String, session: Int64) throws -> String

    /// Records a delegated subtask, `waiting` for a slot; its child agent is named `PREFIX.ID-ROLE` (the id makes it
    /// unique, so subtasks delegated at once never share a conversation). Returns the id and that name.
    func createSubtask(
        pipeline: Int64, parent: Int64?, role: String, task: String, agentPrefix: String, display: String?
    ) throws -> (id: Int64, agent: String)

    /// Marks the waiting subtask run by `agent` as running in `session`; false when it no longer waits (cancelled).
    @discardableResult
    func startSubtask(agent: String, session: Int64) throws -> Bool

    /// Records how a subtask ended, with its answer or error, steps and cost; a subtask already closed (the
    /// pipeline ended first) keeps what it says.
    func finishSubtask(_ id: Int64, status: PipelineStatus, result: String?, error: String?, steps: Int, usd: Double)
        throws

    /// Asks a pipeline to cancel: the request is kept on the pipeline (its runner stops what has not started) and
    /// every run in flight of its agents is asked to stop, the way `xclaw stop` asks. Returns the sessions asked.
    @discardableResult
    func requestPipelineCancel(_ id: Int64, by who: String) throws -> [SessionRecord]

    /// Asks again every run in flight of a cancelled pipeline to stop: a subtask that took its slot after the
    /// request is reached too. The runner calls it while it waits.
    @discardableResult
    func restopPipelineRuns(_ id: Int64) throws -> [SessionRecord]

    /// Who asked a pipeline to cancel, or nil: polled by its runner, so one cached SELECT on the primary key.
    func pipelineCancelRequest(_ id: Int64) throws -> String?

    /// Marks the pipelines a killed process left running as failed, with their open subtasks cancelled.
    @discardableResult
    func recoverPipelines() throws -> [Int64]
}

import Foundation
import XclawMessages

/// Runs (sessions) and what they leave: status, usage, steps, transcripts, report paths, stop requests and the replayable action steps.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol RunStore: AnyObject, Sendable {
    /// Records that a process starts running an agent, so a crash leaves a trace `recoverInterrupted` finds.
    /// `pid` is this process unless a supervisor records the worker it spawned.
    func startSession(agent: String, kind: SessionKind, pid: Int32) throws -> Int64

    /// Records how a session ended (`completed`, `failed`, `cancelled` or `interrupted`), its turns and cost.
    func finishSession(_ id: Int64, status: SessionStatus, error: String?, steps: Int, usd: Double) throws

    /// Sessions, oldest first: one agent's, or every agent's when `agent` is nil.
    func sessions(agent: String?) throws -> [SessionRecord]

    /// Runs, oldest first, with the scheduled task each ran for (the `schedule:NAME` sender of a message in its
    /// batch; nil for runs a person asked for): one agent's or all, and only one task's when `task` is given.
    func runs(agent: String?, task: String?) throws -> [(session: SessionRecord, task: String?)]

    /// Marks as `interrupted` every `running` session whose process is gone: its pid no longer exists, or the pid
    /// now belongs to another process (this one included, after a restart). Their `partial` messages stay partial.
    /// Returns them, updated, so the caller can tell the user what was cut short.
    @discardableResult
    func recoverInterrupted() throws -> [SessionRecord]

    /// Records one model request's tokens and cost, so `xclaw usage` can total them per agent and session.
    func recordUsage(agent: String, sessionID: Int64?, model: String, usage: Usage, usd: Double, timing: StepTiming?)
        throws

    /// Each model request of a session, in order, with its tokens, cost and timings (for the run report).
    func steps(session: Int64) throws -> [StepRecord]

    /// Totals per agent, sorted by name; agents with no requests appear with zeros. With `agent`, just that one.
    func usageSummary(agent: String?) throws -> [UsageSummary]

    /// An agent's sessions, oldest first, each with the tokens and cost of its recorded requests (zeros if none).
    func usageBySession(agent: String) throws -> [SessionUsage]

    /// One session by id; `unknownSession` when there is none (never started, or its agent was deleted).
    func session(_ id: Int64) throws -> SessionRecord

    /// Everything a report of session `id` shows: the session and its messages in one snapshot, then its steps (a run
    /// that is still going may have one step more than messages show).
    func runTranscript(session id: Int64) throws -> RunTranscript

    /// Records where a session's report was written (nil: it is gone), so `xclaw runs` shows it and retention
    /// can delete it later.
    func setReport(session id: Int64, path: String?) throws

    /// Every session that has a report recorded, newest first, with its path.
    func reports() throws -> [(session: Int64, path: String)]

    /// The id of the oldest of the `keep` newest sessions: sessions with a smaller id are past retention. Nil when
    /// there are no more than `keep` sessions.
    func retentionCutoff(keep: Int) throws -> Int64?

    /// Asks runs to stop: the given sessions, every running session of `agent`, or (both nil) every run in flight.
    /// Each run notices within its poll interval, wherever it runs (another process, another daemon). Returns the
    /// sessions asked; an unknown session id throws `unknownSession`.
    @discardableResult
    func requestStop(session: Int64?, agent: String?, by who: String) throws -> [SessionRecord]

    /// Who asked a session to stop ("TIME WHO"), or nil: read by the run's poller several times a second, so it is
    /// one cached SELECT on the primary key.
    func stopRequest(session: Int64) throws -> String?

    /// Stores a run's `seq`-th input action as replayable step JSON (see `RecordedStep`).
    func recordActionStep(session: Int64, seq: Int, json: String) throws

    /// A run's recorded steps as JSON, in the order they were done; `unknownSession` for a run that does not exist.
    func actionSteps(session: Int64) throws -> [String]

    /// Every run's recorded steps after `id` (0: from the first), oldest first, at most `limit`.
    func actionSteps(after id: Int64, limit: Int) throws -> [ActionStepRow]

    /// The newest recorded step's `id` (0 when there is none): a follower starts after it.
    func lastActionStepID() throws -> Int64

    /// Keeps the frame tool call `call` of session `session` acted on (its first input action's), the image once in
    /// `images` by its SHA-256; a second frame for the same call is ignored.
    func recordActionFrame(session: Int64, call: String, mediaType: String, data: Data) throws
}

/// What a run report is made of, read in one snapshot: the session, the task it ran for, the input it answered, every
/// message it stored and its steps' usage rows.
public struct RunTranscript: Sendable, Hashable {
    /// The session (the run).
    public var session: SessionRecord
    /// The scheduled task's name (or id) when a schedule sent its input; nil for runs a person asked for.
    public var task: String?
    /// The chat messages its batch answered (what a person or schedule sent), oldest first.
    public var input: [StoredMessage]
    /// What the run stored, oldest first: its batch prompt, the model's replies and the tool results.
    public var messages: [StoredMessage]
    /// Its model requests with their tokens, cost and timings, in order.
    public var steps: [StepRecord]
    /// The frame each tool call acted on, by tool_use id (`ActionFrameRecord.data` nil: removed by retention).
    public var frames: [String: ActionFrameRecord] = [:]
}

/// The frame a tool call's input action acted on, as the store keeps it for the run's report.
public struct ActionFrameRecord: Sendable, Hashable {
    /// `image/png` or `image/jpeg`.
    public var mediaType: String
    /// The image's bytes; nil once retention removed them (the row says there was one).
    public var data: Data?

    /// A frame as read back.
    public init(mediaType: String, data: Data?) { (self.mediaType, self.data) = (mediaType, data) }
}

/// A recorded step with the run it belongs to, for a surface that follows every run's actions (the web view).
public struct ActionStepRow: Sendable, Hashable {
    /// Its place among every run's steps (increasing).
    public var id: Int64
    /// The run.
    public var session: Int64
    /// The run's agent.
    public var agent: String
    /// The process that ran it.
    public var pid: Int32
    /// The agent's display setting, when it has one.
    public var display: String?
    /// The step, as `RecordedStep` JSON.
    public var step: String
    /// When it was recorded.
    public var createdAt: Date
}

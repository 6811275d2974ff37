import Foundation
import XclawMessages

/// Replays of recorded runs: their progress, step log and last screenshot.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol ReplayStore: AnyObject, Sendable {
    /// Starts a replay of `script` as a run of `agent`: a `running` session (so `stop`, `runs` and crash recovery
    /// see it) with its replay row, in one transaction. `task` is the scheduled task that fired it.
    func startReplay(agent: String, script: String, revision: Int?, steps: Int, task: String?) throws -> Int64

    /// Records where a replay is: its counts, its steps' outcomes (JSON) and, when it diverged, the screen then
    /// (a PNG, base64).
    func updateReplay(session id: Int64, summary: ReplaySummary, log: String, screenshot: String?) throws

    /// A replay's steps' outcomes (JSON) and the screen where it diverged; nil when the session is no replay.
    func replayLog(session id: Int64) throws -> (log: String, screenshot: String?)?

    /// Drops the divergence screenshots of replays older than `cutoff` (retention, as for agents' screenshots);
    /// returns how many.
    @discardableResult
    func pruneReplayScreenshots(sessionsBefore cutoff: Int64) throws -> Int
}

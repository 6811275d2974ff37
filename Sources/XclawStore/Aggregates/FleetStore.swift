import Foundation

/// A fleet's workers and its one queue of runs, in the shared PostgreSQL database: workers register and heartbeat,
/// claim the oldest run they can serve (`FOR UPDATE SKIP LOCKED`, woken by `LISTEN/NOTIFY`), and a worker that
/// stops heartbeating is lost, with its runs in flight. An SQLite store has no fleet: every call throws
/// `StoreError.noFleet`.
public protocol FleetStore: AnyObject, Sendable {
    /// Registers a worker, or re-registers one that left or was lost (it rejoins). Refuses a name another live
    /// worker holds (`workerNameTaken`).
    func registerWorker(_ info: WorkerInfo) throws

    /// Records that a worker is alive; false when it was declared lost meanwhile (its runs were settled without it:
    /// it must abandon them and register again).
    func heartbeat(worker: String) throws -> Bool

    /// Records that a worker left cleanly.
    func leaveWorker(_ name: String) throws

    /// Every worker, by name, with its runs in flight counted.
    func workers() throws -> [WorkerRecord]

    /// Declares lost every live worker whose last heartbeat is older than `timeout` (by the database's clock, which
    /// every host shares): its running runs become `lost` (or `queued` again when they asked for `retryLost`), their
    /// sessions `interrupted`. Each loss is settled once, whichever worker notices it first. Nobody is declared lost
    /// until the server itself has run for `timeout`: after a restart every worker gets a full deadline to reach it.
    func markLostWorkers(timeout: Duration) throws -> [LostWorker]

    /// Queues a run and wakes the workers; returns its id. Its agent must exist, except for a one-shot `run`, whose
    /// worker creates it.
    func enqueueRun(_ request: FleetRunRequest) throws -> Int64

    /// The oldest queued run `worker` can serve whose agent has no run in flight nor an older one queued (so an
    /// agent's runs go one at a time, in order, fleet-wide); marked `running` on `worker`. Nil when there is none.
    func claimRun(for worker: WorkerInfo) throws -> FleetRunRecord?

    /// Ties a run to the session it started (so `stop`, approvals and reports find it).
    func attachSession(run: Int64, session: Int64) throws

    /// Records how a run ended (`completed`, `failed` or `cancelled`); refused (`false`) when the run is no longer
    /// this worker's (declared lost meanwhile).
    @discardableResult
    func finishRun(_ id: Int64, worker: String, status: FleetRunStatus, exitStatus: Int32?, error: String?) throws
        -> Bool

    /// Cancels a queued run (it will not start), or asks a running one to stop (through its session's stop request,
    /// which its worker polls); returns the run as it is now. An ended run is left as it is.
    @discardableResult
    func cancelFleetRun(_ id: Int64, by who: String) throws -> FleetRunRecord

    /// Whether this store is a fleet's (PostgreSQL).
    var hasFleet: Bool { get }

    /// One run; `unknownFleetRun` when there is none.
    func fleetRun(_ id: Int64) throws -> FleetRunRecord

    /// Runs, oldest first: those with `status` (all when nil), at most `limit` of the newest.
    func fleetRuns(status: FleetRunStatus?, limit: Int) throws -> [FleetRunRecord]

    /// Waits until the fleet's queue changes (a run queued or ended) or `timeout` passes, on a listening connection
    /// of its own; returns true when woken by a notification.
    func waitForFleetChange(timeout: Duration) throws -> Bool
}

/// What a worker registers: who it is and what it can serve.
public struct WorkerInfo: Sendable, Hashable, Codable {
    /// Its name, unique among live workers.
    public var name: String
    /// The host it runs on.
    public var host: String
    /// Its daemon's pid on that host.
    public var pid: Int32
    /// The xclaw version it runs.
    public var version: String
    /// Its labels (`--label KEY=VALUE`), matched against a run's required labels.
    public var labels: [String: String]
    /// How many runs it takes at once.
    public var slots: Int
    /// The display sizes it can start (`WIDTHxHEIGHT`).
    public var displays: [String]
    /// The applications installed on it (program names found on its PATH).
    public var apps: [String]
    /// The command-line level it runs (`FleetRunRequest.currentLevel` of its xclaw): it claims only runs queued at
    /// this level or below.
    public var level: Int

    /// A worker description.
    public init(
        name: String, host: String, pid: Int32, version: String, labels: [String: String], slots: Int,
        displays: [String], apps: [String], level: Int = FleetRunRequest.currentLevel
    ) {
        (self.name, self.host, self.pid, self.version) = (name, host, pid, version)
        (self.labels, self.slots, self.displays, self.apps, self.level) = (labels, slots, displays, apps, level)
    }
}

/// Whether a worker is serving.
public enum WorkerState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Heartbeating.
    case up
    /// Stopped cleanly.
    case left
    /// Missed its heartbeats: declared lost.
    case lost
}

/// A worker as `xclaw fleet` shows it.
public struct WorkerRecord: Sendable, Hashable, Codable {
    /// What it registered.
    public var info: WorkerInfo
    /// Its state.
    public var state: WorkerState
    /// Runs it has in flight.
    public var busy: Int
    /// When it registered (last).
    public var startedAt: Date
    /// Its last heartbeat.
    public var heartbeatAt: Date
    /// When it left or was declared lost.
    public var endedAt: Date?
}

/// A worker declared lost, with what became of its runs.
public struct LostWorker: Sendable, Hashable {
    /// Its name.
    public var name: String
    /// Its runs in flight, now `lost` or (when they asked to be retried) `queued` again.
    public var runs: [FleetRunRecord]
}

/// What a queued run is.
public enum FleetRunKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// An agent answers its pending messages (`xclaw send`).
    case send
    /// A one-shot task (`xclaw run`).
    case run
    /// A pipeline.
    case pipeline
    /// A replay of a recorded script.
    case replay
    /// A scheduled task's slot.
    case task
}

/// Where a queued run is.
public enum FleetRunStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Waiting for a worker.
    case queued
    /// Claimed: a worker runs it.
    case running
    /// Ended well.
    case completed
    /// Ended with an error.
    case failed
    /// Its worker was lost while it ran; not run again (a click must not happen twice).
    case lost
    /// Stopped before or while it ran.
    case cancelled

    /// Whether it ended.
    public var isFinal: Bool { self != .queued && self != .running }
}

/// A run to queue.
public struct FleetRunRequest: Sendable, Hashable {
    /// What it is.
    public var kind: FleetRunKind
    /// The agent it runs (one run per agent at a time).
    public var agent: String
    /// The xclaw command line the worker runs (without `xclaw`).
    public var arguments: [String]
    /// Labels the worker must have.
    public var labels: [String: String]
    /// A display size the worker must be able to start.
    public var displaySize: String?
    /// An application the worker must have.
    public var app: String?
    /// Whether a lost worker's run is queued again instead of recorded lost (replays, read-only agents).
    public var retryLost: Bool
    /// Who queued it (`user@host`, `schedule:NAME`).
    public var enqueuedBy: String
    /// The command-line level a worker needs to run it: the queuing xclaw's `currentLevel`.
    public var level: Int

    /// The level of the command lines this xclaw queues. A worker claims only runs at its level or below, so during
    /// a rolling upgrade a run queued by a newer xclaw waits for a worker that understands it instead of failing on
    /// an older one. Raise it when an older worker could not run a command line this one queues.
    public static let currentLevel = 1

    /// A run request.
    public init(
        kind: FleetRunKind, agent: String, arguments: [String], labels: [String: String] = [:],
        displaySize: String? = nil, app: String? = nil, retryLost: Bool = false, enqueuedBy: String,
        level: Int = currentLevel
    ) {
        (self.kind, self.agent, self.arguments, self.labels) = (kind, agent, arguments, labels)
        (self.displaySize, self.app, self.retryLost, self.enqueuedBy) = (displaySize, app, retryLost, enqueuedBy)
        self.level = level
    }
}

/// A queued run as stored.
public struct FleetRunRecord: Sendable, Hashable, Codable {
    /// Its id (increasing: the queue's order).
    public var id: Int64
    /// What was asked.
    public var request: FleetRunRequest
    /// Where it is.
    public var status: FleetRunStatus
    /// The worker that claimed it.
    public var worker: String?
    /// The session it started.
    public var sessionID: Int64?
    /// The command's exit status, once it ended.
    public var exitStatus: Int32?
    /// Why it failed or was lost.
    public var error: String?
    /// How many times a worker claimed it (more than one only for `retryLost` runs).
    public var attempts: Int
    /// When it was queued.
    public var enqueuedAt: Date
    /// When a worker claimed it last.
    public var claimedAt: Date?
    /// When it ended.
    public var finishedAt: Date?
}

extension FleetRunRequest: Codable {}

import Foundation
import Logging
import Synchronization
import XclawBase
import XclawDaemon
import XclawStore

/// What `xclaw daemon run --worker` registers and how it keeps time.
public struct FleetWorkerOptions: Sendable {
    /// Its name, labels, slots, display sizes and applications.
    public var info: WorkerInfo
    /// How long a worker may go without a heartbeat before the fleet declares it lost.
    public var lostAfter: Duration

    /// Options for a worker.
    public init(info: WorkerInfo, lostAfter: Duration) {
        self.info = info
        self.lostAfter = lostAfter
    }

    /// `XCLAW_FLEET_LOST_AFTER` (seconds, default 30): the fleet's heartbeat deadline; a malformed value is a usage
    /// error.
    public static func lostAfter(_ environment: [String: String]) throws -> Duration {
        guard let text = environment["XCLAW_FLEET_LOST_AFTER"], !text.isEmpty else { return .seconds(30) }
        guard let seconds = Double(text), seconds >= 1, seconds <= 3600 else {
            throw StoreError.invalidArgument(
                "XCLAW_FLEET_LOST_AFTER must be a number of seconds from 1 to 3600, not \"\(text)\"")
        }
        return .milliseconds(Int(seconds * 1000))
    }

    /// The applications a worker reports when none are named: those of a known list found on its PATH.
    public static func installedApplications(_ environment: [String: String]) -> [String] {
        let known = [
            "chromium", "featherpad", "firefox", "firefox-esr", "gedit", "gnumeric", "gtk3-widget-factory", "inkscape",
            "libreoffice", "mousepad", "thunderbird", "xcalc", "xedit", "xeyes", "xterm", "zenity",
        ]
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return known.filter { app in path.contains { access("\($0)/\(app)", X_OK) == 0 } }
    }
}

/// The daemon as a fleet worker: it registers in the fleet's database, heartbeats, declares lost the workers that
/// stopped heartbeating, claims the oldest run it can serve whenever a slot is free (woken by LISTEN/NOTIFY, with a
/// slow poll as the fallback), runs it as one of its own commands, and records how it ended. On stop it takes no
/// new run, lets those in flight finish, and leaves.
public final class DaemonFleet: Sendable {
    private static let logger = Logger(label: "xclaw.fleet")
    /// The fleet's store.
    private let store: AgentStore
    /// What this worker is.
    private let options: FleetWorkerOptions
    /// The daemon that runs the commands.
    private let server: DaemonServer
    /// Slots taken (a claim reserves one first), the runs in flight, and whether the worker is leaving: one lock, so
    /// no run is claimed after `finish` saw none in flight.
    private let slots = Mutex(Slots())

    /// What `slots` guards.
    private struct Slots {
        var taken = 0
        var runs: Set<Int64> = []
        var leaving = false
    }

    /// Registers the worker and starts its threads. A database that cannot be reached fails this at once: the
    /// service manager (systemd's Restart=, Kubernetes) starts the worker again.
    public static func start(_ server: DaemonServer, store: AgentStore, options: FleetWorkerOptions) throws
        -> DaemonFleet
    {
        let fleet = DaemonFleet(store: store, options: options, server: server)
        try store.registerWorker(options.info)
        logger.info(
            "worker registered",
            metadata: ["name": "\(options.info.name)", "slots": "\(options.info.slots)", "database": "\(store.path)"])
        Thread { fleet.keepAlive() }.start()
        Thread { fleet.claimLoop() }.start()
        return fleet
    }

    private init(store: AgentStore, options: FleetWorkerOptions, server: DaemonServer) {
        (self.store, self.options, self.server) = (store, options, server)
    }

    /// Stops taking runs, waits for those in flight, and leaves the fleet.
    public func finish() {
        slots.withLock { $0.leaving = true }
        while slots.withLock({ $0.taken }) > 0 { Thread.sleep(forTimeInterval: 0.05) }
        do { try store.leaveWorker(options.info.name) } catch {
            Self.logger.error("could not record that the worker left", metadata: ["error": "\(error)"])
        }
        Self.logger.info("worker left", metadata: ["name": "\(options.info.name)"])
    }

    /// Heartbeats six times per deadline, and declares lost the workers past theirs.
    private func keepAlive() {
        let pause = options.lostAfter / 6
        while !slots.withLock({ $0.leaving && $0.taken == 0 }) {
            do {
                if try !store.heartbeat(worker: options.info.name), !slots.withLock({ $0.leaving }) {
                    // Declared lost: its runs were recorded lost (or queued again elsewhere), so those still going
                    // here are stopped before it joins again; a click must not happen on two hosts.
                    Self.logger.warning("the fleet declared this worker lost; stopping its runs and registering again")
                    for id in slots.withLock({ $0.runs }) {
                        if let session = try store.fleetRun(id).sessionID {
                            try store.requestStop(session: session, agent: nil, by: "the fleet (worker lost)")
                        }
                    }
                    try store.registerWorker(options.info)
                }
                for lost in try store.markLostWorkers(timeout: options.lostAfter) {
                    Self.logger.warning(
                        "worker lost", metadata: ["worker": "\(lost.name)", "runs": "\(lost.runs.map(\.id))"])
                }
            } catch {
                Self.logger.error("heartbeat failed", metadata: ["error": "\(error)"])
            }
            Thread.sleep(forTimeInterval: pause / .seconds(1))
        }
    }

    /// Claims runs while slots are free; waits for the queue to change otherwise.
    private func claimLoop() {
        var backoff = 0.1
        while !server.isStopping {
            let reserved = slots.withLock { state -> Bool? in
                if state.leaving { return nil }
                guard state.taken < options.info.slots else { return false }
                state.taken += 1
                return true
            }
            guard let reserved else { return }
            do {
                if reserved {
                    if let run = try store.claimRun(for: options.info) {
                        slots.withLock { _ = $0.runs.insert(run.id) }
                        Thread { self.execute(run) }.start()
                        backoff = 0.1
                        continue
                    }
                    slots.withLock { $0.taken -= 1 }
                }
                // Woken by a queued or ended run; the poll is the fallback for a notification lost with a connection.
                _ = try store.waitForFleetChange(timeout: .seconds(2))
                backoff = 0.1
            } catch {
                if reserved { slots.withLock { $0.taken -= 1 } }
                Self.logger.error("claiming failed; trying again", metadata: ["error": "\(error)"])
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 5)
            }
        }
    }

    /// The command each kind of run may be: a row of the queue names its command line, and a worker runs only the
    /// command its kind says (a scheduled task's slot is a `send`).
    static func command(of kind: FleetRunKind) -> String {
        switch kind {
        case .send, .task: return "send"
        case .run: return "run"
        case .pipeline: return "pipeline"
        case .replay: return "replay"
        }
    }

    /// Runs one claimed run as the daemon's own command and records how it ended.
    private func execute(_ run: FleetRunRecord) {
        defer {
            slots.withLock { state in
                state.taken -= 1
                state.runs.remove(run.id)
            }
        }
        Self.logger.info(
            "run claimed",
            metadata: ["run": "\(run.id)", "agent": "\(run.request.agent)", "kind": "\(run.request.kind)"])
        let status: Int32
        let error: String?
        if run.request.arguments.first != Self.command(of: run.request.kind) {
            status = ExitStatus.usage.rawValue
            error =
                "refused: a \(run.request.kind.rawValue) run must be `xclaw \(Self.command(of: run.request.kind))`, "
                + "not `xclaw \(run.request.arguments.first ?? "")`"
        } else {
            status = server.runOwn(
                run.request.arguments, log: 2, environment: [AgentStore.fleetRunVariable: String(run.id)])
            error = status == 0 ? nil : "exit \(status) on worker \(options.info.name); see its log"
        }
        let outcome: FleetRunStatus = status == 0 ? .completed : status == 130 ? .cancelled : .failed
        // The database may be restarting: the result is recorded once it is back, however long that takes (the run
        // would otherwise stay `running`, and its agent's next runs wait behind it).
        var pause = 1.0
        while true {
            do {
                let recorded = try store.finishRun(
                    run.id, worker: options.info.name, status: outcome, exitStatus: status, error: error)
                if !recorded {
                    Self.logger.warning("run \(run.id) was settled without this worker (it was declared lost)")
                }
                break
            } catch {
                Self.logger.error("could not record run \(run.id); trying again", metadata: ["error": "\(error)"])
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 30)
            }
        }
        Self.logger.info("run ended", metadata: ["run": "\(run.id)", "status": "\(outcome.rawValue)"])
    }
}

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
    /// Runs in flight.
    private let busy = Mutex(0)
    /// Set when the worker stops taking runs.
    private let leaving = Atomic<Bool>(false)

    /// Registers the worker (retrying with backoff while the database is unreachable) and starts its threads.
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
        leaving.store(true, ordering: .sequentiallyConsistent)
        while busy.withLock({ $0 }) > 0 { Thread.sleep(forTimeInterval: 0.05) }
        do { try store.leaveWorker(options.info.name) } catch {
            Self.logger.error("could not record that the worker left", metadata: ["error": "\(error)"])
        }
        Self.logger.info("worker left", metadata: ["name": "\(options.info.name)"])
    }

    /// Heartbeats six times per deadline, and declares lost the workers past theirs.
    private func keepAlive() {
        let pause = options.lostAfter / 6
        while !(leaving.load(ordering: .relaxed) && busy.withLock({ $0 }) == 0) {
            do {
                if try !store.heartbeat(worker: options.info.name) {
                    if !leaving.load(ordering: .relaxed) {
                        Self.logger.warning("the fleet declared this worker lost; registering again")
                        try store.registerWorker(options.info)
                    }
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
        while !leaving.load(ordering: .relaxed) && !server.isStopping {
            do {
                if busy.withLock({ $0 }) < options.info.slots, let run = try store.claimRun(for: options.info) {
                    busy.withLock { $0 += 1 }
                    Thread { self.execute(run) }.start()
                    backoff = 0.1
                    continue
                }
                // Woken by a queued or ended run; the poll is the fallback for a notification lost with a connection.
                _ = try store.waitForFleetChange(timeout: .seconds(2))
                backoff = 0.1
            } catch {
                Self.logger.error("claiming failed; trying again", metadata: ["error": "\(error)"])
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 5)
            }
        }
    }

    /// Runs one claimed run as the daemon's own command and records how it ended.
    private func execute(_ run: FleetRunRecord) {
        defer { busy.withLock { $0 -= 1 } }
        Self.logger.info(
            "run claimed",
            metadata: ["run": "\(run.id)", "agent": "\(run.request.agent)", "kind": "\(run.request.kind)"])
        let status = server.runOwn(
            run.request.arguments, log: 2, environment: [AgentStore.fleetRunVariable: String(run.id)])
        let outcome: FleetRunStatus = status == 0 ? .completed : status == 130 ? .cancelled : .failed
        let error = status == 0 ? nil : "exit \(status) on worker \(options.info.name); see its log"
        // The database may be restarting: the result is recorded once it is back (the pool waits for it).
        for attempt in 1...5 {
            do {
                let recorded = try store.finishRun(
                    run.id, worker: options.info.name, status: outcome, exitStatus: status, error: error)
                if !recorded {
                    Self.logger.warning("run \(run.id) was settled without this worker (it was declared lost)")
                }
                break
            } catch {
                Self.logger.error(
                    "could not record run \(run.id)", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                Thread.sleep(forTimeInterval: 1)
            }
        }
        Self.logger.info("run ended", metadata: ["run": "\(run.id)", "status": "\(outcome.rawValue)"])
    }
}

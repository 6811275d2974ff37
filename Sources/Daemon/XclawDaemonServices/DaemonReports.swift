import Foundation
import Logging
import XclawBase
import XclawRuntime
import XclawStore

/// The daemon's run reports: after each scheduled run, the report of the session it created is written to the
/// reports folder and recorded on the session (so `xclaw runs` shows it), then retention runs (config values
/// `report_keep_runs`, `report_max_mb`, read at each run). A report that cannot be written is logged, never fails
/// the run.
enum DaemonReports {
    private static let logger = Logger(label: "xclaw.report")

    /// The newest session id before a run (nil when the database cannot be read: then no report is written).
    /// The daemon passes its scheduler's store: opening and closing another store on the file in this process,
    /// while the run's own store is open, broke the database (a store is long-lived, one per file).
    static func mark(_ store: any StoreBackend) -> Int64? { try? RunReports.mark(store: store) }

    /// Writes and keeps the reports of the sessions `task`'s run created after `mark`.
    static func keep(agent: String, task: String, after mark: Int64?, store: any StoreBackend) {
        guard let mark else { return }
        do {
            let retention = try ReportRetention.configured()
            for path in try RunReports.keepScheduled(
                agent: agent, task: task, after: mark, store: store, retention: retention)
            {
                logger.info("run report", metadata: ["task": "\(task)", "path": "\(path)"])
            }
        } catch {
            logger.error("the run report could not be written", metadata: ["task": "\(task)", "error": "\(error)"])
        }
    }
}

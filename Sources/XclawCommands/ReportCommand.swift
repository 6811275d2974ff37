import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawRuntime
import XclawStore

/// `xclaw report RUN`: one self-contained HTML page showing a run step by step.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a run's visual report: one HTML file with each step's screenshot and its actions drawn on it.",
        discussion: """
            RUN is a run's id as `xclaw runs` lists it. The page is self-contained (inline CSS, images as data URIs,
            no script, no network) and private (mode 0600). A kept report also applies retention: the reports of the
            newest --keep-runs runs are kept while under --max-mb together, oldest deleted first, and the screenshots
            stored for older finished runs are replaced by a placeholder. Defaults: report_keep_runs and report_max_mb
            in the config file, else 50 runs and 200 MB. The daemon keeps a report after every scheduled run.
            Exit: 0 written; 1 no such run; 2 a malformed RUN, a bad setting, or a file that cannot be written.
            Examples:
              xclaw report 12  # kept as run-12.html in $XDG_STATE_HOME/xclaw/reports; prints the path
              xclaw report 12 -o run.html  # written where you say (never deleted by retention)
            """)
    @Argument(help: ArgumentHelp("The run (session) id, as `xclaw runs` lists it.", valueName: "RUN"))
    var runID: String
    @Option(name: .shortAndLong, help: "Write the report to this file instead of the reports folder.")
    var output: String?
    @Option(help: "Runs whose reports and screenshots are kept (default: report_keep_runs, else 50).")
    var keepRuns: Int?
    @Option(help: "The reports folder's size cap in MB (default: report_max_mb, else 200).") var maxMb: Int?
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON: run, path, bytes, and what retention deleted.") var json = false

    /// What `--json` prints.
    struct Written: Encodable {
        var run: Int64
        var path: String
        var bytes: Int
        var deleted_reports: [String]
        var pruned_screenshots: Int
    }

    func validate() throws {
        guard let id = Int64(runID), id > 0 else {
            throw ValidationError(
                "RUN must be a run's id, a positive whole number as `xclaw runs` lists it, not \"\(runID)\"")
        }
        try requireRange(keepRuns, 1...100_000, "--keep-runs", "runs")
        try requireRange(maxMb, 1...1_000_000, "--max-mb", "MB")
        if output != nil && (keepRuns != nil || maxMb != nil) {
            throw ValidationError("--keep-runs and --max-mb apply to kept reports only: leave them out with -o")
        }
    }

    func run() throws {
        let id = Int64(runID) ?? 0
        let store = try storeOptions.open()
        _ = try store.session(id)  // exit 1 before anything is written
        let written: Written
        if let output {
            let path = Invocation.current.resolve(output)
            let bytes = try RunReports.write(session: id, store: store, to: path)
            written = Written(run: id, path: path, bytes: bytes, deleted_reports: [], pruned_screenshots: 0)
            if OutputFile.isStandardOutput(output) { return }  // stdout carries the page alone
        } else {
            let retention = try ReportRetention.configured(keepRuns: keepRuns, maxMB: maxMb)
            let kept = try RunReports.keep(session: id, store: store, retention: retention)
            let bytes = (try? FileManager.default.attributesOfItem(atPath: kept.path)[.size] as? Int) ?? 0
            written = Written(
                run: id, path: kept.path, bytes: bytes, deleted_reports: kept.retention.deletedReports,
                pruned_screenshots: kept.retention.prunedImages)
        }
        try emit(written, json: json) { written.path }
    }
}

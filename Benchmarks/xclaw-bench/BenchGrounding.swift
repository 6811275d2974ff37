import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawTesting

/// `xclaw bench grounding`: every labelled control of real apps (xcalc, a Tk app in five variants, xmessage's button
/// rows, Motif's keys and question dialog, a GTK app with and without its accessibility tree) tapped
/// once by its label, judged by the app; FeatherPad's and gtk3-widget-factory's menus, judged by their trees
/// (`DesktopGrounding`); and what per-control reading costs a snapshot, cold and warm.
struct BenchGrounding: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grounding",
        abstract: "Tap every labelled control of real apps once by label: first-try correct, wrong clicks, misses.")
    @Option(help: "Snapshots timed per app and mode (medians are reported).") var iterations = 5
    @Flag(help: "Print one JSON object.") var json = false
    @Option(help: "Only the apps whose name contains this (xcalc, tk, xmessage, motif, gtk, featherpad, factory).")
    var app: String?

    /// One app's figures.
    struct Row: Codable {
        var app: String
        var controls: Int
        var correct: Int
        var wrong: Int
        var missed: Int
        var percent: Double
        /// Median cold snapshot of the app's window (fresh OCR cache), with and without per-control reading, in ms.
        var coldMs: Double
        var coldWithoutControlsMs: Double
        /// Median warm snapshot (the same window again), with and without per-control reading, in ms.
        var warmMs: Double
        var warmWithoutControlsMs: Double
        /// Median whole `xclaw-core snapshot --window` process, no daemon, fresh state (nothing cached, no font
        /// loaded), with and without per-control reading (`XCLAW_CONTROL_READING=0`), in ms.
        var processMs: Double?
        var processWithoutControlsMs: Double?
        var notes: [String]
    }

    func validate() throws {
        if iterations < 1 { throw ValidationError("--iterations must be at least 1") }
    }

    func run() throws {
        let apps: [(GroundingApp.Kind, Size)] = [
            (.xcalc, Size(width: 1280, height: 800)), (.tk("default"), Size(width: 1280, height: 800)),
            (.tk("dark"), Size(width: 1280, height: 800)), (.tk("small"), Size(width: 1280, height: 800)),
            (.tk("8pt"), Size(width: 1280, height: 800)),
            (.tk("2x"), Size(width: 1920, height: 1080)),
            (
                .xmessage(["Save", "Don't Save", "Cancel", "Clear", "Clear Hot Spot", "OK"]),
                Size(width: 1280, height: 800)
            ),
            (.xmessage(groundingXmessageCapitals), Size(width: 1280, height: 800)),
            (.motif, Size(width: 1280, height: 800)), (.motifDialog, Size(width: 1280, height: 800)),
            (.gtk("default", tree: true), Size(width: 1280, height: 800)),
            (.gtk("default", tree: false), Size(width: 1280, height: 800)),
            (.gtk("dark", tree: false), Size(width: 1280, height: 800)),
        ]
        var rows: [Row] = []
        for (kind, size) in apps {
            if let app, !GroundingApp.name(of: kind).contains(app) { continue }
            rows.append(try measure(kind, size: size))
        }
        // FeatherPad and the widget factory: their menus, judged by their accessibility trees.
        for desktop in DesktopGrounding.apps where app.map({ desktop.name.contains($0) }) ?? true {
            rows += try DesktopGrounding.measure(desktop, iterations: iterations)
        }
        try emitBench(rows, json: json) {
            var lines = [
                "app                     controls  correct  wrong  missed  first-try   cold ms (without)   warm ms (without)"
                    + "   process ms (without)"
            ]
            for r in rows {
                lines.append(
                    r.app.padding(toLength: 24, withPad: " ", startingAt: 0)
                        + String(
                            format: "%8d %8d %6d %7d %9.1f %%  %7.0f (%5.0f)     %7.1f (%5.1f)", r.controls,
                            r.correct, r.wrong, r.missed, r.percent, r.coldMs, r.coldWithoutControlsMs, r.warmMs,
                            r.warmWithoutControlsMs)
                        + (r.processMs.map { p in
                            String(format: "   %7.0f (%5.0f)", p, r.processWithoutControlsMs ?? 0)
                        } ?? ""))
            }
            for r in rows where !r.notes.isEmpty {
                lines.append("\(r.app): " + r.notes.joined(separator: "; "))
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Taps every target of one app in-process (as `xclaw tap LABEL --window TITLE` does), then times snapshots.
    private func measure(_ kind: GroundingApp.Kind, size: Size) throws -> Row {
        let display = try TestDisplay(size: size, accessibility: kind.needsAccessibility)
        defer { display.stop() }
        let app = try GroundingApp(kind, display: display.name, environment: display.environment)
        defer { app.stop() }
        let connection = try display.connect()
        let input = try InputController(connection: connection)
        // Timing first, on the untouched window.
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        var cold: [Double] = [], coldWithout: [Double] = [], warm: [Double] = [], warmWithout: [Double] = []
        for _ in 0..<iterations {
            for controls in [true, false] {
                let perceiver = try Perceiver(connection: connection, cache: OCRCache())
                let snapshotter = Snapshotter(perceiver: perceiver, readsControls: controls)
                let area = try perceiver.area(window: app.title)
                var start = ContinuousClock.now
                _ = try snapshotter.snapshot(area: area, refs: nil)
                let first = (ContinuousClock.now - start).milliseconds
                start = ContinuousClock.now
                _ = try snapshotter.snapshot(area: area, refs: nil)
                let second = (ContinuousClock.now - start).milliseconds
                if controls {
                    cold.append(first); warm.append(second)
                } else {
                    coldWithout.append(first); warmWithout.append(second)
                }
            }
        }
        // Whole processes, as a script without the daemon runs them: every cost of a cold start included.
        var process: [Double] = [], processWithout: [Double] = []
        if let core = XclawPaths.sibling("xclaw-core") {
            for run in 0..<iterations {
                for controls in [true, false] {
                    let state = FileManager.default.temporaryDirectory.appendingPathComponent(
                        "xclaw-bench-grounding-\(getpid())-\(run)-\(controls)")
                    defer { try? FileManager.default.removeItem(at: state) }
                    var environment = ProcessInfo.processInfo.environment
                    environment["XCLAW_STATE_DIR"] = state.path
                    environment["XCLAW_NO_DAEMON"] = "1"
                    environment["XCLAW_CONTROL_READING"] = controls ? "1" : "0"
                    let start = ContinuousClock.now
                    let child = try Subprocess.spawn(
                        [core, "snapshot", "--window", app.title, "--display", display.name], stdout: .null,
                        stderr: .null, environment: environment)
                    _ = child.wait()
                    let elapsed = (ContinuousClock.now - start).milliseconds
                    if controls { process.append(elapsed) } else { processWithout.append(elapsed) }
                }
            }
        }
        let perceiver = try Perceiver(connection: connection)
        var tally = GroundingTally(app: app.name)
        for target in app.allTargets {
            let outcome = app.attempt(target) {
                let area = try perceiver.area(window: app.title)
                let snapshot = try Snapshotter(perceiver: perceiver).snapshot(area: area, refs: nil)
                let match = try Selection(role: target.role.flatMap(Role.init(rawValue:))).resolve(
                    target.label, in: snapshot)
                try input.click(at: match.point)
            }
            tally.add(target, outcome)
        }
        return Row(
            app: app.name, controls: tally.correct + tally.wrong + tally.missed, correct: tally.correct,
            wrong: tally.wrong, missed: tally.missed, percent: (tally.percent * 10).rounded() / 10,
            coldMs: median(cold), coldWithoutControlsMs: median(coldWithout), warmMs: median(warm),
            warmWithoutControlsMs: median(warmWithout),
            processMs: process.isEmpty ? nil : median(process),
            processWithoutControlsMs: processWithout.isEmpty ? nil : median(processWithout),
            notes: tally.notes.map { String($0.split(separator: "\n").first ?? "").prefix(90).description })
    }
}

import Foundation
import XclawBase
import XclawPerception
import XclawPolling
import XclawScreen
import XclawTesting

/// `bench grounding`'s desktop apps, which report no presses of their own: FeatherPad (Qt 5) and gtk3-widget-factory
/// (GTK 3), their menu bars and every item of each menu. The judge is the app's accessibility tree, read in the same
/// state: a target is correct when the point a tap would click (`Selection.resolve`, as `xclaw tap` computes it) lies
/// in that item's box, wrong when it lies in another item's or in none. The point is not clicked: an item clicked would
/// open dialogs and change the document. Each app is measured twice: by OCR alone (`--source ocr`: what a desktop
/// without an accessibility bus gets) and served by its tree (`auto`), on a 1920x1080 screen (the widget factory's
/// window is 1366 wide).
struct DesktopGrounding {
    /// One app: how to start it, how to reach its menu bar, and its name in the table.
    struct App {
        var name: String
        var arguments: [String]
        var environment: [String: String]
        /// Tree labels of controls to press (by their tree box) before the menu bar shows: the widget factory's is
        /// on its second page.
        var before: [String]
    }

    /// FeatherPad and the widget factory (each gets private XDG runtime and config directories).
    static let apps = [
        App(
            name: "featherpad", arguments: ["/usr/bin/featherpad"], environment: ["QT_QPA_PLATFORM": "xcb"],
            before: []),
        App(name: "widget factory", arguments: ["/usr/bin/gtk3-widget-factory"], environment: [:], before: ["Page 2"]),
    ]

    /// The rows of one app: by OCR alone, then served by its tree; `iterations` cold and warm snapshots each.
    static func measure(_ app: App, iterations: Int) throws -> [BenchGrounding.Row] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-desk-\(UUID())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        for dir in ["runtime", "config"] {
            try FileManager.default.createDirectory(
                at: scratch.appendingPathComponent(dir), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let display = try TestDisplay(size: Size(width: 1920, height: 1080), accessibility: true)
        defer { display.stop() }
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in display.environment { environment[key] = value }
        for (key, value) in app.environment { environment[key] = value }
        environment["XDG_RUNTIME_DIR"] = scratch.appendingPathComponent("runtime").path
        environment["XDG_CONFIG_HOME"] = scratch.appendingPathComponent("config").path
        environment["DISPLAY"] = display.name
        let child = try Subprocess.spawn(app.arguments, stdout: .null, stderr: .null, environment: environment)
        defer { _ = child.kill() }
        let connection = try display.connect()
        let perceiver = try Perceiver(connection: connection)
        let input = try InputController(connection: connection)
        let keyboard = try Keyboard(connection: connection)
        let windows = WindowManager(connection: connection)
        let pid = Int(child.pid)
        let snapshotter = Snapshotter(perceiver: perceiver)
        // The app's window, served by its tree with a menu bar.
        let menuBar = { () throws -> [Element]? in
            guard let main = try windows.list().first(where: { $0.pid == pid && !$0.popup }) else { return nil }
            let tree = try snapshotter.snapshot(area: nil, refs: nil, source: .atspi)
            let items = tree.elements.filter {
                $0.windowID == main.id && $0.role == .menuitem && !$0.label.isEmpty && $0.covered != true
            }
            return items.isEmpty ? nil : items
        }
        for label in app.before {
            let pressed = poll(within: .seconds(20), every: .milliseconds(200)) { () -> Bool? in
                let tree = try? snapshotter.snapshot(area: nil, refs: nil, source: .atspi)
                guard let control = tree?.elements.first(where: { $0.label == label && $0.role.isInteractive })
                else { return nil }
                try? input.click(at: control.box.center)
                return true
            }
            guard pressed == true else { throw BenchFailure("\(app.name): no \"\(label)\" in its tree") }
        }
        guard let bar = poll(within: .seconds(20), every: .milliseconds(200), { try? menuBar() }) else {
            throw BenchFailure("\(app.name): no menu bar in its tree")
        }
        guard let main = try windows.list().first(where: { $0.pid == pid && !$0.popup }) else {
            throw BenchFailure("\(app.name): its window is gone")
        }
        let area = main.frame.intersection(Rect(x: 0, y: 0, width: 1920, height: 1080))
        // Timing: cold and warm snapshots of the untouched window, by OCR alone (with and without per-control
        // reading) and served by the tree.
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        var timing: [String: [Double]] = [:]
        for _ in 0..<iterations {
            for (key, source, controls) in [
                ("ocr", SnapshotSource.ocr, true), ("ocr-", .ocr, false), ("auto", .auto, true),
                ("auto-", .auto, false),
            ] {
                let fresh = Snapshotter(
                    perceiver: try Perceiver(connection: connection, cache: OCRCache()), readsControls: controls)
                var start = ContinuousClock.now
                _ = try fresh.snapshot(area: area, refs: nil, source: source)
                timing["cold " + key, default: []].append((ContinuousClock.now - start).milliseconds)
                start = ContinuousClock.now
                _ = try fresh.snapshot(area: area, refs: nil, source: source)
                timing["warm " + key, default: []].append((ContinuousClock.now - start).milliseconds)
            }
        }
        // The states: the menu bar, then each menu open. In each, the tree's items are the targets and the judges.
        var tallies = [SnapshotSource.ocr: GroundingTally(app: app.name), .auto: GroundingTally(app: app.name)]
        var skipped: [String] = []
        for menu in [nil] + bar {
            var opened: WindowInfo?
            if let menu {
                try input.click(at: menu.box.center)
                opened = poll(within: .seconds(5), every: .milliseconds(50)) {
                    try? windows.list().first { $0.popup && $0.pid == pid }
                }
                guard opened != nil else {
                    for source in [SnapshotSource.ocr, .auto] {
                        tallies[source]?.add(
                            GroundingTarget(label: menu.label, expected: "menu", role: nil),
                            .missed("its menu did not open"))
                    }
                    continue
                }
            }
            // The tree in this state, once its items are there (a menu fills in after its window maps).
            let (truth, shown) =
                poll(within: .seconds(5), every: .milliseconds(100)) { () -> ([Element], [Element])? in
                    guard let tree = try? snapshotter.snapshot(area: nil, refs: nil, source: .atspi) else { return nil }
                    let window = opened?.id ?? main.id
                    let shown = tree.elements.filter {
                        $0.role != .window && !$0.label.isEmpty && $0.covered != true && !$0.box.isEmpty
                    }
                    let items = shown.filter { $0.role == .menuitem && $0.windowID == window }
                    return items.isEmpty ? nil : (items, shown)
                } ?? ([], [])
            if truth.isEmpty {
                for source in [SnapshotSource.ocr, .auto] {
                    tallies[source]?.add(
                        GroundingTarget(label: menu?.label ?? "the menu bar", expected: "items", role: nil),
                        .missed("no items in the tree"))
                }
            }
            // One snapshot per state and source: nothing changes between the targets, which are not clicked.
            let snapshots = try [SnapshotSource.ocr, .auto].map {
                ($0, try snapshotter.snapshot(area: nil, refs: nil, source: $0))
            }
            for target in truth {
                // A label that two elements on screen share ("Help" in the bar and in its menu) cannot be named by
                // label alone, and refusing it is right: not a target, but counted as left out.
                guard shown.filter({ $0.label == target.label }).count == 1 else {
                    skipped.append(target.label)
                    continue
                }
                for (source, snapshot) in snapshots {
                    let goal = GroundingTarget(label: target.label, expected: target.label, role: nil)
                    let outcome: GroundingOutcome
                    do {
                        let match = try Selection().resolve(target.label, in: snapshot)
                        if target.box.contains(match.point) {
                            outcome = .correct
                        } else if let hit = truth.first(where: { $0.box.contains(match.point) }) {
                            outcome = .wrong(hit.label)
                        } else {
                            outcome = .wrong("\(match.point.x),\(match.point.y), outside every item")
                        }
                    } catch {
                        outcome = .missed("\(error)".split(separator: "\n").first.map(String.init) ?? "refused")
                    }
                    tallies[source]?.add(goal, outcome)
                }
            }
            if opened != nil {
                // Closed with Escape (twice: the menu, then the bar's keyboard traversal), and waited out.
                if let escape = try? KeyCombo.parse("Escape") { try? keyboard.press([escape, escape]) }
                let closed = poll(within: .seconds(5), every: .milliseconds(50)) { () -> Bool? in
                    (try? windows.list().contains { $0.popup && $0.pid == pid }) == false ? true : nil
                }
                // The next state would be judged against this menu's tree.
                guard closed == true else {
                    throw BenchFailure("\(app.name): the \(menu?.label ?? "") menu stayed open")
                }
            }
        }
        return [SnapshotSource.ocr, .auto].map { source in
            let tally = tallies[source] ?? GroundingTally(app: app.name)
            let key = source == .ocr ? "ocr" : "auto"
            return BenchGrounding.Row(
                app: app.name + (source == .ocr ? " (ocr)" : " (tree)"),
                controls: tally.correct + tally.wrong + tally.missed, correct: tally.correct, wrong: tally.wrong,
                missed: tally.missed, percent: (tally.percent * 10).rounded() / 10,
                coldMs: median(timing["cold " + key] ?? [0]),
                coldWithoutControlsMs: median(timing["cold " + key + "-"] ?? [0]),
                warmMs: median(timing["warm " + key] ?? [0]),
                warmWithoutControlsMs: median(timing["warm " + key + "-"] ?? [0]), processMs: nil,
                processWithoutControlsMs: nil,
                notes: tally.notes.map { String($0.split(separator: "\n").first ?? "").prefix(90).description }
                    + (skipped.isEmpty
                        ? [] : ["not targets, their labels shown twice: " + skipped.joined(separator: ", ")]))
        }
    }
}

/// A desktop app the benchmark could not bring to the state it measures.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawTesting

/// Options of `xclaw bench snapshot`.
struct SnapshotBenchOptions: ParsableArguments, BenchTarget {
    @Option(
        help: ArgumentHelp(
            "X display to measure as it is, starting nothing (default: a private Xvfb with "
                + "accessibility buses and a scene of GTK, Qt and xterm windows, all stopped at the end)."))
    var display: String?
    @Option(help: "Timed runs per row (default 20), after untimed warm-up runs; rows report median and p90.")
    var iterations = 20
    @Flag(help: "Print one JSON object with all rows.") var json = false
    @Flag(help: "Also print the text rendering of the full-screen auto snapshot (what the model reads).")
    var render = false
    @Option(help: "Screen size of the private Xvfb, WxH (ignored with --display).") var size = "1920x1080"

    /// Rejects run counts that would leave nothing to summarise.
    func validate() throws {
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
    }
}

/// Why the snapshot benchmark stopped before measuring.
enum SnapshotBenchError: ClassifiedError, Equatable {
    /// The scene's apps did not show up (as windows or in the accessibility tree) in time.
    case sceneNotReady(String)
    /// Ctrl-C or SIGTERM arrived; everything started was torn down.
    case interrupted

    var exitStatus: ExitStatus { .internal }

    var description: String {
        switch self {
        case .sceneNotReady(let detail): return "the snapshot bench scene did not come up: \(detail)"
        case .interrupted: return "interrupted"
        }
    }

    /// Throws `interrupted` once Ctrl-C or SIGTERM has arrived (inside `Interrupt.guarded`).
    static func check() throws {
        if Interrupt.requested { throw SnapshotBenchError.interrupted }
    }
}

/// One timed snapshot or tree read, with what it saw.
struct SnapshotSample {
    /// The time, OCR stats and rendering size.
    var sample: Sample
    /// Visible accessibility nodes read.
    var nodes: Int?
    /// Elements of the snapshot, and how many of them came from the accessibility tree.
    var elements, accessibleElements: Int?
    /// Snapshot rows: wall time of the tree read inside the snapshot; tree rows: the helper's own reading time.
    var treeMs: Double?

    /// The figures of one snapshot that took `elapsed`; its rendering is made here, outside the timed part.
    init(_ snapshot: Snapshot, elapsed: Duration) {
        sample = Sample(elapsed: elapsed, ocr: snapshot.ocr, chars: snapshot.render().count)
        nodes = snapshot.accessibility?.nodes
        elements = snapshot.elements.count
        accessibleElements = snapshot.accessibility?.elements ?? 0
        treeMs = snapshot.accessibility?.milliseconds
    }

    /// The figures of one accessibility tree read that took `elapsed`.
    init(_ tree: AccessibleTree, elapsed: Duration) {
        sample = Sample(elapsed: elapsed)
        nodes = tree.nodes.count
        treeMs = tree.ms
    }
}

/// One row of the snapshot benchmark: a `BenchRow` (timing, OCR, rendering size) plus the accessibility figures,
/// encoded flat as one object.
@dynamicMemberLookup
struct SnapshotBenchRow: Encodable {
    /// The timing, OCR and rendering figures every bench row has.
    var base: BenchRow
    /// Median wall time of the tree read inside the snapshot (tree rows: the helper's own reading time).
    var treeMs: Double?
    /// Median time of the OCR read inside the snapshot.
    var ocrMs: Double?
    /// Median visible accessibility nodes.
    var nodes: Int?
    /// Median elements of the snapshot, and of them from the accessibility tree.
    var elements, accessibleElements: Int?
    /// The most OCR blocks any timed run found.
    var maxBlocks: Int?

    /// Summarises samples (at least one) into a row.
    init(_ section: String, _ name: String, _ samples: [SnapshotSample]) {
        base = BenchRow(section, name, samples.map(\.sample))
        /// The median of the values present, nil when there are none.
        func median<T: Comparable>(_ values: [T]) -> T? {
            values.isEmpty ? nil : values.sorted()[values.count / 2]
        }
        treeMs = median(samples.compactMap(\.treeMs))
        ocrMs = median(samples.compactMap { $0.sample.ocr?.milliseconds })
        nodes = median(samples.compactMap(\.nodes))
        elements = median(samples.compactMap(\.elements))
        accessibleElements = median(samples.compactMap(\.accessibleElements))
        maxBlocks = samples.compactMap { $0.sample.ocr?.blocks }.max()
    }

    /// The base row's figures, read as if they were this row's own (`row.medianMs`, `row.ocrCell`).
    subscript<T>(dynamicMember path: KeyPath<BenchRow, T>) -> T { base[keyPath: path] }

    private enum Extra: String, CodingKey { case treeMs, ocrMs, nodes, elements, accessibleElements, maxBlocks }

    /// The base row's keys and the accessibility figures, side by side in one object.
    func encode(to encoder: Encoder) throws {
        try base.encode(to: encoder)
        var container = encoder.container(keyedBy: Extra.self)
        try container.encodeIfPresent(treeMs, forKey: .treeMs)
        try container.encodeIfPresent(ocrMs, forKey: .ocrMs)
        try container.encodeIfPresent(nodes, forKey: .nodes)
        try container.encodeIfPresent(elements, forKey: .elements)
        try container.encodeIfPresent(accessibleElements, forKey: .accessibleElements)
        try container.encodeIfPresent(maxBlocks, forKey: .maxBlocks)
    }
}

/// What the snapshot benchmark prints: rows, notes and a one-line summary, as a table or one JSON object.
struct SnapshotBenchReport: Encodable {
    var benchmark = "snapshot"
    var display: String
    var screen: Size
    var rows: [SnapshotBenchRow] = []
    var notes: [String] = []
    var summary = ""
    /// The rendering of the full-screen auto snapshot, when `--render` asked for it.
    var rendering: String?

    /// Runs every body `warmup` times untimed, then `iterations` times, the bodies taking turns so that load from
    /// elsewhere on the machine weighs on each alike, and appends one summary row per body; stops between runs
    /// when Ctrl-C arrived.
    mutating func measure(
        _ section: String, _ bodies: [(name: String, body: () throws -> SnapshotSample)],
        iterations: Int, warmup: Int = 3
    ) throws {
        for _ in 0..<warmup {
            for (_, body) in bodies {
                try SnapshotBenchError.check()
                _ = try body()
            }
        }
        var samples: [[SnapshotSample]] = bodies.map { _ in [] }
        for _ in 0..<max(1, iterations) {
            for (index, (_, body)) in bodies.enumerated() {
                try SnapshotBenchError.check()
                samples[index].append(try body())
            }
        }
        for (index, (name, _)) in bodies.enumerated() { rows.append(SnapshotBenchRow(section, name, samples[index])) }
    }

    /// The row called `name`, if it was measured.
    func row(_ name: String) -> SnapshotBenchRow? { rows.first { $0.name == name } }

    /// The aligned text table, one block per section, then notes, the summary and the rendering.
    var table: String {
        let head = [
            "", "runs", "median ms", "p90 ms", "min ms", "max ms", "tree ms", "OCR ms", "nodes",
            "elements (atspi)", "OCR blocks", "chars", "~tokens",
        ]
        let f = { (v: Double) in String(format: "%.2f", v) }
        let optional = { (v: Int?) in v.map { "\($0)" } ?? "" }
        let cells = rows.map { (r: SnapshotBenchRow) -> [String] in
            let elements = r.elements.map { "\($0) (\(r.accessibleElements ?? 0))" } ?? ""
            return [
                "  " + r.name, "\(r.runs)", f(r.medianMs), f(r.p90Ms), f(r.minMs), f(r.maxMs),
                r.treeMs.map(f) ?? "", r.ocrMs.map(f) ?? "", optional(r.nodes), elements, r.ocrCell,
                optional(r.chars), optional(r.tokens),
            ]
        }
        var out = benchTable(
            title: "xclaw bench \(benchmark) on \(display) (\(screen))", head: head,
            rows: zip(rows, cells).map { ($0.section, $1) })
        out += notes.map { "note: " + $0 }
        if !summary.isEmpty { out.append("summary: " + summary) }
        if let rendering { out += ["", "rendering of the full-screen auto snapshot:", rendering] }
        return out.joined(separator: "\n")
    }
}

/// The bench's display: a private Xvfb with its D-Bus session and accessibility buses (or `--display` as it is),
/// the apps started on it and a scratch directory; `close()` ends them all.
final class SnapshotScene {
    /// Starts and ends the apps; its display name is the scene's.
    let session: BenchSession
    /// The private display, nil with `--display`.
    let display: VirtualDisplay?
    /// `XDG_RUNTIME_DIR`, `XDG_CONFIG_HOME` and the editor's document live here.
    private let scratch: URL

    /// The display name, `:N`.
    var name: String { session.name }

    /// The title of the question dialog and of the entry dialog the scene shows.
    static let questionTitle = "Save report", entryTitle = "New folder"

    /// Where the windows go on a 1920x1080 screen: the dialogs on the left, the editor top right, the terminal
    /// below it, apart from each other.
    static let questionOrigin = Point(x: 80, y: 80), entryOrigin = Point(x: 80, y: 420)
    static let editorFrame = Rect(x: 960, y: 20, width: 860, height: 420), terminalGeometry = "100x30+900+500"

    /// Starts the private display with accessibility (detached, so Ctrl-C on the terminal reaches only this
    /// process, which then tears everything down), or attaches to `--display`.
    init(_ options: SnapshotBenchOptions) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-snapshot-\(getpid())")
        if let name = options.display {
            display = nil
            session = try BenchSession(SceneTarget(display: name, size: options.size, json: options.json))
            return
        }
        let started = try VirtualDisplay.start(
            size: try Size(parsing: options.size), depth: 24, detached: true,
            record: false, accessibility: true)
        display = started
        do {
            session = try BenchSession(SceneTarget(display: started.name, size: options.size, json: options.json))
        } catch {
            try? started.stop()
            throw error
        }
    }

    /// Ends the apps, then the display with its buses, and removes the scratch directory.
    func close() {
        session.close()
        try? display?.stop()
        try? FileManager.default.removeItem(at: scratch)
    }

    /// What a scene app is launched with: the display's variables, a private runtime and config directory (Qt
    /// wants `XDG_RUNTIME_DIR`; nothing of the user's settings is read or written), X11 for Qt, and nothing that
    /// would send an app to another desktop's buses or turn its accessibility bridge off.
    private func environment(_ display: VirtualDisplay) -> [String: String?] {
        var env: [String: String?] = [:]
        for key in display.environmentToRemove + ["DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE", "NO_AT_BRIDGE"] {
            env.updateValue(nil, forKey: key)  // a nil value removes the variable
        }
        for (key, value) in display.environment { env[key] = value }
        env["XDG_RUNTIME_DIR"] = scratch.appendingPathComponent("runtime").path
        env["XDG_CONFIG_HOME"] = scratch.appendingPathComponent("config").path
        env["QT_QPA_PLATFORM"] = "xcb"
        return env
    }

    /// Starts the scene on the private display — two zenity dialogs, FeatherPad with a short document, an xterm
    /// showing a directory listing — places the dialogs apart, and returns once every app is in the accessibility
    /// tree and the screen is stable. Returns notes on what was missing or not as planned.
    func populate(_ perceiver: Perceiver) throws -> [String] {
        guard let display else { return [] }
        var notes: [String] = []
        let fm = FileManager.default
        for dir in ["runtime", "config"] {
            try fm.createDirectory(
                at: scratch.appendingPathComponent(dir), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let document = scratch.appendingPathComponent("report-notes.txt")
        try Data(
            ("Quarterly report, draft 3\n\nRevenue grew 12% over the last quarter.\n"
                + "Open items: update the charts, check the totals, send to Maria.\n").utf8
        ).write(to: document)
        let env = environment(display)
        let installed = { (name: String) -> String? in
            let path = "/usr/bin/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
            notes.append("\(name) is not installed: the scene has no \(name) window")
            return nil
        }
        let zenity = installed("zenity"), featherpad = installed("featherpad"), xterm = installed("xterm")
        if let zenity {
            _ = try session.start(
                zenity,
                [
                    "--question", "--title", Self.questionTitle,
                    "--text", "Save changes to the report?",
                ], keep: true, environment: env)
            _ = try session.start(
                zenity, ["--entry", "--title", Self.entryTitle, "--text", "Name of the new folder:"],
                keep: true, environment: env)
        }
        if let featherpad {
            // FeatherPad takes Qt's -geometry for a file name: it is placed with xdotool below.
            _ = try session.start(featherpad, [document.path], keep: true, environment: env)
        }
        if let xterm {
            _ = try session.start(
                xterm,
                [
                    "-geometry", Self.terminalGeometry, "-e", "sh", "-c",
                    "ls -la /usr/bin | head -40; sleep 3600",
                ], keep: true, environment: env)
        }

        // 1. Every window mapped.
        let deadline = ContinuousClock.now + .seconds(30)
        var windows: [WindowInfo] = []
        /// What is still missing from the window list.
        func missingWindows() -> [String] {
            var missing: [String] = []
            if zenity != nil {
                for title in [Self.questionTitle, Self.entryTitle]
                where !windows.contains(where: { $0.title == title }) {
                    missing.append("zenity \"\(title)\"")
                }
            }
            if featherpad != nil, !windows.contains(where: { $0.className.lowercased().contains("featherpad") }) {
                missing.append("FeatherPad")
            }
            if xterm != nil, !windows.contains(where: { $0.className == "XTerm" }) { missing.append("xterm") }
            return missing
        }
        while true {
            try SnapshotBenchError.check()
            windows = try perceiver.windows.list().filter(\.visible)
            let missing = missingWindows()
            if missing.isEmpty { break }
            guard ContinuousClock.now < deadline else {
                throw SnapshotBenchError.sceneNotReady("no window of " + missing.joined(separator: ", ") + " in 30 s")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }

        // 2. The windows apart (there is no window manager to place them; GTK centres both dialogs), and the
        // keyboard focus on the question dialog, which has no caret: FeatherPad takes the focus when it maps, and
        // its blinking caret would keep the screen changing.
        let question = windows.first { $0.title == Self.questionTitle }
        if let xdotool = executablePath("xdotool") {
            /// Runs one xdotool command on the display.
            func xdotoolRun(_ arguments: [String]) throws {
                try session.finish(try session.start(xdotool, arguments, environment: env))
            }
            for (title, origin) in [(Self.questionTitle, Self.questionOrigin), (Self.entryTitle, Self.entryOrigin)] {
                guard let window = windows.first(where: { $0.title == title }) else { continue }
                try xdotoolRun(["windowmove", "\(window.id)", "\(origin.x)", "\(origin.y)"])
            }
            if let editor = windows.first(where: { $0.className.lowercased().contains("featherpad") }) {
                let f = Self.editorFrame
                try xdotoolRun(["windowsize", "\(editor.id)", "\(f.width)", "\(f.height)"])
                try xdotoolRun(["windowmove", "\(editor.id)", "\(f.x)", "\(f.y)"])
            }
            if let question { try xdotoolRun(["windowfocus", "\(question.id)"]) }
        } else if zenity != nil || featherpad != nil {
            notes.append(
                "xdotool not installed: the windows stay where their toolkits put them (the dialogs may "
                    + "overlap) and FeatherPad keeps the focus (its caret blinks)")
        }
        // The pointer on the bare desktop, away from every window.
        let input = try InputController(connection: perceiver.connection)
        let screen = try perceiver.connection.screenSize()
        try input.move(to: Point(x: 2, y: screen.height - 3))
        try input.sync()

        // 3. Every app in the accessibility tree.
        guard let location = AccessibilityReader.locate(display: name, windows: perceiver.windows) else {
            throw SnapshotBenchError.sceneNotReady("the display has no AT_SPI_BUS root property")
        }
        let wanted = (zenity != nil ? 2 : 0) + (featherpad != nil ? 1 : 0)
        var apps: [AccessibleApp] = []
        while true {
            try SnapshotBenchError.check()
            apps = (try? perceiver.accessibility.tree(at: location).apps) ?? []
            let zenities = apps.filter { $0.name.lowercased() == "zenity" }.count
            let editors = apps.filter { $0.name.lowercased().contains("featherpad") }.count
            if (zenity == nil || zenities >= 2) && (featherpad == nil || editors >= 1) { break }
            guard ContinuousClock.now < deadline else {
                throw SnapshotBenchError.sceneNotReady(
                    "the accessibility tree holds only "
                        + (apps.isEmpty ? "no app" : apps.map(\.name).joined(separator: ", ")) + " after 30 s")
            }
            Thread.sleep(forTimeInterval: 0.2)
        }

        // 4. A stable screen, and the tree serving every GTK and Qt window (extents caught up with the moves).
        let settler = Settler(
            capturer: perceiver.capturer, interval: .milliseconds(50), quiet: .milliseconds(1500),
            timeout: .seconds(20))
        let settled = try settler.settle()
        if settled.timedOut {
            Thread.sleep(forTimeInterval: 0.6)
            let changed = Self.changedArea(settled.frame, try perceiver.capturer.capture()).map { " (at \($0))" } ?? ""
            notes.append("the screen kept changing for 20 s\(changed): warm rows may re-read changed parts")
        }
        var served = 0
        while true {
            try SnapshotBenchError.check()
            served =
                try Snapshotter(perceiver: perceiver).snapshot(refs: nil, source: .atspi).accessibility?.windows
                ?? 0
            if served >= wanted || ContinuousClock.now >= deadline + .seconds(10) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        if served < wanted {
            notes.append(
                "only \(served) of the \(wanted) GTK/Qt windows were matched to the accessibility tree: "
                    + "the rest were read by OCR")
        }
        let placed = try perceiver.windows.list().filter(\.visible).map { "\($0.className) \($0.frame)" }
        notes.append(
            "scene: " + placed.joined(separator: ", ") + "; accessibility apps: "
                + apps.map { "\($0.name) (\($0.route))" }.joined(separator: ", "))
        return notes
    }

    /// Adds gtk3-widget-factory, a large GTK app with hundreds of visible nodes, to the private display's scene;
    /// returns once it is in the accessibility tree and the screen has settled, or false (with a note) when it is
    /// not installed or the display is not the bench's own.
    func addLargeApp(_ perceiver: Perceiver, notes: inout [String]) throws -> Bool {
        guard let display, let location = AccessibilityReader.locate(display: name, windows: perceiver.windows) else {
            return false
        }
        guard let factory = executablePath("gtk3-widget-factory") else {
            notes.append("gtk3-widget-factory is not installed (package gtk-3-examples): no rows with a large app")
            return false
        }
        let spawned = try session.start(factory, [], keep: true, environment: environment(display))
        let pid = Int(spawned.process.processIdentifier)
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            try SnapshotBenchError.check()
            let apps = (try? perceiver.accessibility.tree(at: location).apps) ?? []
            if apps.contains(where: { $0.pid == pid }) { break }
            guard ContinuousClock.now < deadline else {
                throw SnapshotBenchError.sceneNotReady(
                    "gtk3-widget-factory is not in the accessibility tree after "
                        + "30 s")
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        let settler = Settler(
            capturer: perceiver.capturer, interval: .milliseconds(50), quiet: .milliseconds(1500),
            timeout: .seconds(10))
        if try settler.settle().timedOut {
            notes.append("with gtk3-widget-factory the screen kept changing for 10 s (its animations)")
        }
        return true
    }

    /// The smallest rectangle holding every pixel that differs between two frames of the same size, nil when none
    /// does.
    static func changedArea(_ a: Frame, _ b: Frame) -> Rect? {
        guard a.size == b.size else { return Rect(size: a.size) }
        var (x0, y0, x1, y1) = (Int.max, Int.max, -1, -1)
        a.bgrx.withUnsafeBufferPointer { p in
            b.bgrx.withUnsafeBufferPointer { q in
                for y in 0..<a.height {
                    let row = y * a.width * 4
                    for x in 0..<a.width {
                        let i = row + 4 * x
                        guard p[i] != q[i] || p[i + 1] != q[i + 1] || p[i + 2] != q[i + 2] else { continue }
                        x0 = min(x0, x); x1 = max(x1, x); y0 = min(y0, y); y1 = max(y1, y)
                    }
                }
            }
        }
        return x1 < 0 ? nil : Rect(x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1)
    }

    /// The path of an installed program, from /usr/bin or /usr/local/bin.
    private func executablePath(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// What `BenchSession` needs to attach to the scene's display.
private struct SceneTarget: BenchTarget {
    var display: String?
    var size: String
    var json: Bool
}

/// `xclaw bench snapshot`: what the accessibility tree costs and saves in a snapshot, on two GTK dialogs, a Qt
/// editor and an xterm: snapshots with and without it (cold and warm OCR), the tree read alone (bulk and walk
/// routes), and a GTK dialog's snapshot, which should need no OCR at all.
struct BenchSnapshot: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Benchmark snapshots with and without the accessibility tree (GTK dialogs, a Qt editor, an xterm).")
    @OptionGroup var options: SnapshotBenchOptions

    /// Builds the scene, measures, tears everything down (also on errors and Ctrl-C), then prints.
    func run() throws {
        try runOnScene(options, table: \.table) { try SnapshotBench(scene: $0, options: options).run() }
    }
}

/// Builds the snapshot bench's scene, runs `bench` on it, tears everything down (also on errors and Ctrl-C: exit
/// 130), then prints the report: JSON with `--json`, else its `table`.
func runOnScene<Report: Encodable>(
    _ options: SnapshotBenchOptions, table: (Report) -> String, _ bench: (SnapshotScene) throws -> Report
) throws {
    do {
        let report = try Interrupt.guarded { () throws -> Report in
            let scene = try SnapshotScene(options)
            defer { scene.close() }
            return try bench(scene)
        }
        try emitBench(report, json: options.json) { table(report) }
    } catch {
        if Interrupt.requested && !(error is ExitCode) { throw ExitCode(130) }
        throw error
    }
}

/// The measurements of `xclaw bench snapshot` on one scene.
struct SnapshotBench {
    let scene: SnapshotScene
    let options: SnapshotBenchOptions

    /// Runs every row; returns the report with its notes and summary.
    func run() throws -> SnapshotBenchReport {
        let connection = try DisplayConnection(name: scene.name)
        let screen = try connection.screenSize()
        var report = SnapshotBenchReport(display: scene.name, screen: screen)
        let setup = try Perceiver(connection: connection)
        report.notes += try scene.populate(setup)
        let n = options.iterations
        var warnings: Set<String> = []

        /// One snapshot of `area` with `perceiver`, timed; its warnings are kept for the notes.
        func snap(_ perceiver: Perceiver, area: Rect? = nil, source: SnapshotSource) throws -> SnapshotSample {
            let snapshotter = Snapshotter(perceiver: perceiver)
            let start = ContinuousClock.now
            let snapshot = try snapshotter.snapshot(area: area, refs: RefStore(), source: source)
            let elapsed = ContinuousClock.now - start
            for warning in snapshot.warnings ?? [] { warnings.insert(warning) }
            return SnapshotSample(snapshot, elapsed: elapsed)
        }

        let location = AccessibilityReader.locate(display: scene.name, windows: setup.windows)
        if location == nil {
            report.notes.append(
                "no accessibility bus on \(scene.name): auto snapshots are OCR-only, tree rows "
                    + "skipped (start the display with `xclaw display start --accessibility`)")
        }

        // The scene's rendering, before anything else is added to it.
        if options.render {
            report.rendering = try Snapshotter(perceiver: try Perceiver(connection: connection))
                .snapshot(refs: RefStore(), source: .auto).render()
        }
        let sources: [(String, SnapshotSource)] = [("auto", .auto), ("ocr-only", .ocr)]

        // 1. Cold OCR: the headline, a snapshot with and without the accessibility tree.
        let cold = "1. full screen, cold OCR (empty OCRCache each run)"
        try report.measure(
            cold,
            sources.map { label, source in
                ("snapshot \(label), cold OCR", { try snap(try Perceiver(connection: connection), source: source) })
            }, iterations: n, warmup: 1)
        // The same with the OCR engines already loaded, as in a long-lived agent whose screen changed: a one-entry
        // cache read with a blank frame in between holds nothing of the screen.
        let blank = Frame(size: Size(width: 64, height: 64), color: RGB(r: 255, g: 255, b: 255))
        try report.measure(
            cold,
            try sources.map { label, source in
                let loaded = try Perceiver(connection: connection, cache: OCRCache(capacity: 1))
                return (
                    "snapshot \(label), cold OCR, engines loaded",
                    {
                        _ = try loaded.recognizer.read(blank)
                        return try snap(loaded, source: source)
                    }
                )
            }, iterations: n, warmup: 1)

        // 2. Warm OCR cache, screen unchanged: what a repeated snapshot costs.
        let warm = "2. full screen, warm OCR cache (same Perceiver, screen unchanged)"
        try report.measure(
            warm,
            try sources.map { label, source in
                let shared = try Perceiver(connection: connection)
                return ("snapshot \(label), warm OCR", { try snap(shared, source: source) })
            }, iterations: n)

        /// Rows reading the tree alone by both routes; the last bulk read goes to `last`.
        func treeRows(
            _ location: AccessibilityLocation, suffix: String,
            last: @escaping (AccessibleTree) -> Void
        ) -> [(String, () throws -> SnapshotSample)] {
            let reader = setup.accessibility
            return [("bulk", false), ("walk", true)].map { label, walk in
                (
                    "atspi tree (\(label) route)\(suffix)",
                    {
                        let start = ContinuousClock.now
                        let tree = try reader.tree(at: location, walk: walk)
                        let elapsed = ContinuousClock.now - start
                        if !walk { last(tree) }
                        return SnapshotSample(tree, elapsed: elapsed)
                    }
                )
            }
        }

        // 3. The tree alone, by both routes.
        var lastTree: AccessibleTree?
        if let location {
            let section = "3. accessibility tree alone (xclaw-atspi helper run, start to exit)"
            try report.measure(section, treeRows(location, suffix: "") { lastTree = $0 }, iterations: n)
        }

        // 4. One GTK dialog's window: everything from the tree, no OCR.
        var dialog: WindowInfo?
        let windows = try setup.windows.list().filter(\.visible)
        dialog =
            windows.first { $0.title == SnapshotScene.questionTitle }
            ?? windows.first { $0.className.lowercased() == "zenity" }
        if dialog == nil, location != nil {
            // --display: any window the tree serves.
            let snapshot = try Snapshotter(perceiver: setup).snapshot(refs: nil, source: .auto)
            let served = Set(
                snapshot.elements.filter { $0.role == .window && $0.source == .atspi }
                    .compactMap(\.windowID))
            dialog = windows.first { served.contains($0.id) }
        }
        if let dialog {
            let area = dialog.frame.intersection(Rect(size: screen))
            let section = "4. one GTK dialog's area (\"\(dialog.title)\" \(dialog.className) \(area)), cold OCR"
            try report.measure(
                section,
                [
                    (
                        "snapshot of one GTK dialog window area",
                        { try snap(try Perceiver(connection: connection), area: area, source: .auto) }
                    ),
                    (
                        "same area, ocr-only",
                        { try snap(try Perceiver(connection: connection), area: area, source: .ocr) }
                    ),
                ], iterations: n, warmup: 1)
        } else {
            report.notes.append("no GTK dialog (zenity) or other tree-served window on screen: row 4 skipped")
        }

        // 5. The tree of a few hundred visible nodes: the scene plus a large GTK app.
        var largeTree: AccessibleTree?
        if try scene.addLargeApp(setup, notes: &report.notes), let location {
            let section = "5. the scene plus gtk3-widget-factory (a large GTK app)"
            let shared = try Perceiver(connection: connection)
            try report.measure(
                section,
                treeRows(location, suffix: ", large app") { largeTree = $0 }
                    + [("snapshot auto, warm OCR, large app", { try snap(shared, source: .auto) })], iterations: n)
        }

        notes(
            &report, bus: location != nil,
            trees: [("scene", lastTree), ("scene plus gtk3-widget-factory", largeTree)])
        report.notes += warnings.sorted().map { "snapshot warning: " + $0 }
        return report
    }

    /// Adds the explanatory notes, the 50 ms goal and the summary line.
    private func notes(_ report: inout SnapshotBenchReport, bus: Bool, trees: [(String, AccessibleTree?)]) {
        report.notes.append(
            "the rows of a section run in turns, so load from elsewhere weighs on each alike. "
                + "cold rows make a new Perceiver per run (untimed), so their OCR engines are created inside "
                + "the timed snapshot, as in a CLI call; 'engines loaded' rows keep one Perceiver and empty its cache. "
                + "tree ms: in snapshot rows the tree read inside the snapshot (helper process start to exit); in tree "
                + "rows the helper's own reading time without its process start. elements (atspi): all elements of the "
                + "snapshot (of them from the accessibility tree). chars/~tokens: the rendering (render(), made after "
                + "the timed part), 4 characters a token.")
        for case (let label, let tree?) in trees {
            let apps = tree.apps.map { app in
                "\(app.name) \(app.route) \(tree.nodes.filter { $0.app == app.id }.count)/\(app.nodes)"
            }
            report.notes.append(
                "tree of the \(label) (bulk route, last run): \(tree.nodes.count) visible nodes; per "
                    + "app, route and visible/all nodes: " + apps.joined(separator: ", "))
        }
        for name in ["atspi tree (bulk route)", "atspi tree (bulk route), large app"] {
            guard let bulk = report.row(name) else { continue }
            report.notes.append(
                String(
                    format: "goal ≤ 50 ms for the tree read of %d visible nodes (%@): %@ "
                        + "(median %.2f ms, p90 %.2f ms)", bulk.nodes ?? 0, name,
                    bulk.medianMs <= 50 ? "met" : "MISSED",
                    bulk.medianMs, bulk.p90Ms))
        }

        /// "adds X ms to `what` (auto vs ocr-only ms)" or "saves X ms on …": how much longer the auto row took.
        func difference(_ auto: SnapshotBenchRow, _ ocr: SnapshotBenchRow, _ what: String) -> String {
            let delta = auto.medianMs - ocr.medianMs
            return String(
                format: "%@ %.0f ms %@ %@ (%.0f vs %.0f ms)", delta >= 0 ? "adds" : "saves", abs(delta),
                delta >= 0 ? "to" : "on", what, auto.medianMs, ocr.medianMs)
        }
        var parts: [String] = []
        if !bus {
            parts.append(
                "no accessibility bus on \(report.display): auto snapshots were OCR-only, so AT-SPI was not "
                    + "measured")
        } else if let coldAuto = report.row("snapshot auto, cold OCR"),
            let coldOCR = report.row("snapshot ocr-only, cold OCR"),
            let warmAuto = report.row("snapshot auto, warm OCR"),
            let warmOCR = report.row("snapshot ocr-only, warm OCR")
        {
            var line =
                "AT-SPI " + difference(warmAuto, warmOCR, "a warm snapshot") + " and "
                + difference(coldAuto, coldOCR, "a cold one")
            if let bulk = report.row("atspi tree (bulk route)") {
                line += String(format: " (helper %.0f ms for %d nodes)", bulk.medianMs, bulk.nodes ?? 0)
            }
            parts.append(line)
        }
        if let row = report.row("snapshot of one GTK dialog window area") {
            parts.append(
                "GTK dialog snapshot used \(row.maxBlocks ?? 0) OCR blocks (most in any of \(row.runs) runs; "
                    + "\(row.accessibleElements ?? 0) elements from the tree)")
        }
        if let large = report.row("atspi tree (bulk route), large app") {
            parts.append(
                String(
                    format: "with gtk3-widget-factory the tree read takes %.0f ms for %d nodes (goal "
                        + "≤ 50 ms %@)", large.medianMs, large.nodes ?? 0, large.medianMs <= 50 ? "met" : "missed"))
        }
        report.summary = parts.joined(separator: "; ")
    }
}

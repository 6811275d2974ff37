import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawTesting

/// `xclaw-bench` (also reached as `xclaw bench`): measures capture, input and OCR, side by side with the usual
/// peers, so defaults rest on data.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "xclaw bench",
        abstract: "Benchmark capture, input, OCR and image search (median/p90 in ms), against scrot, xdotool, "
            + "tesseract and PyAutoGUI when installed.",
        subcommands: [
            BenchCapture.self, BenchInput.self, BenchOCR.self, BenchStep.self, BenchAgents.self,
            BenchSnapshot.self, BenchCLI.self, BenchGrounding.self, BenchImage.self, BenchReplay.self, BenchBatch.self,
            BenchContext.self, BenchMCP.self, BenchWeb.self, BenchFleet.self, BenchPython.self, BenchServices.self,
        ])
}

/// Where a benchmark runs and how it reports: what `BenchSession` and `runBench` need from any bench's options.
protocol BenchTarget {
    /// An X display to use instead of a private Xvfb.
    var display: String? { get }
    /// Screen size of the private Xvfb, WxH.
    var size: String { get }
    /// One JSON object instead of the table.
    var json: Bool { get }
}

/// Options the capture and input benchmarks take.
struct BenchOptions: ParsableArguments, BenchTarget {
    @Option(help: "X display to benchmark (default: a private Xvfb the bench starts and stops).") var display: String?
    @Option(help: "Runs per cheap row (default 200); expensive rows run a tenth, slow peers a 40th as often (>= 3).")
    var iterations: Int?
    @Flag(help: "Print one JSON object with all rows.") var json = false
    @Option(help: "Screen size of the private Xvfb, WxH (ignored with --display).") var size = "1920x1080"

    /// Rejects run counts that would leave nothing to summarise.
    func validate() throws {
        if let iterations, iterations < 1 { throw ValidationError("--iterations must be at least 1") }
    }

    /// Runs for rows that take a few ms.
    var cheap: Int { iterations ?? 200 }
    /// Runs for rows that take tens of ms or more (encoding, processes, typing).
    var expensive: Int { max(3, cheap / 10) }
}

/// A started program and a semaphore its exit signals: Foundation's `waitUntilExit` polls only every 50 ms on
/// Linux, which would round every process timing up to a multiple of 50 ms.
struct Spawned { let process: Process; let exited: DispatchSemaphore }

/// One timed run: how long the timed part took, plus its output size, exactness or OCR figures when those matter.
struct Sample {
    var elapsed: Duration
    var bytes: Int?
    var exact: Double?
    /// Share of the known words an OCR run read, in percent.
    var recall: Double?
    /// The OCR work of the timed read (blocks found, recognised now, from the cache).
    var ocr: TextReading.Stats?
    /// Characters of a text output (snapshot renderings).
    var chars: Int?
}

/// One table row: statistics over the timed runs of one operation, for the text table and the JSON output.
struct BenchRow: Encodable {
    var section, name: String
    var runs: Int
    var medianMs, p90Ms, minMs, maxMs: Double
    /// Median output size (PNG rows).
    var bytes: Int?
    /// Mean share of characters (typing) or clicks delivered exactly, in percent.
    var exactPercent: Double?
    /// Mean share of the known words OCR read (multiset word recall), in percent.
    var recallPercent: Double?
    /// Median text blocks the OCR layout found, recognised in the timed read, and took from the cache.
    var blocks, recognized, cached: Int?
    /// True when every timed read found the whole frame unchanged (answered from the cache without layout).
    var unchanged: Bool?
    /// Median characters of a text output, and the tokens that makes at 4 characters a token.
    var chars, tokens: Int?

    /// Summarises samples (at least one) into a row.
    init(_ section: String, _ name: String, _ samples: [Sample]) {
        let ms = samples.map { ($0.elapsed / .microseconds(1)).rounded() / 1000 }.sorted()  // µs resolution
        let n = ms.count
        self.section = section; self.name = name; runs = n
        medianMs = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2
        p90Ms = ms[min(n - 1, max(0, Int((0.9 * Double(n)).rounded(.up)) - 1))]
        minMs = ms[0]; maxMs = ms[n - 1]
        let sizes = samples.compactMap(\.bytes).sorted(), exact = samples.compactMap(\.exact)
        bytes = sizes.isEmpty ? nil : sizes[sizes.count / 2]
        exactPercent = exact.isEmpty ? nil : exact.reduce(0, +) / Double(exact.count)
        let recall = samples.compactMap(\.recall), ocr = samples.compactMap(\.ocr)
        recallPercent = recall.isEmpty ? nil : recall.reduce(0, +) / Double(recall.count)
        /// The median of one OCR statistic, nil when no sample has OCR figures.
        func median(_ value: (TextReading.Stats) -> Int) -> Int? {
            let sorted = ocr.map(value).sorted()
            return sorted.isEmpty ? nil : sorted[sorted.count / 2]
        }
        blocks = median(\.blocks); recognized = median(\.recognized); cached = median(\.cached)
        unchanged = ocr.isEmpty ? nil : ocr.allSatisfy(\.unchanged)
        let lengths = samples.compactMap(\.chars).sorted()
        chars = lengths.isEmpty ? nil : lengths[lengths.count / 2]
        tokens = chars.map { ($0 + 3) / 4 }
    }

    /// The OCR work as a table cell: "unchanged", or blocks recognised now and from the cache.
    var ocrCell: String {
        if unchanged == true { return "unchanged" }
        guard let blocks, let recognized, let cached else { return "" }
        return "\(recognized) new + \(cached) cached = \(blocks)"
    }
}

/// What a benchmark prints: its rows and notes, as an aligned table or one JSON object.
struct BenchReport: Encodable {
    var benchmark: String
    var display: String
    var screen: Size
    var rows: [BenchRow] = []
    var notes: [String] = []

    /// Runs `body` `warmup` times untimed, then `iterations` times, and appends the summary row.
    mutating func measure(
        _ section: String, _ name: String, iterations: Int, warmup: Int = 3,
        _ body: () throws -> Sample
    ) throws {
        for _ in 0..<warmup { _ = try body() }
        let samples = try (0..<max(1, iterations)).map { _ in try body() }
        rows.append(BenchRow(section, name, samples))
    }

    /// The aligned text table, one block per section, notes last.
    var table: String {
        let head = [
            "", "runs", "median ms", "p90 ms", "min ms", "max ms", "bytes", "exact %", "recall %",
            "OCR blocks", "chars", "~tokens",
        ]
        let f = { (v: Double) in String(format: "%.2f", v) }
        let optional = { (v: Int?) in v.map { "\($0)" } ?? "" }
        let cells = rows.map { (r: BenchRow) -> [String] in
            let timing = ["  " + r.name, "\(r.runs)", f(r.medianMs), f(r.p90Ms), f(r.minMs), f(r.maxMs)]
            let exact = r.exactPercent.map { String(format: "%.1f", $0) } ?? ""
            let recall = r.recallPercent.map { String(format: "%.2f", $0) } ?? ""
            return timing + [optional(r.bytes), exact, recall, r.ocrCell, optional(r.chars), optional(r.tokens)]
        }
        let out = benchTable(
            title: "xclaw bench \(benchmark) on \(display) (\(screen))", head: head,
            rows: zip(rows, cells).map { ($0.section, $1) })
        return (out + notes.map { "note: " + $0 }).joined(separator: "\n")
    }
}

/// Lays out a bench table: the title, the header, then the rows under their section names; the first column is
/// left-aligned, the rest right-aligned, and columns after the six timing ones that no row fills are left out.
func benchTable(title: String, head: [String], rows: [(section: String, cells: [String])]) -> [String] {
    let cells = rows.map(\.cells)
    let widths = head.indices.map { i in ([head[i]] + cells.map { $0[i] }).map(\.count).max() ?? 0 }
    let shown = head.indices.filter { i in i < 6 || cells.contains { !$0[i].isEmpty } }
    let line = { (c: [String]) in
        shown.map { i in
            let pad = String(repeating: " ", count: widths[i] - c[i].count)
            return i == 0 ? c[i] + pad : pad + c[i]
        }.joined(separator: "  ").replacingOccurrences(of: " +$", with: "", options: .regularExpression)
    }
    var out = [title, line(head)]
    var section: String?
    for row in rows {
        if row.section != section { out.append(row.section + ":"); section = row.section }
        out.append(line(row.cells))
    }
    return out
}

/// The display a benchmark runs on and the programs it started there; `close()` ends them all.
final class BenchSession {
    /// The display name, `:N`.
    let name: String
    private var xvfb: VirtualDisplay?
    private var background: [Process] = []

    /// Uses `--display`, or starts a private Xvfb of `--size` (not recorded, attached to this process).
    init(_ options: some BenchTarget) throws {
        if let display = options.display {
            name = display
        } else {
            let started = try VirtualDisplay.start(
                size: try Size(parsing: options.size), depth: 24,
                detached: false, record: false)
            xvfb = started
            name = started.name
        }
    }

    /// Ends the programs started in the background, then the private Xvfb.
    func close() {
        for process in background where process.isRunning {
            process.terminate()
            let deadline = ContinuousClock.now + .seconds(2)
            while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? xvfb?.stop()
    }

    /// Starts a program on the bench display with a UTF-8 locale, its output discarded. `environment` adds
    /// variables, or removes them where the value is nil.
    func start(
        _ program: String, _ arguments: [String], keep: Bool = false,
        environment: [String: String?] = [:]
    ) throws -> Spawned {
        let process = Process(), exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        var variables = ProcessInfo.processInfo.environment.merging(["DISPLAY": name, "LC_ALL": "C.UTF-8"]) { $1 }
        for (key, value) in environment { variables[key] = value }
        process.environment = variables
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            throw ScreenError.invalidArgument("cannot run \(program): \(error.localizedDescription)")
        }
        if keep { background.append(process) }
        return Spawned(process: process, exited: exited)
    }

    /// Waits for a program started with `start` and fails unless it exited with status 0.
    func finish(_ spawned: Spawned) throws {
        spawned.exited.wait()
        let process = spawned.process
        process.waitUntilExit()  // returns at once: the handler ran after the process was reaped
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let what = process.executableURL?.lastPathComponent ?? "a program"
            throw ScreenError.invalidArgument(
                "\(what) \(process.arguments?.first ?? "") failed with status "
                    + "\(process.terminationStatus)")
        }
    }

    /// Times a whole program run, start to exit; `output` names a file whose size becomes the sample's bytes.
    func timedRun(
        _ program: String, _ arguments: [String], output: String? = nil,
        environment: [String: String?] = [:]
    ) throws -> Sample {
        let start = ContinuousClock.now
        try finish(try self.start(program, arguments, environment: environment))
        let elapsed = ContinuousClock.now - start
        let size = output.flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }
        return Sample(elapsed: elapsed, bytes: size)
    }
}

/// Where a probe window goes: the lower right of the screen, clear of the terminals.
func probeFrame(_ screen: Size) -> Rect {
    Rect(x: screen.width * 11 / 20, y: screen.height / 2, width: screen.width * 2 / 5, height: screen.height * 9 / 20)
}

/// A probe window painted like an application: a title band, a sidebar, buttons and a text field.
func makeProbe(_ session: BenchSession, _ screen: Size) throws -> EventProbe {
    let f = probeFrame(screen)
    let (w, h) = (f.width, f.height)
    let rects: [(Rect, RGB)] = [
        (Rect(x: 0, y: 0, width: w, height: h / 12), RGB(r: 0x2b, g: 0x57, b: 0x9a)),
        (Rect(x: 0, y: h / 12, width: w / 4, height: h - h / 12), RGB(r: 0xe8, g: 0xea, b: 0xed)),
        (Rect(x: w / 3, y: h / 5, width: w / 2, height: h / 14), RGB(r: 0xff, g: 0xff, b: 0xff)),
        (Rect(x: w / 3, y: h / 3, width: w / 6, height: h / 12), RGB(r: 0x1a, g: 0x73, b: 0xe8)),
        (Rect(x: w / 2 + w / 8, y: h / 3, width: w / 6, height: h / 12), RGB(r: 0xd9, g: 0x30, b: 0x25)),
        (Rect(x: w / 3, y: h / 2, width: w / 2, height: h / 3), RGB(r: 0xfb, g: 0xbc, b: 0x04)),
    ]
    return try EventProbe(
        display: session.name, title: "xclaw bench", frame: f,
        background: RGB(r: 0xf5, g: 0xf5, b: 0xf0), rects: rects)
}

/// Puts a working desktop on the bench display: two xterms full of text and the probe window; returns the probe
/// once the terminals have drawn.
func startDesktop(_ session: BenchSession, _ screen: Size, report: inout BenchReport) throws -> EventProbe {
    let xterm = "/usr/bin/xterm"
    if FileManager.default.isExecutableFile(atPath: xterm) {
        for (geometry, script) in [
            ("120x40+0+0", "ls -la /usr/bin | head -80"),
            ("100x30+760+20", "(man ls 2>/dev/null || cat /etc/services) | head -60"),
        ] {
            _ = try session.start(xterm, ["-geometry", geometry, "-e", "sh", "-c", script + "; sleep 600"], keep: true)
        }
    } else {
        report.notes.append("xterm not installed: the screen shows only the probe window's colour blocks")
    }
    let probe = try makeProbe(session, screen)
    Thread.sleep(forTimeInterval: 1)  // let the terminals draw
    try drain(probe)
    return probe
}

/// Runs a benchmark on its own session, which is closed even when a row fails, and prints the report.
func runBench(_ options: some BenchTarget, _ bench: (BenchSession) throws -> BenchReport) throws {
    let session = try BenchSession(options)
    defer { session.close() }
    let report = try bench(session)
    try emitBench(report, json: options.json) { report.table }
}

/// Times `body` and records the size of the PNG it made.
func timedPNG(_ body: () throws -> [UInt8]) throws -> Sample {
    let start = ContinuousClock.now
    let png = try body()
    return Sample(elapsed: ContinuousClock.now - start, bytes: png.count)
}

/// Reads probe events until none arrives for 20 ms, so one run's events never count for the next.
func drain(_ probe: EventProbe) throws {
    while try probe.next(timeout: .milliseconds(20)) != nil {}
}

/// The `xclaw` binary next to this one (found through /proc/self/exe), to time our CLI the way peers are timed.
func xclawExecutable() -> String? { XclawPaths.sibling("xclaw") }

/// `xclaw bench capture`: capture, scaling and PNG encoding, in process and as scrot/xclaw processes.
struct BenchCapture: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture", abstract: "Benchmark capture and PNG encoding of a screen showing terminals and a UI.")
    @OptionGroup var options: BenchOptions

    func run() throws { try runBench(options, bench) }

    /// Runs every row; a separate function so windows and connections are gone before the display stops.
    private func bench(_ session: BenchSession) throws -> BenchReport {
        let connection = try DisplayConnection(name: session.name)
        let screen = try connection.screenSize()
        var report = BenchReport(benchmark: "capture", display: session.name, screen: screen)
        let probe = try startDesktop(session, screen, report: &report)

        let clock = ContinuousClock()
        let (n, few) = (options.cheap, options.expensive)
        let shm = try ScreenCapturer(connection: connection, method: .shm)
        let getImage = try ScreenCapturer(connection: connection, method: .getImage)
        let region = Rect(
            x: max(0, screen.width / 2 - 200), y: max(0, screen.height / 2 - 150),
            width: min(400, screen.width), height: min(300, screen.height))
        let model = ScreenGeometry(screen: screen).model
        let section = "in process"
        try report.measure(section, "capture full \(screen), XShm", iterations: n) {
            Sample(elapsed: try clock.measure { _ = try shm.capture() })
        }
        try report.measure(section, "capture full \(screen), XGetImage", iterations: n) {
            Sample(elapsed: try clock.measure { _ = try getImage.capture() })
        }
        try report.measure(section, "capture region \(region.size), XShm", iterations: n) {
            Sample(elapsed: try clock.measure { _ = try shm.capture(region) })
        }
        try report.measure(section, "capture → PNG (.fast)", iterations: few, warmup: 1) {
            try timedPNG { try PNG.encode(try shm.capture(), options: .fast) }
        }
        try report.measure(section, "capture → scale \(model) → PNG (.fast)", iterations: few, warmup: 1) {
            try timedPNG { try PNG.encode(try shm.capture().downscaled(to: model), options: .fast) }
        }

        let frame = try shm.capture()
        let choices: [(String, PNG.Options)] = [
            ("striped ×\(PNG.Options.fast.threads), level 1 (.fast)", .fast),
            ("striped ×1, level 1", PNG.Options(encoder: .striped, level: 1)),
            (
                "striped ×\(PNG.Options.fast.threads), level 3",
                PNG.Options(encoder: .striped, level: 3, threads: PNG.Options.fast.threads)
            ),
            ("libpng level 1, filter none", PNG.Options(level: 1)),
            ("libpng level 1, filter up", PNG.Options(level: 1, filters: 0x20)),
            ("libpng level 1, RLE", PNG.Options(level: 1, strategy: 3)),
            ("libpng level 6, adaptive (.libpngDefault)", .libpngDefault),
        ]
        try report.measure(section, "scale \(screen) → \(model) (area average)", iterations: few, warmup: 1) {
            Sample(elapsed: try clock.measure { _ = try frame.downscaled(to: model) })
        }
        let scaled = try frame.downscaled(to: model)
        for (label, image) in [("\(screen) frame", frame), ("\(model) scaled frame", scaled)] {
            for (name, choice) in choices {
                try report.measure("PNG options on one \(label)", name, iterations: few, warmup: 1) {
                    try timedPNG { try PNG.encode(image, options: choice) }
                }
            }
        }

        let processes = "whole process, start to exit"
        let scrot = "/usr/bin/scrot", scrotOut = "/tmp/xclaw-bench-\(getpid())-scrot.png"
        let ownOut = "/tmp/xclaw-bench-\(getpid())-xclaw.png"
        defer { for file in [scrotOut, ownOut] { try? FileManager.default.removeItem(atPath: file) } }
        if FileManager.default.isExecutableFile(atPath: scrot) {
            try report.measure(processes, "scrot -o FILE", iterations: few, warmup: 1) {
                try session.timedRun(scrot, ["-o", scrotOut], output: scrotOut)
            }
        } else {
            report.notes.append("scrot not installed: run scripts/install-deps.sh --bench")
        }
        if let own = xclawExecutable() {
            try report.measure(processes, "xclaw capture -o FILE", iterations: few, warmup: 1) {
                try session.timedRun(own, ["capture", "--display", session.name, "-o", ownOut], output: ownOut)
            }
        } else {
            report.notes.append("no xclaw binary next to this one: the CLI row is skipped")
        }
        withExtendedLifetime(probe) {}
        return report
    }
}

/// `xclaw bench input`: clicks and exact Unicode typing, as seen by a window, in process and as processes.
struct BenchInput: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "input", abstract: "Benchmark clicks and typing until a window has received them.")
    @OptionGroup var options: BenchOptions

    /// Modifier keysym prefixes: their presses carry no character, so they are not counted as typed characters.
    static let modifiers = ["Shift_", "Control_", "Alt_", "Meta_", "Super_", "ISO_Level", "Mode_switch", "Caps_Lock"]

    /// 200 characters mixing ASCII letters, digits and punctuation with Latin-1, other BMP and CJK characters.
    static let text: String = {
        let pool = Array(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                + " .,;:!?'\"()[]{}/@#$%&*+=<>_~üßöé€ñ你好—✓")
        var seed: UInt64 = 0x5eed
        return "x"
            + String(
                (1..<200).map { _ in
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    return pool[Int((seed >> 33) % UInt64(pool.count))]
                })
    }()

    /// The text of each character-producing key press, in order (Return and Tab as `\n` and `\t`).
    static func presses(_ events: [ProbeEvent]) -> [String] {
        events.filter { e in e.kind == .keyPress && !modifiers.contains { e.keysym?.hasPrefix($0) == true } }.map {
            $0.keysym == "Return" ? "\n" : $0.keysym == "Tab" ? "\t" : $0.text ?? ""
        }
    }

    /// Percent of `text`'s characters that arrived as the key press at their position.
    static func exactness(_ events: [ProbeEvent]) -> Double {
        if EventProbe.typedText(events) == text { return 100 }
        let got = presses(events), want = Array(text)
        let correct = want.indices.filter { $0 < got.count && got[$0] == String(want[$0]) }.count
        return 100 * Double(correct) / Double(want.count)
    }

    func run() throws { try runBench(options, bench) }

    /// Runs every row; a separate function so windows and connections are gone before the display stops.
    private func bench(_ session: BenchSession) throws -> BenchReport {
        let connection = try DisplayConnection(name: session.name)
        let screen = try connection.screenSize()
        var report = BenchReport(benchmark: "input", display: session.name, screen: screen)
        let probe = try makeProbe(session, screen)
        let input = try InputController(connection: connection)
        let frame = probeFrame(screen)
        let points = [
            Point(x: frame.x + frame.width / 3, y: frame.y + frame.height / 3),
            Point(x: frame.x + frame.width * 2 / 3, y: frame.y + frame.height * 2 / 3),
        ]
        var turn = 0
        let (n, few) = (options.cheap, options.expensive)
        let xdotool = "/usr/bin/xdotool", hasXdotool = FileManager.default.isExecutableFile(atPath: xdotool)
        let own = xclawExecutable()
        let text = Self.text, count = text.count

        /// One click: `send` clicks at the point; the time runs until the probe has the matching release.
        func clickRun(_ send: (Point) throws -> Spawned?) throws -> Sample {
            turn += 1
            let point = points[turn % 2]
            try drain(probe)
            let start = ContinuousClock.now
            let process = try send(point)
            let events = try probe.collect(timeout: .seconds(5)) { $0.contains { $0.kind == .buttonRelease } }
            let elapsed = ContinuousClock.now - start
            if let process { try session.finish(process) }
            let release = events.last { $0.kind == .buttonRelease }
            let hit = release?.button == 1 && release?.rootX == point.x && release?.rootY == point.y
            return Sample(elapsed: elapsed, exact: hit ? 100 : 0)
        }
        let clicks = "click at alternating points until the window has the release"
        try report.measure(clicks, "xclaw in process: click(at:)", iterations: n) {
            try clickRun {
                try input.click(at: $0); return nil
            }
        }
        if hasXdotool {
            try report.measure(clicks, "xdotool mousemove X Y click 1", iterations: few, warmup: 1) {
                try clickRun { try session.start(xdotool, ["mousemove", "\($0.x)", "\($0.y)", "click", "1"]) }
            }
        }
        if let own {
            try report.measure(clicks, "xclaw click X Y (process)", iterations: few, warmup: 1) {
                try clickRun { try session.start(own, ["click", "\($0.x)", "\($0.y)", "--display", session.name]) }
            }
        }

        /// One typing run: `send` types the text; the time runs until the probe has a key press per character.
        func typeRun(_ send: () throws -> Spawned?) throws -> Sample {
            try input.move(to: frame.center)  // no window manager: focus follows the pointer
            try input.sync()
            try drain(probe)
            let start = ContinuousClock.now
            let process = try send()
            let events = try probe.collect(timeout: .seconds(10)) { Self.presses($0).count >= count }
            let elapsed = ContinuousClock.now - start
            if let process { try session.finish(process) }
            return Sample(elapsed: elapsed, exact: Self.exactness(events))
        }
        let typing = "type \(count) mixed-Unicode characters until the window has them all"
        var restores: [Sample] = []
        try report.measure(typing, "xclaw in process: keyboard.type", iterations: few, warmup: 1) {
            let sample = try typeRun {
                try input.keyboard.type(text); return nil
            }
            let start = ContinuousClock.now
            try input.keyboard.restoreMapping()
            restores.append(Sample(elapsed: ContinuousClock.now - start))
            return sample
        }
        report.rows.append(BenchRow(typing, "xclaw in process: then restoreMapping()", Array(restores.dropFirst())))
        let settle = try input.keyboard.settleDelay / .milliseconds(1)
        report.notes.append(
            "keyboard.type rows exclude restoreMapping(), which waits until \(Int(settle)) ms (settleDelay) after "
                + "the last rebound key before unbinding it; it has its own row. Process rows stop the clock when the "
                + "last key press arrives (xclaw type restores its mapping after that, before exiting).")
        if hasXdotool {
            try report.measure(typing, "xdotool type --delay 0 TEXT", iterations: few, warmup: 1) {
                try typeRun { try session.start(xdotool, ["type", "--delay", "0", text]) }
            }
            try report.measure(typing, "xdotool type TEXT (12 ms delay)", iterations: max(3, n / 40), warmup: 1) {
                try typeRun { try session.start(xdotool, ["type", text]) }
            }
        } else {
            report.notes.append("xdotool not installed: run scripts/install-deps.sh --bench")
        }
        if let own {
            try report.measure(typing, "xclaw type TEXT (process)", iterations: few, warmup: 1) {
                try typeRun { try session.start(own, ["type", text, "--display", session.name]) }
            }
        }
        report.notes.append(
            "exact %: clicks whose release arrived at the target point; characters that arrived as "
                + "the key press at their position (modifier presses not counted).")
        for row in report.rows where (row.exactPercent ?? 100) < 100 {
            report.notes.append(row.name + ": only " + String(format: "%.1f", row.exactPercent ?? 0) + " % exact")
        }
        withExtendedLifetime(probe) {}
        return report
    }
}

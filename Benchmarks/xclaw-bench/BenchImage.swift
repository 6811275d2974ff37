import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawTesting

/// Options of `xclaw bench image`.
struct ImageBenchOptions: ParsableArguments, BenchTarget {
    @Option(help: "X display to use instead of the private Xvfb (its screen is repainted with the bench's scenes).")
    var display: String?
    @Option(help: "Timed runs per row (default 10), after 2 untimed ones; rows report median and p90.")
    var iterations = 10
    @Flag(help: "Print one JSON object with all rows.") var json = false
    @Option(help: "Screen size of the private Xvfb, WxH (ignored with --display).") var size = "1920x1080"
    @Option(
        help: """
            A Python with pyautogui, opencv-python-headless and pillow (default: a venv the bench makes once in the \
            state directory, bench-pyautogui, with pip).
            """)
    var python: String?

    func validate() throws {
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
    }
}

/// `xclaw bench image`: template search on a 1920x1080 desktop in a light and a dark theme, beside PyAutoGUI's
/// locateOnScreen with OpenCV on the same screens and templates, with both tools' accuracy.
struct BenchImage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image",
        abstract: "Benchmark find --image (capture + match) against PyAutoGUI's locateOnScreen with OpenCV.")
    @OptionGroup var options: ImageBenchOptions

    func run() throws { try runBench(options) { try ImageBench(session: $0, options: options).run() } }
}

/// The rows of `xclaw bench image`.
struct ImageBench {
    let session: BenchSession
    let options: ImageBenchOptions

    /// One theme's colours.
    struct Theme {
        var name: String
        var terminal: [String]  // xterm colour options
        var window: RGB, ink: RGB, accent: RGB, inset: RGB, mark: RGB
        static let light = Theme(
            name: "light", terminal: ["-bg", "white", "-fg", "black"], window: RGB(r: 0xf5, g: 0xf5, b: 0xf0),
            ink: RGB(r: 0x20, g: 0x21, b: 0x24), accent: RGB(r: 0x1a, g: 0x73, b: 0xe8),
            inset: RGB(r: 0xff, g: 0xff, b: 0xff), mark: RGB(r: 0xd9, g: 0x30, b: 0x25))
        static let dark = Theme(
            name: "dark", terminal: ["-bg", "black", "-fg", "#d0d0d0"], window: RGB(r: 0x20, g: 0x21, b: 0x24),
            ink: RGB(r: 0xe8, g: 0xea, b: 0xed), accent: RGB(r: 0x8a, g: 0xb4, b: 0xf8),
            inset: RGB(r: 0x30, g: 0x31, b: 0x34), mark: RGB(r: 0xf2, g: 0x8b, b: 0x82))
    }

    /// The application window's place; the templates are cut from it.
    static let window = Rect(x: 1200, y: 560, width: 680, height: 480)
    /// The templates, in screen pixels: a 32x32 icon, and a 200x60 button with its caption. Look-alikes come
    /// before each in reading order (icons with their mark moved a pixel, "Save chances" above "Save changes").
    static let templates: [(name: String, box: Rect)] = [
        ("32x32 icon", Rect(x: window.x + 40, y: window.y + 300, width: 32, height: 32)),
        ("200x60 button and text", Rect(x: window.x + 36, y: window.y + 196, width: 200, height: 60)),
    ]

    func run() throws -> BenchReport {
        let connection = try DisplayConnection(name: session.name)
        let screen = try connection.screenSize()
        var report = BenchReport(benchmark: "image", display: session.name, screen: screen)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-image-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let peer = startPeer(&report)
        defer { peer?.stop() }
        guard let own = xclawExecutable(), let core = XclawPaths.sibling("xclaw-core") else {
            throw ScreenError.invalidArgument("xclaw and xclaw-core must be built beside xclaw-bench")
        }
        let state = folder.appendingPathComponent("state")
        let daemon = try CLIBench.Daemon(core: core, state: state, display: session.name)
        defer { daemon.stop() }
        let ownState = folder.appendingPathComponent("own")
        try FileManager.default.createDirectory(
            at: ownState, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let perceiver = try Perceiver(connection: connection)
        let n = options.iterations
        for theme in [Theme.light, Theme.dark] {
            let scene = try Scene(session: session, theme: theme)
            defer { scene.stop() }
            try scene.settle(perceiver)
            let frame = try perceiver.capturer.capture()
            for (name, box) in Self.templates {
                let section = "\(name), \(theme.name) theme (\(screen) screen)"
                let image = try frame.cropped(to: box)
                let path = folder.appendingPathComponent("\(theme.name)-\(box.width)x\(box.height).png").path
                try Data(try PNG.encode(image)).write(to: URL(fileURLWithPath: path))
                let template = try ImageTemplate(frame: image, path: path)
                let right = { (found: Rect?) in found == box ? 100.0 : 0.0 }
                /// xclaw in process: capture (unless `frame` is given) and match, then the tap's choice.
                func xclaw(_ options: ImageSearchOptions, capture: Bool) throws -> Sample {
                    let start = ContinuousClock.now
                    let screenFrame = capture ? try perceiver.capturer.capture() : frame
                    let matches = try TemplateMatcher.find(
                        template, in: screenFrame, origin: Point(x: 0, y: 0), options: options)
                    let chosen = try? TemplateMatcher.choose(
                        matches, nth: nil, template: template, confidence: options.confidence
                    ) { nil }
                    return Sample(elapsed: ContinuousClock.now - start, exact: right(chosen?.box))
                }
                if let peer = peer, peer.working {
                    for (mode, label) in [
                        ("onscreen", "PyAutoGUI locateOnScreen(FILE) (its screenshot by scrot; confidence 0.999)"),
                        ("onscreen-0.9", "PyAutoGUI locateOnScreen(FILE, confidence=0.9)"),
                        ("grab+locate", "PyAutoGUI locate(FILE, ImageGrab.grab()) (Pillow's XCB screenshot)"),
                        ("locate", "PyAutoGUI locate(FILE, screenshot) (matching alone)"),
                        ("onscreen-gray", "PyAutoGUI locateOnScreen(FILE, grayscale=True)"),
                    ] {
                        guard let samples = try? peer.measure(mode, path: path, count: n + 2).dropFirst(2) else {
                            report.notes.append("PyAutoGUI stopped answering at \(label), \(section): rows skipped")
                            peer.working = false
                            break
                        }
                        report.rows.append(
                            BenchRow(section, label, samples.map { Sample(elapsed: $0.elapsed, exact: right($0.box)) }))
                    }
                }
                try report.measure(
                    section, "xclaw in process: capture + find (colour, confidence 0.9)", iterations: n, warmup: 2
                ) {
                    try xclaw(ImageSearchOptions(), capture: true)
                }
                try report.measure(section, "xclaw in process: find alone (colour)", iterations: n, warmup: 2) {
                    try xclaw(ImageSearchOptions(), capture: false)
                }
                try report.measure(section, "xclaw in process: capture + find --grayscale", iterations: n, warmup: 2) {
                    try xclaw(ImageSearchOptions(grayscale: true), capture: true)
                }
                for (mode, environment) in [
                    ("daemon", ["XCLAW_STATE_DIR": state.path]),
                    ("no daemon", ["XCLAW_STATE_DIR": ownState.path, "XCLAW_NO_DAEMON": "1"]),
                ] {
                    try report.measure(
                        section, "xclaw find --image FILE (whole process, \(mode))", iterations: n, warmup: 2
                    ) {
                        let start = ContinuousClock.now
                        let outcome = try Subprocess.run(
                            [own, "find", "--image", path, "--display", session.name], timeout: .seconds(30),
                            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
                        let elapsed = ContinuousClock.now - start
                        let text = String(decoding: outcome.stdout, as: UTF8.self)
                        return Sample(elapsed: elapsed, exact: text.contains("at \(box.x),\(box.y) ") ? 100 : 0)
                    }
                }
            }
        }
        report.notes.append(
            "exact %: runs that found the template at the box it was cut from (xclaw: the match a tap would click, "
                + "ties refused; PyAutoGUI: the box locateOnScreen returns, the first above its confidence in row order)"
        )
        report.notes.append(
            "xclaw's in-process rows include its capture (XShm), as locateOnScreen includes its screenshot; "
                + "PyAutoGUI times are taken inside a warm Python process (time.perf_counter), not counting its start")
        for row in report.rows where (row.exactPercent ?? 100) < 100 {
            report.notes.append(
                row.name + ": only " + String(format: "%.0f", row.exactPercent ?? 0) + " % at the right box")
        }
        return report
    }

    /// Starts the PyAutoGUI driver, making its venv first when needed; nil (and a note) when it cannot.
    private func startPeer(_ report: inout BenchReport) -> PyAutoGUIPeer? {
        do {
            let python = try options.python ?? PyAutoGUIPeer.venv()
            let peer = try PyAutoGUIPeer(python: python, display: session.name)
            report.notes.append("peer: " + peer.versions)
            return peer
        } catch {
            report.notes.append("PyAutoGUI rows skipped: \(error)")
            return nil
        }
    }

    /// A theme's desktop: two terminals of text and an application window with icons, buttons and captions.
    struct Scene {
        let terminals: [Spawned]
        let window: EventProbe

        init(session: BenchSession, theme: Theme) throws {
            var started: [Spawned] = []
            let page = (0..<60).map {
                "\($0 * 7919 % 1000): " + String(repeating: "lorem ipsum dolor ", count: 1 + $0 % 5)
            }
            for (geometry, lines) in [("120x40+0+0", page), ("100x30+760+20", page.reversed())] {
                started.append(
                    try session.start(
                        "/usr/bin/xterm",
                        ["-geometry", geometry] + theme.terminal + [
                            "-e", "sh", "-c", "printf '\(lines.joined(separator: "\\n"))'; sleep 600",
                        ]))
            }
            terminals = started
            let w = ImageBench.window
            var rects: [(Rect, RGB)] = []
            // The template's icon at (40, 300); look-alikes with their mark moved or shortened by a pixel.
            for (i, (x, y)) in [(40, 40), (120, 40), (200, 40), (280, 40), (40, 300), (360, 300)].enumerated() {
                let real = (x, y) == (40, 300)
                rects.append((Rect(x: x, y: y, width: 32, height: 32), theme.accent))
                rects.append((Rect(x: x + 8, y: y + 8, width: 16, height: 16), theme.inset))
                rects.append(
                    (
                        Rect(x: x + 12 + (real ? 0 : 1 + i % 2), y: y + 12, width: 8, height: real ? 8 : 8 - i % 2),
                        theme.mark
                    ))
            }
            do {
                window = try EventProbe(
                    display: session.name, title: "bench app", frame: w, background: theme.window, rects: rects,
                    texts: [
                        ProbeText(origin: Point(x: 160, y: 135), font: "9x15", foreground: theme.ink, text: "chances"),
                        ProbeText(origin: Point(x: 160, y: 215), font: "9x15", foreground: theme.ink, text: "changes"),
                        ProbeText(origin: Point(x: 40, y: 380), font: "10x20", foreground: theme.ink, text: "Save all"),
                    ],
                    widgets: [
                        .button(Rect(x: 40, y: 126, width: 110, height: 30), label: "Save"),
                        .button(Rect(x: 40, y: 206, width: 110, height: 30), label: "Save"),
                        .button(Rect(x: 300, y: 126, width: 110, height: 30), label: "Cancel"),
                    ])
            } catch {
                for terminal in started { terminal.process.terminate() }
                throw error
            }
        }

        /// Lets the terminals draw and the window paint, until the screen is still.
        func settle(_ perceiver: Perceiver) throws {
            Thread.sleep(forTimeInterval: 1)
            try drain(window)
            _ = try Watcher(perceiver: perceiver, interval: .milliseconds(50))
                .waitUntilStable(quiet: .milliseconds(300), timeout: .seconds(10))
        }

        /// Ends the terminals; the window goes with this value.
        func stop() {
            for terminal in terminals where terminal.process.isRunning { terminal.process.terminate() }
            for terminal in terminals { terminal.exited.wait() }
        }
    }
}

/// PyAutoGUI in a Python process kept running, so its timings are of locateOnScreen and not of Python's start.
final class PyAutoGUIPeer {
    private let process = Process()
    private let input = Pipe(), output = Pipe()
    private var buffer = Data()
    /// The versions it reported.
    private(set) var versions = ""
    /// False once it failed to answer: the remaining rows go without it.
    var working = true

    /// What the driver does per request: times `reps` runs of one way of locating, printing one JSON array.
    static let driver = """
        import json, sys, time
        import cv2, pyautogui, pyscreeze, PIL
        from PIL import ImageGrab
        pyautogui.useImageNotFoundException(False)
        shot = "gnome-screenshot" if pyscreeze.GNOMESCREENSHOT_EXISTS else ("scrot" if pyscreeze.SCROT_EXISTS else "none")
        print(json.dumps({"versions": "PyAutoGUI %s, PyScreeze %s, OpenCV %s, Pillow %s, screenshots by %s" % (
            pyautogui.__version__, pyscreeze.__version__, cv2.__version__, PIL.__version__, shot)}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            mode, path, out = request["mode"], request["path"], []
            haystack = ImageGrab.grab() if mode == "locate" else None
            for _ in range(request["count"]):
                start = time.perf_counter()
                if mode == "onscreen":
                    box = pyautogui.locateOnScreen(path)
                elif mode == "onscreen-0.9":
                    box = pyautogui.locateOnScreen(path, confidence=0.9)
                elif mode == "onscreen-gray":
                    box = pyautogui.locateOnScreen(path, grayscale=True)
                elif mode == "grab+locate":
                    box = pyautogui.locate(path, ImageGrab.grab())
                else:
                    box = pyautogui.locate(path, haystack)
                ms = (time.perf_counter() - start) * 1000
                out.append({"ms": ms, "box": [int(v) for v in box] if box else None})
            print(json.dumps(out), flush=True)
        """

    /// Where the bench keeps its PyAutoGUI: a venv in the state directory, made (with pip) the first time.
    static func venv() throws -> String {
        try PythonVenv.python("bench-pyautogui", packages: ["pyautogui", "opencv-python-headless", "pillow"])
    }

    /// Starts the driver with `python` on `display` and waits for its versions line.
    init(python: String, display: String) throws {
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", Self.driver]
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = display
        // As an X11 desktop session says: PyScreeze takes its screenshots by scrot only when it knows it is on X11.
        environment["XDG_SESSION_TYPE"] = "x11"
        // python-xlib refuses to connect without an Xauthority file, even for a display that needs none.
        if !FileManager.default.fileExists(atPath: environment["XAUTHORITY"] ?? NSHomeDirectory() + "/.Xauthority") {
            let empty = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-xauthority")
            FileManager.default.createFile(atPath: empty.path, contents: Data())
            environment["XAUTHORITY"] = empty.path
        }
        process.environment = environment
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // python-xlib may print warnings first: the versions line is the first JSON object.
        for _ in 0..<20 {
            guard let next = try? line(timeout: .seconds(60)) else { break }
            if let object = try? JSONSerialization.jsonObject(with: next) as? [String: Any],
                let versions = object["versions"] as? String
            {
                self.versions = versions
                return
            }
        }
        stop()
        throw ScreenError.invalidArgument("the PyAutoGUI driver did not start with \(python)")
    }

    /// One timed run's duration and the box it returned.
    struct Run {
        var elapsed: Duration
        var box: Rect?
    }

    /// Times `count` runs of `mode` on the template at `path`.
    func measure(_ mode: String, path: String, count: Int) throws -> [Run] {
        let request = try JSONSerialization.data(withJSONObject: ["mode": mode, "path": path, "count": count])
        input.fileHandleForWriting.write(request + Data("\n".utf8))
        let reply = try line(timeout: .seconds(600))
        guard let runs = try JSONSerialization.jsonObject(with: reply) as? [[String: Any]] else {
            throw ScreenError.invalidArgument("the PyAutoGUI driver answered \(String(decoding: reply, as: UTF8.self))")
        }
        return runs.map { run in
            let box = (run["box"] as? [Int]).flatMap {
                $0.count == 4 ? Rect(x: $0[0], y: $0[1], width: $0[2], height: $0[3]) : nil
            }
            return Run(elapsed: .microseconds(Int64(((run["ms"] as? Double) ?? 0) * 1000)), box: box)
        }
    }

    /// The driver's next line of output.
    private func line(timeout: Duration) throws -> Data {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: 0x0a) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                return Data(line)
            }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw ScreenError.invalidArgument("the PyAutoGUI driver stopped answering")
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty && !process.isRunning { continue }
            buffer.append(chunk)
        }
    }

    /// Ends the driver.
    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
    }
}

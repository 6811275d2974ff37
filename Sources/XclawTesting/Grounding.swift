import Foundation
import XclawPolling
import XclawScreen

/// One control of a real app to tap by label, and what the app must report when that control is the one pressed.
public struct GroundingTarget: Sendable {
    /// What a user types after `xclaw tap`.
    public var label: String
    /// The app's own report of a press of this control.
    public var expected: String
    /// A role to narrow the tap (`--role field` for an entry named by its label), as a user would.
    public var role: String?

    /// A target; `label` may be a ref too.
    public init(label: String, expected: String, role: String?) {
        (self.label, self.expected, self.role) = (label, expected, role)
    }
}

/// How one tap went, judged by the app.
public enum GroundingOutcome: Equatable, Sendable {
    /// The app reported the control meant.
    case correct
    /// The app reported another control, or the click landed outside every control (the worst outcome).
    case wrong(String)
    /// xclaw refused or found nothing, and nothing was pressed.
    case missed(String)
}

/// A real app of the grounding suite, started on a display, with its targets and its way of saying what was pressed:
/// the Tk, GTK and Motif apps print `pressed ID`; xmessage prints the label of its button and exits; xcalc's keys are X windows of
/// their own, so the key under the pointer after a click is the X server's answer.
public final class GroundingApp: @unchecked Sendable {
    /// Which app.
    public enum Kind: Sendable {
        /// The Tk app of `groundingTkSource`, in a variant: default, dark, small or 2x.
        case tk(String)
        /// The GTK 3 app of `groundingGtkSource` in a theme (default or dark), served by its accessibility tree
        /// (`tree`: the display needs an accessibility bus) or, with none, by per-control reading and OCR.
        case gtk(String, tree: Bool)
        /// Debian's xcalc (Xaw), its whole keypad.
        case xcalc
        /// xmessage with a row of buttons.
        case xmessage([String])
        /// The Motif app of `groundingMotifSource`, compiled with cc against libXm.
        case motif
        /// The same Motif app's question dialog, over its main window.
        case motifDialog

        /// Whether the app's display must have an accessibility bus (`TestDisplay(accessibility: true)`).
        public var needsAccessibility: Bool {
            if case .gtk(_, let tree) = self { return tree }
            return false
        }
    }

    /// Which app.
    public let kind: Kind
    /// Its window title, for `--window`.
    public let title: String
    /// What to tap.
    public let targets: [GroundingTarget]
    /// A short name for reports ("tk dark", "xcalc").
    public let name: String
    private let display: String
    private let environment: [String: String]
    private var process: Process?
    private let lock = NSLock()
    private var lines: [String] = []
    private var keys: [(label: String, frame: Rect)] = []
    private var script: URL?

    /// The short name of an app of this kind, as reports give it ("tk dark", "gtk default (tree)").
    public static func name(of kind: Kind) -> String {
        switch kind {
        case .tk(let variant): return "tk \(variant)"
        case .gtk(let theme, let tree): return "gtk \(theme)" + (tree ? " (tree)" : "")
        case .xcalc: return "xcalc"
        case .xmessage(let buttons): return "xmessage " + (buttons.first ?? "").lowercased()
        case .motif: return "motif"
        case .motifDialog: return "motif dialog"
        }
    }

    /// Starts the app on `display` (with `environment` for its buses) and waits until it is on screen.
    public init(_ kind: Kind, display: String, environment: [String: String]) throws {
        self.kind = kind
        self.display = display
        self.environment = environment
        name = Self.name(of: kind)
        switch kind {
        case .tk(let variant):
            title = "grounding \(variant)"
            targets = groundingTkTargets.map { GroundingTarget(label: $0.label, expected: $0.expected, role: $0.role) }
        case .gtk(let theme, let tree):
            title = "grounding gtk \(theme)" + (tree ? " tree" : "")
            targets = groundingTkTargets.map { GroundingTarget(label: $0.label, expected: $0.expected, role: $0.role) }
        case .xcalc:
            title = "Calculator"
            targets = []
        case .xmessage(let buttons):
            title = "xmessage"
            targets = buttons.map { GroundingTarget(label: $0, expected: $0, role: nil) }
        case .motif:
            title = "grounding motif"
            targets =
                groundingMotifLabels.map { GroundingTarget(label: $0, expected: $0, role: nil) }
                + [GroundingTarget(label: "Name", expected: "entry Name", role: "field")]
        case .motifDialog:
            title = "grounding motif dialog"
            targets = groundingMotifDialogLabels.map { GroundingTarget(label: $0, expected: $0, role: nil) }
        }
        try launch()
        if case .xcalc = kind {
            keys = try Self.xcalcKeys(display: display)
        }
    }

    /// xcalc's targets: every key, by the label its app-defaults give it (symbol-font keys by what they show).
    public var xcalcTargets: [GroundingTarget] {
        keys.map { GroundingTarget(label: $0.label, expected: $0.label, role: nil) }
    }

    /// The targets to tap: for xcalc, read from the app once it runs.
    public var allTargets: [GroundingTarget] {
        if case .xcalc = kind { return xcalcTargets }
        return targets
    }

    private func launch() throws {
        let p = Process()
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        env["DISPLAY"] = display
        switch kind {
        case .tk(let variant):
            try python(p, source: groundingTkSource, arguments: [variant, title])
        case .gtk(let theme, let tree):
            // Without a tree GTK is kept off any bus it could find, as an app on a desktop without one.
            if !tree {
                env["NO_AT_BRIDGE"] = "1"
                for bus in ["DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS"] { env[bus] = nil }
            }
            try python(p, source: groundingGtkSource, arguments: [theme, title])
        case .xcalc:
            p.executableURL = URL(fileURLWithPath: "/usr/bin/xcalc")
            p.arguments = ["-geometry", "+20+20"]
        case .motif:
            p.executableURL = try Self.motifBinary()
            p.arguments = [title]
        case .motifDialog:
            p.executableURL = try Self.motifBinary()
            p.arguments = [title, "dialog"]
        case .xmessage(let buttons):
            p.executableURL = URL(fileURLWithPath: "/usr/bin/xmessage")
            p.arguments = [
                "-print", "-geometry", "+40+40", "-buttons", buttons.joined(separator: ","),
                "Pick one of the buttons below.",
            ]
        }
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            let text = String(decoding: data, as: UTF8.self)
            self.lock.withLock {
                self.lines += text.split(separator: "\n").map(String.init)
            }
        }
        try p.run()
        process = p
        try waitForWindow()
    }

    /// Sets `p` up to run `source` with Debian's python3 (which has python3-tk and python3-gi), from a script file.
    private func python(_ p: Process, source: String, arguments: [String]) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-grounding-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max)).py")
        try Data(source.utf8).write(to: url)
        script = url
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = [url.path] + arguments
    }

    /// Waits until a window titled `title` is viewable and painted.
    private func waitForWindow() throws {
        let shown = poll(within: .seconds(20), every: .milliseconds(50)) { () -> Bool? in
            let tree = try? toolOutput("/usr/bin/xwininfo", ["-display", display, "-root", "-tree"])
            if let tree, tree.contains("\"\(title)\"") { return true }
            return process?.isRunning == true ? nil : false
        }
        guard shown == true else { throw ScreenError.virtualDisplay("\(name) did not show a window titled \(title)") }
        // Kept: none of the apps says when it has painted (the Tk app's "ready" comes before its main loop runs).
        Thread.sleep(forTimeInterval: 0.5)
    }

    /// Taps one target through `tap` (which runs xclaw and throws when it refuses) and asks the app what was pressed.
    public func attempt(_ target: GroundingTarget, tap: () throws -> Void) -> GroundingOutcome {
        if case .xmessage = kind, process?.isRunning != true {
            try? launch()
        }
        lock.withLock { lines.removeAll() }
        let pointer = try? DisplayConnection(name: display)
        let input = pointer.flatMap { try? InputController(connection: $0) }
        let parked = Point(x: 1000, y: 700)
        if case .xcalc = kind { try? input?.move(to: parked) }
        do {
            try tap()
        } catch {
            return .missed("\(error)".split(separator: "\n").first.map(String.init) ?? "refused")
        }
        switch kind {
        case .xcalc:
            // The tap moved the pointer on a connection of its own: its motion shows here once the pointer has left
            // where it was parked (a tap that never moved it leaves it there, judged below as outside every key).
            let moved = poll(within: .seconds(2), every: .milliseconds(5)) { () -> Point? in
                guard let at = try? input?.cursorPosition(), at != parked else { return nil }
                return at
            }
            guard let at = moved ?? (try? input?.cursorPosition()) else { return .missed("pointer unknown") }
            guard let key = keys.first(where: { $0.frame.contains(at) }) else {
                return .wrong("clicked \(at.x),\(at.y), outside every key")
            }
            // The press is judged, but xcalc may still be redrawing the key and its display (each cleared, then
            // drawn): the likely cause of a next tap that found neither ("nothing on screen matches 9"), inferred,
            // not shown. So the next tap waits until the window's pixels stop changing, as the app-reporting judges
            // wait for the report. (Perception's Settler does this for the CLI; this layer cannot use it.)
            if let connection = pointer {
                let window = try? WindowManager(connection: connection).list().first { $0.title == title }
                Self.waitUntilStill(window.map { [$0.frame] } ?? keys.map(\.frame), on: connection)
            }
            return key.label == target.expected ? .correct : .wrong(key.label)
        case .tk, .gtk, .xmessage, .motif, .motifDialog:
            let reported =
                poll(within: .seconds(2)) { () -> [String]? in
                    let reported = lock.withLock { lines.filter { !$0.hasPrefix("ready") } }
                    return reported.isEmpty ? nil : reported
                } ?? []
            if target.expected.hasPrefix("menu ") {
                // Close the menu the press posted, so the next tap sees the window again.
                try? input?.move(to: Point(x: 5, y: 790))
                // Twice: once to close the menu, once to leave the menu bar's keyboard traversal, which would
                // otherwise take the next click for itself.
                if let connection = pointer, let escape = try? KeyCombo.parse("Escape") {
                    try? Keyboard(connection: connection).press([escape, escape])
                }
                Thread.sleep(forTimeInterval: 0.3)  // kept: the menu's unposting, which the app does not report
            }
            if case .xmessage = kind, !reported.isEmpty {
                // It exits once a button is pressed: the next tap gets a new one.
                process?.waitUntilExit()
                try? launch()
            }
            guard let first = reported.first else { return .wrong("nothing was pressed") }
            let got = first.hasPrefix("pressed ") ? String(first.dropFirst(8)) : first
            return got == target.expected ? .correct : .wrong(got)
        }
    }

    /// Waits (2 s at most) until the area over `frames` is the same in captures 30 ms apart.
    static func waitUntilStill(_ frames: [Rect], on connection: DisplayConnection) {
        guard let first = frames.first, let capturer = try? ScreenCapturer(connection: connection) else { return }
        let area = frames.dropFirst().reduce(first) { $0.union($1) }
        var last = try? capturer.capture(area)
        _ = poll(within: .seconds(2), every: .milliseconds(30)) { () -> Bool? in
            guard let now = try? capturer.capture(area) else { return nil }
            defer { last = now }
            return last.map { now.hasSameBytes(as: $0) } == true ? true : nil
        }
    }

    /// Ends the app.
    public func stop() {
        if let process, process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        if let script { try? FileManager.default.removeItem(at: script) }
    }

    deinit { stop() }

    /// xcalc's keys: the button windows of its form (from the X server), in reading order, named by the labels its
    /// app-defaults file gives button1…button55 in that order (the form lays them out row by row).
    static func xcalcKeys(display: String) throws -> [(label: String, frame: Rect)] {
        let defaults = try String(contentsOfFile: "/etc/X11/app-defaults/XCalc", encoding: .isoLatin1)
        var labels: [Int: String] = [:]
        for line in defaults.split(separator: "\n") where line.hasPrefix("XCalc*ti.button") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].hasSuffix(".label"),
                let n = Int(parts[0].dropFirst("XCalc*ti.button".count).dropLast(".label".count))
            else { continue }
            labels[n] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        // The keys drawn in the Symbol font show other glyphs than their Latin-1 codes.
        let shown = ["x\\262": "x²", "\\326\\140": "√", "\\160": "π", "\\270": "÷"]
        let tree = try toolOutput("/usr/bin/xwininfo", ["-display", display, "-root", "-tree"])
        // Buttons: 40x26-ish windows directly inside the form, with absolute positions.
        var frames: [Rect] = []
        for line in tree.split(separator: "\n") where line.contains("(has no name): ()") {
            let fields = line.split(separator: " ").map(String.init)
            guard
                let geometry = fields.first(where: {
                    $0.contains("x") && $0.contains("+") && $0.first?.isNumber == true
                }),
                let absolute = fields.last, absolute.hasPrefix("+")
            else { continue }
            let size = geometry.split(separator: "+")[0].split(separator: "x").compactMap { Int($0) }
            let position = absolute.split(separator: "+").compactMap { Int($0) }
            guard size.count == 2, position.count == 2, (30...60).contains(size[0]), (20...40).contains(size[1])
            else { continue }
            frames.append(Rect(x: position[0], y: position[1], width: size[0], height: size[1]))
        }
        frames.sort { ($0.y, $0.x) < ($1.y, $1.x) }
        guard frames.count == labels.count else {
            throw ScreenError.virtualDisplay("xcalc shows \(frames.count) keys, its app-defaults name \(labels.count)")
        }
        return frames.enumerated().map { index, frame in
            let raw = labels[index + 1] ?? ""
            return (shown[raw] ?? raw, frame)
        }
    }

    /// The Motif app, compiled once per process into the temporary directory (libmotif-dev, from install-deps).
    static func motifBinary() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-grounding-motif-\(ProcessInfo.processInfo.processIdentifier)")
        let binary = directory.appendingPathComponent("motif-keys")
        if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("motif-keys.c")
        try Data(groundingMotifSource.utf8).write(to: source)
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
        cc.arguments = ["-o", binary.path, source.path, "-lXm", "-lXt", "-lX11"]
        cc.standardError = FileHandle.standardError
        try cc.run()
        cc.waitUntilExit()
        guard cc.terminationStatus == 0 else {
            throw ScreenError.virtualDisplay("the Motif app did not compile (is libmotif-dev installed?)")
        }
        return binary
    }

}

/// Runs an oracle tool (xwininfo, xprop) to its end and returns its stdout; its stderr is dropped.
public func toolOutput(_ tool: String, _ arguments: [String]) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: tool)
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// The tally of a grounding run on one app.
public struct GroundingTally: Sendable {
    /// The app.
    public var app: String
    /// Taps that pressed the control meant.
    public var correct = 0
    /// Taps that pressed another control (must be 0).
    public var wrong = 0
    /// Taps refused or not found.
    public var missed = 0
    /// One line per tap that was not correct.
    public var notes: [String] = []

    /// Creates an empty tally for `app`.
    public init(app: String) { self.app = app }

    /// First-try correct, in percent.
    public var percent: Double {
        correct + wrong + missed == 0 ? 0 : Double(correct) * 100 / Double(correct + wrong + missed)
    }

    /// Counts one outcome.
    public mutating func add(_ target: GroundingTarget, _ outcome: GroundingOutcome) {
        switch outcome {
        case .correct: correct += 1
        case .wrong(let got):
            wrong += 1
            notes.append("WRONG \(target.label) → \(got)")
        case .missed(let why):
            missed += 1
            notes.append("missed \(target.label): \(why)")
        }
    }
}

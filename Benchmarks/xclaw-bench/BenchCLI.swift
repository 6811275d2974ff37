import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen
import XclawTesting

/// `xclaw bench cli`: whole processes, start to exit, with and without the daemon, beside xdotool and scrot, on the
/// snapshot bench's scene (GTK dialogs, a Qt editor, an xterm) with a probe window that checks what typing delivered.
struct BenchCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cli",
        abstract: "Benchmark whole xclaw processes with and without the daemon, beside xdotool and scrot.")
    @OptionGroup var options: SnapshotBenchOptions

    /// Builds the scene, measures, tears everything down (also on errors and Ctrl-C), then prints.
    func run() throws {
        try runOnScene(options, table: \.table) { try CLIBench(scene: $0, iterations: options.iterations).run() }
    }
}

/// The rows of `xclaw bench cli` on one scene.
struct CLIBench {
    let scene: SnapshotScene
    let iterations: Int

    /// A daemon of the bench's own, on a private state directory, stopped at the end.
    final class Daemon {
        let state: URL
        private let process: Subprocess

        init(core: String, state: URL, display: String) throws {
            self.state = state
            try FileManager.default.createDirectory(
                at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var environment = ProcessInfo.processInfo.environment
            environment["XCLAW_STATE_DIR"] = state.path
            environment["DISPLAY"] = display
            process = try Subprocess.spawn(
                [core, "daemon", "run"], stdout: .null, stderr: .null, environment: environment, group: .own)
            let socket = state.appendingPathComponent("daemon.sock").path
            let deadline = ContinuousClock.now + .seconds(10)
            while (try? UnixSocket.connect(path: socket)) == nil {
                guard ContinuousClock.now < deadline else {
                    throw ScreenError.invalidArgument("the bench's daemon did not answer on \(socket) in 10 s")
                }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }

        /// Stops it (SIGTERM, then SIGKILL after 5 s) and removes its state.
        func stop() {
            kill(process.pid, SIGTERM)
            _ = process.wait(deadline: .now + .seconds(5))
            try? FileManager.default.removeItem(at: state)
        }
    }

    func run() throws -> BenchReport {
        let connection = try DisplayConnection(name: scene.name)
        let screen = try connection.screenSize()
        var report = BenchReport(benchmark: "cli", display: scene.name, screen: screen)
        report.notes += try scene.populate(try Perceiver(connection: connection))
        guard let own = xclawExecutable(), let core = XclawPaths.sibling("xclaw-core") else {
            throw ScreenError.invalidArgument("xclaw and xclaw-core must be built beside xclaw-bench")
        }
        let session = scene.session
        let xdotool = executablePath("xdotool"), scrot = executablePath("scrot")
        if xdotool == nil { report.notes.append("xdotool not installed: run scripts/install-deps.sh --bench") }
        if scrot == nil { report.notes.append("scrot not installed: run scripts/install-deps.sh --bench") }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-cli-\(getpid())")
        let daemon = try Daemon(core: core, state: state.appendingPathComponent("daemon"), display: scene.name)
        defer { daemon.stop() }
        // The default: the daemon the first command started (fast by default), here after the untimed warm-up.
        let automatic: [String: String?] = [
            "XCLAW_STATE_DIR": state.appendingPathComponent("auto").path, "XCLAW_DAEMON": "auto",
            "XCLAW_NO_DAEMON": nil,
        ]
        let modes: [(name: String, environment: [String: String?])] = [
            (
                "xclaw, no daemon",
                ["XCLAW_STATE_DIR": state.appendingPathComponent("own").path, "XCLAW_NO_DAEMON": "1"]
            ),
            ("xclaw, daemon", ["XCLAW_STATE_DIR": daemon.state.path]),
            ("xclaw, default (after the first command started a daemon)", automatic),
        ]
        defer {
            _ = try? session.finish(session.start(core, ["daemon", "stop"], environment: automatic))
        }
        try FileManager.default.createDirectory(
            at: state.appendingPathComponent("own"), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: state) }

        // A probe window to type into, with the keyboard focus (there is no window manager to give it).
        let probe = try makeProbe(session, screen)
        try drain(probe)
        if let xdotool {
            try session.finish(try session.start(xdotool, ["windowfocus", "\(probe.window)"]))
        }
        let input = try InputController(connection: connection)
        let desk = Point(x: 3, y: screen.height - 4)  // bare desktop: clicks there change nothing
        let n = iterations

        /// Times `arguments` of xclaw in every mode, and the peer's command when there is one.
        func compare(
            _ section: String, _ label: String, _ arguments: [String], peer: (String, [String])?,
            output: String? = nil
        ) throws {
            if let (program, peerArguments) = peer {
                let name = URL(fileURLWithPath: program).lastPathComponent
                let shown = peerArguments.map { $0 == output ? "FILE" : $0 }.joined(separator: " ")
                try report.measure(section, "\(name) \(shown)", iterations: n) {
                    try session.timedRun(program, peerArguments, output: output)
                }
            }
            for mode in modes {
                try report.measure(section, "\(mode.name): xclaw \(label)", iterations: n) {
                    try session.timedRun(own, arguments, output: output, environment: mode.environment)
                }
            }
            // The full binary started directly: what every command paid before the front and the daemon.
            try report.measure(section, "xclaw-core \(label) (the full binary, in-process)", iterations: n) {
                try session.timedRun(core, arguments, output: output, environment: modes[0].environment)
            }
        }

        try compare("start-up", "--version", ["--version"], peer: nil)
        try compare("pointer position", "cursor", ["cursor"], peer: xdotool.map { ($0, ["getmouselocation"]) })
        // Clicks alternate between two points (`xdotool mousemove` waits for a pointer that is already there), and
        // xdotool gets `click --delay 0`: its default sleeps 100 ms after the click, even a single one.
        var turn = 0
        func point() -> [String] {
            turn += 1
            return ["\(desk.x + 10 * (turn % 2))", "\(desk.y)"]
        }
        let clicks = "click on the bare desktop (two points in turn)"
        if let xdotool {
            try report.measure(clicks, "xdotool mousemove X Y click --delay 0 1", iterations: n) {
                try session.timedRun(xdotool, ["mousemove"] + point() + ["click", "--delay", "0", "1"])
            }
        }
        for mode in modes {
            try report.measure(clicks, "\(mode.name): xclaw click X Y", iterations: n) {
                try session.timedRun(own, ["click"] + point(), environment: mode.environment)
            }
        }
        try report.measure(clicks, "xclaw-core click X Y (the full binary, in-process)", iterations: n) {
            try session.timedRun(core, ["click"] + point(), environment: modes[0].environment)
        }
        try input.move(to: probeFrame(screen).center)
        try input.sync()
        try compare(
            "key into the probe", "key ctrl+a", ["key", "ctrl+a"],
            peer: xdotool.map { ($0, ["key", "--delay", "0", "ctrl+a"]) })

        // Typing: the process's time, and what the probe received (after the process ended).
        let text = BenchInput.text
        let typing = "type \(text.count) mixed-Unicode characters (process start to exit; exact % as received)"
        // The probe reads as the keys arrive, as an app would: a client translates a key when it reads it, and
        // reading only after the process ended would see the keymap xclaw restored meanwhile.
        func typed(_ program: String, _ arguments: [String], _ environment: [String: String?]) throws -> Sample {
            try drain(probe)
            let start = ContinuousClock.now
            let spawned = try session.start(program, arguments, environment: environment)
            let exit = ResultBox<ContinuousClock.Instant>()
            let reaped = DispatchSemaphore(value: 0)
            Thread {
                spawned.exited.wait()
                exit.value = .now
                spawned.exited.signal()  // for `finish`, which waits on it too
                reaped.signal()
            }.start()
            let events = try probe.collect(timeout: .seconds(10)) { BenchInput.presses($0).count >= text.count }
            reaped.wait()
            try session.finish(spawned)
            return Sample(elapsed: (exit.value ?? .now) - start, exact: BenchInput.exactness(events))
        }
        let few = max(3, n / 2)
        if let xdotool {
            try report.measure(typing, "xdotool type --delay 0 TEXT", iterations: few, warmup: 1) {
                try typed(xdotool, ["type", "--delay", "0", text], [:])
            }
        }
        for mode in modes {
            try report.measure(typing, "\(mode.name): xclaw type TEXT", iterations: few, warmup: 1) {
                try typed(own, ["type", text], mode.environment)
            }
        }

        // Perception on the scene's unchanged screen: warm runs after the untimed warm-up.
        // Clicking the dialog's label selects it (GTK redraws it and says so on the bus), so a tap changes the screen
        // the next tap sees. "Unchanged" taps are each preceded by an untimed snapshot that perceives that change;
        // the second section times taps back to back, each paying to read what the one before it changed.
        let tap = ["tap", "Save changes to the report?"]
        for mode in modes {
            try report.measure(
                "tap a label on an unchanged screen", "\(mode.name): xclaw tap \"Save changes to the report?\"",
                iterations: n
            ) {
                _ = try session.timedRun(own, ["snapshot"], environment: mode.environment)
                return try session.timedRun(own, tap, environment: mode.environment)
            }
        }
        try compare(
            "tap a label right after a tap changed it (the change is read first)",
            "tap \"Save changes to the report?\"", tap, peer: nil)
        try compare("snapshot of GTK, Qt and xterm windows", "snapshot", ["snapshot"], peer: nil)
        let shot = state.appendingPathComponent("shot.png").path
        try compare(
            "capture the screen to a PNG file", "capture -o FILE", ["capture", "-o", shot],
            peer: scrot.map { ($0, ["-o", shot]) }, output: shot)

        // The first command with no daemon running, default settings: it starts one (each sample in a state directory
        // of its own; the daemon stopped after it, untimed).
        var round = 0
        for (label, arguments) in [
            ("tap \"Save changes to the report?\"", tap), ("snapshot", ["snapshot"]),
            ("capture -o FILE", ["capture", "-o", shot]),
        ] {
            try report.measure(
                "the first command with no daemon running (it starts one)", "default: first xclaw \(label)",
                iterations: few, warmup: 0
            ) {
                round += 1
                let fresh: [String: String?] = [
                    "XCLAW_STATE_DIR": state.appendingPathComponent("first-\(round)").path, "XCLAW_DAEMON": "auto",
                    "XCLAW_NO_DAEMON": nil,
                ]
                defer {
                    _ = try? session.finish(session.start(core, ["daemon", "stop"], environment: fresh))
                }
                return try session.timedRun(
                    own, arguments, output: arguments.last == shot ? shot : nil, environment: fresh)
            }
        }

        report.notes.append(
            "every row times a whole process, start to exit, \(n) runs after 3 untimed (typing: \(few) after 1); "
                + "\"daemon\" rows hand the command to a running `xclaw daemon`, \"no daemon\" rows set "
                + "XCLAW_NO_DAEMON=1 (the front does plain input itself, or runs xclaw-core in-process); \"default\" "
                + "rows are what a user gets with no settings: the first command starts a daemon, the ones after it "
                + "are served by it; \"xclaw-core\" rows start the full binary directly, as every command did before "
                + "the front existed")
        for row in report.rows where (row.exactPercent ?? 100) < 100 {
            report.notes.append(row.name + ": only " + String(format: "%.2f", row.exactPercent ?? 0) + " % exact")
        }
        withExtendedLifetime(probe) {}
        return report
    }
}

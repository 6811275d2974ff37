import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen
import XclawTesting

/// `xclaw bench web`: the web view in a real headless Chromium: how soon an action on the screen shows in the page
/// (the new frame drawn, the action in the log), and the daemon's memory while a page stays open on a screen that
/// never stops changing.
struct BenchWeb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Benchmark the web view: action-to-page latency, and the daemon's memory with a page left open.",
        discussion: """
            Starts a private Xvfb, a daemon with --web and Debian's chromium (headless, over the DevTools protocol, \
            from a venv with PyPI's websockets). Latency: each sample clicks a window that changes colour with \
            `xclaw click` (handed to the daemon) and waits until the page has drawn the new frame and listed the \
            action; the time runs from just before the command starts. Memory: the screen page stays open while a \
            counter changes every 40 ms and a click lands each second; the daemon's RSS is read every 30 s.
            """)
    @Option(help: "Latency samples (default 20).") var samples = 20
    @Option(help: "Minutes the page stays open for the memory run (default 10; 0 skips it).") var minutes = 10.0
    @Option(help: "Screen size of the private Xvfb, WxH.") var size = "1920x1080"
    @Option(help: "A Python with the `websockets` package (default: a venv the bench and the tests make once).")
    var python: String?
    @Flag(help: "Print one JSON object with all rows.") var json = false

    /// The scripts the tests use, in the source tree.
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Tests/XclawCLITests/web").standardized

    func validate() throws {
        guard (1...1000).contains(samples) else { throw ValidationError("--samples is 1 to 1000") }
        guard minutes >= 0, minutes <= 24 * 60 else { throw ValidationError("--minutes is 0 to 1440") }
    }

    func run() throws {
        let size = try Size(parsing: self.size)
        let display = try TestDisplay(size: size)
        defer { display.stop() }
        guard let xclaw = xclawExecutable() else {
            throw ScreenError.invalidArgument("xclaw and xclaw-core must be built beside xclaw-bench")
        }
        let python = try self.python ?? PythonVenv.python("web-client", packages: ["websockets"])
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-web-\(getpid())")
        defer { try? FileManager.default.removeItem(at: state) }
        let daemon = try WebViewDaemon(state: state)
        defer { daemon.stop() }
        var report = BenchReport(benchmark: "web", display: display.name, screen: size)
        let common = ["--url", daemon.url, "--token", daemon.token, "--display", display.name, "--xclaw", xclaw]

        let latency = try script(
            "latency.py", common + ["-n", String(samples)], python: python, environment: daemon.environment,
            timeout: .seconds(600))
        let rows = latency["samples"] as? [[String: Any]] ?? []
        for (key, name) in [
            ("frame_ms", "the new frame drawn in the page"), ("action_ms", "the action listed in the page's log"),
        ] {
            let times = rows.compactMap { $0[key] as? Double }
            guard !times.isEmpty else { continue }
            report.rows.append(
                BenchRow(
                    "web view: `xclaw click` on a window that changes colour → Chromium", name,
                    times.map { Sample(elapsed: .microseconds(Int($0 * 1000))) }))
        }
        report.notes.append("target: a new action shows within 300 ms")

        if minutes > 0 {
            let soak = try script(
                "soak.py", common + ["--pid", String(daemon.pid), "--seconds", String(minutes * 60)], python: python,
                environment: daemon.environment, timeout: .seconds(Int(minutes * 60) + 300))
            let mb = { (key: String) in String(format: "%.1f MB", Double(soak[key] as? Int ?? 0) / 1_048_576) }
            let samples = soak["samples"] as? [[String: Any]] ?? []
            report.notes.append(
                "memory, the screen page open \(Self.format(minutes)) min on a screen changing every 40 ms "
                    + "(\(soak["frames"] as? Int ?? 0) frames drawn, a click a second): daemon RSS "
                    + "\(mb("rss_first_after_1min")) after 1 min, \(mb("rss_last")) at the end, "
                    + "\(mb("rss_max_after_1min")) at most; every 30 s: "
                    + samples.map { String(format: "%.1f", Double($0["rss_bytes"] as? Int ?? 0) / 1_048_576) }
                    .joined(separator: " "))
        }
        try emitBench(report, json: json) { report.table }
    }

    private static func format(_ minutes: Double) -> String {
        minutes == minutes.rounded() ? String(Int(minutes)) : String(minutes)
    }

    /// Runs one of the browser scripts and returns the JSON it printed.
    private func script(
        _ name: String, _ arguments: [String], python: String, environment: [String: String], timeout: Duration
    ) throws -> [String: Any] {
        let outcome = try Subprocess.run(
            [python, Self.scripts.appendingPathComponent(name).path] + arguments, timeout: timeout,
            environment: environment)
        guard outcome.ending == .exited(0),
            let result = try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any]
        else {
            throw ScreenError.invalidArgument(
                "\(name) ended \(outcome.ending): " + String(decoding: outcome.stderr.suffix(800), as: UTF8.self))
        }
        return result
    }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawMockAPI
import XclawScreen
import XclawTesting

/// `xclaw bench replay`: record once, replay without the model, on real apps. A ten-step task (xcalc: AC 1 2 + 3 4 =
/// by the keys' points; zenity: click its entry, type a name, OK) is run by the loopback model on a private
/// 1920x1080 Xvfb, then replayed with the model gone; then replayed after perturbations (windows moved, the screen
/// 1280x800, larger fonts), each with the share of steps replayed without the model and whether the apps ended right
/// (xcalc's display reads 46 by OCR, zenity printed the name).
struct BenchReplay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Record a 10-step xcalc + zenity task with the loopback model, replay it without the model, and "
            + "replay it after perturbations (windows moved, 1280x800, larger fonts, GDK_SCALE=2).")
    @Option(help: "Recordings (each followed by its replays); medians are reported.") var iterations = 3
    @Option(help: "Seconds each replayed step waits for its control (--timeout of xclaw replay).") var stepTimeout = 5.0
    @Flag(help: "Print one JSON object.") var json = false

    /// One way of running the task, over the iterations.
    struct Row: Codable {
        var name: String
        var runs: Int
        /// Median wall time of the whole `xclaw run` / `xclaw replay` process, in ms.
        var medianMs: Double
        var minMs: Double
        var maxMs: Double
        /// Median model requests and tokens (the loopback's usage, estimated as the real API would count them).
        var requests: Int
        var inputTokens: Int
        var outputTokens: Int
        /// Steps replayed without the model, over all runs, in percent (nil for the recording).
        var replayedPercent: Double?
        /// Runs whose apps ended right (xcalc 46, zenity printed the name).
        var right: Int
        /// Median ms of the run's actions themselves (each with its settling), from its recorded steps.
        var actionsMs: Double?
        /// The recording's phases, measured at the loopback server: process start to the first request, and a turn
        /// (one request to the next: the loopback's answer, the action and its settling, the recording's snapshots,
        /// the loop), medians; and one action with its settling, median.
        var firstRequestMs: Double?
        var turnMs: Double?
        var stepMs: Double?
        var notes: [String]
    }

    func validate() throws {
        if iterations < 1 { throw ValidationError("--iterations must be at least 1") }
        guard stepTimeout > 0, stepTimeout <= 60 else { throw ValidationError("--step-timeout takes 0 to 60 s") }
    }

    /// What one run or replay did.
    struct Sample {
        var ms: Double
        var requests = 0
        var input = 0
        var output = 0
        var steps = 0
        var replayed = 0
        var right = false
        var actionsMs: Double?
        var firstRequestMs: Double?
        var turnMs: Double?
        var stepMs: Double?
        var note: String?
    }

    func run() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-replay-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
        try "approval = none\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        let base = [
            "HOME": dir.path, "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XCLAW_STATE_DIR": dir.appendingPathComponent("xclaw-state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path, "XCLAW_NO_DAEMON": "1",
        ]
        let kinds = [
            "record (loopback model)", "replay", "replay, windows moved", "replay, screen 1280x800",
            "replay, larger fonts (xcalc 10x20, zenity GDK_DPI_SCALE=1.5)",
            "replay, xcalc 10x20 and zenity at GDK_SCALE=2",
        ]
        var samples = [[Sample]](repeating: [], count: kinds.count)
        for iteration in 0..<iterations {
            let display = try TestDisplay(size: Size(width: 1920, height: 1080), accessibility: true)
            defer { display.stop() }
            var env = base.merging(display.environment) { $1 }
            let file = dir.appendingPathComponent("task-\(iteration).json").path
            samples[0].append(try record(on: display, env: &env, script: file))
            env["ANTHROPIC_BASE_URL"] = nil
            env["ANTHROPIC_API_KEY"] = nil
            samples[1].append(try replay(file, on: display, env: env))
            samples[2].append(
                try replay(
                    file, on: display, env: env, calculatorAt: Point(x: 1300, y: 500), dialogAt: Point(x: 200, y: 700)))
            do {
                let small = try TestDisplay(size: Size(width: 1280, height: 800), accessibility: true)
                defer { small.stop() }
                samples[3].append(try replay(file, on: small, env: base.merging(small.environment) { $1 }))
            }
            samples[4].append(
                try replay(
                    file, on: display, env: env, xcalcArguments: ["-xrm", "XCalc*Font: 10x20"],
                    dialogEnvironment: ["GDK_DPI_SCALE": "1.5"]))
            samples[5].append(
                try replay(
                    file, on: display, env: env, xcalcArguments: ["-xrm", "XCalc*Font: 10x20"],
                    dialogEnvironment: ["GDK_SCALE": "2"]))
        }
        let rows = zip(kinds, samples).map { Self.row($0, $1, recording: $0 == kinds[0]) }
        try emitBench(rows, json: json) {
            var lines = [
                "what                                                          runs  median ms  (min–max)        requests  "
                    + "tokens in/out   without model  right"
            ]
            for r in rows {
                lines.append(
                    r.name.padding(toLength: 62, withPad: " ", startingAt: 0)
                        + String(
                            format: "%4d %10.0f  (%6.0f–%6.0f) %9d  %7d/%-6d ", r.runs, r.medianMs, r.minMs,
                            r.maxMs, r.requests, r.inputTokens, r.outputTokens)
                        + (r.replayedPercent.map { String(format: "%.1f %%", $0) } ?? "—").padding(
                            toLength: 14, withPad: " ", startingAt: 0)
                        + " \(r.right)/\(r.runs)")
            }
            if let first = rows.first, let actions = first.actionsMs, let startUp = first.firstRequestMs,
                let turn = first.turnMs, let step = first.stepMs
            {
                lines.append(
                    String(
                        format: "the recorded run (medians): %.0f ms of its %.0f ms were its 10 actions with their "
                            + "settling; start to the first request %.0f ms; a turn (one request to the next: the "
                            + "loopback's answer, one action with its settling, the recording's snapshots, the loop) "
                            + "%.0f ms, of which the action %.0f ms. The loopback model's own time is in the turn's "
                            + "rest; a real model adds its latency to each of the %d requests",
                        actions, first.medianMs, startUp, turn, step, first.requests))
            }
            for r in rows where !r.notes.isEmpty {
                lines.append("\(r.name): " + Array(Set(r.notes)).sorted().joined(separator: "; "))
            }
            return lines.joined(separator: "\n")
        }
    }

    /// The median of `values`, nil when there are none.
    static func median(_ values: [Double]) -> Double? {
        let s = values.sorted()
        return s.isEmpty ? nil : s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// Medians of one kind's samples.
    static func row(_ name: String, _ samples: [Sample], recording: Bool) -> Row {
        func median(_ values: [Double]) -> Double {
            let s = values.sorted()
            return s.isEmpty ? 0 : s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        }
        func medianInt(_ values: [Int]) -> Int { Int(median(values.map(Double.init)).rounded()) }
        let ms = samples.map(\.ms)
        let steps = samples.map(\.steps).reduce(0, +)
        return Row(
            name: name, runs: samples.count, medianMs: median(ms).rounded(), minMs: ms.min() ?? 0,
            maxMs: ms.max() ?? 0, requests: medianInt(samples.map(\.requests)),
            inputTokens: medianInt(samples.map(\.input)), outputTokens: medianInt(samples.map(\.output)),
            replayedPercent: recording || steps == 0
                ? nil : (Double(samples.map(\.replayed).reduce(0, +)) * 1000 / Double(steps)).rounded() / 10,
            right: samples.filter(\.right).count,
            actionsMs: recording ? median(samples.compactMap(\.actionsMs)).rounded() : nil,
            firstRequestMs: recording ? median(samples.compactMap(\.firstRequestMs)).rounded() : nil,
            turnMs: recording ? median(samples.compactMap(\.turnMs)).rounded() : nil,
            stepMs: recording ? median(samples.compactMap(\.stepMs)).rounded() : nil,
            // Without the refs (e12), which differ from run to run, so the same reason is said once.
            notes: samples.compactMap(\.note).map {
                $0.replacingOccurrences(of: #"\be[0-9]+ "#, with: "", options: .regularExpression)
            })
    }

    /// The run with the loopback model: its wall time, requests, estimated tokens; the script exported to `script`.
    private func record(on display: TestDisplay, env: inout [String: String], script: String) throws -> Sample {
        let apps = try ReplayApps(display: display.name, environment: display.environment)
        defer { apps.stop() }
        // The run uses the default model (Sonnet 5), which sees the screen whole.
        let geometry = try ScreenGeometry(screen: display.connect().screenSize(), sizing: .highRes)
        let actions = try apps.actions(geometry: geometry, environment: env)
        let server = try MockMessagesServer { request, index in
            let input = Self.estimatedInputTokens(request.body)
            guard index < actions.count else {
                return .stream(.turn(blocks: [.text("Done.")], usage: MockUsage(input: input, output: 10)))
            }
            return .stream(
                .turn(
                    blocks: [.toolUse(id: "toolu_\(index + 1)", name: "computer", input: actions[index])],
                    stopReason: "tool_use", usage: MockUsage(input: input, output: 20 + actions[index].count / 3)))
        }
        defer { server.stop() }
        env["ANTHROPIC_BASE_URL"] = server.baseURL
        env["ANTHROPIC_API_KEY"] = "sk-" + "ant-bench-replay"
        let start = ContinuousClock.now
        let started = Date()
        let ran = try ReplayApps.xclaw(
            ["run", ReplayApps.prompt, "--display", display.name, "--tools", "computer", "--json"], environment: env,
            timeout: 300)
        var sample = Sample(ms: (ContinuousClock.now - start).milliseconds)
        guard ran.status == 0 else {
            throw ValidationError("the recorded run failed (\(ran.status)): \(ran.stderr.suffix(400))")
        }
        sample.requests = server.requests.count
        let arrivals = server.requests.map(\.receivedAt)
        if let first = arrivals.first {
            sample.firstRequestMs = first.timeIntervalSince(started) * 1000
            sample.turnMs = Self.median(zip(arrivals.dropFirst(), arrivals).map { $0.timeIntervalSince($1) * 1000 })
        }
        if let summary = try? JSONSerialization.jsonObject(with: Data(ran.stdout.utf8)) as? [String: Any],
            let usage = summary["usage"] as? [String: Any]
        {
            sample.input =
                ((usage["inputTokens"] ?? usage["input_tokens"]) as? Int ?? 0)
                + ((usage["cacheReadInputTokens"] ?? usage["cache_read_input_tokens"]) as? Int ?? 0)
            sample.output = (usage["outputTokens"] ?? usage["output_tokens"]) as? Int ?? 0
        }
        let answer = apps.dialogAnswer()
        sample.right =
            apps.calculatorShows(ReplayApps.sum, environment: env) && answer.status == 0
            && answer.text == ReplayApps.name
        if !sample.right { sample.note = "the recorded run did not end right (dialog: \(answer.text))" }
        let runs = try ReplayApps.xclaw(["runs", "--json"], environment: env, timeout: 30)
        guard let list = try? JSONSerialization.jsonObject(with: Data(runs.stdout.utf8)) as? [[String: Any]],
            let id = list.last?["id"] as? Int
        else { throw ValidationError("no run to export: \(runs.stderr)") }
        let exported = try ReplayApps.xclaw(["script", "export", "\(id)", "-o", script], environment: env, timeout: 30)
        guard exported.status == 0 else { throw ValidationError("export failed: \(exported.stderr)") }
        if let data = FileManager.default.contents(atPath: script),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let steps = json["steps"] as? [[String: Any]]
        {
            sample.steps = steps.count
            sample.actionsMs = steps.compactMap { $0["ms"] as? Double }.reduce(0, +)
            sample.stepMs = Self.median(steps.compactMap { $0["ms"] as? Double })
        }
        return sample
    }

    /// The script replayed on fresh apps (placed, fonted and scaled as asked): wall time, share replayed, result.
    private func replay(
        _ script: String, on display: TestDisplay, env: [String: String], calculatorAt: Point = Point(x: 100, y: 100),
        dialogAt: Point? = nil, xcalcArguments: [String] = [], dialogEnvironment: [String: String] = [:]
    ) throws -> Sample {
        let apps = try ReplayApps(
            display: display.name, environment: display.environment, calculatorAt: calculatorAt, dialogAt: dialogAt,
            xcalcArguments: xcalcArguments, dialogEnvironment: dialogEnvironment)
        defer { apps.stop() }
        let start = ContinuousClock.now
        let replayed = try ReplayApps.xclaw(
            [
                "replay", script, "--display", display.name, "--heal", "never", "--timeout", "\(stepTimeout)",
                "--json",
            ], environment: env, timeout: 30 + 12 * stepTimeout)
        var sample = Sample(ms: (ContinuousClock.now - start).milliseconds)
        guard let outcome = try? JSONSerialization.jsonObject(with: Data(replayed.stdout.utf8)) as? [String: Any]
        else {
            sample.note = "no outcome (exit \(replayed.status)): \(replayed.stderr.suffix(300))"
            return sample
        }
        sample.steps = outcome["steps"] as? Int ?? 0
        sample.replayed = outcome["replayed"] as? Int ?? 0
        sample.requests = outcome["model_requests"] as? Int ?? 0
        let calculator = apps.calculatorShows(ReplayApps.sum, environment: env)
        let answer = apps.dialogAnswer(timeout: 3)
        sample.right = calculator && answer.status == 0 && answer.text == ReplayApps.name
        if let step = outcome["diverged_step"] as? Int {
            sample.note = "stopped at step \(step): \(outcome["reason"] as? String ?? "")"
        } else if !sample.right {
            sample.note =
                "replayed, but " + (calculator ? "" : "xcalc does not read 46 ")
                + (answer.text == ReplayApps.name ? "" : "zenity printed \"\(answer.text)\"")
        }
        return sample
    }

    /// The input tokens the Messages API would count for a request: its text at about 4 characters a token, and
    /// each image at width × height / 750 (Anthropic's formula), the images' sizes read from their PNG headers.
    static func estimatedInputTokens(_ body: Data) -> Int {
        guard let json = try? JSONSerialization.jsonObject(with: body) else { return body.count / 4 }
        var characters = 0
        var imageTokens = 0
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                if object["type"] as? String == "image", let source = object["source"] as? [String: Any],
                    let data = source["data"] as? String, let (width, height) = PNGHeader.size(base64: data)
                {
                    imageTokens += width * height / 750
                    return
                }
                for (key, inner) in object {
                    characters += key.count
                    walk(inner)
                }
            } else if let array = value as? [Any] {
                array.forEach(walk)
            } else if let text = value as? String {
                characters += text.count
            }
        }
        walk(json)
        return characters / 4 + imageTokens
    }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawMockAPI
import XclawScreen
import XclawTesting

/// `xclaw bench batch`: what `computer_batch` saves on a form-filling task. The loopback model fills a three-field
/// form (click the first field, type, Tab, type, Tab, type, Return) one `computer` action a turn, then the same seven
/// actions in one `computer_batch` call; both through `xclaw run` on a private 1920x1080 Xvfb. Reported: model
/// requests, input tokens as the API would count them (text at ~4 characters a token, images at w·h/750), wall time,
/// and whether the form received exactly the text.
struct BenchBatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Fill a three-field form with the loopback model one action a turn, then in one computer_batch call.")
    @Option(help: "Runs of each way; medians are reported.") var iterations = 5
    @Flag(help: "Print one JSON object.") var json = false

    /// One way of filling the form, over the runs.
    struct Row: Codable {
        var name: String
        var runs: Int
        var requests: Int
        var inputTokens: Int
        var medianMs: Double
        var right: Int
    }

    func validate() throws {
        if iterations < 1 { throw ValidationError("--iterations must be at least 1") }
    }

    func run() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-batch-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
        try "approval = none\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        let display = try TestDisplay(size: Size(width: 1920, height: 1080))
        defer { display.stop() }
        let frame = Rect(x: 300, y: 200, width: 900, height: 500)
        // The default model (Sonnet 5) sees the screen whole: model coordinates are screen coordinates.
        let geometry = ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: .highRes)
        let field = geometry.toModel(Point(x: frame.x + 200, y: frame.y + 100))
        let typed = ["Ada", "Lovelace", "ada@example.com"]
        let actions: [String] = [
            "{\"action\": \"left_click\", \"coordinate\": [\(field.x), \(field.y)]}",
            "{\"action\": \"type\", \"text\": \"\(typed[0])\"}", "{\"action\": \"key\", \"text\": \"Tab\"}",
            "{\"action\": \"type\", \"text\": \"\(typed[1])\"}", "{\"action\": \"key\", \"text\": \"Tab\"}",
            "{\"action\": \"type\", \"text\": \"\(typed[2])\"}", "{\"action\": \"key\", \"text\": \"Return\"}",
        ]
        let expected = typed.joined(separator: "\t") + "\n"
        var rows: [Row] = []
        for batched in [false, true] {
            var samples: [(requests: Int, tokens: Int, ms: Double, right: Bool)] = []
            for run in 0..<iterations {
                let fixture = try Fixture(display: display.name, title: "form", frame: frame)
                defer { fixture.stop() }
                Thread.sleep(forTimeInterval: 0.2)
                let turns: [(name: String, input: String)] =
                    batched
                    ? [("computer_batch", "{\"actions\": [" + actions.joined(separator: ", ") + "]}")]
                    : actions.map { ("computer", $0) }
                let server = try MockMessagesServer { request, index in
                    let input = BenchReplay.estimatedInputTokens(request.body)
                    guard index < turns.count else {
                        return .stream(.turn(blocks: [.text("Filled.")], usage: MockUsage(input: input, output: 10)))
                    }
                    return .stream(
                        .turn(
                            blocks: [
                                .toolUse(id: "toolu_\(index + 1)", name: turns[index].name, input: turns[index].input)
                            ],
                            stopReason: "tool_use",
                            usage: MockUsage(input: input, output: 20 + turns[index].input.count / 3)))
                }
                defer { server.stop() }
                let env = [
                    "HOME": dir.path, "XCLAW_DB": dir.appendingPathComponent("db-\(batched)-\(run).sqlite").path,
                    "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
                    "XCLAW_STATE_DIR": dir.appendingPathComponent("xclaw-state").path,
                    "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path, "XCLAW_NO_DAEMON": "1",
                    "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-bench-batch",
                ].merging(display.environment) { $1 }
                let start = ContinuousClock.now
                let ran = try ReplayApps.xclaw(
                    [
                        "run", "Fill in the form: Ada, Lovelace, ada@example.com", "--display", display.name,
                        "--tools", "computer,computer_batch",
                    ], environment: env, timeout: 120)
                let ms = (ContinuousClock.now - start).milliseconds
                guard ran.status == 0 else {
                    throw ValidationError("the run failed (\(ran.status)): \(ran.stderr.suffix(400))")
                }
                let got = fixture.typed(count: expected.unicodeScalars.count)
                let tokens = server.requests.map { BenchReplay.estimatedInputTokens($0.body) }.reduce(0, +)
                samples.append((server.requests.count, tokens, ms, got == expected))
            }
            func median(_ v: [Double]) -> Double { BenchReplay.median(v) ?? 0 }
            rows.append(
                Row(
                    name: batched ? "one computer_batch call" : "one computer action a turn", runs: samples.count,
                    requests: Int(median(samples.map { Double($0.requests) })),
                    inputTokens: Int(median(samples.map { Double($0.tokens) })),
                    medianMs: median(samples.map(\.ms)), right: samples.filter(\.right).count))
        }
        try emitBench(rows, json: json) {
            var lines = ["way                            runs  requests  input tokens  median ms  form right"]
            for r in rows {
                lines.append(
                    r.name.padding(toLength: 30, withPad: " ", startingAt: 0)
                        + String(
                            format: " %4d %9d %13d %10.0f  %d/%d", r.runs, r.requests, r.inputTokens, r.medianMs,
                            r.right, r.runs))
            }
            if rows.count == 2, rows[0].inputTokens > 0 {
                lines.append(
                    String(
                        format: "computer_batch: %d fewer requests, %.0f %% fewer input tokens",
                        rows[0].requests - rows[1].requests,
                        100 * (1 - Double(rows[1].inputTokens) / Double(rows[0].inputTokens))))
            }
            return lines.joined(separator: "\n")
        }
    }
}

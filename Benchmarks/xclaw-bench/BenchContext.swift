import ArgumentParser
import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawClient
import XclawCommandLine
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawStore

/// `xclaw bench context`: a long-lived agent's requests over 500 turns. The loopback model looks at the screen every
/// turn (a tool that returns 1.5 KB of text and a 1456x819 PNG screenshot) for 500 turns, through the real client and
/// loop, with the server's compaction (Claude Sonnet 5), xclaw's summary (Claude Haiku 4.5), and neither; the
/// loopback API counts input tokens from each request (text at 4 characters a token, images at pixels / 750) and
/// compacts as the API does. Every message is stored in a fresh store, as a long-lived agent's are. Reported per
/// way: requests, the request bytes and input tokens of the first, the largest and the last request, the images a
/// request carried at most, compactions or summaries, and the store's size with its screenshot rows.
struct BenchContext: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "context",
        abstract: "500 turns of a scripted long-lived agent: request size and tokens with compaction, summary, neither."
    )
    @Option(help: "Turns (model requests that call the tool).") var turns = 500
    @Option(help: "Input tokens at which to compact or summarise (the API's minimum for compaction is 50000).")
    var trigger = 150_000
    @Flag(help: "Print one JSON object.") var json = false

    /// One way, over the whole conversation.
    struct Row: Codable {
        var way: String
        var model: String
        var requests: Int
        var firstBytes: Int
        var maxBytes: Int
        var lastBytes: Int
        var firstTokens: Int
        var maxTokens: Int
        var lastTokens: Int
        var maxImages: Int
        var contextEvents: Int
        var storeBytes: Int
        var storedImages: Int
        var seconds: Double
    }

    func validate() throws {
        if turns < 1 || turns > 5_000 { throw ValidationError("--turns must be 1 to 5000") }
        if trigger < 50_000 { throw ValidationError("--trigger must be at least 50000 (the API's minimum)") }
    }

    /// A tool that returns what a look at the screen returns: OCR-like text and a screenshot.
    struct LookTool: AgentTool {
        let name = "look"
        let description = "Looks at the screen."
        let inputSchema: JSONValue = ["type": "object", "properties": ["turn": ["type": "integer"]]]
        let screenshots: [String]

        func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
            let turn = input["turn"]?.int ?? 0
            let text = (0..<30).map { "line \($0) of window text on turn \(turn): Status ready, 42 items" }
                .joined(separator: "\n")
            return ToolOutput(content: [
                .text(text), .image(mediaType: "image/png", base64: screenshots[turn % screenshots.count]),
            ])
        }
    }

    /// Screenshots of a 1456x819 desktop: a few windows and text-like stripes, a different one each turn of four.
    static func screenshots() throws -> [String] {
        try (0..<4).map { variant in
            let (w, h) = (1456, 819)
            var pixels = [UInt8](repeating: 0, count: w * h * 4)
            var rng = SplitMix64(seed: UInt64(variant + 1))
            for y in 0..<h {
                for x in 0..<w {
                    let i = (y * w + x) * 4
                    let window = (x / 360 + y / 270 + variant) % 3
                    let base: UInt8 = window == 0 ? 235 : window == 1 ? 250 : 60
                    // Text-like stripes: every 18th row band carries short runs of dark pixels.
                    let ink = y % 18 < 10 && (x / 7 + y / 18) % 5 != 0 && rng.next() % 3 == 0
                    let v = ink ? 30 : base
                    (pixels[i], pixels[i + 1], pixels[i + 2]) = (v, v, v &+ UInt8(variant * 5))
                }
            }
            let frame = try Frame(width: w, height: h, bgrx: pixels)
            return Data(try PNG.encode(frame)).base64EncodedString()
        }
    }

    func run() throws {
        let shots = try Self.screenshots()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-context-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let catalog = try ModelCatalog.load(overlay: "/nonexistent", environment: ["XDG_STATE_HOME": "/nonexistent"])
        let ways: [(String, String, ContextPolicy)] = [
            ("server compaction", "claude-sonnet-5", .server(trigger: trigger)),
            ("xclaw summary", "claude-haiku-4-5", .summary(trigger: trigger)),
            ("neither", "claude-sonnet-5", .off),
        ]
        var rows: [Row] = []
        for (way, modelID, policy) in ways {
            let turns = self.turns
            let server = try MockMessagesServer { request, index in
                let body = String(decoding: request.body, as: UTF8.self)
                if body.contains("Summarise the conversation so far") {
                    return .text(String(repeating: "Notes on the work so far. ", count: 80))
                }
                guard index < turns * 2 else { return .text("Done.") }
                return .stream(
                    .turn(
                        blocks: [
                            .text("Looking again."),
                            .toolUse(id: "toolu_\(index)", name: "look", input: "{\"turn\": \(index)}"),
                        ], stopReason: "tool_use"))
            }
            defer { server.stop() }
            server.rules = MockRules(compaction: true, countTokens: true)
            let client = ClaudeClient(
                configuration: ClientConfiguration(
                    baseURL: server.baseURL, apiKey: APIKey("sk-" + "ant-bench-context"), maxRetries: 0))
            var options = RunOptions(
                model: try catalog.model(modelID), system: "You watch a screen.", maxSteps: turns)
            options.context = policy
            let store = try AgentStore(path: dir.appendingPathComponent("\(modelID)-\(way.count).sqlite").path)
            try store.createAgent(AgentConfig(name: "watcher", model: modelID, tools: ["look"]))
            try store.appendMessage(agent: "watcher", role: .user, content: [.text("Watch the screen.")])
            let stepLog = Mutex<[StepReport]>([])
            let observer = RunObserver(
                stepFinished: { step in stepLog.withLock { $0.append(step) } },
                appended: { message in
                    _ = try? store.appendMessage(agent: "watcher", role: message.role, content: message.content)
                },
                summarised: { summary in
                    _ = try? store.appendMessage(
                        agent: "watcher", role: .user, content: [.text(summary)], sender: "xclaw:summary")
                })
            let started = ContinuousClock.now
            let runner = AgentRunner(
                client: client, registry: ToolRegistry([LookTool(screenshots: shots)]), options: options)
            let result = try Blocking.wait {
                await runner.run(task: "Watch the screen.", context: ToolContext(), observer: observer)
            }
            let seconds = Double((ContinuousClock.now - started).milliseconds) / 1000
            if case .failed(let why) = result.outcome { throw ValidationError("\(way): the run failed: \(why)") }
            let posts = server.requests.filter { $0.method == "POST" }
            let sizes = posts.map(\.body.count)
            let tokens = posts.map { MockRules.inputTokens($0.object ?? [:]) }
            let steps = stepLog.withLock { $0 }
            let file = try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int ?? 0
            let wal = (try? FileManager.default.attributesOfItem(atPath: store.path + "-wal")[.size] as? Int) ?? 0
            rows.append(
                Row(
                    way: way, model: modelID, requests: posts.count, firstBytes: sizes.first ?? 0,
                    maxBytes: sizes.max() ?? 0, lastBytes: sizes.last ?? 0, firstTokens: tokens.first ?? 0,
                    maxTokens: tokens.max() ?? 0, lastTokens: tokens.last ?? 0,
                    maxImages: steps.map(\.images).max() ?? 0,
                    contextEvents: steps.filter { $0.context != nil }.count, storeBytes: file + wal,
                    storedImages: try store.imageTotals().count, seconds: seconds))
        }
        try emitBench(rows, json: json) {
            var lines = [
                "\(turns) turns, each a screenshot (1456x819 PNG, \((shots.map(\.count).max() ?? 0) / 1024) KB of base64) "
                    + "and 1.5 KB of text; trigger \(trigger) input tokens",
                "way                model              requests  bytes first/max/last         tokens first/max/last   "
                    + "images  events  store MB (screenshot rows)",
            ]
            for r in rows {
                lines.append(
                    r.way.padding(toLength: 18, withPad: " ", startingAt: 0) + " "
                        + r.model.padding(toLength: 18, withPad: " ", startingAt: 0)
                        + String(
                            format: " %8d  %7d/%8d/%8d  %7d/%7d/%7d  %6d  %6d  %.1f (%d)", r.requests, r.firstBytes,
                            r.maxBytes, r.lastBytes, r.firstTokens, r.maxTokens, r.lastTokens, r.maxImages,
                            r.contextEvents, Double(r.storeBytes) / 1_048_576, r.storedImages))
            }
            return lines.joined(separator: "\n")
        }
    }
}

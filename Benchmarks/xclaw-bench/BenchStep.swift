import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawCommandLine
import XclawMessages
import XclawScreen
import XclawSkills
import XclawStore

/// `xclaw bench step`: the time xclaw adds to each agent step — action, settle, screenshot scaled and encoded,
/// request body built — without the model's time, beside the reference demo's way (xdotool, a fixed 2 s sleep,
/// scrot) measured in the same run.
struct BenchStep: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "step",
        abstract: "Benchmark the per-step overhead of the agent loop (action → settled screenshot → request body).")
    @OptionGroup var options: BenchOptions
    @Option(help: "Runs of the reference demo's step (each sleeps 2 s).") var peerRuns = 3

    func run() throws { try runBench(options, bench) }

    private func bench(_ bench: BenchSession) throws -> BenchReport {
        let connection = try DisplayConnection(name: bench.name)
        let screen = try connection.screenSize()
        var report = BenchReport(benchmark: "step", display: bench.name, screen: screen)
        let probe = try startDesktop(bench, screen, report: &report)

        let session = try ScreenSession(connection: connection)
        let geometry = session.geometry
        let computer = ComputerTool(session: session, version: .v20251124)
        let frame = probeFrame(screen)
        // A click on the probe's yellow block: the probe records it and repaints nothing, so the screen is static
        // and what is measured is xclaw's own work, not an app's.
        let target = geometry.toModel(Point(x: frame.x + frame.width * 7 / 12, y: frame.y + frame.height * 2 / 3))
        let clock = ContinuousClock()
        let context = ToolContext(isCancelled: { false })
        let section = "per step, in process"
        let few = options.expensive

        // A conversation like a run's: the task, then steps each answered with a screenshot.
        let shot = try session.screenshot()
        var history: [Message] = [.user("Open the settings and turn on dark mode.")]
        for i in 0..<8 {
            history.append(
                Message(
                    role: .assistant,
                    content: [
                        .text("Step \(i): clicking."),
                        .toolUse(
                            id: "toolu_\(i)", name: "computer",
                            input: ["action": "left_click", "coordinate": [.int(target.x), .int(target.y)]]),
                    ]))
            history.append(
                Message(
                    role: .user,
                    content: [
                        .toolResult(
                            ToolResultBlock(
                                toolUseID: "toolu_\(i)",
                                content: [shot.imageBlock]))
                    ]))
        }
        ImagePruner.prune(&history, keep: 3, chunk: 1)
        let model = try ModelCatalog.load().model("claude-sonnet-4-6")
        let tools = try SkillCatalog.tools(
            named: SkillCatalog.defaultToolNames, session: session,
            computerVersion: .v20251124)
        let registry = ToolRegistry(tools)
        func body(_ messages: [Message]) -> Data {
            MessagesRequest(
                model: model.id, maxTokens: 4096, system: "system prompt", messages: messages,
                tools: registry.definitions, betas: [model.beta],
                cache: AgentRunner.cachePlan(messages)
            ).bodyData
        }

        let quietMs = session.settler.quiet.milliseconds
        try report.measure(
            section, "settle (static screen: \(Int(quietMs)) ms quiet)",
            iterations: few
        ) {
            Sample(elapsed: try clock.measure { _ = try session.settle() })
        }
        try report.measure(section, "screenshot: scale to \(geometry.model) + PNG + base64", iterations: few) {
            let f = try session.capturer.capture()
            var bytes = 0
            let elapsed = try clock.measure { bytes = try session.encodeForModel(f).base64.utf8.count }
            return Sample(elapsed: elapsed, bytes: bytes)
        }
        try report.measure(section, "screenshot: scale to \(geometry.model) + JPEG q80 + base64", iterations: few) {
            let f = try session.capturer.capture()
            var bytes = 0
            let elapsed = try clock.measure {
                bytes = try session.encodeForModel(f, as: .jpeg(quality: 80)).base64.utf8.count
            }
            return Sample(elapsed: elapsed, bytes: bytes)
        }
        try report.measure(section, "request body (3 screenshots, \(history.count) messages)", iterations: few) {
            var size = 0
            let elapsed = clock.measure { size = body(history).count }
            return Sample(elapsed: elapsed, bytes: size)
        }
        try report.measure(section, "computer left_click → settled screenshot → request body", iterations: few) {
            var size = 0
            let elapsed = try clock.measure {
                let output = try Blocking.wait {
                    try await computer.execute(
                        ["action": "left_click", "coordinate": [.int(target.x), .int(target.y)]],
                        context: context)
                }
                var messages = history
                messages.append(
                    Message(
                        role: .assistant,
                        content: [
                            .toolUse(
                                id: "toolu_x", name: "computer",
                                input: ["action": "left_click"])
                        ]))
                messages.append(
                    Message(
                        role: .user,
                        content: [
                            .toolResult(
                                ToolResultBlock(
                                    toolUseID: "toolu_x",
                                    content: output.content))
                        ]))
                ImagePruner.prune(&messages, keep: 3, chunk: 3)
                size = body(messages).count
            }
            return Sample(elapsed: elapsed, bytes: size)
        }
        try drain(probe)

        // What a run adds to each action: the frame the report shows (kept with every run: one capture, or the
        // recording's, encoded beside the action) and the replay recording (`record = off` turns it off), both
        // written to a real SQLite store as a run writes them.
        let storeDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-bench-step-\(getpid())")
        defer { try? FileManager.default.removeItem(at: storeDirectory) }
        let store = try AgentStore(path: storeDirectory.appendingPathComponent("db.sqlite").path)
        try store.createAgent(AgentConfig(name: "bench", model: model.id))
        let run = try store.startSession(agent: "bench", kind: .run)
        let calls = BenchCalls()
        let sink = BenchFrames(store: store, session: run)
        func runContext(frames: Bool, recording: Bool) -> ToolContext {
            var context = context
            context.callID = calls.next()
            if frames { context.frames = sink }
            if recording {
                context.recordStep = { step in
                    let json = (try? JSONEncoder().encode(step)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                    try? store.recordActionStep(session: run, seq: calls.count, json: json)
                }
            }
            return context
        }
        let tap: JSONValue = [
            "x": .number(Double(geometry.toScreen(target).x) / Double(screen.width)),
            "y": .number(Double(geometry.toScreen(target).y) / Double(screen.height)),
        ]
        // tap_xy on a session of its own that never sends a screenshot, as in a run that only taps: each frame is
        // encoded, not the last screenshot's image reused.
        let tapXY = TapXYTool(session: try ScreenSession(connection: DisplayConnection(name: bench.name)))
        for (frames, recording, what) in [
            (false, false, "neither (before)"), (true, false, "the frame kept"),
            (false, true, "the recording (before, default)"), (true, true, "the recording and the frame (default)"),
        ] {
            // The frames are encoded and stored after each timed call (as a run does while the model thinks), so
            // the next call does not share the cores with them.
            try report.measure(section, "computer left_click → settled screenshot, with \(what)", iterations: few) {
                let context = runContext(frames: frames, recording: recording)
                defer { sink.flush() }
                return Sample(
                    elapsed: try clock.measure {
                        _ = try Blocking.wait {
                            try await computer.execute(
                                ["action": "left_click", "coordinate": [.int(target.x), .int(target.y)]],
                                context: context)
                        }
                    })
            }
            try report.measure(section, "tap_xy → settled (no screenshot), with \(what)", iterations: few) {
                let context = runContext(frames: frames, recording: recording)
                defer { sink.flush() }
                return Sample(
                    elapsed: try clock.measure {
                        _ = try Blocking.wait { try await tapXY.execute(tap, context: context) }
                    })
            }
        }
        try drain(probe)
        sink.flush()
        let (kept, bytes) = try store.imageTotals()
        report.notes.append(
            "frames kept: \(kept) distinct image(s), \(bytes / 1024) KB in the store; an unchanged screen is one "
                + "image, and the computer tool's frame is the screenshot it just sent")

        // The reference demo: xdotool for the action, a fixed 2 s sleep, scrot for the screenshot, base64.
        let peers = ["/usr/bin/xdotool", "/usr/bin/scrot"]
        if peers.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) {
            let screenPoint = geometry.toScreen(target)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-step-\(getpid()).png")
                .path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let script =
                "xdotool mousemove \(screenPoint.x) \(screenPoint.y) click 1 && sleep 2 && "
                + "scrot -o \(file) && base64 -w0 \(file) >/dev/null"
            try report.measure(
                "reference demo's way (same display, same run)",
                "xdotool click + sleep 2 s + scrot + base64", iterations: max(1, peerRuns), warmup: 0
            ) {
                try bench.timedRun("/bin/sh", ["-c", script], output: file)
            }
            report.notes.append("the reference demo also shells out to ImageMagick to scale; not counted here")
        } else {
            report.notes.append("xdotool/scrot not installed (scripts/install-deps.sh --bench): no peer row")
        }
        let tokens = geometry.model.width * geometry.model.height / 750
        report.notes.append(
            "tokens per screenshot at \(geometry.model): \(geometry.model.width)·\(geometry.model.height)/750 "
                + "≈ \(tokens); a step adds one screenshot (\(shot.base64.utf8.count / 1024) KB base64) to the request, "
                + "and pruning keeps 3–5 in it")
        return report
    }
}

/// A fresh tool_use id for each measured call, so each keeps its own frame.
private final class BenchCalls: Sendable {
    private let value = Mutex(0)
    /// The next id.
    func next() -> String { "toolu_bench_\(value.withLock { $0 += 1; return $0 })" }
    /// Ids given so far.
    var count: Int { value.withLock { $0 } }
}

/// A run's frame sink over a real store, as the runtime's keeper writes it: encoded and stored on a queue of its own,
/// off the action's path.
private final class BenchFrames: ActionFrameSink {
    let store: AgentStore
    let session: Int64
    private let queue = DispatchQueue(label: "xclaw.bench.frames")

    init(store: AgentStore, session: Int64) { (self.store, self.session) = (store, session) }

    func wants(call id: String) -> Bool { true }

    func keep(call id: String, image: @escaping @Sendable () throws -> (mediaType: String, data: Data)) {
        let (store, session) = (self.store, self.session)
        queue.async {
            guard let encoded = try? image() else { return }
            try? store.recordActionFrame(session: session, call: id, mediaType: encoded.mediaType, data: encoded.data)
        }
    }

    /// Waits until every frame handed over is stored (a run does it while the model thinks).
    func flush() { queue.sync {} }
}

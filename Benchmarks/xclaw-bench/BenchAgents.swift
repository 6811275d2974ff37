import ArgumentParser
import Foundation
import XclawAgent
import XclawBase
import XclawCommandLine
import XclawMessages
import XclawRuntime
import XclawScreen
import XclawStore

/// `xclaw bench agents`: the agent runtime without the model's time — queue throughput and the latency from a
/// message's arrival to the model request that carries it, with a zero-latency in-process model, and the SQLite cost
/// of saving a streamed reply.
struct BenchAgents: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agents",
        abstract:
            "Benchmark the agent queue and store: messages/s, enqueue→start latency, pipeline orchestration overhead, "
            + "SQLite write per token batch.")
    @Option(help: "Agents.") var agents = 50
    @Option(help: "Messages per agent.") var messages = 10
    @Option(help: "Parallel runs (the queue's cap).") var cap = 5
    @Option(help: "Streamed-reply saves to time.") var saves = 2000
    @Option(help: "Pipelines run one after another to time orchestration (per subtask count).") var pipelineRuns = 20
    @Option(help: "Pipelines run at once in the burst.") var pipelines = 20
    @Option(help: "Subtasks each pipeline delegates in one turn.") var subtasks = 5
    @Flag(help: "Print one JSON object.") var json = false

    func validate() throws {
        if agents < 1 || messages < 1 || cap < 1 || saves < 1 || pipelineRuns < 1 || pipelines < 1 || subtasks < 1 {
            throw ValidationError(
                "--agents, --messages, --cap, --saves, --pipeline-runs, --pipelines and --subtasks must be at least 1")
        }
    }

    func run() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-bench-agents-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try AgentStore(path: dir.appendingPathComponent("bench.sqlite").path)
        var report = BenchReport(benchmark: "agents", display: "no display", screen: Size(width: 0, height: 0))
        let model = InstantModel()
        let catalog = try ModelCatalog.load()
        let names = (0..<agents).map { "bench\($0)" }
        for n in names { try store.createAgent(AgentConfig(name: n, model: catalog.default, tools: [])) }
        let service = AgentService(
            store: store, client: model, catalog: catalog,
            queue: QueueConfiguration(maxConcurrent: cap), tools: { _ in [] },
            systemPrompt: { _ in "bench" })
        let (agents, messages) = (self.agents, self.messages)
        let clock = ContinuousClock()
        let start = clock.now
        try Blocking.wait {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in names {
                    group.addTask {
                        for i in 0..<messages {
                            model.sent("\(n) m\(i)")
                            try await service.send(agent: n, text: "\(n) m\(i)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            await service.queue.waitUntilIdle()
        }
        let elapsed = clock.now - start
        let total = agents * messages
        let latencies = model.latencies
        guard latencies.count == total else {
            throw ValidationError("the model saw \(latencies.count) of \(total) messages: the runtime lost some")
        }
        report.rows.append(
            BenchRow(
                "queue + store + loop, zero-latency model (\(agents) agents × \(messages) messages, cap \(cap))",
                "enqueue → model request carrying the message", latencies.map { Sample(elapsed: $0) }))
        report.notes.append(
            String(
                format: "throughput: %d messages in %.0f ms = %.0f messages/s, %d model requests "
                    + "(messages that arrive during a run are batched into the next); p99 enqueue→start %.1f ms",
                total, elapsed.milliseconds, Double(total) / (elapsed.milliseconds / 1000), model.requests,
                percentile(latencies, 0.99).milliseconds))

        // Pipelines: an orchestrator's delegate calls → each child's first model request, and a burst at once.
        try BenchPipelines.measure(
            into: &report, store: store, catalog: catalog, runs: pipelineRuns, width: subtasks, burst: pipelines,
            cap: cap)

        // Saving a streamed reply: one UPDATE of the partial message per batch of tokens.
        try store.createAgent(AgentConfig(name: "writer", model: catalog.default))
        let row = try store.appendMessage(agent: "writer", role: .assistant, content: [.text("")], status: .partial)
        var text = ""
        let piece = "Streaming reply text, one batch of tokens at a time. "
        try report.measure(
            "SQLite (WAL, synchronous=NORMAL)",
            "save a streamed reply (one UPDATE, text grows to "
                + "\(piece.count * (saves + 3) / 1024) KB)", iterations: saves
        ) {
            text += piece
            let content: [ContentBlock] = [.text(text)]
            return Sample(
                elapsed: try clock.measure { try store.updateMessage(id: row, content: content, status: .partial) })
        }
        try report.measure("SQLite (WAL, synchronous=NORMAL)", "append a message", iterations: 200) {
            Sample(
                elapsed: try clock.measure {
                    _ = try store.appendMessage(agent: "writer", role: .user, content: [.text("a short message")])
                })
        }
        report.notes.append(
            "a reply is saved at most every 100 ms while it streams, so the store costs a streamed "
                + "reply well under 1 % of its time")
        try emitBench(report, json: json) { report.table }
    }

    private func percentile(_ values: [Duration], _ p: Double) -> Duration {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}

/// A model that answers at once ("ok", streamed as one delta), and notes when each queued message first reached
/// it, so the benchmark measures the runtime alone.
/// Safe because its counters are touched only under `lock`.
final class InstantModel: MessageStreaming, @unchecked Sendable {
    private let lock = NSLock()
    private var sentAt: [String: ContinuousClock.Instant] = [:]
    private var seen: [String: Duration] = [:]
    private var count = 0

    /// Notes when a message was handed to the runtime.
    func sent(_ text: String) { lock.withLock { sentAt[text] = ContinuousClock.now } }

    /// Enqueue → request latencies, one per message.
    var latencies: [Duration] { lock.withLock { Array(seen.values) } }
    /// Model requests made.
    var requests: Int { lock.withLock { count } }

    func send(_ request: MessagesRequest, onEvent: @escaping @Sendable (StreamEvent) -> Void) async throws
        -> ModelResponse
    {
        let now = ContinuousClock.now
        let prompt = request.messages.last?.text ?? ""
        lock.withLock {
            count += 1
            for (text, at) in sentAt where seen[text] == nil && prompt.contains(">\(text)</message>") {
                seen[text] = now - at
            }
        }
        onEvent(.textDelta("ok"))
        return ModelResponse(
            id: "msg_instant", model: request.model, message: Message(role: .assistant, content: [.text("ok")]),
            stopReason: .endTurn, usage: Usage(inputTokens: 10, outputTokens: 1), requestID: nil)
    }
}

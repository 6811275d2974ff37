import Foundation
import Synchronization
import XclawAgent
import XclawBase
import XclawMessages
import XclawRuntime
import XclawStore

/// The pipelines section of `xclaw bench agents`: what orchestration itself costs with a zero-latency in-process
/// model — from the orchestrator's reply that delegates to each child's first model request — and whether a burst
/// of pipelines run at once loses nothing and keeps the children's cap.
enum BenchPipelines {
    /// Adds the section's rows and notes: `runs` pipelines of one subtask and of `width` subtasks, one after another
    /// (the overhead), then `burst` pipelines of `width` subtasks at once (the cap and completeness).
    static func measure(
        into report: inout BenchReport, store: AgentStore, catalog: ModelCatalog, runs: Int, width: Int, burst: Int,
        cap: Int
    ) throws {
        let model = DelegatingModel()
        let builder = AgentBuilder(store: store, client: model, catalog: catalog)
        let runner = PipelineRunner(
            builder: builder, roles: try RoleCatalog.load(directory: "/nonexistent"), cap: cap,
            guardSettings: GuardSettings(stopKey: nil))
        var orchestrator = AgentConfig(name: "bench-orchestrator", model: catalog.default, tools: [])
        orchestrator.kind = .orchestrator
        try store.createAgent(orchestrator)
        let name = orchestrator.name

        for subtasks in [1, width] {
            model.reset()
            for job in 0..<runs {
                let id = try runner.start(task: "bench job \(job) of \(subtasks)", orchestrator: name)
                let record = try Blocking.wait { await runner.run(id) }
                guard record.status == .completed else {
                    throw BenchPipelineError(
                        detail: "pipeline \(id) ended \(record.status.rawValue): \(record.error ?? "")")
                }
            }
            let latencies = model.latencies
            guard latencies.count == runs * subtasks else {
                throw BenchPipelineError(detail: "\(latencies.count) of \(runs * subtasks) children asked the model")
            }
            report.rows.append(
                BenchRow(
                    "pipelines, zero-latency model (\(runs) pipelines one after another)",
                    "delegate → child's first model request, \(subtasks) subtask(s) per turn",
                    latencies.map { Sample(elapsed: $0) }))
        }

        // A burst: every pipeline at once; the children's queue lets `cap` run, the rest wait in order.
        model.reset()
        let clock = ContinuousClock()
        let start = clock.now
        let ids = try (0..<burst).map { try runner.start(task: "bench job \($0) of \(width)", orchestrator: name) }
        let records = try Blocking.wait { await runner.run(all: ids) }
        let elapsed = clock.now - start
        var intervals: [(start: Date, end: Date)] = []
        var complete = 0
        for id in ids {
            let subtasks = try store.subtasks(pipeline: id)
            if subtasks.count == width, subtasks.allSatisfy({ $0.status == .completed && $0.result == "ok" }) {
                complete += 1
            }
            for subtask in subtasks {
                guard let begun = subtask.startedAt, let session = subtask.session,
                    let ended = try store.session(session).endedAt
                else { continue }
                intervals.append((begun, ended))
            }
        }
        let most =
            intervals.map { probe in
                intervals.filter { $0.start <= probe.start && probe.start < $0.end }.count
            }.max() ?? 0
        let done = records.filter { $0.status == .completed }.count
        report.notes.append(
            String(
                format: "pipelines: %d pipelines of %d subtasks at once: %d completed, %d trees complete in the store "
                    + "(%d of %d subtasks), at most %d subtasks at once (cap %d), %.0f ms in all",
                burst, width, done, complete, intervals.count, burst * width, most, cap, elapsed.milliseconds))
        report.notes.append(
            "pipelines: the overhead is the orchestrator's reply being stored, the subtask and its agent created, "
                + "its message queued, the slot taken (flock, batch claim, session), its conversation and tools built")
        guard done == burst, complete == burst, most <= cap else {
            throw BenchPipelineError(detail: "the burst lost work or broke the cap (see the notes)")
        }
    }
}

/// The benchmark found the runtime wrong, not slow.
struct BenchPipelineError: Error, CustomStringConvertible {
    let detail: String
    var description: String { "bench agents (pipelines): \(detail)" }
}

/// A zero-latency model for pipelines: the orchestrator's first turn delegates N subtasks (N from its task, "bench
/// job J of N"), its second answers; each child answers "ok". It notes when each orchestrator reply returned and
/// when each child first asked, so the benchmark measures the runtime between them alone.
final class DelegatingModel: MessageStreaming, Sendable {
    private struct State {
        var replied: [String: ContinuousClock.Instant] = [:]
        var latencies: [String: Duration] = [:]
    }

    private let state = Mutex(State())

    /// Forgets the timings of earlier rounds.
    func reset() { state.withLock { $0 = State() } }

    /// Delegate → first request latencies, one per child.
    var latencies: [Duration] { state.withLock { Array($0.latencies.values) } }

    func send(_ request: MessagesRequest, onEvent: @escaping @Sendable (StreamEvent) -> Void) async throws
        -> ModelResponse
    {
        let now = ContinuousClock.now
        let prompt = request.messages.last?.text ?? ""
        let job = Self.job(in: prompt)
        let isOrchestrator = request.system?.contains("You are the orchestrator") == true
        var message = Message(role: .assistant, content: [.text("ok")])
        var stop = StopReason.endTurn
        if isOrchestrator, request.messages.count == 1, let job {
            message.content = (0..<job.width).map { i in
                .toolUse(
                    id: "toolu_\(job.id)_\(i)", name: "delegate",
                    input: ["role": "writer", "task": .string("piece \(i) of bench job \(job.id) of \(job.width)")])
            }
            stop = .toolUse
            // The reply returns now; the runtime takes it from here.
            state.withLock { $0.replied["\(job.id)"] = ContinuousClock.now }
        } else if !isOrchestrator, let job, let piece = Self.piece(in: prompt) {
            state.withLock { s in
                let key = "\(job.id).\(piece)"
                if s.latencies[key] == nil, let replied = s.replied["\(job.id)"] { s.latencies[key] = now - replied }
            }
        }
        return ModelResponse(
            id: "msg_bench", model: request.model, message: message, stopReason: stop,
            usage: Usage(inputTokens: 10, outputTokens: 1), requestID: nil)
    }

    /// J and N of "bench job J of N" in `text`.
    private static func job(in text: String) -> (id: Int, width: Int)? {
        guard let range = text.range(of: "bench job ") else { return nil }
        let words = text[range.upperBound...].split(separator: " ", maxSplits: 3)
        guard words.count >= 3, let id = Int(words[0]), let width = Int(words[2].prefix { $0.isNumber }) else {
            return nil
        }
        return (id, width)
    }

    /// I of "piece I of" in `text`.
    private static func piece(in text: String) -> Int? {
        guard let range = text.range(of: "piece ") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }
}

import Foundation
import Synchronization
import XclawBase
import XclawMessages

/// How a run ended.
public enum RunOutcome: Sendable, Equatable, CustomStringConvertible {
    /// The model finished (`end_turn`, `stop_sequence`, or `max_tokens` without a tool call).
    case completed
    /// The model declined (`refusal`).
    case refused
    /// `--max-steps` requests were made without the model finishing.
    case maxSteps(Int)
    /// The user cancelled (Ctrl-C).
    case cancelled
    /// An emergency stop ended it (`xclaw stop`, the hotkey, the failsafe); the text says which.
    case stopped(String)
    /// A request failed for good; the message says why.
    case failed(String)

    /// The outcome in words, for the summary line.
    public var description: String {
        switch self {
        case .completed: return "completed"
        case .refused: return "refused"
        case .maxSteps(let n): return "stopped after \(n) steps without finishing"
        case .cancelled: return "cancelled"
        case .stopped(let why): return why
        case .failed(let why): return "failed: \(why)"
        }
    }
}

/// One model request of a run and what it cost.
public struct StepReport: Sendable, Hashable, Codable {
    /// 1-based step number.
    public var step: Int
    /// Tokens of this request.
    public var usage: Usage
    /// USD cost of this request at the catalog's prices.
    public var costUSD: Double
    /// Why the model stopped (`tool_use`, `end_turn`, ...).
    public var stopReason: String
    /// The tools the model called, as `name` or `name:action`.
    public var toolCalls: [String]
    /// Bytes of the request body.
    public var requestBytes: Int
    /// Images in the request after pruning.
    public var images: Int
    /// Milliseconds from sending until the reply was complete (model time included).
    public var modelMs: Double
    /// Milliseconds spent running the tools of this step.
    public var toolMs: Double
    /// The request id of the reply.
    public var requestID: String?
    /// `compacted` when the server compacted the conversation in this reply, `summarised` when this request was
    /// xclaw's summary of old turns (its `step` is then 0: it is no step of the task); nil otherwise.
    public var context: String? = nil

    /// snake_case, as every xclaw JSON output (`run --json`'s steps).
    enum CodingKeys: String, CodingKey {
        case step, usage, images, context
        case costUSD = "cost_usd"
        case stopReason = "stop_reason"
        case toolCalls = "tool_calls"
        case requestBytes = "request_bytes"
        case modelMs = "model_ms"
        case toolMs = "tool_ms"
        case requestID = "request_id"
    }

    /// The `context` of a summary request.
    public static let summarised = "summarised"
}

/// How a run keeps a long conversation within the model's context window (see `ContextWindow`).
public enum ContextPolicy: Sendable, Hashable {
    /// Neither: the conversation grows until the pruning of old screenshots is all that bounds it.
    case off
    /// Server-side compaction above `trigger` input tokens.
    case server(trigger: Int)
    /// xclaw's own summary of old turns above `trigger` input tokens.
    case summary(trigger: Int)

    /// The server's compaction where the model takes it, else the summary; `mode` is `auto`, `server`, `summary`
    /// or `off` (the config file's `compaction`), `trigger` the input tokens to act at (`compact_at`).
    public static func choose(mode: String = "auto", trigger: Int? = nil, model: ModelInfo) -> ContextPolicy {
        // Act before the window is full: 150,000 tokens, or three quarters of a smaller window.
        let window = model.maxInput ?? 200_000
        let at = trigger ?? min(ContextWindow.defaultTrigger, window * 3 / 4)
        switch mode {
        case "off": return .off
        case "summary": return .summary(trigger: at)
        case "server": return .server(trigger: at)
        default: return model.compaction == true ? .server(trigger: at) : .summary(trigger: at)
        }
    }
}

/// The result of a run: the conversation (always valid: every tool_use answered), the steps, the totals.
public struct RunResult: Sendable {
    /// How it ended.
    public var outcome: RunOutcome
    /// The whole conversation, ready to continue.
    public var messages: [Message]
    /// One report per model request.
    public var steps: [StepReport]
    /// The text of the model's last message.
    public var finalText: String
    /// The error that ended the run, if any (for its exit status).
    public var error: (any Error)?

    /// Summed tokens.
    public var usage: Usage { steps.reduce(Usage()) { $0 + $1.usage } }
    /// Summed USD cost.
    public var costUSD: Double { steps.reduce(0) { $0 + $1.costUSD } }
}

/// What a run reports while it goes, for the terminal (text to stdout, the rest to stderr).
public struct RunObserver: Sendable {
    /// Streamed assistant text.
    public var text: @Sendable (String) -> Void
    /// A retry of a failed request (HTTP 529, 429, network...).
    public var retry: @Sendable (RetryNotice) -> Void
    /// A tool call is about to run.
    public var toolStarted: @Sendable (_ name: String, _ input: JSONValue) -> Void
    /// A tool call finished.
    public var toolFinished: @Sendable (_ name: String, _ result: ToolResultBlock, _ ms: Double) -> Void
    /// A step (one request and its tools) finished.
    public var stepFinished: @Sendable (StepReport) -> Void
    /// A message joined the conversation (the model's reply, or the tool results answering it), so a store can
    /// persist the conversation as it grows.
    public var appended: @Sendable (Message) -> Void
    /// The turns before the newest reply were replaced by this summary (xclaw's own compaction), so a store can
    /// rebuild the same conversation later.
    public var summarised: @Sendable (String) -> Void
    /// Something the user should know that is not the model's text (a summary that failed).
    public var notice: @Sendable (String) -> Void

    /// Creates an observer; every callback defaults to doing nothing.
    public init(
        text: @escaping @Sendable (String) -> Void = { _ in },
        retry: @escaping @Sendable (RetryNotice) -> Void = { _ in },
        toolStarted: @escaping @Sendable (String, JSONValue) -> Void = { _, _ in },
        toolFinished: @escaping @Sendable (String, ToolResultBlock, Double) -> Void = { _, _, _ in },
        stepFinished: @escaping @Sendable (StepReport) -> Void = { _ in },
        appended: @escaping @Sendable (Message) -> Void = { _ in },
        summarised: @escaping @Sendable (String) -> Void = { _ in },
        notice: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.text = text
        self.retry = retry
        self.toolStarted = toolStarted
        self.toolFinished = toolFinished
        self.stepFinished = stepFinished
        self.appended = appended
        self.summarised = summarised
        self.notice = notice
    }
}

/// The settings of a run.
public struct RunOptions: Sendable {
    /// The model and its catalog entry.
    public var model: ModelInfo
    /// The system prompt.
    public var system: String
    /// At most this many model requests.
    public var maxSteps: Int
    /// `max_tokens` per request.
    public var maxTokens: Int
    /// Keep only this many most recent screenshots in the conversation.
    public var keepImages: Int
    /// Drop old screenshots only once this many are over the limit, all at once, so the cached prefix of the
    /// conversation changes every few steps instead of every step.
    public var imageChunk: Int
    /// Put prompt-caching breakpoints on tools, system and the two latest user turns.
    public var caching: Bool
    /// Extra beta headers besides the computer tool's.
    public var betas: [String]
    /// `output_config.effort`, checked against the model's levels; nil: the model's default.
    public var effort: String? = nil
    /// Extended thinking, sent in the form the model takes (`ModelInfo.thinkingPlan`); nil: not chosen (`auto`).
    public var thinking: ThinkingMode? = nil
    /// How the conversation stays within the context window; by default the server's compaction where the model
    /// takes it, else xclaw's summary, at 150,000 input tokens.
    public var context: ContextPolicy

    /// Creates options with xclaw's defaults (50 steps, 3 screenshots kept, caching on).
    public init(
        model: ModelInfo, system: String, maxSteps: Int = 50, maxTokens: Int = 4096, keepImages: Int = 3,
        imageChunk: Int = 3, caching: Bool = true, betas: [String] = []
    ) {
        self.model = model
        self.system = system
        self.maxSteps = maxSteps
        self.maxTokens = min(maxTokens, model.maxOutput)
        self.keepImages = keepImages
        self.imageChunk = max(1, imageChunk)
        self.caching = caching
        self.betas = betas
        self.context = .choose(model: model)
    }
}

/// The agent loop: request → stream → run the tools the model called → answer every call → repeat, until the model
/// ends its turn, the step limit, a failure or cancellation. Whatever happens, the returned conversation has a
/// tool_result for every tool_use, so it can be continued or stored.
public struct AgentRunner: Sendable {
    /// The transport.
    public let client: any MessageStreaming
    /// The enabled tools.
    public let registry: ToolRegistry
    /// The settings.
    public let options: RunOptions

    /// Creates a runner.
    public init(client: any MessageStreaming, registry: ToolRegistry, options: RunOptions) {
        self.client = client
        self.registry = registry
        self.options = options
    }

    /// Runs a task from scratch.
    public func run(task: String, context: ToolContext, observer: RunObserver = RunObserver()) async -> RunResult {
        await run(messages: [.user(task)], context: context, observer: observer)
    }

    /// Continues a conversation whose last message is from the user.
    public func run(messages start: [Message], context: ToolContext, observer: RunObserver = RunObserver()) async
        -> RunResult
    {
        var messages = ContextWindow.trimToCompaction(start)
        var steps: [StepReport] = []
        let clock = ContinuousClock()
        var betas = Self.betas(for: registry, extra: options.betas)
        let thinking: ThinkingPlan
        do {
            thinking = try options.model.thinkingPlan(
                options.thinking ?? .auto, effort: options.effort, maxTokens: options.maxTokens)
        } catch {
            return RunResult(outcome: .failed("\(error)"), messages: start, steps: [], finalText: "", error: error)
        }
        var contextManagement: JSONValue?
        if case .server(let trigger) = options.context {
            contextManagement = ContextWindow.compactionRequest(trigger: trigger)
            if !betas.contains(ContextWindow.compactionBeta) { betas.append(ContextWindow.compactionBeta) }
        }
        /// The input tokens the last request cost as the API counted them (nil before the first, or after a summary).
        var lastInput: Int?
        /// A summary that failed is not asked for again in this run: the run goes on without one.
        var summaryFailed = false
        // Counts the records tools log, so a failure a tool already logged (with its point and time) is not
        // logged a second time, bare, here.
        let logged = LogCounter()
        var context = context
        let log = context.log
        context.log = { record in
            logged.increment()
            log(record)
        }
        func finish(_ outcome: RunOutcome, error: (any Error)? = nil) -> RunResult {
            let last = messages.last { $0.role == .assistant }?.text ?? ""
            return RunResult(outcome: outcome, messages: messages, steps: steps, finalText: last, error: error)
        }
        while true {
            // Summaries are xclaw's requests, not steps of the task: they neither use up nor number the steps.
            let taken = steps.filter { $0.context != StepReport.summarised }.count
            if taken >= options.maxSteps { return finish(.maxSteps(options.maxSteps)) }
            if Task.isCancelled { return finish(.cancelled, error: CancellationError()) }
            ImagePruner.prune(&messages, keep: options.keepImages, chunk: options.imageChunk)
            if case .summary(let trigger) = options.context, !summaryFailed,
                lastInput ?? ContextWindow.estimatedTokens(messages) >= trigger,
                let cut = ContextWindow.summaryCut(messages)
            {
                switch await summarise(messages, cut: cut, betas: betas, thinking: thinking) {
                case .success(let (summary, report)):
                    messages = ContextWindow.applySummary(summary, to: messages, cut: cut)
                    observer.summarised(summary)
                    steps.append(report)
                    observer.stepFinished(report)
                    lastInput = nil
                    continue  // the step limit and cancellation are checked again before the real request
                case .failure(let error as CancellationError):
                    return finish(.cancelled, error: error)
                case .failure(let error):
                    summaryFailed = true
                    observer.notice(
                        "could not summarise the earlier turns (\(error)); the run goes on with the whole conversation")
                }
            }
            var request = MessagesRequest(
                model: options.model.id, maxTokens: thinking.maxTokens, system: options.system, messages: messages,
                tools: registry.definitions, thinking: thinking.parameter, betas: betas,
                cache: options.caching ? Self.cachePlan(messages) : .none)
            request.effort = options.effort
            request.contextManagement = contextManagement
            let bytes = request.bodyData.count
            let sent = clock.now
            let response: ModelResponse
            do {
                response = try await client.send(request) { event in
                    switch event {
                    case .textDelta(let t): observer.text(t)
                    case .retrying(let notice): observer.retry(notice)
                    default: break
                    }
                }
            } catch is CancellationError {
                return finish(.cancelled, error: CancellationError())
            } catch {
                return finish(.failed("\(error)"), error: error)
            }
            let modelMs = (clock.now - sent).milliseconds
            // An empty text block (a reply that opened one and said nothing) would make the next request a 400.
            var reply = response.message
            reply.content.removeAll(where: \.isEmptyText)
            if !reply.content.isEmpty {
                messages.append(reply)
                observer.appended(reply)
            }
            let compacted = reply.content.contains(where: ContextWindow.isCompaction)
            // What came before the compaction block is never sent again (the API would ignore it anyway).
            if compacted { messages = ContextWindow.trimToCompaction(messages) }
            lastInput =
                response.usage.inputTokens + response.usage.cacheReadInputTokens
                + response.usage.cacheCreationInputTokens
            var step = StepReport(
                step: taken + 1, usage: response.usage, costUSD: options.model.price.cost(of: response.usage),
                stopReason: response.stopReason?.description ?? "none",
                toolCalls: response.message.toolUses.map { use in
                    use.input["action"]?.string.map { "\(use.name):\($0)" } ?? use.name
                },
                requestBytes: bytes, images: ImagePruner.count(messages), modelMs: modelMs, toolMs: 0,
                requestID: response.requestID, context: compacted ? "compacted" : nil)
            let uses = response.message.toolUses
            if !uses.isEmpty {
                let toolStart = clock.now
                var results: [ContentBlock] = []
                var interrupted = false
                var stopped: RunStopped?
                // Calls of tools that run concurrently (delegated subtasks) start together now; the loop below takes
                // their results in the turn's order, so the answers keep the order of the calls.
                let early = startConcurrent(uses, context: context, observer: observer)
                defer { for task in early.values { task.cancel() } }
                for use in uses {
                    if let stopped {
                        // The run ends: the calls after the fatal one are answered, so the conversation stays valid.
                        let text = "not run: \(stopped.message)"
                        results.append(
                            .toolResult(ToolResultBlock(toolUseID: use.id, content: [.text(text)], isError: true)))
                        context.log(ActionRecord(tool: use.name, action: Self.action(of: use), result: "not run"))
                        continue
                    }
                    if interrupted || Task.isCancelled {
                        interrupted = true
                        let r = ToolRegistry.interrupted(use.id)
                        results.append(.toolResult(r))
                        context.log(ActionRecord(tool: use.name, action: Self.action(of: use), result: "interrupted"))
                        continue
                    }
                    if early[use.id] == nil { observer.toolStarted(use.name, use.input) }
                    let began = clock.now
                    let loggedBefore = logged.count
                    let result: ToolResultBlock
                    if let raw = use.input["_invalid_json"]?.string {
                        result = ToolResultBlock(
                            toolUseID: use.id,
                            content: [
                                .text(
                                    "Your input for \(use.name) was not valid JSON (\(raw.prefix(200))). "
                                        + "It may have been cut off by max_tokens; send the call again, complete.")
                            ],
                            isError: true)
                    } else {
                        let run: (result: ToolResultBlock, stop: RunStopped?)
                        if let task = early[use.id] {
                            run = await withTaskCancellationHandler {
                                await task.value
                            } onCancel: {
                                task.cancel()
                            }
                        } else {
                            run = await registry.execute(id: use.id, name: use.name, input: use.input, context: context)
                        }
                        result = run.result
                        stopped = run.stop
                    }
                    if result.isError {
                        let why = result.content.compactMap {
                            if case .text(let t) = $0 { return t }; return nil
                        }
                        .joined(separator: " ")
                        if logged.count == loggedBefore {
                            context.log(
                                ActionRecord(
                                    tool: use.name, action: Self.action(of: use),
                                    result: "error: " + why.prefix(300)))
                        }
                        if why == "interrupted by the user" { interrupted = true }
                    }
                    observer.toolFinished(use.name, result, (clock.now - began).milliseconds)
                    results.append(.toolResult(result))
                }
                let answers = Message(role: .user, content: results)
                messages.append(answers)
                observer.appended(answers)
                step.toolMs = (clock.now - toolStart).milliseconds
                steps.append(step)
                observer.stepFinished(step)
                if let stopped { return finish(.failed(stopped.message), error: stopped) }
                if interrupted || Task.isCancelled { return finish(.cancelled, error: CancellationError()) }
                continue
            }
            steps.append(step)
            observer.stepFinished(step)
            switch response.stopReason {
            case .pauseTurn?:
                continue  // a long server-side turn paused: send the conversation back as it is to resume
            case .refusal?:
                return finish(.refused)
            default:
                return finish(.completed)
            }
        }
    }

    /// Asks the model for a summary of the turns before `cut` (no tools may be called), for `ContextPolicy.summary`,
    /// with the run's thinking and effort: the history was written under them, and the API holds a request to them.
    private func summarise(_ messages: [Message], cut: Int, betas: [String], thinking: ThinkingPlan) async -> Result<
        (String, StepReport), any Error
    > {
        let prefix = ContextWindow.summaryRequestMessages(messages, cut: cut)
        var request = MessagesRequest(
            model: options.model.id, maxTokens: max(thinking.maxTokens, min(8_192, options.model.maxOutput)),
            system: options.system, messages: prefix, tools: registry.definitions, thinking: thinking.parameter,
            betas: betas, cache: options.caching ? .init(tools: true, system: true) : .none)
        request.effort = options.effort
        request.toolChoice = ["type": "none"]  // the history names tools, so they are declared; none may run
        let bytes = request.bodyData.count
        let clock = ContinuousClock()
        let sent = clock.now
        do {
            let response = try await client.send(request) { _ in }
            let summary = response.message.text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !summary.isEmpty else { return .failure(ContextSummaryError()) }
            let report = StepReport(
                step: 0, usage: response.usage, costUSD: options.model.price.cost(of: response.usage),
                stopReason: response.stopReason?.description ?? "none", toolCalls: [], requestBytes: bytes,
                images: ImagePruner.count(prefix), modelMs: (clock.now - sent).milliseconds, toolMs: 0,
                requestID: response.requestID, context: StepReport.summarised)
            return .success((summary, report))
        } catch {
            return .failure(error)
        }
    }

    /// Starts, each in its own task, the calls of tools that run concurrently, when a turn has more than one of them;
    /// keyed by tool_use id. Calls with unreadable input are left to the loop, which answers them.
    private func startConcurrent(
        _ uses: [(id: String, name: String, input: JSONValue)], context: ToolContext, observer: RunObserver
    ) -> [String: Task<(result: ToolResultBlock, stop: RunStopped?), Never>] {
        let registry = self.registry
        let concurrent = uses.filter { use in
            use.input["_invalid_json"] == nil && registry.tool(named: use.name)?.runsConcurrently == true
        }
        guard concurrent.count > 1 else { return [:] }
        var tasks: [String: Task<(result: ToolResultBlock, stop: RunStopped?), Never>] = [:]
        for use in concurrent where tasks[use.id] == nil {
            observer.toolStarted(use.name, use.input)
            tasks[use.id] = Task {
                await registry.execute(id: use.id, name: use.name, input: use.input, context: context)
            }
        }
        return tasks
    }

    /// The action a tool call names (`left_click`), or the tool's name.
    static func action(of use: (id: String, name: String, input: JSONValue)) -> RecordedAction {
        RecordedAction(rawValue: use.input["action"]?.string ?? use.name)
    }

    /// The beta headers the request needs: those of the enabled tools (the computer tool names its own version's,
    /// so header and tool type cannot disagree), then the extra ones, without repeats.
    static func betas(for registry: ToolRegistry, extra: [String]) -> [String] {
        var betas: [String] = []
        for b in registry.tools.flatMap(\.betas) + extra where !betas.contains(b) { betas.append(b) }
        return betas
    }

    /// Breakpoints on the tools, the system prompt and the last two user turns: the latest turn is written to the
    /// cache, the one before is read from it (4 breakpoints, the API's maximum).
    public static func cachePlan(_ messages: [Message]) -> MessagesRequest.CachePlan {
        let users = messages.indices.filter { messages[$0].role == .user }
        return .init(tools: true, system: true, messages: Array(users.suffix(2)))
    }
}

/// The model answered a summary request with no text.
struct ContextSummaryError: Error, CustomStringConvertible {
    var description: String { "the model's summary was empty" }
}

/// Drops old screenshots from tool results so a long run's requests stay bounded.
public enum ImagePruner {
    /// The text left where a screenshot was removed, so the model knows one was there.
    public static let placeholder = "[older screenshot removed to save tokens]"

    /// Images inside tool results.
    public static func count(_ messages: [Message]) -> Int {
        messages.reduce(0) { total, m in
            total
                + m.content.reduce(0) { n, block in
                    if case .toolResult(let r) = block { return n + r.content.filter(\.isImage).count }
                    return n
                }
        }
    }

    /// Keeps the `keep` newest images when at least `chunk` are over the limit, removing the rest oldest first;
    /// otherwise changes nothing (the cached prefix stays valid between prunes).
    public static func prune(_ messages: inout [Message], keep: Int, chunk: Int) {
        let total = count(messages)
        let over = total - max(0, keep)
        guard over >= max(1, chunk) else { return }
        var remaining = over
        for m in messages.indices where remaining > 0 {
            for b in messages[m].content.indices where remaining > 0 {
                guard case .toolResult(var r) = messages[m].content[b] else { continue }
                var changed = false
                r.content = r.content.map { block in
                    guard block.isImage, remaining > 0 else { return block }
                    remaining -= 1
                    changed = true
                    return .text(placeholder)
                }
                if changed { messages[m].content[b] = .toolResult(r) }
            }
        }
    }
}

/// Checks a conversation the way the API will: every tool_use must be answered in the next message.
public enum ConversationCheck {
    /// The ids of tool_uses without a tool_result in the following user message.
    public static func unansweredToolUses(_ messages: [Message]) -> [String] {
        var missing: [String] = []
        for (i, m) in messages.enumerated() where m.role == .assistant {
            let ids = m.toolUses.map(\.id)
            guard !ids.isEmpty else { continue }
            let answered: Set<String> =
                i + 1 < messages.count
                ? Set(
                    messages[i + 1].content.compactMap {
                        if case .toolResult(let r) = $0 { return r.toolUseID }; return nil
                    })
                : []
            missing += ids.filter { !answered.contains($0) }
        }
        return missing
    }
}

/// How many records the tools of a run logged; read between tool calls.
final class LogCounter: Sendable {
    private let value = Atomic<Int>(0)
    /// Counts one record.
    func increment() { value.add(1, ordering: .relaxed) }
    /// Records so far.
    var count: Int { value.load(ordering: .relaxed) }
}

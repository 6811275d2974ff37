import Foundation
import XclawBase
import XclawMessages

/// The agent loop: request → stream → run the tools the model called → answer every call → repeat, until the model
/// ends its turn, the step limit, a failure or cancellation. Whatever happens, the returned conversation has a
/// tool_result for every tool_use, so it can be continued or stored.
///
/// The steps of the loop live beside this file, one mechanism each: `AgentRunner+Turn.swift` (what every request
/// shares, sending one and reporting it), `AgentRunner+Tools.swift` (answering a turn's tool calls) and
/// `AgentRunner+Summary.swift` (xclaw's own summary of old turns).
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
        let plan: RequestPlan
        do {
            plan = try requestPlan()
        } catch {
            return RunResult(outcome: .failed("\(error)"), messages: start, steps: [], finalText: "", error: error)
        }
        let (context, logged) = Self.countingLogs(context)
        var run = RunState(messages: ContextWindow.trimToCompaction(start))
        while true {
            let taken = run.taken
            if taken >= options.maxSteps { return run.finish(.maxSteps(options.maxSteps)) }
            if Task.isCancelled { return run.finish(.cancelled, error: CancellationError()) }
            ImagePruner.prune(&run.messages, keep: options.keepImages, chunk: options.imageChunk)
            switch await summariseIfDue(&run, plan: plan, observer: observer) {
            case .summarised: continue  // the step limit and cancellation are checked again before the real request
            case .cancelled(let error): return run.finish(.cancelled, error: error)
            case .notDone: break
            }
            let turn: Turn
            do {
                turn = try await sendTurn(&run, plan: plan, step: taken + 1, observer: observer)
            } catch is CancellationError {
                return run.finish(.cancelled, error: CancellationError())
            } catch {
                return run.finish(.failed("\(error)"), error: error)
            }
            if !turn.uses.isEmpty {
                let answered = await answerToolCalls(
                    turn.uses, of: turn.report, in: &run, context: context, logged: logged, observer: observer)
                if let stopped = answered.stopped { return run.finish(.failed(stopped.message), error: stopped) }
                if answered.interrupted || Task.isCancelled {
                    return run.finish(.cancelled, error: CancellationError())
                }
                continue
            }
            run.record(turn.report, observer: observer)
            switch turn.stopReason {
            case .pauseTurn?:
                continue  // a long server-side turn paused: send the conversation back as it is to resume
            case .refusal?:
                return run.finish(.refused)
            default:
                return run.finish(.completed)
            }
        }
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

/// What a run holds between requests: the conversation and the step reports so far, and what the context checks
/// remember. The loop's steps take it `inout`, so what they add is in the result however the run ends.
struct RunState {
    /// The conversation, trimmed to the latest compaction and pruned of old screenshots as the run goes.
    var messages: [Message]
    /// One report per request, summaries included.
    var steps: [StepReport] = []
    /// The input tokens the last request cost as the API counted them (nil before the first, or after a summary).
    var lastInput: Int?
    /// A summary that failed is not asked for again in this run: the run goes on without one.
    var summaryFailed = false

    /// The steps of the task taken so far. Summaries are xclaw's requests, not steps of the task: they neither use
    /// up nor number the steps.
    var taken: Int { steps.filter { $0.context != StepReport.summarised }.count }

    /// Adds a message and tells the observer, so a store persists the conversation as it grows.
    mutating func append(_ message: Message, observer: RunObserver) {
        messages.append(message)
        observer.appended(message)
    }

    /// Adds a step's report and tells the observer.
    mutating func record(_ step: StepReport, observer: RunObserver) {
        steps.append(step)
        observer.stepFinished(step)
    }

    /// The result of the run as it stands.
    func finish(_ outcome: RunOutcome, error: (any Error)? = nil) -> RunResult {
        let last = messages.last { $0.role == .assistant }?.text ?? ""
        return RunResult(outcome: outcome, messages: messages, steps: steps, finalText: last, error: error)
    }
}

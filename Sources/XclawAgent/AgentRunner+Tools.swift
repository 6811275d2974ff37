import Foundation
import Synchronization
import XclawBase
import XclawMessages

/// A tool call's outcome: the result the model is sent, and the stop that ends the run, if the tool met one.
typealias ToolRun = (result: ToolResultBlock, stop: RunStopped?)

extension AgentRunner {
    /// The context with a log that counts the records tools write, so a failure a tool already logged (with its
    /// point and time) is not logged a second time, bare, by the loop.
    static func countingLogs(_ context: ToolContext) -> (ToolContext, LogCounter) {
        let logged = LogCounter()
        var context = context
        let log = context.log
        context.log = { record in
            logged.increment()
            log(record)
        }
        return (context, logged)
    }

    /// Runs a turn's tool calls and answers every one of them in one user message, then records the turn's
    /// `report` with the tools' time. After a fatal stop or an interruption the remaining calls are answered
    /// without running, so the conversation stays valid; the result says which of the two ended the turn.
    func answerToolCalls(
        _ uses: [(id: String, name: String, input: JSONValue)], of report: StepReport, in run: inout RunState,
        context: ToolContext, logged: LogCounter, observer: RunObserver
    ) async -> (stopped: RunStopped?, interrupted: Bool) {
        let clock = ContinuousClock()
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
                results.append(.toolResult(ToolResultBlock(toolUseID: use.id, content: [.text(text)], isError: true)))
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
            let ran = await call(use, started: early[use.id], context: context)
            let result = ran.result
            stopped = ran.stop
            if result.isError {
                let why = result.content.compactMap {
                    if case .text(let t) = $0 { return t }; return nil
                }
                .joined(separator: " ")
                if logged.count == loggedBefore {
                    context.log(
                        ActionRecord(tool: use.name, action: Self.action(of: use), result: "error: " + why.prefix(300)))
                }
                if why == "interrupted by the user" { interrupted = true }
            }
            observer.toolFinished(use.name, result, (clock.now - began).milliseconds)
            results.append(.toolResult(result))
        }
        run.append(Message(role: .user, content: results), observer: observer)
        var report = report
        report.toolMs = (clock.now - toolStart).milliseconds
        run.record(report, observer: observer)
        return (stopped, interrupted)
    }

    /// One call's result: input the API could not parse is sent back to the model to try again; a call started
    /// early is awaited (and cancelled with the run); any other runs now.
    private func call(
        _ use: (id: String, name: String, input: JSONValue), started: Task<ToolRun, Never>?, context: ToolContext
    ) async -> ToolRun {
        if let raw = use.input["_invalid_json"]?.string {
            let result = ToolResultBlock(
                toolUseID: use.id,
                content: [
                    .text(
                        "Your input for \(use.name) was not valid JSON (\(raw.prefix(200))). "
                            + "It may have been cut off by max_tokens; send the call again, complete.")
                ],
                isError: true)
            return (result, nil)
        }
        if let task = started {
            return await withTaskCancellationHandler {
                await task.value
            } onCancel: {
                task.cancel()
            }
        }
        return await registry.execute(id: use.id, name: use.name, input: use.input, context: context)
    }

    /// Starts, each in its own task, the calls of tools that run concurrently, when a turn has more than one of them;
    /// keyed by tool_use id. Calls with unreadable input are left to the loop, which answers them.
    private func startConcurrent(
        _ uses: [(id: String, name: String, input: JSONValue)], context: ToolContext, observer: RunObserver
    ) -> [String: Task<ToolRun, Never>] {
        let registry = self.registry
        let concurrent = uses.filter { use in
            use.input["_invalid_json"] == nil && registry.tool(named: use.name)?.runsConcurrently == true
        }
        guard concurrent.count > 1 else { return [:] }
        var tasks: [String: Task<ToolRun, Never>] = [:]
        for use in concurrent where tasks[use.id] == nil {
            observer.toolStarted(use.name, use.input)
            tasks[use.id] = Task {
                await registry.execute(id: use.id, name: use.name, input: use.input, context: context)
            }
        }
        return tasks
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

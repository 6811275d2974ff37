import Foundation
import XclawBase
import XclawMessages

/// What the summary check before a request did, for the loop to go on from.
enum SummaryStep {
    /// Nothing to do (not due, not xclaw's policy, or failed: the run goes on with the whole conversation).
    case notDone
    /// The old turns were replaced by a summary: the loop checks its limits again before the real request.
    case summarised
    /// The run was cancelled while the summary was asked for.
    case cancelled(CancellationError)
}

extension AgentRunner {
    /// Replaces the turns before the newest reply by the model's summary of them when `ContextPolicy.summary` is
    /// chosen and the conversation reached its trigger (as the last request counted it, else by estimate). A summary
    /// that fails is said once through the observer and not asked for again in this run.
    func summariseIfDue(_ run: inout RunState, plan: RequestPlan, observer: RunObserver) async -> SummaryStep {
        guard case .summary(let trigger) = options.context, !run.summaryFailed,
            run.lastInput ?? ContextWindow.estimatedTokens(run.messages) >= trigger,
            let cut = ContextWindow.summaryCut(run.messages)
        else { return .notDone }
        switch await summarise(run.messages, cut: cut, betas: plan.betas, thinking: plan.thinking) {
        case .success(let (summary, report)):
            run.messages = ContextWindow.applySummary(summary, to: run.messages, cut: cut)
            observer.summarised(summary)
            run.record(report, observer: observer)
            run.lastInput = nil
            return .summarised
        case .failure(let error as CancellationError):
            return .cancelled(error)
        case .failure(let error):
            run.summaryFailed = true
            observer.notice(
                "could not summarise the earlier turns (\(error)); the run goes on with the whole conversation")
            return .notDone
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
}

/// The model answered a summary request with no text.
struct ContextSummaryError: Error, CustomStringConvertible {
    var description: String { "the model's summary was empty" }
}

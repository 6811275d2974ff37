import Foundation
import XclawBase
import XclawMessages

/// What every request of a run shares, settled once before the first: a model that cannot take the thinking or
/// effort asked for fails the run before anything is sent.
struct RequestPlan {
    /// The beta headers: the tools', the extra ones, and the server compaction's when the run uses it.
    var betas: [String]
    /// `max_tokens` and the thinking parameter in the form the model takes.
    var thinking: ThinkingPlan
    /// The server-side compaction request, when `ContextPolicy.server` is chosen.
    var contextManagement: JSONValue?
}

/// One model request of a run as the loop needs it next: the calls to answer, the report, why the model stopped.
struct Turn {
    /// The tool calls of the reply, in order.
    var uses: [(id: String, name: String, input: JSONValue)]
    /// The request's report; its `toolMs` is set once the calls are answered.
    var report: StepReport
    /// Why the model stopped.
    var stopReason: StopReason?
}

extension AgentRunner {
    /// The betas, thinking plan and compaction request of this runner's options.
    func requestPlan() throws -> RequestPlan {
        var betas = Self.betas(for: registry, extra: options.betas)
        let thinking = try options.model.thinkingPlan(
            options.thinking ?? .auto, effort: options.effort, maxTokens: options.maxTokens)
        var contextManagement: JSONValue?
        if case .server(let trigger) = options.context {
            contextManagement = ContextWindow.compactionRequest(trigger: trigger)
            if !betas.contains(ContextWindow.compactionBeta) { betas.append(ContextWindow.compactionBeta) }
        }
        return RequestPlan(betas: betas, thinking: thinking, contextManagement: contextManagement)
    }

    /// Sends the conversation as it stands, streaming text and retries to the observer; the reply joins the
    /// conversation (what came before a compaction block in it is dropped) and `step` numbers its report. Throws
    /// only what the transport threw, before the conversation changed.
    func sendTurn(_ run: inout RunState, plan: RequestPlan, step: Int, observer: RunObserver) async throws -> Turn {
        let clock = ContinuousClock()
        var request = MessagesRequest(
            model: options.model.id, maxTokens: plan.thinking.maxTokens, system: options.system,
            messages: run.messages, tools: registry.definitions, thinking: plan.thinking.parameter,
            betas: plan.betas, cache: options.caching ? Self.cachePlan(run.messages) : .none)
        request.effort = options.effort
        request.contextManagement = plan.contextManagement
        let bytes = request.bodyData.count
        let sent = clock.now
        let response = try await client.send(request) { event in
            switch event {
            case .textDelta(let t): observer.text(t)
            case .retrying(let notice): observer.retry(notice)
            default: break
            }
        }
        let modelMs = (clock.now - sent).milliseconds
        // An empty text block (a reply that opened one and said nothing) would make the next request a 400.
        var reply = response.message
        reply.content.removeAll(where: \.isEmptyText)
        if !reply.content.isEmpty { run.append(reply, observer: observer) }
        let compacted = reply.content.contains(where: ContextWindow.isCompaction)
        // What came before the compaction block is never sent again (the API would ignore it anyway).
        if compacted { run.messages = ContextWindow.trimToCompaction(run.messages) }
        run.lastInput =
            response.usage.inputTokens + response.usage.cacheReadInputTokens
            + response.usage.cacheCreationInputTokens
        let report = StepReport(
            step: step, usage: response.usage, costUSD: options.model.price.cost(of: response.usage),
            stopReason: response.stopReason?.description ?? "none",
            toolCalls: response.message.toolUses.map { use in
                use.input["action"]?.string.map { "\(use.name):\($0)" } ?? use.name
            },
            requestBytes: bytes, images: ImagePruner.count(run.messages), modelMs: modelMs, toolMs: 0,
            requestID: response.requestID, context: compacted ? "compacted" : nil)
        return Turn(uses: response.message.toolUses, report: report, stopReason: response.stopReason)
    }
}

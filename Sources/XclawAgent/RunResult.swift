import Foundation
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

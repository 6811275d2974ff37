import Foundation
import XclawBase
import XclawMessages

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

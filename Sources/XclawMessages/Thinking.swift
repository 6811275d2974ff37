import Foundation

/// What the user asked of extended thinking (`--thinking`, `thinking` in the config, an agent's setting). The
/// request carries it only in the form the model takes: an adaptive-only model answers `budget_tokens` with a 400,
/// and a model that always thinks answers an explicit `disabled` with one.
public enum ThinkingMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Send nothing: the model's own default.
    case auto
    /// Think: `adaptive` where the model takes it, else `enabled` with a budget.
    case on
    /// Do not think: nothing sent, or `disabled` for a model that thinks by default.
    case off

    /// Reads `auto`, `on` or `off` (also `true`/`false`, `yes`/`no`).
    public static func parse(_ text: String) throws -> ThinkingMode {
        switch text.lowercased() {
        case "auto", "default": return .auto
        case "on", "true", "yes": return .on
        case "off", "false", "no": return .off
        default: throw CatalogError.thinking(model: nil, why: "thinking is auto, on or off, not \"\(text)\"")
        }
    }
}

/// The `thinking` parameter to send and the `max_tokens` that goes with it (a budget must stay below it).
public struct ThinkingPlan: Sendable, Hashable {
    /// The parameter, or nil to send none.
    public var parameter: JSONValue?
    /// `max_tokens` for the request.
    public var maxTokens: Int
}

extension ModelInfo {
    /// The thinking parameter for this model, or an error naming what it takes. `effort` matters for a model that
    /// can turn thinking off only at moderate effort (Opus 5: `disabled` up to `high`).
    public func thinkingPlan(_ mode: ThinkingMode, effort: String?, maxTokens: Int) throws -> ThinkingPlan {
        let form = thinking ?? "none"
        switch mode {
        case .auto:
            return ThinkingPlan(parameter: nil, maxTokens: maxTokens)
        case .on:
            switch form {
            case "always": return ThinkingPlan(parameter: nil, maxTokens: maxTokens)  // it thinks anyway
            case "adaptive": return ThinkingPlan(parameter: ["type": "adaptive"], maxTokens: maxTokens)
            case "enabled":
                // budget_tokens ≥ 1024 and below max_tokens; half the output, at least the minimum.
                let total = min(maxOutput, max(maxTokens, 2048))
                let budget = max(1024, min(total / 2, 16_000))
                return ThinkingPlan(
                    parameter: ["type": "enabled", "budget_tokens": .int(budget)], maxTokens: total)
            default:
                throw CatalogError.thinking(
                    model: id, why: "\(id) has no extended thinking: leave --thinking out or set it to off")
            }
        case .off:
            if form == "always" {
                throw CatalogError.thinking(
                    model: id,
                    why: "\(id) always thinks and refuses a request that turns thinking off: leave --thinking out")
            }
            guard thinksByDefault == true else { return ThinkingPlan(parameter: nil, maxTokens: maxTokens) }
            let moderate: Set<String> = ["low", "medium", "high"]
            if let effort, !moderate.contains(effort) {
                throw CatalogError.thinking(
                    model: id,
                    why: "\(id) turns thinking off only at effort low, medium or high, not \(effort): lower --effort "
                        + "or leave --thinking out")
            }
            return ThinkingPlan(parameter: ["type": "disabled"], maxTokens: maxTokens)
        }
    }
}

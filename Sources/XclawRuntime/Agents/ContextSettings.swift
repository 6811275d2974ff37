import XclawAgent
import XclawBase
import XclawMessages

/// The config file's `compaction` and `compact_at`: how long-lived agents keep their conversation within the context
/// window (`ContextPolicy`).
public enum ContextSettings {
    /// The policy for runs on `model`: `compaction = auto` (the default: the server's where the model takes it, else
    /// xclaw's summary), `server`, `summary` or `off`; `compact_at = N` input tokens (default 150,000, or three
    /// quarters of a smaller window).
    public static func policy(for model: ModelInfo, environment: [String: String] = XclawPaths.environment) throws
        -> ContextPolicy
    {
        let mode = ConfigValues.value("compaction", environment: environment)?.lowercased() ?? "auto"
        guard ["auto", "server", "summary", "off"].contains(mode) else {
            throw ContextSettingsError.badValue(
                key: "compaction", value: mode, expected: "auto, server, summary or off",
                path: ConfigValues.path(environment))
        }
        var trigger: Int?
        if let text = ConfigValues.value("compact_at", environment: environment) {
            guard let n = Int(text.replacingOccurrences(of: "_", with: "")), (1_000...10_000_000).contains(n) else {
                throw ContextSettingsError.badValue(
                    key: "compact_at", value: text, expected: "a number of input tokens from 1000 to 10000000",
                    path: ConfigValues.path(environment))
            }
            trigger = n
        }
        let policy = ContextPolicy.choose(mode: mode, trigger: trigger, model: model)
        if case .server(let at) = policy, at < ContextWindow.minimumServerTrigger {
            throw ContextSettingsError.badValue(
                key: "compact_at", value: String(at),
                expected: "at least \(ContextWindow.minimumServerTrigger) for the server's compaction (the API's "
                    + "minimum), or `compaction = summary` for a lower one",
                path: ConfigValues.path(environment))
        }
        return policy
    }
}

/// A context setting in the config file that xclaw cannot use.
public enum ContextSettingsError: ClassifiedError, Equatable {
    /// The value is not one the key takes.
    case badValue(key: String, value: String, expected: String, path: String)

    /// The user's file to fix.
    public var exitStatus: ExitStatus { .usage }

    /// The message, naming the line to fix.
    public var description: String {
        switch self {
        case .badValue(let key, let value, let expected, let path):
            return "\(path): \(key) is \"\(value)\"; it takes \(expected)"
        }
    }
}

import XclawBase
import XclawMessages

/// Why a Claude request failed, worded so the user knows what to do next; never contains the API key.
public enum ClientError: ClassifiedError, Sendable, Hashable {
    /// No key in the environment or the config file: nothing can be sent.
    case noAPIKey
    /// The config file holds a key but others can read it; refused like ssh refuses a readable private key.
    case insecureConfig(path: String, mode: Int)
    /// A config-file line is not `key = value`; the line number lets the user fix it.
    case badConfig(path: String, line: Int)
    /// HTTP 401: retrying cannot help, the key itself is wrong or revoked.
    case invalidAPIKey(requestID: String?)
    /// An error the API will repeat if asked again (400, 403, 404, 413, a non-retryable stream error).
    case api(status: Int, type: String, message: String, requestID: String?)
    /// Transient failures that outlasted every retry; `last` is the final reason.
    case retriesExhausted(last: String, attempts: Int, requestID: String?)
    /// The transfer failed below HTTP (curl's message and the host) and will not get better by retrying.
    case network(String)
    /// The server answered something that is not the Messages API (a proxy page, broken JSON).
    case badResponse(String)
    /// A success status with a web page or other non-API body: a captive portal or login page, or a base URL that
    /// points at a web server. Asking again gets the same page.
    case notTheAPI(String)
    /// A setting (`XCLAW_IDLE_TIMEOUT`, `retry_budget` …) with a value out of range.
    case badSetting(name: String, value: String, expected: String)

    /// What failed and what the user should do, in one message (stderr prints it as is).
    public var description: String {
        switch self {
        case .noAPIKey:
            return
                "no API key: set ANTHROPIC_API_KEY or put `api_key = ...` in $XDG_CONFIG_HOME/xclaw/config (default ~/.config/xclaw/config, mode 600)"
        case .insecureConfig(let path, let mode):
            return "\(path) holds an API key but is readable by others (mode \(String(mode, radix: 8))); "
                + "run `chmod 600 \(path)`"
        case .badConfig(let path, let line):
            return "\(path):\(line): expected `key = value` (e.g. `api_key = sk-ant-...`, `base_url = https://...`) "
                + "or a `#` comment; fix or remove that line"
        case .invalidAPIKey(let requestID):
            return "invalid API key (HTTP 401 authentication_error\(Self.rid(requestID))): check ANTHROPIC_API_KEY "
                + "or `api_key` in ~/.config/xclaw/config"
        case .api(let status, let type, let message, let requestID):
            let what =
                status == 200
                ? "the API reported \(type) during the stream: \(message)\(Self.ridParen(requestID))"
                : "API error (HTTP \(status) \(type)\(Self.rid(requestID))): \(message)"
            return what + "; " + Self.hint(status: status, type: type, message: message)
        case .retriesExhausted(let last, let attempts, let requestID):
            return "the API still failed after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(last)"
                + "\(Self.ridParen(requestID)); try again later (see https://status.anthropic.com)"
        case .network(let message):
            return "network error: \(message); check the connection, proxy settings and ANTHROPIC_BASE_URL"
        case .badResponse(let message):
            return "unexpected response from the API: \(message); try again, and check ANTHROPIC_BASE_URL if a "
                + "proxy is in between"
        case .notTheAPI(let message):
            return "the server answered a web page, not the Messages API (\(message)): a captive portal or login "
                + "page of this network, or ANTHROPIC_BASE_URL pointing at a web server; log in to the network or "
                + "fix the URL (not retried: it would answer the same)"
        case .badSetting(let name, let value, let expected):
            return "\(name) is \"\(value)\"; it must be \(expected)"
        }
    }

    /// Configuration mistakes are usage errors (2); everything the API or network did is 4.
    public var exitStatus: ExitStatus {
        switch self {
        case .noAPIKey, .insecureConfig, .badConfig, .badSetting: return .usage
        case .invalidAPIKey, .api, .retriesExhausted, .network, .badResponse, .notTheAPI: return .api
        }
    }

    /// The request-id the error carries, for logs and bug reports.
    public var requestID: String? {
        switch self {
        case .invalidAPIKey(let r), .api(_, _, _, let r), .retriesExhausted(_, _, let r): return r
        default: return nil
        }
    }

    private static func rid(_ requestID: String?) -> String { requestID.map { ", request-id \($0)" } ?? "" }
    private static func ridParen(_ requestID: String?) -> String { requestID.map { " (request-id \($0))" } ?? "" }

    private static func hint(status: Int, type: String, message: String) -> String {
        let said = message.lowercased()
        if status == 400 || type == "invalid_request_error" {
            // The parameters whose accepted form differs from model to model: say which setting to change.
            if said.contains("thinking") {
                return "the model does not take thinking in the form xclaw sent: run `xclaw models --refresh` so "
                    + "xclaw learns the model's thinking form, or set --thinking off (auto sends none)"
            }
            if said.contains("effort") {
                return "the model does not take this effort level: run `xclaw models --refresh`, or leave --effort out"
            }
            if said.contains("context_management") || said.contains("compact") {
                return "the model does not take server-side compaction: run `xclaw models --refresh`, or set "
                    + "`compaction = summary` in the config file"
            }
        }
        switch status {
        case 400: return "the request was rejected: check --model and the options, or report it with the request-id"
        case 403: return "this key may not use this model or feature: check the key's organisation and plan"
        case 404: return "the model id may be wrong: check --model"
        case 413:
            return
                "the request is too large (limit 32 MB): keep fewer screenshots (xclaw run --keep-screenshots 1) or give a shorter task"
        case 200 where type == "invalid_request_error":
            return "the request was rejected: check --model and the options"
        default: return "try again later; if it persists, report it with the request-id"
        }
    }
}

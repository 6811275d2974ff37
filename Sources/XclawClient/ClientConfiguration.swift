import Foundation
import XclawBase
import XclawMessages

#if canImport(Glibc)
    import Glibc
#endif

/// An API key (Anthropic's, Brave Search's), wrapped so that printing, logging or dumping it can never leak the secret.
public struct APIKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret itself; only the HTTP header builder should read it.
    public let value: String

    /// Wraps a key (surrounding whitespace, e.g. a pasted newline, would make every request fail with 401).
    public init(_ value: String) { self.value = value.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// Enough to tell two keys apart in an error report, never enough to use one: a known prefix and the last 4.
    public var description: String {
        let prefix = value.hasPrefix("sk-ant-") ? "sk-ant-" : ""
        let tail = value.count >= 24 ? String(value.suffix(4)) : ""
        return "\(prefix)…\(tail)(redacted)"
    }

    /// Same as `description`, so `debugPrint` and string interpolation in debuggers stay redacted.
    public var debugDescription: String { description }

    /// Redacted, so `dump()` and Mirror-based printers do not show the stored value.
    public var customMirror: Mirror { Mirror(self, children: ["value": description]) }
}

/// Where and how the Claude client connects; built once from the environment or the config file.
public struct ClientConfiguration: Sendable {
    /// The API root; overridable so proxies and the loopback test server work.
    public var baseURL: String {
        didSet { baseURL = Self.normalize(baseURL) }
    }
    /// The key sent as `x-api-key`.
    public var apiKey: APIKey
    /// Retries after the first attempt, so transient overloads do not end a long agent run.
    public var maxRetries: Int
    /// How long to wait for the TCP/TLS connection before counting the attempt as a network failure.
    public var connectTimeout: Duration
    /// No byte received for this long counts as a (retried) network failure; the API pings idle streams.
    public var idleTimeout: Duration
    /// The most one request may take with all its retries: attempts stop (and each attempt's silence is cut) once
    /// it is spent, so a server that never answers, or answers nonsense, ends the request in bounded time.
    public var retryBudget: Duration

    /// The default `idleTimeout`: the API sends a ping into a quiet stream every few seconds.
    public static let defaultIdleTimeout: Duration = .seconds(90)
    /// The default `retryBudget`: five retries with the SDK's backoff take about 15 s; the rest is for slow
    /// attempts.
    public static let defaultRetryBudget: Duration = .seconds(120)

    /// The default API root.
    public static let defaultBaseURL = "https://api.anthropic.com"

    /// Creates a configuration; a trailing slash on `baseURL` is dropped so paths join cleanly.
    public init(
        baseURL: String = ClientConfiguration.defaultBaseURL, apiKey: APIKey, maxRetries: Int = 5,
        connectTimeout: Duration = .seconds(10), idleTimeout: Duration = ClientConfiguration.defaultIdleTimeout,
        retryBudget: Duration = ClientConfiguration.defaultRetryBudget
    ) {
        self.baseURL = Self.normalize(baseURL)
        self.apiKey = apiKey
        self.maxRetries = max(0, maxRetries)
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.retryBudget = retryBudget
    }

    private static func normalize(_ url: String) -> String { normalizedRoot(url, fallback: defaultBaseURL) }

    /// ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from env; else the key from the config file
    /// (default ~/.config/xclaw/config, respecting XDG_CONFIG_HOME; lines `api_key = ...`, `base_url = ...`, `#` comments).
    /// Refuse a config file that is group/other-readable (mode & 0o077 != 0) like ssh does, with an error telling the user `chmod 600 PATH`.
    public static func load(
        environment: [String: String] = Invocation.current.environment,
        configPath: String? = nil
    ) throws -> ClientConfiguration {
        let envKey = environment["ANTHROPIC_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let envBase = environment["ANTHROPIC_BASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        let path = configPath ?? defaultConfigPath(environment: environment)
        let file = try ConfigFile.read(path: path)
        guard let key = envKey ?? file?.apiKey else { throw ClientError.noAPIKey }
        let idle = try seconds(environment["XCLAW_IDLE_TIMEOUT"], "XCLAW_IDLE_TIMEOUT", file?.idleTimeout, path)
        let budget = try seconds(environment["XCLAW_RETRY_BUDGET"], "XCLAW_RETRY_BUDGET", file?.retryBudget, path)
        return ClientConfiguration(
            baseURL: envBase ?? file?.baseURL ?? defaultBaseURL, apiKey: APIKey(key),
            idleTimeout: idle ?? defaultIdleTimeout, retryBudget: budget ?? defaultRetryBudget)
    }

    /// A time limit in seconds from the environment (first) or the config file: 1 to 3600, else a usage error.
    private static func seconds(_ env: String?, _ name: String, _ fromFile: String?, _ path: String) throws
        -> Duration?
    {
        guard let raw = env.flatMap({ $0.isEmpty ? nil : $0 }) ?? fromFile else { return nil }
        guard let value = Double(raw.trimmingCharacters(in: .whitespaces)), (1...3600).contains(value) else {
            let source =
                env.flatMap { $0.isEmpty ? nil : $0 } != nil ? name : "\(path): \(name.dropFirst(6).lowercased())"
            throw ClientError.badSetting(name: source, value: raw, expected: "a number of seconds from 1 to 3600")
        }
        return .milliseconds(Int(value * 1000))
    }

    /// `$XDG_CONFIG_HOME/xclaw/config`, else `~/.config/xclaw/config`.
    static func defaultConfigPath(environment: [String: String]) -> String {
        XclawPaths.configDirectory(environment) + "/config"
    }
}

/// An API root without surrounding blanks or trailing slashes, so paths join cleanly; `fallback` when blank.
func normalizedRoot(_ url: String, fallback: String) -> String {
    var s = url.trimmingCharacters(in: .whitespacesAndNewlines)
    while s.hasSuffix("/") { s.removeLast() }
    return s.isEmpty ? fallback : s
}

/// The parsed `key = value` config file; unknown keys are ignored so other parts of xclaw can add their own.
struct ConfigFile: Sendable, Hashable {
    var apiKey: String?
    var baseURL: String?
    /// `idle_timeout`, seconds (XCLAW_IDLE_TIMEOUT overrides it).
    var idleTimeout: String?
    /// `retry_budget`, seconds (XCLAW_RETRY_BUDGET overrides it).
    var retryBudget: String?
    /// `brave_api_key`, web_search's key (BRAVE_API_KEY overrides it): a secret like `api_key`.
    var braveAPIKey: String?
    /// `brave_base_url` (XCLAW_BRAVE_BASE_URL overrides it).
    var braveBaseURL: String?
    /// `fetch_allow_private` (XCLAW_FETCH_ALLOW_PRIVATE overrides it).
    var fetchAllowPrivate: String?

    /// Reads `path`; nil when it does not exist. A file holding a key must not be readable by group or others.
    static func read(path: String) throws -> ConfigFile? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let parsed = try parse(String(decoding: data, as: UTF8.self), path: path)
        let mode = Int(st.st_mode) & 0o777
        if parsed.apiKey != nil || parsed.braveAPIKey != nil, mode & 0o077 != 0 {
            throw ClientError.insecureConfig(path: path, mode: mode)
        }
        return parsed
    }

    /// Parses the text; a non-comment line without `=` is an error naming its line number.
    static func parse(_ text: String, path: String) throws -> ConfigFile {
        var file = ConfigFile()
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (i, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else { throw ClientError.badConfig(path: path, line: i + 1) }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces).lowercased()
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let q = value.first, q == "\"" || q == "'", value.last == q {
                value = String(value.dropFirst().dropLast())
            }
            guard !key.isEmpty else { throw ClientError.badConfig(path: path, line: i + 1) }
            switch key {
            case "api_key": file.apiKey = value.isEmpty ? nil : value
            case "base_url": file.baseURL = value.isEmpty ? nil : value
            case "idle_timeout": file.idleTimeout = value.isEmpty ? nil : value
            case "retry_budget": file.retryBudget = value.isEmpty ? nil : value
            case "brave_api_key": file.braveAPIKey = value.isEmpty ? nil : value
            case "brave_base_url": file.braveBaseURL = value.isEmpty ? nil : value
            case "fetch_allow_private": file.fetchAllowPrivate = value.isEmpty ? nil : value
            default: break
            }
        }
        return file
    }
}

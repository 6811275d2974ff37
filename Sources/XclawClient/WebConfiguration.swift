import Foundation
import XclawBase

/// How the web tools (fetch_url, web_search) reach the web: Brave Search's key and root, which private addresses a
/// fetched page may lead to, and the limits of a fetch. Built from the environment and the config file.
public struct WebConfiguration: Sendable {
    /// Brave Search's key, sent as `X-Subscription-Token`; nil: web_search answers how to set one.
    public var braveKey: APIKey?
    /// Brave Search's API root; overridable, as the Anthropic root is, so the loopback test server works.
    public var braveBaseURL: String {
        didSet { braveBaseURL = Self.normalize(braveBaseURL) }
    }
    /// Which private addresses fetch_url may connect to (default: none).
    public var privateAddresses: PrivateAddressPolicy
    /// How long a fetch may take, redirects included.
    public var fetchTimeout: Duration
    /// How long a search may stay silent before it counts as failed.
    public var searchTimeout: Duration
    /// How long to wait for a TCP/TLS connection.
    public var connectTimeout: Duration
    /// Body bytes a fetch keeps; a larger page is cut there (its text is cut long before).
    public var fetchByteLimit: Int
    /// Redirects a fetch follows.
    public var maxRedirects: Int

    /// Brave Search's API root.
    public static let defaultBraveBaseURL = "https://api.search.brave.com"

    /// A configuration; the defaults refuse private addresses and have no Brave key.
    public init(
        braveKey: APIKey? = nil, braveBaseURL: String = WebConfiguration.defaultBraveBaseURL,
        privateAddresses: PrivateAddressPolicy = .refuse, fetchTimeout: Duration = .seconds(20),
        searchTimeout: Duration = .seconds(20), connectTimeout: Duration = .seconds(10),
        fetchByteLimit: Int = 2 << 20, maxRedirects: Int = 5
    ) {
        self.braveKey = braveKey.flatMap { $0.value.isEmpty ? nil : $0 }
        self.braveBaseURL = Self.normalize(braveBaseURL)
        self.privateAddresses = privateAddresses
        self.fetchTimeout = fetchTimeout
        self.searchTimeout = searchTimeout
        self.connectTimeout = connectTimeout
        self.fetchByteLimit = max(1, fetchByteLimit)
        self.maxRedirects = max(0, maxRedirects)
    }

    /// BRAVE_API_KEY, XCLAW_BRAVE_BASE_URL and XCLAW_FETCH_ALLOW_PRIVATE from the environment, else `brave_api_key`,
    /// `brave_base_url` and `fetch_allow_private` from the config file (refused, like the Anthropic key's, when it
    /// holds a key and others can read it). A missing key is not an error here: web_search says how to set one.
    public static func load(
        environment: [String: String] = Invocation.current.environment, configPath: String? = nil
    ) throws -> WebConfiguration {
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let path = configPath ?? ClientConfiguration.defaultConfigPath(environment: environment)
        let file = try ConfigFile.read(path: path)
        var policy = PrivateAddressPolicy.refuse
        if let raw = env("XCLAW_FETCH_ALLOW_PRIVATE") ?? file?.fetchAllowPrivate {
            guard let parsed = PrivateAddressPolicy(parsing: raw) else {
                let name =
                    env("XCLAW_FETCH_ALLOW_PRIVATE") != nil
                    ? "XCLAW_FETCH_ALLOW_PRIVATE" : "\(path): fetch_allow_private"
                throw ClientError.badSetting(
                    name: name, value: raw,
                    expected: "true, false, or a comma-separated list of addresses and CIDR ranges (e.g. 10.1.2.3, "
                        + "192.168.1.0/24)")
            }
            policy = parsed
        }
        return WebConfiguration(
            braveKey: (env("BRAVE_API_KEY") ?? file?.braveAPIKey).map(APIKey.init),
            braveBaseURL: env("XCLAW_BRAVE_BASE_URL") ?? file?.braveBaseURL ?? defaultBraveBaseURL,
            privateAddresses: policy)
    }

    private static func normalize(_ url: String) -> String { normalizedRoot(url, fallback: defaultBraveBaseURL) }
}

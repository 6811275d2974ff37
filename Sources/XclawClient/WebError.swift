import XclawBase

/// Why a fetch or a search failed, worded for the model that asked (the tools hand it over as their error) and the
/// user reading the log; never contains the Brave key.
public enum WebError: ClassifiedError, Sendable, Hashable {
    /// web_search has no key to send.
    case noSearchKey
    /// Brave refused the key (401, 403).
    case searchKeyRefused(status: Int)
    /// Brave's rate limit (429); `retryAfter` is its hint in seconds, when it gave one.
    case rateLimited(retryAfter: String?)
    /// Any other status from Brave (5xx among them); `detail` is its message, when it sent one.
    case searchFailed(status: Int, detail: String?)
    /// The URL is not one fetch_url can fetch (not http/https, no host, malformed).
    case badURL(String, why: String)
    /// A connection would have reached a private address (loopback, the LAN, link-local, cloud metadata).
    case privateAddress(url: String, address: String)
    /// More redirects than allowed.
    case tooManyRedirects(url: String, limit: Int)
    /// The page answered a status other than 200.
    case status(Int, url: String)
    /// The fetch or search took longer than its limit.
    case timedOut(url: String, seconds: Int)
    /// The transfer failed below HTTP (DNS, connection, TLS): curl's message.
    case network(url: String, message: String)
    /// The answer was not what was asked for (a search reply that is not Brave's JSON).
    case badResponse(String)

    /// What went wrong and what to do instead.
    public var description: String {
        switch self {
        case .noSearchKey:
            return "web_search has no Brave Search API key: set BRAVE_API_KEY, or put `brave_api_key = ...` in "
                + "$XDG_CONFIG_HOME/xclaw/config (default ~/.config/xclaw/config, mode 600); get a key at "
                + "https://brave.com/search/api/"
        case .searchKeyRefused(let status):
            return "Brave Search refused the API key (HTTP \(status)): check BRAVE_API_KEY or `brave_api_key` in "
                + "~/.config/xclaw/config"
        case .rateLimited(let retryAfter):
            return "Brave Search rate-limited this key (HTTP 429)"
                + (retryAfter.map { ": wait \($0) s before searching again" }
                    ?? ": wait a moment before searching again")
                + ", and search less often"
        case .searchFailed(let status, let detail):
            let what = "Brave Search failed (HTTP \(status)\(detail.map { ": \($0)" } ?? ""))"
            return what + (status >= 500 ? "; try again later" : "; check the query")
        case .badURL(let url, let why):
            return "cannot fetch \(UntrustedText.quoted(url, limit: 200)): \(why)"
        case .privateAddress(let url, let address):
            return "refused to fetch \(UntrustedText.quoted(url, limit: 200)): it leads to \(address), a private "
                + "address (loopback, local network, link-local or cloud metadata), which fetch_url does not reach "
                + "unless xclaw's config allows it (fetch_allow_private)"
        case .tooManyRedirects(let url, let limit):
            return "\(UntrustedText.quoted(url, limit: 200)) redirected more than \(limit) times; fetch the final URL "
                + "directly, or give up on this page"
        case .status(let status, let url):
            return "\(UntrustedText.quoted(url, limit: 200)) answered HTTP \(status)\(Self.reason(status)); "
                + (status == 404 || status == 410
                    ? "the page does not exist: check the URL or search for it"
                    : status >= 500
                        ? "the server failed: try again later or use another source"
                        : "the page was not served: try another URL")
        case .timedOut(let url, let seconds):
            return "\(UntrustedText.quoted(url, limit: 200)) did not answer within \(seconds) s; try again later or "
                + "use another source"
        case .network(let url, let message):
            return "cannot reach \(UntrustedText.quoted(url, limit: 200)): \(message)"
        case .badResponse(let message):
            return "unexpected answer from Brave Search: \(message); check XCLAW_BRAVE_BASE_URL or brave_base_url"
        }
    }

    /// A missing or refused key is the user's to fix (2); what the network or a server did is 4.
    public var exitStatus: ExitStatus {
        switch self {
        case .noSearchKey, .searchKeyRefused, .badURL: return .usage
        case .rateLimited, .searchFailed, .privateAddress, .tooManyRedirects, .status, .timedOut, .network,
            .badResponse:
            return .api
        }
    }

    /// The reason phrase of the statuses pages commonly answer.
    private static func reason(_ status: Int) -> String {
        switch status {
        case 400: " Bad Request"
        case 401: " Unauthorized"
        case 403: " Forbidden"
        case 404: " Not Found"
        case 410: " Gone"
        case 429: " Too Many Requests"
        case 500: " Internal Server Error"
        case 502: " Bad Gateway"
        case 503: " Service Unavailable"
        case 504: " Gateway Timeout"
        default: ""
        }
    }
}

import Foundation
import Logging
import XclawBase

/// One web result of a search, as Brave sends it (its description may carry `<strong>` around matched words).
public struct SearchResult: Sendable, Hashable {
    /// The page's title.
    public var title: String
    /// The page's URL.
    public var url: String
    /// The snippet, HTML as Brave sends it.
    public var description: String
    /// How old the page is ("2 days ago", a date), when Brave says.
    public var age: String?

    /// A result.
    public init(title: String, url: String, description: String, age: String? = nil) {
        (self.title, self.url, self.description, self.age) = (title, url, description, age)
    }
}

/// The Brave Search web-search API (`GET /res/v1/web/search?q=…&count=…`, the key in `X-Subscription-Token`) over the
/// libcurl transport. The root comes from the configuration, so a test server stands in without the client knowing.
public struct BraveSearch: Sendable {
    /// The key, the root and the timeouts.
    public let configuration: WebConfiguration
    private let logger = Logger(label: "xclaw.web")

    /// Most results Brave returns for one query.
    public static let maxCount = 20

    /// A client under `configuration`.
    public init(configuration: WebConfiguration) { self.configuration = configuration }

    /// Brave's web results for `query`, at most `count` (1–20), in its order. Throws `WebError`: no key, a refused
    /// key, the rate limit, another status, a network failure or a reply that is not Brave's JSON.
    public func search(_ query: String, count: Int) async throws -> [SearchResult] {
        guard let key = configuration.braveKey else { throw WebError.noSearchKey }
        let url =
            configuration.braveBaseURL + "/res/v1/web/search?q=" + Self.queryEncoded(query)
            + "&count=\(min(max(1, count), Self.maxCount))"
        let request = HTTPRequest(
            url: url, headers: ["Accept: application/json", "X-Subscription-Token: \(key.value)"], body: Data(),
            connectTimeout: configuration.connectTimeout, idleTimeout: configuration.searchTimeout, get: true)
        guard let multi = CurlMulti() else { throw WebError.network(url: url, message: "libcurl could not start") }
        let outcome = await CurlTransport.perform(request, multi: multi) { _ in }
        if outcome.cancelled || Task.isCancelled { throw CancellationError() }
        logger.debug("web_search", metadata: ["status": "\(outcome.status)", "bytes": "\(outcome.body.count)"])
        // Whatever the server says back is untrusted: a key it echoes must not reach the model or a log.
        func clean(_ text: String) -> String { text.replacingOccurrences(of: key.value, with: "[redacted]") }
        if outcome.idleTimedOut {
            throw WebError.timedOut(
                url: configuration.braveBaseURL, seconds: Int(configuration.searchTimeout.components.seconds))
        }
        if outcome.curlCode != 0 {
            throw WebError.network(url: configuration.braveBaseURL, message: clean(outcome.curlMessage))
        }
        let body = Data(outcome.body)
        switch outcome.status {
        case 200: break
        case 401, 403: throw WebError.searchKeyRefused(status: outcome.status)
        case 429: throw WebError.rateLimited(retryAfter: outcome.headers["retry-after"].map(clean))
        default: throw WebError.searchFailed(status: outcome.status, detail: Self.detail(body).map(clean))
        }
        guard let root = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw WebError.badResponse("HTTP 200 without a JSON object (\(body.count) bytes)")
        }
        // No `web` section is Brave's way of saying nothing matched.
        let results = ((root["web"] as? [String: Any])?["results"] as? [[String: Any]]) ?? []
        return results.compactMap { item in
            guard let url = item["url"] as? String else { return nil }
            return SearchResult(
                title: item["title"] as? String ?? url, url: url, description: item["description"] as? String ?? "",
                age: item["age"] as? String ?? item["page_age"] as? String)
        }
    }

    /// Brave's error message (`{"error": {"detail": …}}`), cut short; nil when the body has none.
    static func detail(_ body: Data) -> String? {
        let root = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
        guard let detail = (root?["error"] as? [String: Any])?["detail"] as? String, !detail.isEmpty else { return nil }
        return String(detail.prefix(300))
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `text` percent-encoded for a query value (RFC 3986 unreserved characters kept, a space as %20).
    static func queryEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}

import CCurl
import Foundation
import Logging
import XclawBase

/// A page as fetch_url got it, before it is turned into text.
public struct WebPage: Sendable, Hashable {
    /// The URL of the last hop, after redirects.
    public var url: String
    /// The `Content-Type` header (lowercased), "" when absent.
    public var contentType: String
    /// The body, decompressed, at most the configuration's byte limit.
    public var body: [UInt8]
    /// The body was longer than the limit and was cut there.
    public var truncated: Bool

    /// A page (tests build them to check the text conversion alone).
    public init(url: String, contentType: String, body: [UInt8], truncated: Bool = false) {
        (self.url, self.contentType, self.body, self.truncated) = (url, contentType, body, truncated)
    }
}

/// GETs a page the model named, over the libcurl transport, within the configuration's limits. Every socket's address
/// is checked as curl opens it (after DNS, on every redirect, for every address a name has), so neither a name that
/// resolves to 127.0.0.1 nor a redirect to 169.254.169.254 nor a DNS answer that changes between two lookups reaches a
/// private address the configuration does not allow.
public struct WebFetcher: Sendable {
    /// Limits and the private-address policy.
    public let configuration: WebConfiguration
    private let logger = Logger(label: "xclaw.web")

    /// A fetcher under `configuration`.
    public init(configuration: WebConfiguration) { self.configuration = configuration }

    /// The page at `url` (http or https): its body when the final answer is 200, else a `WebError` saying what
    /// happened. Cancellation stops the transfer and throws `CancellationError`.
    public func fetch(_ url: String) async throws -> WebPage {
        let host = try Self.check(url)
        let policy = configuration.privateAddresses
        // An address literal is refused before anything connects, so the error is about the URL the model gave.
        if let literal = IPAddress(host), !policy.permits(literal) {
            throw WebError.privateAddress(url: url, address: literal.description)
        }
        var request = HTTPRequest(
            url: url,
            headers: [
                "User-Agent: Mozilla/5.0 (compatible; xclaw fetch_url)",
                "Accept: text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5",
            ], body: Data(), connectTimeout: configuration.connectTimeout, idleTimeout: configuration.fetchTimeout,
            get: true)
        request.page = PageRules(
            maxRedirects: configuration.maxRedirects, timeout: configuration.fetchTimeout,
            byteLimit: configuration.fetchByteLimit, permits: { policy.permits($0) })
        // A multi of its own: the pinned addresses and connections of one page are never reused by another.
        guard let multi = CurlMulti() else { throw WebError.network(url: url, message: "libcurl could not start") }
        let outcome = await CurlTransport.perform(request, multi: multi) { _ in }
        if outcome.cancelled || Task.isCancelled { throw CancellationError() }
        let last = outcome.effectiveURL ?? url
        logger.debug(
            "fetch_url", metadata: ["host": "\(host)", "status": "\(outcome.status)", "bytes": "\(outcome.body.count)"])
        if outcome.curlCode != CURLE_OK.rawValue {
            // Another address of the same name may have connected: a refusal only counts when nothing did.
            if let refused = outcome.refusedAddress {
                throw WebError.privateAddress(url: last, address: refused.description)
            }
            switch outcome.curlCode {
            case CURLE_OPERATION_TIMEDOUT.rawValue:
                throw WebError.timedOut(url: url, seconds: Int(configuration.fetchTimeout.components.seconds))
            case CURLE_TOO_MANY_REDIRECTS.rawValue:
                throw WebError.tooManyRedirects(url: url, limit: configuration.maxRedirects)
            case CURLE_UNSUPPORTED_PROTOCOL.rawValue:
                throw WebError.badURL(last, why: "it leads to a scheme other than http or https")
            default:
                throw WebError.network(url: last, message: outcome.curlMessage)
            }
        }
        if outcome.idleTimedOut {
            throw WebError.timedOut(url: url, seconds: Int(configuration.fetchTimeout.components.seconds))
        }
        guard outcome.status == 200 else { throw WebError.status(outcome.status, url: last) }
        return WebPage(
            url: last, contentType: outcome.headers["content-type"]?.lowercased() ?? "", body: outcome.body,
            truncated: outcome.truncated)
    }

    /// The host of `url` when it is an http or https URL with one; a `WebError.badURL` saying what is wrong otherwise.
    static func check(_ url: String) throws -> String {
        guard url.count <= 8192 else { throw WebError.badURL(url, why: "it is longer than 8192 characters") }
        guard !url.unicodeScalars.contains(where: { UntrustedText.isControl($0) || $0 == " " }) else {
            throw WebError.badURL(url, why: "it contains spaces or control characters; percent-encode them")
        }
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased() else {
            throw WebError.badURL(url, why: "it is not a URL; give a full http:// or https:// URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw WebError.badURL(url, why: "only http and https URLs can be fetched")
        }
        guard let host = parts.host, !host.isEmpty else { throw WebError.badURL(url, why: "it names no host") }
        return host
    }
}

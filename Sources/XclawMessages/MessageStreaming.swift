import Foundation
import XclawBase

/// Something that streams one Messages request: the libcurl client in production; tests use the same client
/// against the loopback server, so this seam exists only to keep the loop free of transport details.
public protocol MessageStreaming: Sendable {
    /// Sends one request, reporting stream events as they arrive, and returns the assembled reply.
    func send(_ request: MessagesRequest, onEvent: @escaping @Sendable (StreamEvent) -> Void) async throws
        -> ModelResponse
}

/// Progress of a streamed reply, delivered as bytes arrive so the user sees the model think and type live.
public enum StreamEvent: Sendable {
    /// The reply began (a retry starts a new one).
    case messageStart(id: String, model: String)
    /// More reply text.
    case textDelta(String)
    /// More extended-thinking text.
    case thinkingDelta(String)
    /// The model started a tool call; its input arrives with the finished response.
    case toolUseStart(id: String, name: String)
    /// A transient failure; the request is sent again after `notice.delay` and any streamed text starts over.
    case retrying(RetryNotice)
}

/// What the user sees before a retry, so a slow run under load explains itself instead of looking hung.
public struct RetryNotice: Sendable, Hashable, CustomStringConvertible {
    /// Which retry this is, 1-based.
    public var attempt: Int
    /// How many retries are allowed in total.
    public var maxRetries: Int
    /// How long the client waits before sending again.
    public var delay: Duration
    /// The failure being retried, e.g. "HTTP 529 overloaded_error: Overloaded" or "network: Connection refused".
    public var reason: String
    /// The failed attempt's `request-id`, for a support request.
    public var requestID: String?

    /// Creates a notice.
    public init(attempt: Int, maxRetries: Int, delay: Duration, reason: String, requestID: String?) {
        self.attempt = attempt
        self.maxRetries = maxRetries
        self.delay = delay
        self.reason = reason
        self.requestID = requestID
    }

    /// One line for stderr, e.g. "API overloaded (HTTP 529 overloaded_error: Overloaded, request-id req_1); retry 1/5 in 0.4 s".
    public var description: String {
        let lower = reason.lowercased()
        let headline: String
        if lower.contains("overloaded") || lower.contains("http 529") {
            headline = "API overloaded"
        } else if lower.contains("rate_limit") || lower.contains("http 429") {
            headline = "rate limited"
        } else if lower.hasPrefix("network") {
            headline = "network error"
        } else if lower.hasPrefix("stream") {
            headline = "stream interrupted"
        } else {
            headline = "API error"
        }
        let rid = requestID.map { ", request-id \($0)" } ?? ""
        return "\(headline) (\(reason)\(rid)); retry \(attempt)/\(maxRetries) in "
            + String(format: "%.1f", delay.milliseconds / 1000) + " s"
    }
}

import Foundation
import Logging
import Synchronization
import XclawMessages

/// The streaming Claude Messages client: in-process libcurl, live events, the official SDK's retry rules.
public final class ClaudeClient: Sendable {
    /// Where and how to connect.
    public let configuration: ClientConfiguration
    /// Idle multi handles; each keeps its connections open for the next request.
    private let pool = Mutex<[CurlMulti]>([])
    private let logger = Logger(label: "xclaw.client")

    /// Creates a client; nothing connects until the first `send`.
    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
    }

    /// Streams one request; returns the assembled reply. Cancelling the calling Task aborts the transfer within ~100 ms and throws CancellationError.
    public func send(
        _ request: MessagesRequest,
        onEvent: @escaping @Sendable (StreamEvent) -> Void = { _ in }
    ) async throws -> ModelResponse {
        let http = HTTPRequest(
            url: configuration.baseURL + "/v1/messages", headers: headers(for: request),
            body: request.bodyData, connectTimeout: configuration.connectTimeout,
            idleTimeout: configuration.idleTimeout)
        var attempt = 0
        let clock = ContinuousClock()
        let started = clock.now
        while true {
            try Task.checkCancellation()
            attempt += 1
            // An attempt may be silent for the idle timeout, but not past the budget of the whole request.
            var http = http
            let left = configuration.retryBudget - (clock.now - started)
            http.idleTimeout = max(.seconds(1), min(configuration.idleTimeout, left))
            logger.debug("POST /v1/messages", metadata: ["attempt": "\(attempt)", "bytes": "\(http.body.count)"])
            guard let multi = pool.withLock({ $0.popLast() }) ?? CurlMulti() else {
                throw ClientError.network("libcurl could not be initialised")
            }
            let outcome = await CurlTransport.perform(http, multi: multi, onEvent: onEvent)
            pool.withLock { if $0.count < 4 { $0.append(multi) } }
            if outcome.cancelled { throw CancellationError() }
            logger.debug(
                "response",
                metadata: [
                    "status": "\(outcome.status)", "request-id": "\(outcome.headers["request-id"] ?? "-")",
                ])
            switch classify(outcome, url: http.url) {
            case .success(let response):
                return response
            case .failure(let error):
                throw error
            case .retry(let reason, let headers, let requestID):
                guard attempt <= configuration.maxRetries else {
                    throw ClientError.retriesExhausted(last: reason, attempts: attempt, requestID: requestID)
                }
                let delay = RetryPolicy.delay(attempt: attempt, headers: headers, random: Double.random(in: 0..<1))
                let spent = clock.now - started
                guard spent + delay < configuration.retryBudget else {
                    let budget = Int(RetryPolicy.seconds(configuration.retryBudget).rounded())
                    throw ClientError.retriesExhausted(
                        last: reason + "; the retry budget of \(budget) s (XCLAW_RETRY_BUDGET) is spent",
                        attempts: attempt, requestID: requestID)
                }
                onEvent(
                    .retrying(
                        RetryNotice(
                            attempt: attempt, maxRetries: configuration.maxRetries, delay: delay,
                            reason: reason, requestID: requestID)))
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Every model the API serves this key (`GET /v1/models`, all pages), as the API describes them: id, display
    /// name, `max_input_tokens`, `max_tokens` and the `capabilities` tree. One attempt per page; a failure throws the
    /// API's error as `send` does.
    public func listModels() async throws -> [JSONValue] {
        var models: [JSONValue] = []
        var after: String?
        for _ in 0..<100 {  // pages; the API has far fewer
            var url = configuration.baseURL + "/v1/models?limit=100"
            if let after {
                var allowed = CharacterSet.urlQueryAllowed
                allowed.remove(charactersIn: "&=+#")
                url += "&after_id=" + (after.addingPercentEncoding(withAllowedCharacters: allowed) ?? after)
            }
            let http = HTTPRequest(
                url: url,
                headers: [
                    "x-api-key: " + Self.headerSafe(configuration.apiKey.value), "anthropic-version: 2023-06-01",
                    "accept: application/json", "user-agent: xclaw/0.1",
                ], body: Data(), connectTimeout: configuration.connectTimeout,
                idleTimeout: configuration.idleTimeout, get: true)
            logger.debug("GET /v1/models", metadata: ["after": "\(after ?? "-")"])
            guard let multi = pool.withLock({ $0.popLast() }) ?? CurlMulti() else {
                throw ClientError.network("libcurl could not be initialised")
            }
            let outcome = await CurlTransport.perform(http, multi: multi, onEvent: { _ in })
            pool.withLock { if $0.count < 4 { $0.append(multi) } }
            if outcome.cancelled { throw CancellationError() }
            guard outcome.status == 200, let page = try? JSONValue.parse(Data(outcome.body)),
                let data = page["data"]?.array
            else {
                switch classify(outcome, url: http.url) {
                case .failure(let error): throw error
                case .retry(let reason, _, let requestID):
                    throw ClientError.retriesExhausted(last: reason, attempts: 1, requestID: requestID)
                case .success:
                    throw ClientError.badResponse("GET /v1/models answered without a list of models")
                }
            }
            models += data
            guard page["has_more"]?.bool == true, let last = page["last_id"]?.string else { return models }
            after = last
        }
        return models
    }

    /// The request headers; `Expect:` (empty) stops curl from waiting for a 100-continue on large bodies.
    func headers(for request: MessagesRequest) -> [String] {
        var h = [
            "x-api-key: " + Self.headerSafe(configuration.apiKey.value),
            "anthropic-version: 2023-06-01",
            "content-type: application/json",
            "accept: text/event-stream",
            "user-agent: xclaw/0.1",
            "Expect:",
        ]
        let betas = request.betas.map(Self.headerSafe).filter { !$0.isEmpty }
        if !betas.isEmpty { h.append("anthropic-beta: " + betas.joined(separator: ",")) }
        return h
    }

    private static func headerSafe(_ s: String) -> String {
        String(s.unicodeScalars.filter { $0 != "\r" && $0 != "\n" })
    }

    /// What one attempt amounts to.
    enum Decision {
        case success(ModelResponse)
        case failure(any Error)
        case retry(reason: String, headers: [String: String], requestID: String?)
    }

    /// Success, retry or failure, by the API's error table and the SDK's retry rules.
    func classify(_ outcome: TransferOutcome, url: String) -> Decision {
        let headers = outcome.headers
        let rid = headers["request-id"] ?? headers["x-request-id"]
        let ridSuffix = rid.map { " (request-id \($0))" } ?? ""

        if let error = outcome.streamError {
            switch error {
            case let e as RetryableStreamError:
                return .retry(reason: redact("stream error \(e.type): \(e.message)"), headers: [:], requestID: rid)
            case ClientError.api(let status, let type, let message, let r):
                return .failure(
                    ClientError.api(
                        status: status, type: type, message: redact(message),
                        requestID: r ?? rid))
            case ClientError.badResponse(let message):
                return .failure(ClientError.badResponse(redact(message) + ridSuffix))
            default:
                return .failure(error)
            }
        }
        if outcome.streamed, outcome.assembler.isComplete {
            do { return .success(try outcome.assembler.response(requestID: rid)) } catch { return .failure(error) }
        }
        let host = URLComponents(string: url)?.host ?? url
        if outcome.idleTimedOut {
            let seconds = Int(RetryPolicy.seconds(configuration.idleTimeout).rounded())
            return .retry(
                reason: "network: no data received for \(seconds) s from \(host)", headers: [:],
                requestID: rid)
        }
        if outcome.status >= 400 {
            return httpError(status: outcome.status, headers: headers, body: outcome.body, requestID: rid)
        }
        if outcome.curlCode != 0 {
            let message = redact(outcome.curlMessage) + " (\(host))"
            if CurlTransport.isPermanent(curlCode: outcome.curlCode) { return .failure(ClientError.network(message)) }
            return .retry(reason: "network: " + message, headers: [:], requestID: rid)
        }
        if outcome.streamed {
            return .retry(reason: "stream ended early (no message_stop)", headers: [:], requestID: rid)
        }
        if (200..<300).contains(outcome.status) {
            return plainBody(outcome, requestID: rid)
        }
        if let page = Self.webPage(outcome) {
            return .failure(ClientError.notTheAPI("HTTP \(outcome.status) from \(host): " + page))
        }
        return .failure(
            ClientError.badResponse(
                "HTTP \(outcome.status) from \(host)\(ridSuffix); expected a "
                    + "Messages API reply"))
    }

    /// A short description when the body is a web page (HTML), which no retry turns into an API reply.
    static func webPage(_ outcome: TransferOutcome) -> String? {
        let type = outcome.headers["content-type"]?.lowercased() ?? ""
        let start = String(decoding: outcome.body.prefix(512), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard type.contains("text/html") || start.hasPrefix("<!doctype html") || start.hasPrefix("<html") else {
            return nil
        }
        let text = String(decoding: outcome.body.prefix(4096), as: UTF8.self)
        if let open = text.range(of: "<title>", options: .caseInsensitive),
            let close = text.range(of: "</title>", options: .caseInsensitive, range: open.upperBound..<text.endIndex)
        {
            let title = text[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
            return "a page titled \"\(title.prefix(80))\""
        }
        let words = start.replacingOccurrences(of: "<[^>]*>", with: " ", options: .regularExpression)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return "an HTML page" + (words.isEmpty ? "" : ": \"\(words.prefix(80))\"")
    }

    /// A 2xx that was not SSE: a proxy may return the whole Message as JSON, or SSE under another content type.
    private func plainBody(_ outcome: TransferOutcome, requestID: String?) -> Decision {
        let ridSuffix = requestID.map { " (request-id \($0))" } ?? ""
        let type = outcome.headers["content-type"] ?? "no content-type"
        let text = String(decoding: outcome.body, as: UTF8.self)
        let host = URLComponents(string: configuration.baseURL)?.host ?? configuration.baseURL
        if let page = Self.webPage(outcome) {
            return .failure(ClientError.notTheAPI("HTTP \(outcome.status) from \(host): " + page))
        }
        if let json = try? JSONValue.parse(Data(outcome.body)), case .object = json {
            if json["type"]?.string == "error" {
                return httpError(
                    status: outcome.status, headers: outcome.headers, body: outcome.body,
                    requestID: requestID)
            }
            guard json["content"]?.array != nil else {
                return .failure(
                    ClientError.badResponse(
                        "a JSON body that is not a Message\(ridSuffix): "
                            + redact(String(text.prefix(200)))))
            }
            return .success(
                ModelResponse(
                    id: json["id"]?.string ?? "", model: json["model"]?.string ?? "",
                    message: Message(
                        role: .assistant, content: (json["content"]?.array ?? []).map(ContentBlock.init(json:))),
                    stopReason: json["stop_reason"]?.string.map(StopReason.init), usage: Usage(json: json["usage"]),
                    requestID: requestID ?? json["request_id"]?.string))
        }
        if text.contains("event:") || text.hasPrefix("data:") {
            var parser = SSEParser()
            var assembler = StreamAssembler()
            do {
                for event in parser.feed(outcome.body) + parser.finish() { _ = try assembler.apply(event) }
                if assembler.isComplete { return .success(try assembler.response(requestID: requestID)) }
            } catch {
                var failed = outcome
                failed.streamError = error
                failed.streamed = true
                return classify(failed, url: configuration.baseURL)
            }
            return .retry(reason: "stream ended early (no message_stop)", headers: [:], requestID: requestID)
        }
        // Broken JSON or a body cut short may be a proxy's hiccup: retried, within the budget.
        return .retry(
            reason: "HTTP \(outcome.status) with \(type) that is not a Messages API reply: "
                + redact(String(text.prefix(120))), headers: [:], requestID: requestID)
    }

    /// An HTTP error body `{"type":"error","error":{"type","message"},"request_id"}`, or whatever a proxy sent.
    private func httpError(status: Int, headers: [String: String], body: [UInt8], requestID: String?) -> Decision {
        let json = try? JSONValue.parse(Data(body))
        let rid = requestID ?? json?["request_id"]?.string
        let type = json?["error"]?["type"]?.string ?? Self.fallbackType(status: status)
        var message = json?["error"]?["message"]?.string ?? ""
        if message.isEmpty {
            let text = String(decoding: body, as: UTF8.self)
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
            message = text.isEmpty ? "empty body" : String(text.prefix(200))
        }
        message = redact(message)
        if status == 401 { return .failure(ClientError.invalidAPIKey(requestID: rid)) }
        if status == 200 {  // an error object in a 200 JSON body (some proxies)
            if ["overloaded_error", "api_error", "rate_limit_error"].contains(type) {
                return .retry(reason: "stream error \(type): \(message)", headers: headers, requestID: rid)
            }
            return .failure(ClientError.api(status: status, type: type, message: message, requestID: rid))
        }
        if RetryPolicy.shouldRetry(status: status, headers: headers) {
            return .retry(reason: "HTTP \(status) \(type): \(message)", headers: headers, requestID: rid)
        }
        return .failure(ClientError.api(status: status, type: type, message: message, requestID: rid))
    }

    private static func fallbackType(status: Int) -> String {
        switch status {
        case 400: return "invalid_request_error"
        case 401: return "authentication_error"
        case 403: return "permission_error"
        case 404: return "not_found_error"
        case 413: return "request_too_large"
        case 429: return "rate_limit_error"
        case 529: return "overloaded_error"
        case 500...: return "api_error"
        default: return "http_error"
        }
    }

    /// Removes the key from text that came from the network (an echoing proxy must not make us print it).
    private func redact(_ text: String) -> String {
        let key = configuration.apiKey.value
        guard key.count >= 8 else { return text }
        return text.replacingOccurrences(of: key, with: configuration.apiKey.description)
    }
}

/// The loop streams through this seam, so it never links libcurl.
extension ClaudeClient: MessageStreaming {}

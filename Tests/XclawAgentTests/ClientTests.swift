import Foundation
import Synchronization
import XCTest
import XclawAgentTesting
import XclawBase
import XclawMockAPI

@testable import XclawAgent
@testable import XclawClient
@testable import XclawMessages

/// The libcurl client against the loopback Messages API: streaming at awkward splits, retries, and every error path.
final class ClientTests: XCTestCase {
    static let key = ("sk-" + "ant-test-FAKE-SECRET")

    func client(_ server: MockMessagesServer, retries: Int = 5) -> ClaudeClient {
        ClaudeClient(
            configuration: ClientConfiguration(
                baseURL: server.baseURL, apiKey: APIKey(Self.key),
                maxRetries: retries))
    }

    static let request = MessagesRequest(
        model: "claude-sonnet-4-6", maxTokens: 100, system: "sys",
        messages: [.user("hi")], betas: ["computer-use-2025-11-24"])

    static let blocks: [MockBlock] = [
        .thinking("first ✓ thoughts", signature: "sig/+=="),
        .text("Héllo 世界 🎉, clicking now."),
        .toolUse(
            id: "toolu_1", name: "computer",
            input: "{\"action\": \"left_click\", \"coordinate\": [640, 400], \"text\": \"ünïcødé 世界\"}"),
        .toolUse(id: "toolu_2", name: "capture_screen", input: ""),
    ]

    func checkAssembled(_ response: ModelResponse, file: StaticString = #filePath, line: UInt = #line) {
        let content = response.message.content
        XCTAssertEqual(content.count, 4, file: file, line: line)
        XCTAssertEqual(
            content.first, .thinking(thinking: "first ✓ thoughts", signature: "sig/+=="), file: file, line: line)
        XCTAssertEqual(response.message.text, "Héllo 世界 🎉, clicking now.", file: file, line: line)
        let uses = response.message.toolUses
        XCTAssertEqual(uses.map(\.id), ["toolu_1", "toolu_2"], file: file, line: line)
        XCTAssertEqual(
            uses.first?.input,
            ["action": "left_click", "coordinate": [640, 400], "text": "ünïcødé 世界"], file: file, line: line)
        XCTAssertEqual(uses.last?.input, .object([:]), "empty input_json means {}", file: file, line: line)
        XCTAssertEqual(response.stopReason, .toolUse, file: file, line: line)
        XCTAssertEqual(response.usage.outputTokens, 77, file: file, line: line)
        XCTAssertEqual(response.usage.inputTokens, 1234, file: file, line: line)
    }

    func testStreamSplitAtEveryByteAndAtRandomIsAssembledExactly() async throws {
        var replies: [MockReply] = []
        for chunking in [Chunking.whole, .every(1), .every(5), .random(seed: 7, max: 13), .random(seed: 42, max: 3)] {
            var stream = MockStream.turn(
                blocks: Self.blocks, stopReason: "tool_use",
                usage: MockUsage(input: 1234, output: 77), jsonFragments: 9, chunking: chunking)
            // Still separate writes, but a 2 KB turn byte by byte stays fast.
            stream.interChunkDelay = .microseconds(50)
            replies.append(.stream(stream))
        }
        let server = try MockMessagesServer(replies: replies)
        defer { server.stop() }
        let c = client(server)
        for _ in replies {
            let deltas = TextSink()
            let response = try await c.send(Self.request) { event in
                if case .textDelta(let t) = event { deltas.append(t) }
            }
            checkAssembled(response)
            XCTAssertEqual(deltas.text, "Héllo 世界 🎉, clicking now.")
            XCTAssertEqual(response.requestID?.hasPrefix("req_mock_"), true)
        }
        let headers = server.requests[0].headers
        XCTAssertEqual(headers["x-api-key"], Self.key)
        XCTAssertEqual(headers["anthropic-version"], "2023-06-01")
        XCTAssertEqual(headers["anthropic-beta"], "computer-use-2025-11-24")
        XCTAssertEqual(headers["content-type"], "application/json")
    }

    func testOddFramingCommentsMultilineDataAndUnknownEventsAreHandled() async throws {
        var frames: [SSEFrame] = MockStream.turn(blocks: [.text("ok")]).frames
        frames.insert(.comment(" keep-alive"), at: 1)
        frames.insert(.event(name: "future_event", data: "{\"type\":\"future_event\"}"), at: 2)
        let server = try MockMessagesServer(replies: [.stream(MockStream(frames: frames, chunking: .every(2)))])
        defer { server.stop() }
        let response = try await client(server).send(Self.request) { _ in }
        XCTAssertEqual(response.message.text, "ok")
    }

    func testOverloadedTwiceThenSuccessRetriesAndTellsTheUser() async throws {
        let server = try MockMessagesServer(replies: [
            .error(status: 529, type: "overloaded_error", message: "Overloaded", headers: ["retry-after-ms": "20"]),
            .error(status: 529, type: "overloaded_error", message: "Overloaded", headers: ["retry-after-ms": "20"]),
            .stream(.turn(blocks: Self.blocks, stopReason: "tool_use", usage: MockUsage(input: 1234, output: 77))),
        ])
        defer { server.stop() }
        let notices = NoticeSink()
        let response = try await client(server).send(Self.request) { event in
            if case .retrying(let n) = event { notices.append(n) }
        }
        checkAssembled(response)
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(notices.all.map(\.attempt), [1, 2])
        XCTAssertTrue(notices.all[0].description.contains("529"), notices.all[0].description)
        XCTAssertTrue(notices.all[0].description.contains("req_mock_"), "names the request id")
        XCTAssertEqual(notices.all[0].delay, .milliseconds(20), "retry-after-ms honoured")
    }

    func testMidStreamOverloadedErrorIsRetried() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [.text("partial "), .text("never")], midStreamError: ("overloaded_error", "Overloaded", 1),
                    chunking: .every(11))),
            .stream(.turn(blocks: [.text("complete")])),
        ])
        defer { server.stop() }
        let notices = NoticeSink()
        let response = try await client(server).send(Self.request) { event in
            if case .retrying(let n) = event { notices.append(n) }
        }
        XCTAssertEqual(response.message.text, "complete")
        XCTAssertEqual(notices.all.count, 1)
        XCTAssertTrue(notices.all[0].reason.contains("overloaded_error"), notices.all[0].reason)
    }

    func testRateLimitHonoursRetryAfterSeconds() async throws {
        let server = try MockMessagesServer(replies: [
            .error(
                status: 429, type: "rate_limit_error", message: "Number of requests has exceeded your rate limit",
                headers: ["retry-after": "1"]),
            .stream(.turn(blocks: [.text("ok")])),
        ])
        defer { server.stop() }
        let notices = NoticeSink()
        let response = try await client(server).send(Self.request) { event in
            if case .retrying(let n) = event { notices.append(n) }
        }
        XCTAssertEqual(response.message.text, "ok")
        XCTAssertEqual(notices.all.map(\.delay), [.seconds(1)])
    }

    func testInvalidKeyFailsAtOnceWithoutShowingTheKey() async throws {
        let server = try MockMessagesServer(replies: [
            .error(status: 401, type: "authentication_error", message: "invalid x-api-key")
        ])
        defer { server.stop() }
        do {
            _ = try await client(server).send(Self.request) { _ in }
            XCTFail("expected an error")
        } catch let error as ClientError {
            XCTAssertEqual(error.exitStatus, .api)
            XCTAssertTrue("\(error)".lowercased().contains("invalid api key"), "\(error)")
            XCTAssertTrue("\(error)".contains("req_mock_"), "\(error)")
            XCTAssertFalse("\(error)".contains("SECRET"), "\(error)")
            XCTAssertFalse(String(reflecting: error).contains("SECRET"))
        }
        XCTAssertEqual(server.requests.count, 1, "401 is not retried")
    }

    func testClientErrorsShowTheAPIMessageAndAreNotRetried() async throws {
        let cases: [(Int, String, String, String)] = [
            (400, "invalid_request_error", "messages: field required", "messages: field required"),
            (403, "permission_error", "no access to this model", "no access"),
            (404, "not_found_error", "model: claude-nope", "model id"),
            (413, "request_too_large", "Request exceeds the maximum allowed number of bytes", "screenshots"),
        ]
        for (status, type, message, expected) in cases {
            let server = try MockMessagesServer(replies: [.error(status: status, type: type, message: message)])
            defer { server.stop() }
            do {
                _ = try await client(server).send(Self.request) { _ in }
                XCTFail("\(status): expected an error")
            } catch let error as ClientError {
                XCTAssertTrue("\(error)".contains(expected), "\(status): \(error)")
                XCTAssertTrue("\(error)".contains("\(status)"), "\(status): \(error)")
                XCTAssertTrue("\(error)".contains("req_mock_"), "\(status): \(error)")
                XCTAssertEqual(error.exitStatus, .api)
            }
            XCTAssertEqual(server.requests.count, 1, "\(status) is not retried")
        }
    }

    func testRetriesGiveUpAfterFiveAndShouldRetryFalseIsObeyed() async throws {
        let overloaded = MockReply.error(
            status: 529, type: "overloaded_error", message: "Overloaded",
            headers: ["retry-after-ms": "5"])
        let server = try MockMessagesServer(replies: Array(repeating: overloaded, count: 6))
        defer { server.stop() }
        do {
            _ = try await client(server).send(Self.request) { _ in }
            XCTFail("expected an error")
        } catch let error as ClientError {
            XCTAssertTrue("\(error)".contains("529"), "\(error)")
        }
        XCTAssertEqual(server.requests.count, 6, "one try and five retries")

        let refusing = try MockMessagesServer(replies: [
            .error(status: 529, type: "overloaded_error", message: "Overloaded", headers: ["x-should-retry": "false"])
        ])
        defer { refusing.stop() }
        do { _ = try await client(refusing).send(Self.request) { _ in }; XCTFail("expected an error") } catch {}
        XCTAssertEqual(refusing.requests.count, 1, "x-should-retry: false is obeyed")

        let forcing = try MockMessagesServer(replies: [
            .error(
                status: 400, type: "invalid_request_error", message: "transient",
                headers: ["x-should-retry": "true", "retry-after-ms": "5"]),
            .stream(.turn(blocks: [.text("ok")])),
        ])
        defer { forcing.stop() }
        let response = try await client(forcing).send(Self.request) { _ in }
        XCTAssertEqual(response.message.text, "ok", "x-should-retry: true forces a retry")
    }

    func testNetworkFailureIsRetriedThenReportedClearly() async throws {
        let server = try MockMessagesServer(replies: [.disconnect, .stream(.turn(blocks: [.text("back")]))])
        defer { server.stop() }
        let response = try await client(server).send(Self.request) { _ in }
        XCTAssertEqual(response.message.text, "back")

        // Nothing listens on the port of a stopped server.
        let gone = try MockMessagesServer(replies: [])
        let url = gone.baseURL
        gone.stop()
        let c = ClaudeClient(configuration: ClientConfiguration(baseURL: url, apiKey: APIKey(Self.key), maxRetries: 1))
        do {
            _ = try await c.send(Self.request) { _ in }
            XCTFail("expected an error")
        } catch let error as ClientError {
            XCTAssertEqual(error.exitStatus, .api)
            XCTAssertTrue("\(error)".contains("127.0.0.1"), "names the host: \(error)")
        }
    }

    func testCancellingAbortsTheTransferAtOnce() async throws {
        let server = try MockMessagesServer(replies: [.hang])
        defer { server.stop() }
        let c = client(server)
        let request = Self.request
        let task = Task { () async throws -> ModelResponse in try await c.send(request, onEvent: { _ in }) }
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(10)))
        try await Task.sleep(for: .milliseconds(100))  // kept: the cancel comes during the transfer, not as it starts
        let cancelled = Date()
        task.cancel()
        do { _ = try await task.value; XCTFail("expected cancellation") } catch is CancellationError {}
        // The server saw the connection close (the transfer was aborted, not left running).
        XCTAssertTrue(server.waitForDisconnects(1, timeout: .seconds(10)))
        XCTAssertGreaterThanOrEqual(server.disconnects.first ?? .distantPast, cancelled.addingTimeInterval(-0.001))
    }

    func testConfigFileReadableByOthersIsRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-config-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("config").path
        try "api_key = sk-from-file-SECRET\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        XCTAssertThrowsError(try ClientConfiguration.load(environment: ["HOME": dir.path], configPath: path)) { error in
            XCTAssertTrue("\(error)".contains("chmod 600"), "\(error)")
            XCTAssertFalse("\(error)".contains("SECRET"))
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let config = try ClientConfiguration.load(environment: ["HOME": dir.path], configPath: path)
        XCTAssertEqual(config.apiKey.value, "sk-from-file-SECRET")
        XCTAssertFalse("\(config.apiKey)".contains("SECRET"))
        XCTAssertThrowsError(
            try ClientConfiguration.load(
                environment: ["HOME": dir.path],
                configPath: dir.appendingPathComponent("none").path))
    }
}

/// Retry notices collected across threads.
final class NoticeSink: Sendable {
    private let notices = Mutex<[RetryNotice]>([])
    func append(_ n: RetryNotice) { notices.withLock { $0.append(n) } }
    var all: [RetryNotice] { notices.withLock { $0 } }
}

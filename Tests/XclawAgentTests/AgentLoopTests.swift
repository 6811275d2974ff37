import Foundation
import XCTest
import XclawAgentTesting
import XclawBase
import XclawMockAPI
import XclawTimeTesting

@testable import XclawAgent
@testable import XclawClient
@testable import XclawMessages

/// The agent loop against the loopback Messages API: what xclaw sends, step after step.
final class AgentLoopTests: XCTestCase {
    var model: ModelInfo!

    override func setUpWithError() throws {
        model = try ModelCatalog.load(overlay: "/nonexistent").model("claude-sonnet-4-6")
    }

    func client(_ server: MockMessagesServer, retries: Int = 5) -> ClaudeClient {
        ClaudeClient(
            configuration: ClientConfiguration(
                baseURL: server.baseURL, apiKey: APIKey("sk-test-secret-key-123"),
                maxRetries: retries))
    }

    func runner(_ server: MockMessagesServer, maxSteps: Int = 10, tools: [any AgentTool] = [EchoTool()]) -> AgentRunner
    {
        AgentRunner(
            client: client(server), registry: ToolRegistry(tools),
            options: RunOptions(model: model, system: "You are a test.", maxSteps: maxSteps))
    }

    static func echo(_ id: String, _ text: String, image: Bool = false, sleep: Int = 0) -> MockBlock {
        .toolUse(id: id, name: "echo", input: "{\"text\": \"\(text)\", \"image\": \(image), \"sleep_ms\": \(sleep)}")
    }

    /// The tool_result blocks of a recorded request's last message, as (id, is_error, text).
    static func lastResults(_ request: RecordedRequest) -> [(String, Bool, String)] {
        let body = (try? JSONValue.parse(request.body)) ?? .null
        let last = body["messages"]?.array?.last
        return (last?["content"]?.array ?? []).compactMap { block in
            guard block["type"]?.string == "tool_result" else { return nil }
            let text = (block["content"]?.array ?? []).compactMap { $0["text"]?.string }.joined(separator: " ")
            return (block["tool_use_id"]?.string ?? "", block["is_error"]?.bool ?? false, text)
        }
    }

    func testMultiStepRunAnswersEveryToolUseWithItsIdAndStreamsText() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [.text("Let me echo."), Self.echo("toolu_a", "one"), Self.echo("toolu_b", "two")],
                    stopReason: "tool_use", chunking: .every(7))),
            .stream(.turn(blocks: [.toolUse(id: "toolu_c", name: "nope", input: "{}")], stopReason: "tool_use")),
            .stream(
                .turn(blocks: [.toolUse(id: "toolu_d", name: "echo", input: "{\"text\": 5}")], stopReason: "tool_use")),
            .stream(.turn(blocks: [.text("All done: héllo 世界 🎉")], stopReason: "end_turn", chunking: .every(2))),
        ])
        defer { server.stop() }
        let streamed = TextSink()
        let result = await runner(server).run(
            task: "echo twice", context: ToolContext(),
            observer: RunObserver(text: { streamed.append($0) }))
        XCTAssertEqual(result.outcome, .completed)
        XCTAssertEqual(result.finalText, "All done: héllo 世界 🎉")
        XCTAssertEqual(streamed.text, "Let me echo.All done: héllo 世界 🎉")
        let requests = server.requests
        XCTAssertEqual(requests.count, 4)
        let r1 = Self.lastResults(requests[1])
        XCTAssertEqual(r1.map(\.0), ["toolu_a", "toolu_b"])
        XCTAssertEqual(r1.map(\.2), ["echo: one", "echo: two"])
        XCTAssertEqual(r1.map(\.1), [false, false])
        let r2 = Self.lastResults(requests[2])
        XCTAssertEqual(r2.map(\.0), ["toolu_c"])
        XCTAssertTrue(r2[0].1)
        XCTAssertTrue(r2[0].2.contains("Unknown tool \"nope\""), r2[0].2)
        XCTAssertTrue(r2[0].2.contains("echo"), "lists the available tools: \(r2[0].2)")
        let r3 = Self.lastResults(requests[3])
        XCTAssertTrue(r3[0].1)
        XCTAssertTrue(r3[0].2.contains("input.text must be a string"), r3[0].2)
        XCTAssertEqual(ConversationCheck.unansweredToolUses(result.messages), [])
        // Headers and body as the API wants them; the key only in its header.
        let first = requests[0]
        XCTAssertEqual(first.headers["x-api-key"], "sk-test-secret-key-123")
        XCTAssertEqual(first.headers["anthropic-version"], "2023-06-01")
        XCTAssertEqual(first.headers["content-type"], "application/json")
        let body = try JSONValue.parse(first.body)
        XCTAssertEqual(body["stream"], true)
        XCTAssertEqual(body["model"]?.string, "claude-sonnet-4-6")
        XCTAssertEqual(body["tools"]?.array?.first?["name"]?.string, "echo")
        XCTAssertEqual(result.steps.count, 4)
    }

    func testCacheBreakpointsOnToolsSystemAndTheLastTwoUserTurns() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [Self.echo("t1", "a")], stopReason: "tool_use")),
            .stream(.turn(blocks: [Self.echo("t2", "b")], stopReason: "tool_use")),
            .stream(.turn(blocks: [.text("ok")])),
        ])
        defer { server.stop() }
        _ = await runner(server).run(task: "go", context: ToolContext())
        for (i, request) in server.requests.enumerated() {
            let body = try JSONValue.parse(request.body)
            let text = body.jsonText
            let marks = text.components(separatedBy: "\"cache_control\"").count - 1
            XCTAssertLessThanOrEqual(marks, 4, "request \(i): at most 4 breakpoints")
            XCTAssertNotNil(body["tools"]?.array?.last?["cache_control"], "request \(i): last tool cached")
            XCTAssertNotNil(body["system"]?.array?.last?["cache_control"], "request \(i): system cached")
            let messages = body["messages"]?.array ?? []
            let userIndices = messages.indices.filter { messages[$0]["role"]?.string == "user" }
            for (j, m) in messages.enumerated() {
                let marked = m["content"]?.array?.last?["cache_control"] != nil
                XCTAssertEqual(marked, userIndices.suffix(2).contains(j), "request \(i) message \(j)")
            }
        }
    }

    func testOldScreenshotsArePrunedInChunksKeepingTheNewest() async throws {
        var replies: [MockReply] = (1...8).map { i in
            .stream(.turn(blocks: [Self.echo("t\(i)", "shot\(i)", image: true)], stopReason: "tool_use"))
        }
        replies.append(.stream(.turn(blocks: [.text("done")])))
        let server = try MockMessagesServer(replies: replies)
        defer { server.stop() }
        let result = await runner(server, maxSteps: 20).run(task: "shots", context: ToolContext())
        XCTAssertEqual(result.outcome, .completed)
        var counts: [Int] = []
        for request in server.requests {
            let text = String(decoding: request.body, as: UTF8.self)
            counts.append(text.components(separatedBy: "\"type\":\"image\"").count - 1)
        }
        // keep 3, chunk 3: grows to 5, then drops to 3 at once.
        XCTAssertEqual(counts, [0, 1, 2, 3, 4, 5, 3, 4, 5])
        // The last request holds shots 4-8 (pruned to 4-6 at request 7, then two more); 1-3 became placeholders.
        let last = String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self)
        for i in 4...8 { XCTAssertTrue(last.contains("iVBORw0KGgo=shot\(i)\""), "newer screenshot \(i) kept") }
        for i in 1...3 { XCTAssertFalse(last.contains("iVBORw0KGgo=shot\(i)\""), "old screenshot \(i) removed") }
        XCTAssertEqual(last.components(separatedBy: ImagePruner.placeholder).count - 1, 3)
        // Between prunes a request extends the one before it: same messages, cache markers aside (cache-friendly).
        func messages(_ r: RecordedRequest) throws -> [JSONValue] {
            try JSONValue.parse(r.body)["messages"]?.array?.map(Self.withoutCacheControl) ?? []
        }
        let r7 = try messages(server.requests[6]), r8 = try messages(server.requests[7])
        XCTAssertEqual(Array(r8.prefix(r7.count)), r7)
        let r6 = try messages(server.requests[5])
        XCTAssertNotEqual(Array(r7.prefix(r6.count)), r6, "the prune itself rewrote older turns, all at once")
    }

    /// A message without its `cache_control` markers.
    static func withoutCacheControl(_ v: JSONValue) -> JSONValue {
        switch v {
        case .object(let o):
            return .object(o.filter { $0.key != "cache_control" }.mapValues(withoutCacheControl))
        case .array(let a): return .array(a.map(withoutCacheControl))
        default: return v
        }
    }

    func testMaxStepsStopsWithAValidConversation() async throws {
        let server = try MockMessagesServer(
            replies: (1...5).map { i in
                .stream(.turn(blocks: [Self.echo("t\(i)", "again")], stopReason: "tool_use"))
            })
        defer { server.stop() }
        let result = await runner(server, maxSteps: 3).run(task: "loop", context: ToolContext())
        XCTAssertEqual(result.outcome, .maxSteps(3))
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(ConversationCheck.unansweredToolUses(result.messages), [])
    }

    func testCancelDuringToolsAnswersEveryPendingToolUse() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [Self.echo("slow", "wait", sleep: 5000), Self.echo("next", "never")],
                    stopReason: "tool_use"))
        ])
        defer { server.stop() }
        let runner = self.runner(server)
        let started = CancelFlag()
        let task = Task {
            await runner.run(
                task: "slow", context: ToolContext(),
                observer: RunObserver(toolStarted: { _, _ in started.set() }))
        }
        await eventually("the slow tool started", on: .continuous) { started.isSet }
        try await Task.sleep(for: .milliseconds(50))  // kept: the cancel comes while the tool runs, not as it starts
        task.cancel()
        let cancelledAt = Date()
        let result = await task.value
        XCTAssertLessThan(Date().timeIntervalSince(cancelledAt), 4, "the 5 s tool stopped when the run was cancelled")
        XCTAssertEqual(result.outcome, .cancelled)
        XCTAssertEqual(ConversationCheck.unansweredToolUses(result.messages), [])
        let answers =
            result.messages.last?.content.compactMap { block -> ToolResultBlock? in
                if case .toolResult(let r) = block { return r }
                return nil
            } ?? []
        XCTAssertEqual(answers.map(\.toolUseID), ["slow", "next"])
        XCTAssertTrue(answers.allSatisfy(\.isError))
        XCTAssertEqual(
            answers.map {
                ($0.content.first).map {
                    if case .text(let t) = $0 { return t }; return ""
                }
            },
            ["interrupted by the user", "interrupted by the user"])
    }

    func testCancelWhileStreamingAbortsTheTransfer() async throws {
        let server = try MockMessagesServer(replies: [.hang])
        defer { server.stop() }
        let runner = self.runner(server)
        let task = Task { await runner.run(task: "hang", context: ToolContext()) }
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(10)))
        try await Task.sleep(for: .milliseconds(100))  // kept: the cancel comes during the transfer, not as it starts
        task.cancel()
        let result = await task.value
        XCTAssertEqual(result.outcome, .cancelled)
        XCTAssertEqual(result.messages.count, 1, "the half-streamed reply is not kept")
        XCTAssertEqual(ConversationCheck.unansweredToolUses(result.messages), [])
    }

    func testCostPerStepFromTheCatalog() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [Self.echo("t1", "a")], stopReason: "tool_use",
                    usage: MockUsage(input: 1000, output: 200, cacheRead: 5000, cacheWrite: 2000))),
            .stream(.turn(blocks: [.text("ok")], usage: MockUsage(input: 10, output: 20, cacheRead: 0, cacheWrite: 0))),
        ])
        defer { server.stop() }
        let result = await runner(server).run(task: "cost", context: ToolContext())
        XCTAssertEqual(result.steps.count, 2)
        let u = result.steps[0].usage
        XCTAssertEqual(
            [u.inputTokens, u.outputTokens, u.cacheReadInputTokens, u.cacheCreationInputTokens],
            [1000, 200, 5000, 2000])
        // Sonnet 4.6: $3 in, $15 out, $0.30 cache read, $3.75 cache write per MTok.
        let first: Double = (1000.0 * 3 + 200.0 * 15 + 5000.0 * 0.3 + 2000.0 * 3.75) / 1e6
        let second: Double = (10.0 * 3 + 20.0 * 15) / 1e6
        XCTAssertEqual(result.steps[0].costUSD, first, accuracy: 1e-12)
        XCTAssertEqual(result.costUSD, first + second, accuracy: 1e-12)
    }

    func testPauseTurnIsResumed() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text("thinking on the server")], stopReason: "pause_turn")),
            .stream(.turn(blocks: [.text(" and done")])),
        ])
        defer { server.stop() }
        let result = await runner(server).run(task: "pause", context: ToolContext())
        XCTAssertEqual(result.outcome, .completed)
        XCTAssertEqual(server.requests.count, 2)
        let body = try JSONValue.parse(server.requests[1].body)
        XCTAssertEqual(body["messages"]?.array?.last?["role"]?.string, "assistant")
    }

    func testThinkingBlocksAreSentBackUnchanged() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [.thinking("Let me think ✓", signature: "c2lnbmF0dXJl+/="), Self.echo("t1", "x")],
                    stopReason: "tool_use", chunking: .every(3))),
            .stream(.turn(blocks: [.text("ok")])),
        ])
        defer { server.stop() }
        _ = await runner(server).run(task: "think", context: ToolContext())
        let body = try JSONValue.parse(server.requests[1].body)
        let assistant = body["messages"]?.array?[1]
        XCTAssertEqual(
            assistant?["content"]?.array?.first,
            ["type": "thinking", "thinking": "Let me think ✓", "signature": "c2lnbmF0dXJl+/="])
    }

    func testEmptyTextBlocksAreNeverSentBack() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text(""), Self.echo("t1", "")], stopReason: "tool_use")),
            .stream(.turn(blocks: [.text("ok")])),
        ])
        defer { server.stop() }
        let result = await runner(server).run(task: "empty", context: ToolContext())
        XCTAssertEqual(result.outcome, .completed)
        let body = try JSONValue.parse(server.requests[1].body)
        let blocks = (body["messages"]?.array ?? []).flatMap { $0["content"]?.array ?? [] }
        XCTAssertFalse(
            blocks.contains { $0["type"]?.string == "text" && $0["text"]?.string == "" },
            "no empty text block: \(body.jsonText)")
        XCTAssertEqual(blocks.filter { $0["type"]?.string == "tool_use" }.count, 1, "the tool call itself is kept")
        // The echo of "" is "echo: ", kept; a result with no text at all says so.
        let empty = ToolResultBlock(toolUseID: "x", content: [.text("  ")])
        XCTAssertEqual(empty.content, [.text("(no output)")])
    }

    func testImagesAreNeverSentInAnErrorResult() {
        let r = ToolResultBlock(
            toolUseID: "x", content: [.text("bad"), .image(mediaType: "image/png", base64: "AA==")],
            isError: true)
        XCTAssertEqual(r.content, [.text("bad")])
    }
}

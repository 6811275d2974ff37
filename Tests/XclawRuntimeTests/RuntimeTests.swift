import Foundation
import XCTest
import XclawAgent
import XclawAgentTesting
import XclawClient
import XclawMessages
import XclawMockAPI
import XclawRuntime
import XclawStore

/// Agents from the store through the queue and the loop, against the loopback Messages API and real SQLite files.
final class RuntimeTests: XCTestCase {
    private var temporary: TemporaryStore?
    private var store: AgentStore!

    override func setUpWithError() throws {
        temporary = try TemporaryStore("runtime")
        store = temporary?.store
    }

    override func tearDown() {
        store = nil
        temporary?.remove()
    }

    private func service(
        _ server: MockMessagesServer, retryBase: Duration = .milliseconds(10), maxConcurrent: Int = 5,
        clientRetries: Int = 5, tools: [any AgentTool] = [EchoTool()],
        events: @escaping @Sendable (ServiceEvent) -> Void = { _ in }
    ) throws -> AgentService {
        let client = ClaudeClient(
            configuration: ClientConfiguration(
                baseURL: server.baseURL, apiKey: APIKey("sk-test"),
                maxRetries: clientRetries))
        return AgentService(
            store: store, client: client, catalog: try ModelCatalog.load(overlay: "/nonexistent"),
            queue: QueueConfiguration(maxConcurrent: maxConcurrent, retryBase: retryBase),
            tools: { _ in tools }, systemPrompt: { "You are \($0.name)." }, events: events)
    }

    private func makeAgent(_ name: String) throws {
        try store.createAgent(AgentConfig(name: name, model: "claude-sonnet-4-6", tools: ["echo"]))
    }

    /// The text of the last user turn of a recorded request.
    private static func lastUserText(_ r: RecordedRequest) -> String {
        let body = (try? JSONValue.parse(r.body)) ?? .null
        return (body["messages"]?.array?.last?["content"]?.array ?? []).compactMap { $0["text"]?.string }.joined()
    }

    func testMessagesToOneAgentAreProcessedInOrderAndNeverInterleaved() async throws {
        try makeAgent("a")
        let server = try MockMessagesServer(handler: { request, _ in
            var stream = MockStream.turn(blocks: [.text("ok: " + String(Self.lastUserText(request).suffix(40)))])
            stream.interChunkDelay = .milliseconds(20)
            stream.chunking = .every(40)
            return .stream(stream)
        })
        defer { server.stop() }
        let svc = try service(server)
        // Two messages at once, then three more while the first run streams.
        async let one = svc.send(agent: "a", text: "first")
        async let two = svc.send(agent: "a", text: "second")
        _ = try await (one, two)
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(10)))
        for t in ["third", "fourth & <fifth>"] { try await svc.send(agent: "a", text: t) }
        await svc.queue.waitUntilIdle()
        let requests = server.requests
        // Every message reached the model exactly once, in order, in batches; never two runs at once.
        let batches = requests.map(Self.lastUserText)
        let all = batches.joined(separator: "\n")
        // The two sent at once are stored in some order; that order is the order they must reach the model in.
        let stored = try store.messages(agent: "a").filter(Conversation.isChat)
            .map { BatchPrompt.escape(Message(role: .user, content: $0.content).text) }
        XCTAssertEqual(Set(stored.prefix(2)), ["first", "second"])
        XCTAssertEqual(Array(stored.dropFirst(2)), ["third", "fourth &amp; &lt;fifth&gt;"])
        var position = all.startIndex
        for t in stored {
            let found = try XCTUnwrap(all.range(of: t, range: position..<all.endIndex), "\(t) in order: \(all)")
            position = found.upperBound
            XCTAssertEqual(all.components(separatedBy: ">\(t)</message>").count - 1, 1, "\(t) sent once")
        }
        XCTAssertLessThanOrEqual(requests.count, 3, "coalesced into batches")
        for (a, b) in zip(requests, requests.dropFirst()) {
            XCTAssertGreaterThanOrEqual(b.receivedAt, a.receivedAt)
        }
        XCTAssertTrue(batches.first?.contains("<messages>") ?? false)
        let history = try store.messages(agent: "a")
        XCTAssertEqual(history.filter { $0.role == .assistant }.count, requests.count)
        XCTAssertEqual(history.filter(Conversation.isBatch).count, requests.count, "each run stored what it sent")
        XCTAssertTrue(history.allSatisfy { $0.status == .complete })
        let lastUser = try XCTUnwrap(history.last(where: Conversation.isChat))
        XCTAssertEqual(try store.state(agent: "a").cursor, lastUser.id)
    }

    func testTwoAgentsRunInParallel() async throws {
        try makeAgent("a")
        try makeAgent("b")
        let server = try MockMessagesServer(handler: { _, _ in
            var stream = MockStream.turn(blocks: [.text(String(repeating: "slow reply ", count: 20))])
            stream.chunking = .every(10)
            stream.interChunkDelay = .milliseconds(15)
            return .stream(stream)
        })
        defer { server.stop() }
        let svc = try service(server)
        try await svc.send(agent: "a", text: "hello a")
        try await svc.send(agent: "b", text: "hello b")
        await svc.queue.waitUntilIdle()
        let requests = server.requests
        XCTAssertEqual(requests.count, 2)
        // Each reply takes > 300 ms to stream; the second request arrived while the first was still streaming.
        let gap = abs(requests[1].receivedAt.timeIntervalSince(requests[0].receivedAt))
        XCTAssertLessThan(gap, 0.25, "the two agents overlapped (second request \(gap) s after the first)")
    }

    func testManyAgentsEveryMessageOnceInOrder() async throws {
        let names = (0..<20).map { "agent\($0)" }
        for n in names { try makeAgent(n) }
        let server = try MockMessagesServer(handler: { _, _ in .stream(.turn(blocks: [.text("ok")])) })
        defer { server.stop() }
        let svc = try service(server, maxConcurrent: 3)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in names {
                group.addTask { for i in 0..<5 { try await svc.send(agent: n, text: "\(n) message \(i)") } }
            }
            try await group.waitForAll()
        }
        await svc.queue.waitUntilIdle()
        let sent = server.requests.map(Self.lastUserText).joined(separator: "\n")
        for n in names {
            var position = sent.startIndex
            for i in 0..<5 {
                let text = ">\(n) message \(i)</message>"
                XCTAssertEqual(sent.components(separatedBy: text).count - 1, 1, "\(text) exactly once")
                if let r = sent.range(of: text, range: position..<sent.endIndex) {
                    position = r.upperBound
                } else {
                    XCTFail("\(text) out of order")
                }
            }
            let state = try store.state(agent: n)
            XCTAssertEqual(state.cursor, try store.messages(agent: n).last(where: Conversation.isChat)?.id)
        }
    }

    func testOverloadedThreeTimesThenSuccessGivesOneReplyAndTheRightCursor() async throws {
        try makeAgent("a")
        let overloaded = MockReply.error(
            status: 529, type: "overloaded_error", message: "Overloaded",
            headers: ["retry-after-ms": "5"])
        let server = try MockMessagesServer(replies: [
            overloaded, overloaded, overloaded,
            .stream(.turn(blocks: [.text("finally")])),
        ])
        defer { server.stop() }
        let svc = try service(server)
        let id = try await svc.send(agent: "a", text: "hi")
        await svc.queue.waitUntilIdle()
        let replies = try store.messages(agent: "a").filter { $0.role == .assistant }
        XCTAssertEqual(replies.map { Message(role: .assistant, content: $0.content).text }, ["finally"])
        XCTAssertEqual(try store.state(agent: "a").cursor, id)
        XCTAssertEqual(server.requests.count, 4)
    }

    func testAClientFailureIsNotRetriedAgainByTheQueueAndItsBatchIsAnsweredNextTime() async throws {
        try makeAgent("a")
        // The network fails and the client has no retries left: the client's budget is the whole budget, so the
        // queue does not stack its own backoff on top; the run is undone and recorded as failed.
        let server = try MockMessagesServer(replies: [
            .disconnect, .stream(.turn(blocks: [.text("the next message's run answered both")])),
        ])
        defer { server.stop() }
        let svc = try service(server, clientRetries: 0)
        _ = try await svc.send(agent: "a", text: "do it")
        await svc.waitUntilIdle()
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertEqual(try store.sessions(agent: "a").map(\.status), [.failed])
        let failed = try XCTUnwrap(try store.messages(agent: "a").last)
        XCTAssertEqual(failed.status, .error)
        XCTAssertTrue(Message(role: .assistant, content: failed.content).text.contains("this reply failed"))
        // Nothing was lost: the undone batch goes out with the next message.
        let next = try await svc.send(agent: "a", text: "and this")
        await svc.waitUntilIdle()
        XCTAssertEqual(server.requests.count, 2)
        let body = String(decoding: server.requests[1].body, as: UTF8.self)
        XCTAssertTrue(body.contains("do it") && body.contains("and this"), body)
        XCTAssertEqual(try store.state(agent: "a").cursor, next)
    }

    func testAFailureAfterOutputReachedTheUserIsNotRunAgain() async throws {
        try makeAgent("a")
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [
                        .text("Working on it."), .toolUse(id: "t1", name: "echo", input: "{\"text\": \"side effect\"}"),
                    ],
                    stopReason: "tool_use")),
            .error(status: 400, type: "invalid_request_error", message: "something broke"),
            .stream(.turn(blocks: [.text("must never be requested")])),
        ])
        defer { server.stop() }
        let failures = TextSink()
        let svc = try service(
            server,
            events: { event in
                if case .failed(_, let message, let retry, _) = event, !retry { failures.append(message) }
            })
        let id = try await svc.send(agent: "a", text: "act")
        await svc.queue.waitUntilIdle()
        XCTAssertEqual(server.requests.count, 2, "no duplicate run after a tool already acted")
        XCTAssertEqual(try store.state(agent: "a").cursor, id)
        XCTAssertTrue(failures.text.contains("something broke"), failures.text)
        let last = try XCTUnwrap(try store.messages(agent: "a").last)
        XCTAssertEqual(last.status, .error, "the user is told in the history")
        XCTAssertTrue(Message(role: .assistant, content: last.content).text.contains("something broke"))
    }

    func testAnInvalidKeyIsReportedOnceAndNotRetried() async throws {
        try makeAgent("a")
        let server = try MockMessagesServer(replies: [
            .error(status: 401, type: "authentication_error", message: "bad key")
        ])
        defer { server.stop() }
        let failures = TextSink()
        let svc = try service(
            server,
            events: { event in
                if case .failed(_, let message, let retry, let status) = event {
                    XCTAssertFalse(retry)
                    XCTAssertEqual(status, .api)
                    failures.append(message)
                }
            })
        try await svc.send(agent: "a", text: "hi")
        await svc.queue.waitUntilIdle()
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertTrue(failures.text.contains("invalid API key"), failures.text)
    }

    func testCancelStopsTheRequestWithinASecondAndRecordsCancelled() async throws {
        try makeAgent("a")
        let server = try MockMessagesServer(replies: [.hang])
        defer { server.stop() }
        let svc = try service(server)
        try await svc.send(agent: "a", text: "wait")
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(10)))
        let start = Date()
        _ = await svc.queue.cancel(agent: "a")
        await svc.queue.waitUntilIdle()
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.0)
        XCTAssertEqual(try store.sessions(agent: "a").map(\.status), [.cancelled])
        XCTAssertTrue(server.waitForDisconnects(1, timeout: .seconds(5)))
    }

    /// A tool that returns a real, distinct PNG each call (stored once, by content, in the store).
    struct ShotTool: AgentTool {
        let name = "shot"
        let description = "Takes a screenshot."
        let inputSchema: JSONValue = ["type": "object", "properties": ["n": ["type": "integer"]]]
        func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
            let n = UInt8(truncatingIfNeeded: input["n"]?.int ?? 0)
            let png: [UInt8] =
                [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]
                + [0, 0, 0, 10, 0, 0, 0, 10, 8, 6, 0, 0, 0, n, n, n]
            return ToolOutput(content: [
                .text("shot \(n)"), .image(mediaType: "image/png", base64: Data(png).base64EncodedString()),
            ])
        }
    }

    /// The next `send` goes on with exactly the messages the previous run last sent, screenshots included: the
    /// store keeps each once and reads back those the run's pruning had left (here 4 of 4: keep 3, pruned three at
    /// a time), older ones as the same placeholder.
    func testTheNextSendGoesOnWithTheScreenshotsTheLastRunSent() async throws {
        try store.createAgent(AgentConfig(name: "a", model: "claude-sonnet-4-6", tools: ["shot"]))
        let server = try MockMessagesServer(handler: { request, index in
            // Run one: four screenshots, one a turn, then done; run two: done at once.
            if index < 4 {
                return .stream(
                    .turn(
                        blocks: [.toolUse(id: "s\(index)", name: "shot", input: "{\"n\": \(index)}")],
                        stopReason: "tool_use"))
            }
            if index < 7 && index >= 5 {
                return .stream(
                    .turn(
                        blocks: [.toolUse(id: "s\(index)", name: "shot", input: "{\"n\": \(index)}")],
                        stopReason: "tool_use"))
            }
            return .text("done \(index)")
        })
        defer { server.stop() }
        let svc = try service(server, tools: [ShotTool()])
        try await svc.send(agent: "a", text: "look four times")
        await svc.waitUntilIdle()
        try await svc.send(agent: "a", text: "and twice more")
        await svc.waitUntilIdle()
        let requests = server.requests
        XCTAssertEqual(requests.count, 8)
        func messages(_ r: RecordedRequest) throws -> [JSONValue] {
            try XCTUnwrap(try JSONValue.parse(r.body)["messages"]?.array).map(\.withoutCacheMarks)
        }
        func images(_ r: RecordedRequest) throws -> Int {
            try messages(r).map(\.jsonText).joined().components(separatedBy: "\"base64\"").count - 1
        }
        // Run one's last request carried four screenshots; run two's first starts with those very messages.
        let last = try messages(requests[4]), next = try messages(requests[5])
        XCTAssertEqual(try images(requests[4]), 4)
        XCTAssertEqual(Array(next.prefix(last.count)), last)
        // Two more: at six the loop drops three and keeps the newest three, with the placeholder where they were.
        XCTAssertEqual(try images(requests[6]), 5)
        XCTAssertEqual(try images(requests[7]), 3)
        XCTAssertTrue(try messages(requests[7]).map(\.jsonText).joined().contains(ImagePruner.placeholder))
        XCTAssertEqual(try store.imageTotals().count, 6, "six distinct screenshots, each stored once")
    }

    func testConversationRebuildIsValidAfterACrashAndEscapesBatches() throws {
        try makeAgent("a")
        let chat = try store.appendMessage(
            agent: "a", role: .user, content: [.text("open \"the\" <file> & go")], sender: "ann")
        let batch = Conversation.batch([try store.message(id: chat)], timeZone: TimeZone(identifier: "UTC") ?? .current)
        XCTAssertTrue(batch.contains("<message sender=\"ann\""))
        XCTAssertTrue(batch.contains(">open &quot;the&quot; &lt;file&gt; &amp; go</message>"), batch)
        _ = try store.appendMessage(agent: "a", role: .user, content: [.text(batch)], sender: Conversation.batchSender)
        // A reply cut by a crash: text and a tool call whose result never came; then a chat message for a later run.
        _ = try store.appendMessage(
            agent: "a", role: .assistant,
            content: [.text("Opening"), .toolUse(id: "t1", name: "echo", input: ["text": "x"])],
            status: .partial)
        _ = try store.appendMessage(agent: "a", role: .user, content: [.text("and then?")], sender: "ann")
        let messages = Conversation.build(try store.messages(agent: "a"))
        XCTAssertEqual(messages.map(\.role), [.user, .assistant])
        XCTAssertEqual(messages[0].text, batch, "exactly what the run sent")
        XCTAssertEqual(messages[1].text, "Opening" + Conversation.interruptedMark)
        XCTAssertEqual(ConversationCheck.unansweredToolUses(messages), [])
        // A complete reply whose tool results were never stored loses the call too.
        _ = try store.appendMessage(
            agent: "a", role: .user, content: [.text("batch 2")], sender: Conversation.batchSender)
        _ = try store.appendMessage(
            agent: "a", role: .assistant,
            content: [.text("Trying"), .toolUse(id: "t2", name: "echo", input: ["text": "y"])])
        let again = Conversation.build(try store.messages(agent: "a"))
        XCTAssertEqual(ConversationCheck.unansweredToolUses(again), [])
        XCTAssertEqual(again.last?.text, "Trying" + Conversation.interruptedMark)
    }
}

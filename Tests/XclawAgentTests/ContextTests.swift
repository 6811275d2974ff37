import Foundation
import Synchronization
import XCTest
import XclawAgentTesting
import XclawBase
import XclawMockAPI

@testable import XclawAgent
@testable import XclawClient
@testable import XclawMessages

/// Thinking in each model's form, server-side compaction and xclaw's own summary, against the loopback API that
/// enforces the real API's rules for them.
final class ContextTests: XCTestCase {
    var catalog: ModelCatalog!

    override func setUpWithError() throws {
        catalog = try ModelCatalog.load(overlay: "/nonexistent", environment: ["XDG_STATE_HOME": "/nonexistent"])
    }

    func client(_ server: MockMessagesServer) -> ClaudeClient {
        ClaudeClient(
            configuration: ClientConfiguration(
                baseURL: server.baseURL, apiKey: APIKey("sk-test-" + "context-key-123"), maxRetries: 0))
    }

    static func body(_ request: RecordedRequest) throws -> JSONValue { try JSONValue.parse(request.body) }

    func testThinkingIsPlannedInTheFormEachModelTakes() throws {
        let sonnet5 = try catalog.model("claude-sonnet-5")
        XCTAssertEqual(try sonnet5.thinkingPlan(.on, effort: nil, maxTokens: 4096).parameter, ["type": "adaptive"])
        XCTAssertNil(try sonnet5.thinkingPlan(.off, effort: nil, maxTokens: 4096).parameter, "off: nothing sent")
        XCTAssertNil(try sonnet5.thinkingPlan(.auto, effort: nil, maxTokens: 4096).parameter)
        // A budget model: enabled, the budget at least 1024 and below max_tokens.
        let haiku = try catalog.model("claude-haiku-4-5")
        let plan = try haiku.thinkingPlan(.on, effort: nil, maxTokens: 1500)
        XCTAssertEqual(plan.parameter?["type"]?.string, "enabled")
        let budget = try XCTUnwrap(plan.parameter?["budget_tokens"]?.int)
        XCTAssertGreaterThanOrEqual(budget, 1024)
        XCTAssertLessThan(budget, plan.maxTokens)
        // Fable 5 always thinks: `on` sends nothing, `off` is refused before any request.
        let fable = try catalog.model("claude-fable-5")
        XCTAssertNil(try fable.thinkingPlan(.on, effort: nil, maxTokens: 4096).parameter)
        XCTAssertThrowsError(try fable.thinkingPlan(.off, effort: nil, maxTokens: 4096)) {
            XCTAssertTrue("\($0)".contains("always thinks"), "\($0)")
        }
        // Opus 5 thinks by default: `off` sends `disabled`, and only up to effort high.
        let opus5 = try catalog.model("claude-opus-5")
        XCTAssertEqual(try opus5.thinkingPlan(.off, effort: "high", maxTokens: 4096).parameter, ["type": "disabled"])
        XCTAssertThrowsError(try opus5.thinkingPlan(.off, effort: "max", maxTokens: 4096)) {
            XCTAssertTrue("\($0)".contains("low, medium or high"), "\($0)")
        }
        XCTAssertThrowsError(try ThinkingMode.parse("sometimes"))
    }

    /// A catalog entry that is out of date (it says budget thinking; the API takes adaptive only) meets the API's
    /// 400, and the user reads what to do, not only what went wrong.
    func testAThinkingFormTheModelRefusesIsAClearError() async throws {
        let server = try MockMessagesServer(replies: [.text("never sent")])
        defer { server.stop() }
        server.rules = MockRules(thinking: ["claude-sonnet-5": ["adaptive", "disabled"]])
        var stale = try catalog.model("claude-sonnet-5")
        stale.thinking = "enabled"
        var options = RunOptions(model: stale, system: "test")
        options.thinking = .on
        let result = await AgentRunner(client: client(server), registry: ToolRegistry([EchoTool()]), options: options)
            .run(task: "think", context: ToolContext())
        XCTAssertEqual(try Self.body(server.requests[0])["thinking"]?["type"]?.string, "enabled")
        guard case .failed(let why) = result.outcome else { return XCTFail("\(result.outcome)") }
        XCTAssertTrue(why.contains("HTTP 400"), why)
        XCTAssertTrue(why.contains("thinking.type.enabled is not supported"), "the API's words: \(why)")
        XCTAssertTrue(why.contains("xclaw models --refresh") && why.contains("--thinking off"), "what to do: \(why)")
        XCTAssertEqual((result.error as? ClientError)?.exitStatus, .api)
        // The right form passes the same rules.
        server.enqueue(.text("ok"))
        var fixed = options
        fixed.model = try catalog.model("claude-sonnet-5")
        let ok = await AgentRunner(client: client(server), registry: ToolRegistry([EchoTool()]), options: fixed)
            .run(task: "think", context: ToolContext())
        XCTAssertEqual(ok.outcome, .completed)
        XCTAssertEqual(try Self.body(server.requests[1])["thinking"], ["type": "adaptive"])
    }

    /// Over the trigger the server compacts: the reply opens with a compaction block, and from then on nothing
    /// before it is sent again, so the next request is small.
    func testServerCompactionKicksInAndEarlierTurnsAreNeverSentAgain() async throws {
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text("Read it.")])),
            .stream(.turn(blocks: [.text("Still here.")])),
        ])
        defer { server.stop() }
        server.rules = MockRules(compaction: true, countTokens: true)
        let model = try catalog.model("claude-sonnet-5")
        XCTAssertEqual(model.compaction, true)
        let options = RunOptions(model: model, system: "test")
        XCTAssertEqual(options.context, .server(trigger: 150_000))
        var tight = options
        tight.context = .server(trigger: 50_000)
        let runner = AgentRunner(client: client(server), registry: ToolRegistry([EchoTool()]), options: tight)
        // About 70,000 tokens of text: over the trigger.
        let long = String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 6_300)
        let compactedSteps = Mutex<[String?]>([])
        let first = await runner.run(
            task: long, context: ToolContext(),
            observer: RunObserver(stepFinished: { step in compactedSteps.withLock { $0.append(step.context) } }))
        XCTAssertEqual(first.outcome, .completed)
        let sent = try Self.body(server.requests[0])
        XCTAssertEqual(sent["context_management"]?["edits"]?.array?.first?["type"]?.string, "compact_20260112")
        XCTAssertEqual(sent["context_management"]?["edits"]?.array?.first?["trigger"]?["value"]?.int, 50_000)
        XCTAssertTrue(server.requests[0].header("anthropic-beta")?.contains("compact-2026-01-12") == true)
        XCTAssertEqual(compactedSteps.withLock { $0 }, ["compacted"])
        // The conversation kept: the mark, then the compacted reply from its compaction block on.
        XCTAssertEqual(first.messages.count, 2)
        XCTAssertEqual(first.messages[0], .user(ContextWindow.compactedMark))
        XCTAssertTrue(ContextWindow.isCompaction(first.messages[1].content[0]))
        XCTAssertEqual(first.messages[1].content[0].json["content"]?.string?.hasPrefix("Summary of 1 earlier"), true)
        XCTAssertEqual(first.messages[1].text, "Read it.")
        // The next turn sends the compaction block back and none of the long task.
        let second = await runner.run(
            messages: first.messages + [.user("And now?")], context: ToolContext())
        XCTAssertEqual(second.outcome, .completed)
        let next = server.requests[1]
        XCTAssertLessThan(next.body.count, 5_000, "the long task is not sent again")
        XCTAssertGreaterThan(server.requests[0].body.count, 250_000)
        let messages = try XCTUnwrap(try Self.body(next)["messages"]?.array)
        XCTAssertEqual(messages.count, 3)
        XCTAssertEqual(messages[1]["content"]?.array?.first?["type"]?.string, "compaction")
        XCTAssertEqual(
            messages[1]["content"]?.array?.first?["encrypted_content"]?.string, "opaque-mock", "sent back whole")
    }

    /// A model without server compaction: above the trigger xclaw asks for a summary (no tool may run), and the
    /// turns before the newest reply are replaced by it.
    func testASummaryReplacesOldTurnsForAModelWithoutServerCompaction() async throws {
        let big = String(repeating: "line of tool output ", count: 1_500)  // about 7,500 tokens
        let server = try MockMessagesServer(handler: { request, index in
            let text = String(decoding: request.body, as: UTF8.self)
            if text.contains("Summarise the conversation so far") {
                return .text("SUMMARY: echoed twice, one echo left.")
            }
            switch index {
            case 0:
                return .stream(
                    .turn(
                        blocks: [.toolUse(id: "t1", name: "echo", input: "{\"text\": \"\(big)\"}")],
                        stopReason: "tool_use"))
            case 1:
                return .stream(
                    .turn(
                        blocks: [.toolUse(id: "t2", name: "echo", input: "{\"text\": \"two\"}")], stopReason: "tool_use"
                    ))
            default: return .text("done")
            }
        })
        defer { server.stop() }
        server.rules = MockRules(countTokens: true)
        let model = try catalog.model("claude-haiku-4-5")
        XCTAssertNil(model.compaction)
        var options = RunOptions(model: model, system: "test")
        XCTAssertEqual(options.context, .summary(trigger: 150_000))
        options.context = .summary(trigger: 5_000)
        let summaries = Mutex<[String]>([])
        let result = await AgentRunner(client: client(server), registry: ToolRegistry([EchoTool()]), options: options)
            .run(
                task: "echo", context: ToolContext(),
                observer: RunObserver(summarised: { s in summaries.withLock { $0.append(s) } }))
        XCTAssertEqual(result.outcome, .completed)
        let requests = server.requests
        XCTAssertEqual(requests.count, 4, "echo, echo, the summary, the last turn")
        // The summary request: the turns before the newest reply, the instruction last, no tool may be called.
        let summaryRequest = try Self.body(requests[2])
        XCTAssertEqual(summaryRequest["tool_choice"], ["type": "none"])
        XCTAssertEqual(summaryRequest["messages"]?.array?.count, 3)
        XCTAssertEqual(summaries.withLock { $0 }, ["SUMMARY: echoed twice, one echo left."])
        // The request after it: the summary, then the newest reply and its result.
        let after = try XCTUnwrap(try Self.body(requests[3])["messages"]?.array)
        XCTAssertEqual(after.count, 3)
        XCTAssertTrue(after[0]["content"]?.array?.first?["text"]?.string?.contains("SUMMARY: echoed twice") == true)
        XCTAssertEqual(after[1]["content"]?.array?.first?["id"]?.string, "t2")
        XCTAssertLessThan(requests[3].body.count, requests[1].body.count / 4, "the big result is gone")
        XCTAssertEqual(result.steps.map(\.context), [nil, nil, "summarised", nil])
    }

    func testTrimToCompactionIsStableAndLeavesOtherConversationsAlone() {
        let plain: [Message] = [.user("a"), Message(role: .assistant, content: [.text("b")])]
        XCTAssertEqual(ContextWindow.trimToCompaction(plain), plain)
        let compaction = ContentBlock.other(["type": "compaction", "content": "sum"])
        let long: [Message] = [
            .user("a"), Message(role: .assistant, content: [.text("b")]), .user("c"),
            Message(role: .assistant, content: [compaction, .text("d")]), .user("e"),
        ]
        let once = ContextWindow.trimToCompaction(long)
        XCTAssertEqual(once.count, 3)
        XCTAssertEqual(ContextWindow.trimToCompaction(once), once)
    }
}

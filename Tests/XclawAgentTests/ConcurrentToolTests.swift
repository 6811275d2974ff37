import Foundation
import Synchronization
import XCTest
import XclawAgentTesting
import XclawBase
import XclawMockAPI

@testable import XclawAgent
@testable import XclawClient
@testable import XclawMessages

/// Calls of a tool that runs concurrently (the orchestrator's `delegate`) run at once when one turn makes several,
/// and their results still answer the calls in the turn's order; other tools keep running one after another.
final class ConcurrentToolTests: XCTestCase {
    /// A tool that waits `ms` milliseconds and notes when each call ran.
    private struct WaitTool: AgentTool {
        let name: String
        let runsConcurrently: Bool
        let log: Intervals
        var description: String { "Waits." }
        var inputSchema: JSONValue { ["type": "object", "properties": ["ms": ["type": "integer"]]] }

        func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
            let start = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(input["ms"]?.int ?? 100))  // kept: the tool's work
            log.add(name, start, ContinuousClock.now)
            return .text("\(name) waited")
        }
    }

    /// When each call ran, from the tools' threads.
    private final class Intervals: Sendable {
        private let list = Mutex<[(String, ContinuousClock.Instant, ContinuousClock.Instant)]>([])
        func add(_ name: String, _ start: ContinuousClock.Instant, _ end: ContinuousClock.Instant) {
            list.withLock { $0.append((name, start, end)) }
        }
        var all: [(String, ContinuousClock.Instant, ContinuousClock.Instant)] { list.withLock { $0 } }
        /// Whether any two calls ran at the same time.
        var overlapped: Bool {
            let calls = all
            return calls.indices.contains { i in
                calls.indices.contains { j in i != j && calls[i].1 < calls[j].2 && calls[j].1 < calls[i].2 }
            }
        }
    }

    private func run(concurrent: Bool) async throws -> (RecordedRequest, Intervals) {
        let log = Intervals()
        let uses: [MockBlock] = [
            .toolUse(id: "a", name: "wait", input: #"{"ms": 150}"#),
            .toolUse(id: "b", name: "wait", input: #"{"ms": 50}"#),
            .toolUse(id: "c", name: "echo", input: #"{"text": "between"}"#),
            .toolUse(id: "d", name: "wait", input: #"{"ms": 100}"#),
        ]
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: uses, stopReason: "tool_use")), .text("done"),
        ])
        defer { server.stop() }
        let model = try ModelCatalog.load(overlay: "/nonexistent").model("claude-sonnet-4-6")
        let runner = AgentRunner(
            client: ClaudeClient(
                configuration: ClientConfiguration(baseURL: server.baseURL, apiKey: APIKey("sk-" + "concurrent"))),
            registry: ToolRegistry([WaitTool(name: "wait", runsConcurrently: concurrent, log: log), EchoTool()]),
            options: RunOptions(model: model, system: "test"))
        let result = await runner.run(task: "go", context: ToolContext())
        XCTAssertEqual(result.outcome, .completed)
        XCTAssertTrue(ConversationCheck.unansweredToolUses(result.messages).isEmpty)
        return (try XCTUnwrap(server.requests.last), log)
    }

    func testConcurrentCallsOfOneTurnOverlapAndAreAnsweredInOrder() async throws {
        let (request, log) = try await run(concurrent: true)
        XCTAssertEqual(request.toolResults.map(\.toolUseID), ["a", "b", "c", "d"])
        XCTAssertEqual(
            request.toolResults.map { $0.texts.joined() },
            ["wait waited", "wait waited", "echo: between", "wait waited"])
        XCTAssertEqual(log.all.count, 3)
        XCTAssertTrue(log.overlapped, "the three waits ran at once")
    }

    func testOtherToolsStillRunOneAfterAnother() async throws {
        let (request, log) = try await run(concurrent: false)
        XCTAssertEqual(request.toolResults.map(\.toolUseID), ["a", "b", "c", "d"])
        XCTAssertEqual(log.all.map(\.0).count, 3)
        XCTAssertFalse(log.overlapped, "the waits ran one after another")
    }
}

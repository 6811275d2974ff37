import Foundation
import XCTest
import XclawAgentTesting
import XclawMessages
import XclawMockAPI
import XclawTesting

/// Long-lived agents through the real binary: xclaw's summary and the server's compaction are stored so that the next
/// `send` rebuilds exactly the conversation the run went on with, and thinking goes out only in a form the model
/// takes (the loopback API enforces the real API's rules for all three).
final class ContextCLITests: XCTestCase {
    private var workDir: URL!

    override func setUpWithError() throws {
        workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-context-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let workDir { try? FileManager.default.removeItem(at: workDir) }
    }

    private func environment(_ server: MockMessagesServer, config: String) throws -> [String: String] {
        let directory = workDir.appendingPathComponent("config/xclaw")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try config.write(to: directory.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        return [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-context-SECRET",
            "HOME": workDir.path, "XDG_STATE_HOME": workDir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": workDir.appendingPathComponent("config").path,
            "XCLAW_DB": workDir.appendingPathComponent("agents.sqlite").path,
        ]
    }

    private static func messages(_ request: RecordedRequest) throws -> [JSONValue] {
        try XCTUnwrap(try JSONValue.parse(request.body)["messages"]?.array)
    }

    /// `compaction = summary`: the third message finds the conversation over `compact_at`, the run asks for a
    /// summary and goes on from it; the fourth is rebuilt from the store with the same summary, byte for byte.
    func testASummaryIsStoredAndTheNextSendRebuildsTheSameConversation() throws {
        let server = try MockMessagesServer(handler: { request, _ in
            let text = String(decoding: request.body, as: UTF8.self)
            if text.contains("Summarise the conversation so far") { return .text("SUMMARY-ONE: the user said hello.") }
            return .text("reply \(request.index)")
        })
        defer { server.stop() }
        server.rules = MockRules(countTokens: true)
        let env = try environment(server, config: "approval = none\ncompaction = summary\ncompact_at = 2000\n")
        let created = try runCLI(
            ["agent", "create", "bob", "--model", "claude-haiku-4-5", "--tools", "memory"], environment: env)
        XCTAssertEqual(created.status, 0, created.stderr)
        let long = String(repeating: "a long message of words ", count: 600)  // about 3,600 tokens
        for message in ["hello", long, "third"] {
            let sent = try runCLI(["send", "bob", message], environment: env)
            XCTAssertEqual(sent.status, 0, sent.stderr)
        }
        let posts = server.requests.filter { $0.method == "POST" }
        XCTAssertEqual(posts.count, 4, "hello, the long one, the summary, third")
        guard posts.count == 4 else { return }  // a failure, not a crash of the whole test process
        let summaryRequest = try JSONValue.parse(posts[2].body)
        XCTAssertEqual(summaryRequest["tool_choice"], ["type": "none"])
        let third = try Self.messages(posts[3])
        XCTAssertEqual(third.count, 3, "the summary, the reply to the long message, the third message")
        XCTAssertTrue(third[0].jsonText.contains("SUMMARY-ONE"), third[0].jsonText)
        XCTAssertFalse(posts[3].body.count > 5_000, "the long message is not sent again")
        // The next send rebuilds the conversation from the store: the same first three messages, then the new turn.
        let fourth = try runCLI(["send", "bob", "fourth"], environment: env)
        XCTAssertEqual(fourth.status, 0, fourth.stderr)
        let last = try Self.messages(try XCTUnwrap(server.requests.last))
        XCTAssertEqual(last.count, 5)
        // Cache breakpoints move with the newest turns; everything else is the same.
        XCTAssertEqual(
            Array(last.prefix(3)).map(\.withoutCacheMarks), third.map(\.withoutCacheMarks),
            "what the run went on with is what the store gives back")
        // The history keeps every message, the summary included.
        let history = try runCLI(["history", "bob", "--json"], environment: env)
        XCTAssertEqual(history.status, 0, history.stderr)
        XCTAssertTrue(history.text.contains("a long message of words"))
        XCTAssertTrue(history.text.contains("SUMMARY-ONE"))
    }

    /// The server's compaction: the reply that carries the compaction block is stored whole, and the next send
    /// starts from it without the long message.
    func testServerCompactionIsStoredAndTheNextSendStartsFromIt() throws {
        let server = try MockMessagesServer(handler: { request, _ in .text("reply \(request.index)") })
        defer { server.stop() }
        server.rules = MockRules(compaction: true, countTokens: true)
        let env = try environment(server, config: "approval = none\ncompact_at = 50000\n")
        XCTAssertEqual(
            try runCLI(["agent", "create", "ann", "--tools", "memory"], environment: env).status, 0)
        // Two messages of about 28,000 tokens each (one argument may hold 128 KiB): the second request is over.
        let long = String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 2_500)
        for message in [long, long, "and now?"] {
            let sent = try runCLI(["send", "ann", message], environment: env)
            XCTAssertEqual(sent.status, 0, sent.stderr)
        }
        let posts = server.requests.filter { $0.method == "POST" }
        XCTAssertEqual(posts.count, 3)
        XCTAssertTrue(posts[0].header("anthropic-beta")?.contains("compact-2026-01-12") == true)
        XCTAssertGreaterThan(posts[1].body.count, 200_000)
        let next = try Self.messages(posts[2])
        XCTAssertEqual(next.count, 3, "the mark, the compacted reply, the new message")
        XCTAssertEqual(next[0]["content"]?.array?.first?["text"]?.string, ContextWindow.compactedMark)
        XCTAssertEqual(next[1]["content"]?.array?.first?["type"]?.string, "compaction")
        XCTAssertLessThan(posts[2].body.count, 5_000)
    }

    /// A catalog that says budget thinking for a model that takes adaptive only: the API's 400 is shown with what to
    /// do (exit 4); settings no model could take are refused before anything is sent (exit 2).
    func testThinkingInAFormTheModelRefusesIsAClearErrorAndImpossibleSettingsAreRefusedFirst() throws {
        let server = try MockMessagesServer(handler: { _, _ in .text("ok") })
        defer { server.stop() }
        server.rules = MockRules(thinking: ["claude-sonnet-5": ["adaptive", "disabled"]])
        let env = try environment(server, config: "approval = none\n")
        try """
        {"models": [{"id": "claude-sonnet-5", "name": "Claude Sonnet 5 (stale entry)", "computer_tool": "computer_20251124", \
        "beta": "computer-use-2025-11-24", "vision": true, "max_output": 64000, "thinking": "enabled", \
        "price": {"input": 2, "output": 10, "cache_write": 2.5, "cache_read": 0.2}}]}
        """.write(
            to: workDir.appendingPathComponent("config/xclaw/models.json"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try runCLI(["agent", "create", "cy", "--tools", "memory"], environment: env).status, 0)
        let refused = try runCLI(["send", "cy", "think", "--thinking", "on"], environment: env)
        XCTAssertEqual(refused.status, 4, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("thinking.type.enabled is not supported"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("xclaw models --refresh"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains("SECRET"))
        let before = server.requests.count
        for (arguments, says) in [
            (["agent", "create", "dee", "--model", "claude-fable-5", "--thinking", "off"], "always thinks"),
            (
                ["agent", "create", "eve", "--model", "claude-opus-5", "--effort", "max", "--thinking", "off"],
                "low, medium or high"
            ),
            (["agent", "create", "fay", "--thinking", "sometimes"], "auto, on or off"),
            (["send", "cy", "x", "--thinking", "maybe"], "auto, on or off"),
        ] {
            let r = try runCLI(arguments, environment: env)
            XCTAssertEqual(r.status, 2, "\(arguments): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(says), "\(arguments): \(r.stderr)")
        }
        XCTAssertEqual(server.requests.count, before, "nothing was sent")
        // An agent set to think sends it in the model's form: adaptive for Claude Opus 4.8.
        XCTAssertEqual(
            try runCLI(
                ["agent", "create", "gus", "--model", "claude-opus-4-8", "--tools", "memory", "--thinking", "on"],
                environment: env
            ).status, 0)
        let thought = try runCLI(["send", "gus", "think"], environment: env)
        XCTAssertEqual(thought.status, 0, thought.stderr)
        XCTAssertEqual(try JSONValue.parse(try XCTUnwrap(server.requests.last).body)["thinking"], ["type": "adaptive"])
    }
}

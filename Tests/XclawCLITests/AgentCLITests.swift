import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawMessages
import XclawMockAPI
import XclawRuntime
import XclawStore
import XclawTesting
import XclawTimeTesting

/// The multi-agent commands as a user runs them: separate processes sharing one SQLite file, a scripted model on
/// the loopback Messages API, and a process killed with SIGKILL in the middle of a reply.
final class AgentCLITests: XCTestCase {
    private var dir: URL!
    private var db: String { dir.appendingPathComponent("agents.sqlite").path }

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-agentcli-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    private func env(_ server: MockMessagesServer) -> [String: String] {
        [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-cli-SECRET"), "XCLAW_DB": db,
            "HOME": dir.path, "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]
    }

    private func lastResultsText(_ r: RecordedRequest) -> String {
        let body = (try? JSONValue.parse(r.body)) ?? .null
        return (body["messages"]?.array?.last?["content"]?.array ?? []).flatMap { block -> [String] in
            (block["content"]?.array ?? []).compactMap { $0["text"]?.string }
        }.joined(separator: " ")
    }

    func testMemorySurvivesARestartAndExportRoundTrips() throws {
        /// A turn that says `text` and calls the memory tool with `input`.
        func memory(_ id: String, _ text: String, _ input: String) -> MockReply {
            .stream(
                .turn(blocks: [.text(text), .toolUse(id: id, name: "memory", input: input)], stopReason: "tool_use"))
        }
        let server = try MockMessagesServer(replies: [
            memory("m1", "Noting it.", "{\"action\": \"set\", \"key\": \"colour\", \"value\": \"blue ✓\"}"),
            .stream(.turn(blocks: [.text("Saved: blue.")])),
            memory("m2", "Let me look.", "{\"action\": \"get\", \"key\": \"colour\"}"),
            .stream(.turn(blocks: [.text("Your colour is blue ✓.")])),
        ])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "bob", "--tools", "memory"], environment: e).status, 0)
        let again = try runCLI(["agent", "create", "bob"], environment: e)
        XCTAssertEqual(again.status, 2, again.stderr)
        XCTAssertTrue(again.stderr.contains("bob"), again.stderr)
        let first = try runCLI(["send", "bob", "remember my colour: blue ✓"], environment: e)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.text.contains("Saved: blue."), first.text)
        // A new process: the memory is read back from the file.
        let second = try runCLI(["send", "bob", "what is my colour?"], environment: e)
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertTrue(second.text.contains("Your colour is blue ✓."))
        XCTAssertEqual(lastResultsText(server.requests[3]), "blue ✓")
        // The second run's request carries the first run's turns (history from the store).
        let body = try JSONValue.parse(server.requests[2].body)
        XCTAssertEqual(body["messages"]?.array?.count, 5)

        let agents = try runCLI(["agents", "--json"], environment: e)
        XCTAssertEqual(try JSONValue.parse(agents.stdout).array?.first?["name"]?.string, "bob")
        let json = try runCLI(["export", "bob", "--format", "json"], environment: e)
        XCTAssertEqual(json.status, 0, json.stderr)
        let exported = try XCTUnwrap(try JSONValue.parse(json.stdout).array)
        XCTAssertEqual(exported.count, 8, "2 user messages, 4 replies, 2 tool results")
        for m in exported {
            XCTAssertNotNil(m["role"]?.string)
            XCTAssertNotNil(m["timestamp"]?.string)
            XCTAssertNotNil(m["content"]?.array)
        }
        let file = dir.appendingPathComponent("bob.md").path
        XCTAssertEqual(try runCLI(["export", "bob", "--format", "md", "-o", file], environment: e).status, 0)
        let markdown = try String(contentsOfFile: file, encoding: .utf8)
        // The whole conversation, screen text included: private, as the database is.
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int, 0o600)
        for text in [
            "remember my colour: blue ✓", "Noting it.", "Saved: blue.", "what is my colour?", "Let me look.",
            "Your colour is blue ✓.", "stored \"colour\"",
        ] {
            XCTAssertTrue(markdown.contains(text), "\(text) verbatim in the Markdown export")
        }
        // Through /dev/stdout (the asking CLI's, also when a daemon serves it) and /dev/null, which stays a device.
        let piped = try runCLI(["export", "bob", "--format", "md", "-o", "/dev/stdout"], environment: e)
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(piped.text, markdown)
        XCTAssertEqual(try runCLI(["export", "bob", "-o", "/dev/null"], environment: e).status, 0)
        XCTAssertNil(SpecialFiles.nullDeviceProblem())
        let usage = try runCLI(["usage", "--json"], environment: e)
        let row = try XCTUnwrap(try JSONValue.parse(usage.stdout).array?.first)
        XCTAssertEqual(row["requests"]?.int, 4)
        XCTAssertEqual(row["runs"]?.int, 2)
        XCTAssertEqual(try runCLI(["history", "nobody"], environment: e).status, 1)
    }

    /// `xclaw run`'s one-shot agent keeps its history and usage, but `agents` and `usage` list it only with --all
    /// (saying on stderr what they left out); --json marks it `one_shot`.
    func testOneShotRunAgentsAreListedOnlyWithAll() throws {
        let server = try MockMessagesServer(replies: [.stream(.turn(blocks: [.text("Done.")]))])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "bob", "--tools", "memory"], environment: e).status, 0)
        let run = try runCLI(["run", "Say done", "--tools", "memory"], environment: e)
        XCTAssertEqual(run.status, 0, run.stderr)
        let oneShot = try XCTUnwrap(
            run.stderr.range(of: #"recorded as agent run-[0-9-]+"#, options: .regularExpression).map {
                String(run.stderr[$0].dropFirst("recorded as agent ".count))
            }, run.stderr)

        let listed = try runCLI(["agents"], environment: e)
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertEqual(listed.text.split(separator: "\n").map { $0.split(separator: "\t").first }, ["bob"])
        XCTAssertTrue(listed.stderr.contains("1 one-shot or pipeline agent(s) not listed; --all lists them"))
        let names = { (arguments: [String]) throws -> [String] in
            try XCTUnwrap(try JSONValue.parse(try runCLI(arguments, environment: e).stdout).array).compactMap {
                $0["name"]?.string ?? $0["agent"]?.string
            }
        }
        XCTAssertEqual(try names(["agents", "--json"]), ["bob"])
        let all = try XCTUnwrap(
            try JSONValue.parse(try runCLI(["agents", "--all", "--json"], environment: e).stdout).array)
        XCTAssertEqual(all.map { $0["name"]?.string }, ["bob", oneShot])
        XCTAssertEqual(all.map { $0["one_shot"]?.bool }, [false, true])
        XCTAssertTrue(try runCLI(["agents", "--all"], environment: e).text.contains("\(oneShot)\t"))
        // Its cost is still counted: listed with --all, noted otherwise.
        XCTAssertEqual(try names(["usage", "--json"]), ["bob"])
        XCTAssertEqual(try names(["usage", "--all", "--json"]), ["bob", oneShot])
        XCTAssertTrue(
            try runCLI(["usage"], environment: e).stderr.contains("1 one-shot or pipeline agent(s) not listed"))
        let history = try runCLI(["history", oneShot], environment: e)
        XCTAssertEqual(history.status, 0, history.stderr)
        XCTAssertTrue(history.text.contains("Done."), history.text)
    }

    func testKilledMidReplyTheHistoryKeepsThePartialAndTheAgentContinues() throws {
        let long = (1...60).map { "word\($0)" }.joined(separator: " ")
        var slow = MockStream.turn(blocks: [.text(long)], textFragments: 60)
        slow.chunking = .perFrame
        slow.interChunkDelay = .milliseconds(60)
        let server = try MockMessagesServer(replies: [.stream(slow), .stream(.turn(blocks: [.text("Continuing.")]))])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "kim", "--tools", "memory"], environment: e).status, 0)
        let process = try launchCLI(["send", "kim", "write a long answer"], environment: e)
        // Wait until part of the reply is saved, then kill the process without a chance to clean up.
        let store = try AgentStore(path: db)
        var partial: StoredMessage?
        try eventually("the partial reply saved up to word10", within: .seconds(20)) {
            partial = try store.messages(agent: "kim").last { $0.role == .assistant && $0.status == .partial }
            return partial.map { Message(role: .assistant, content: $0.content).text.contains("word10") } ?? false
        }
        DaemonMode.killRunner(of: process, environment: e)
        let saved = Message(role: .assistant, content: try XCTUnwrap(partial).content).text
        XCTAssertTrue(saved.hasPrefix("word1 word2"), saved)
        XCTAssertFalse(saved.contains("word60"), "killed before the end")

        let history = try runCLI(["history", "kim"], environment: e)
        XCTAssertEqual(history.status, 0, history.stderr)
        XCTAssertTrue(history.stderr.contains("interrupted"), history.stderr)
        XCTAssertTrue(history.text.contains("[partial]"), history.text)
        XCTAssertTrue(history.text.contains("write a long answer"))
        XCTAssertEqual(try AgentStore(path: db).sessions(agent: "kim").map(\.status), [.interrupted])

        let next = try runCLI(["send", "kim", "go on"], environment: e)
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.text.contains("Continuing."))
        // The model saw the interrupted reply, marked, then the new message: a valid conversation.
        let body = try JSONValue.parse(server.requests[1].body)
        let messages = try XCTUnwrap(body["messages"]?.array)
        XCTAssertEqual(messages.map { $0["role"]?.string ?? "" }, ["user", "assistant", "user"])
        let replyText = (messages[1]["content"]?.array ?? []).compactMap { $0["text"]?.string }.joined()
        XCTAssertTrue(replyText.hasPrefix("word1 word2"), replyText)
        XCTAssertTrue(replyText.hasSuffix(Conversation.interruptedMark))
        XCTAssertTrue(body.jsonText.contains("go on"))
    }

    func testTwoProcessesSendingToOneAgentTakeTurns() throws {
        let server = try MockMessagesServer(handler: { _, _ in
            var stream = MockStream.turn(
                blocks: [.text((1...20).map { "w\($0)" }.joined(separator: " "))], textFragments: 20)
            stream.chunking = .perFrame
            stream.interChunkDelay = .milliseconds(25)
            return .stream(stream)
        })
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "duo", "--tools", "memory"], environment: e).status, 0)
        let results = ResultsBox()
        let group = DispatchGroup()
        for text in ["from process one", "from process two"] {
            group.enter()
            Thread {
                results.append((try? runCLI(["send", "duo", text], environment: e))?.status ?? -1)
                group.leave()
            }.start()
            // The second starts once the first is streaming its reply (its batch taken, the agent's lock held), so
            // the second message needs a run of its own.
            try eventually("a reply is streaming", within: .seconds(20), every: .milliseconds(10)) {
                try AgentStore(path: db).messages(agent: "duo").contains { $0.role == .assistant }
            }
        }
        group.wait()
        XCTAssertEqual(results.values, [0, 0])
        let requests = server.requests
        // Each message reached the model once; the runs did not overlap (the second waited for the first).
        let all = requests.map { String(decoding: $0.body, as: UTF8.self) }
        for text in ["from process one", "from process two"] {
            XCTAssertEqual(all.filter { $0.contains(">\(text)</message>") }.isEmpty, false, text)
        }
        // A reply streams for at least 20 × 25 ms: the second request came after the first reply had ended.
        XCTAssertEqual(requests.count, 2)
        if requests.count == 2 {
            XCTAssertGreaterThan(
                requests[1].receivedAt.timeIntervalSince(requests[0].receivedAt), 0.45,
                "the two runs of one agent overlapped")
        }
        let store = try AgentStore(path: db)
        let sessions = try store.sessions(agent: "duo")
        XCTAssertTrue(sessions.allSatisfy { $0.status == .completed })
        let history = try store.messages(agent: "duo")
        XCTAssertTrue(history.allSatisfy { $0.status == .complete })
        let conversation = Conversation.build(history)
        XCTAssertEqual(ConversationCheck.unansweredToolUses(conversation), [])
        for (a, b) in zip(conversation, conversation.dropFirst()) { XCTAssertNotEqual(a.role, b.role) }
    }

    func testKilledBeforeAnsweringTheNextRunAnswersThoseMessages() throws {
        let server = try MockMessagesServer(replies: [.hang, .stream(.turn(blocks: [.text("Both answered.")]))])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "lee", "--tools", "memory"], environment: e).status, 0)
        let process = try launchCLI(["send", "lee", "the first question"], environment: e)
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(20)))
        DaemonMode.killRunner(of: process, environment: e)
        let next = try runCLI(["send", "lee", "the second question"], environment: e)
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.stderr.contains("had not answered yet"), next.stderr)
        XCTAssertTrue(next.text.contains("Both answered."))
        // The killed run's batch was undone, so the next run carried both questions, once each.
        let body = String(decoding: server.requests[1].body, as: UTF8.self)
        XCTAssertEqual(body.components(separatedBy: ">the first question</message>").count - 1, 1)
        XCTAssertEqual(body.components(separatedBy: ">the second question</message>").count - 1, 1)
        let messages = try XCTUnwrap(try JSONValue.parse(server.requests[1].body)["messages"]?.array)
        XCTAssertEqual(messages.count, 1, "one batch, nothing left from the killed run")
    }

    func testSendStoppedBySIGTERMExits143AndCtrlC130() throws {
        for (signal, status) in [(SIGTERM, Int32(143)), (SIGINT, 130)] {
            let server = try MockMessagesServer(replies: [.hang])
            defer { server.stop() }
            let e = env(server)
            let name = "sig\(signal)"
            XCTAssertEqual(try runCLI(["agent", "create", name, "--tools", "memory"], environment: e).status, 0)
            let process = try launchCLI(["send", name, "wait"], environment: e)
            XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(20)))
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, status)
            XCTAssertEqual(try AgentStore(path: db).sessions(agent: name).first?.status, .cancelled)
        }
    }

    /// Hostile upstreams: each ends `send` with exit 4 in bounded time, with a message that says what happened, and
    /// the failure in the history; a captive portal's page is not retried at all.
    func testHostileUpstreamsFailSendWithExit4InBoundedTime() throws {
        let html = MockReply.raw(
            status: 200, headers: ["content-type": "text/html"],
            body: "<!DOCTYPE html><html><head><title>Hotel WiFi login</title></head><body>Sign in</body></html>")
        let brokenJSON = MockReply.raw(
            status: 200, headers: ["content-type": "application/json"], body: #"{"id": "msg_01", "content": [{"#)
        let noStop = MockReply.raw(
            status: 200, headers: ["content-type": "text/event-stream"],
            body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":"
                + "\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,"
                + "\"output_tokens\":1}}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n")
        let down = MockReply.error(
            status: 503, type: "api_error", message: "down for good", headers: ["retry-after-ms": "1"])
        let cases: [(name: String, replies: [MockReply], words: String, maxRequests: Int)] = [
            ("portal", [html, html], "captive portal", 1),
            ("silent", Array(repeating: .hang, count: 8), "retry budget", 4),
            ("broken", Array(repeating: brokenJSON, count: 8), "not a Messages API reply", 6),
            ("nostop", Array(repeating: noStop, count: 8), "no message_stop", 6),
            ("down1", Array(repeating: down, count: 8), "down for good", 6),
            ("down2", Array(repeating: down, count: 8), "down for good", 6),
            ("down3", Array(repeating: down, count: 8), "down for good", 6),
        ]
        for item in cases {
            let server = try MockMessagesServer(replies: item.replies)
            defer { server.stop() }
            var e = env(server)
            e["XCLAW_IDLE_TIMEOUT"] = "1"
            e["XCLAW_RETRY_BUDGET"] = "3"
            XCTAssertEqual(try runCLI(["agent", "create", item.name, "--tools", "memory"], environment: e).status, 0)
            let result = try runCLI(["send", item.name, "hello"], environment: e)
            XCTAssertEqual(result.status, 4, "\(item.name): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(item.words), "\(item.name): \(result.stderr)")
            let last = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
            XCTAssertFalse(last.contains("will retry"), "\(item.name): the last word is the failure: \(last)")
            XCTAssertGreaterThanOrEqual(server.requests.count, 1)
            XCTAssertLessThanOrEqual(server.requests.count, item.maxRequests, item.name)
            let history = try runCLI(["history", item.name], environment: e)
            XCTAssertTrue(history.text.contains("this reply failed"), "\(item.name): \(history.text)")
        }
    }

    func testModelTextCannotDriveTheTerminalUnlessRawIsAskedForOnAPipe() throws {
        let hostile = "Done.\u{1b}[2J\u{1b}]0;owned\u{07}\r[sudo] password: [y/N] \u{9b}31m\u{202e}gnp.exe"
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text(hostile)])), .stream(.turn(blocks: [.text(hostile)])),
        ])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "esc", "--tools", "memory"], environment: e).status, 0)
        let shown = try runCLI(["send", "esc", "hi"], environment: e)
        XCTAssertEqual(shown.status, 0, shown.stderr)
        for control in ["\u{1b}", "\u{07}", "\r", "\u{9b}", "\u{202e}"] {
            XCTAssertFalse(shown.text.contains(control), "a raw control character reached stdout: \(shown.text)")
        }
        XCTAssertTrue(shown.text.contains(#"Done.\x1b[2J\x1b]0;owned\x07\r[sudo]"#), shown.text)
        let history = try runCLI(["history", "esc"], environment: e)
        XCTAssertFalse(history.text.contains("\u{1b}"), history.text)
        // JSON keeps the exact text, with every terminal control written as an escape.
        let json = try runCLI(["history", "esc", "--json"], environment: e)
        for control in ["\u{1b}", "\u{9b}", "\u{202e}"] { XCTAssertFalse(json.text.contains(control), json.text) }
        XCTAssertTrue(try JSONValue.parse(json.stdout).jsonText.contains("password: [y/N]"), json.text)
        XCTAssertTrue(json.text.contains(#"\u009b31m\u202egnp.exe"#), json.text)
        let export = try runCLI(["export", "esc"], environment: e)
        XCTAssertFalse(export.text.contains("\u{1b}"), export.text)
        // --raw on a pipe: byte for byte, for scripts that want the model's exact text.
        let raw = try runCLI(["send", "esc", "again", "--raw"], environment: e)
        XCTAssertEqual(raw.status, 0, raw.stderr)
        XCTAssertTrue(raw.text.contains(hostile), raw.text)
        XCTAssertTrue(try runCLI(["history", "esc", "--raw"], environment: e).text.contains("\u{1b}[2J"))
    }

    func testChatCtrlCCancelsTheTurnNotTheProgram() throws {
        let server = try MockMessagesServer(replies: [.hang, .stream(.turn(blocks: [.text("Second answer.")]))])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "cat", "--tools", "memory"], environment: e).status, 0)
        let input = Pipe(), output = Pipe()
        let process = try launchCLI(["chat", "cat"], environment: e, stdin: input, stdout: output)
        input.fileHandleForWriting.write(Data("first question\n".utf8))
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(20)))
        kill(process.processIdentifier, SIGINT)
        XCTAssertTrue(server.waitForDisconnects(1, timeout: .seconds(5)), "the turn's request was aborted")
        let store = try AgentStore(path: db)
        try eventually("the session is cancelled") { try store.sessions(agent: "cat").first?.status == .cancelled }
        XCTAssertTrue(process.isRunning, "Ctrl-C cancelled the turn, not the program")
        input.fileHandleForWriting.write(Data("second question\n".utf8))
        XCTAssertTrue(server.waitForRequests(2, timeout: .seconds(20)))
        try input.fileHandleForWriting.close()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard eventually("chat exits at the end of its input", { !process.isRunning }) else { return }
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(out.contains("Second answer."), out)
        XCTAssertEqual(try store.sessions(agent: "cat").map(\.status), [.cancelled, .completed])
    }
}

/// Exit statuses collected from several threads.
final class ResultsBox: Sendable {
    private let stored = Mutex<[Int32]>([])
    func append(_ v: Int32) { stored.withLock { $0.append(v) } }
    var values: [Int32] { stored.withLock { $0 } }
}

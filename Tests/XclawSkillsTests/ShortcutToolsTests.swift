import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawMockAPI
import XclawSkills
import XclawTesting
import XclawTimeTesting

/// `list_shortcuts` and `run_shortcut` on a home of the test's own: the gates in front of a run (the shortcut's name
/// is what the approval policy reads), the bounded output, the timeout, and seed 4.4 with the loopback model: a wrong
/// name comes back with the closest names, and the model runs the right one.
final class ShortcutToolsTests: XCTestCase {
    private var home: TestDesktopHome!

    override func setUpWithError() throws { home = try TestDesktopHome() }
    override func tearDown() { home?.remove() }

    private var ran: Bool { FileManager.default.fileExists(atPath: home.backupTrace.path) }

    func testListingSaysWhatEachShortcutDoesAndPrefersThemToTheScreen() async throws {
        let tool = ListShortcutsTool(environment: home.environment)
        XCTAssertTrue(tool.description.contains("instead of using the screen"), tool.description)
        XCTAssertTrue(RunShortcutTool().description.contains("Prefer it to the screen"))
        let listed = outputText(try await tool.execute(["query": "notes"], context: ToolContext()))
        XCTAssertEqual(listed, "\"backup-notes\" (script): \"Backs up the notes folder\"")
        let all = outputText(try await tool.execute([:], context: ToolContext())).split(separator: "\n")
        XCTAssertEqual(all.count, 7)
        XCTAssertTrue(
            all.contains(
                "\"draft\" (script): \"Not ready yet\" [cannot run: not executable: make it so "
                    + "with `chmod +x \(home.scripts.path)/draft.sh`]"), "\(all)")
        XCTAssertTrue(all.contains("\"Probe Browser: New Window\" (application action): \"Browses probes\""), "\(all)")
        let none = outputText(try await tool.execute(["query": "zzz"], context: ToolContext()))
        XCTAssertEqual(none, "no shortcut matches zzz")
    }

    func testARunIsGatedByItsNameAndLoggedWithItsResult() async throws {
        try home.script("Send report.sh", "#!/bin/sh\n# Mails the weekly report\ntouch '\(home.directory.path)/sent'\n")
        let tool = RunShortcutTool(environment: home.environment)
        // The approval policy reads the shortcut's name, as it reads a button's label.
        let asked = Mutex<[ActionSubject]>([])
        let gate: @Sendable (GateRequest) async -> GateVerdict = { request in
            asked.withLock { $0.append(request.subject) }
            return ApprovalPolicy(kinds: [.send]).classify(request.subject).map {
                .deny("needs the \($0.rawValue) approval")
            } ?? .allow
        }
        let logged = Mutex<[ActionRecord]>([])
        let context = ToolContext(log: { record in logged.withLock { $0.append(record) } }, gate: gate)

        let denied = outputText(try await tool.execute(["name": "send report"], context: context))
        XCTAssertEqual(denied, "needs the send approval")
        XCTAssertFalse(FileManager.default.fileExists(atPath: home.directory.appendingPathComponent("sent").path))
        let subject = try XCTUnwrap(asked.withLock { $0.first })
        XCTAssertEqual(subject.label, "run shortcut Send report")
        XCTAssertEqual(subject.role, "service")
        XCTAssertEqual(subject.command, home.scripts.appendingPathComponent("Send report.sh").path)
        // A script is a command line: under the default policy (all kinds) every run waits for a person.
        XCTAssertEqual(ApprovalPolicy.kinds(of: subject), [.command, .send])
        XCTAssertEqual(logged.withLock { $0.last?.result }, "denied: needs the send approval")

        let done = outputText(try await tool.execute(["name": "backup-notes"], context: context))
        XCTAssertTrue(done.hasPrefix("shortcut \"backup-notes\" finished (exit status 0) in "), done)
        XCTAssertTrue(done.hasSuffix("stdout:\nbacked up 3 notes\n"), done)
        XCTAssertTrue(ran)
        XCTAssertEqual(try String(contentsOf: home.backupTrace, encoding: .utf8), home.environment["HOME"]! + "\n")
        let record = try XCTUnwrap(logged.withLock { $0.last })
        XCTAssertEqual(record.tool, "run_shortcut")
        XCTAssertEqual(record.action, .other("run"))
        XCTAssertEqual(record.text, "backup-notes.sh")
        XCTAssertEqual(record.result, "ok")

        try FileManager.default.removeItem(at: home.backupTrace)
        let dry = outputText(try await tool.execute(["name": "backup-notes"], context: ToolContext(dryRun: true)))
        XCTAssertEqual(dry, "dry run: would run shortcut \"backup-notes\"")
        XCTAssertFalse(ran)
        let declined = outputText(
            try await tool.execute(["name": "backup-notes"], context: ToolContext(confirm: { _ in false })))
        XCTAssertTrue(declined.hasPrefix("the user declined to run shortcut \"backup-notes\""), declined)
        XCTAssertFalse(ran)
    }

    func testFailuresTimeoutsAndLongOutputComeBackBounded() async throws {
        let tool = RunShortcutTool(environment: home.environment)
        let failed = await expectToolError { try await tool.execute(["name": "fails"], context: ToolContext()) }
        XCTAssertEqual(
            failed?.message, "shortcut \"fails\" failed: it exited with status 3\nstderr:\nabout to fail\n")
        let slow = await expectToolError {
            try await tool.execute(["name": "slow", "timeout_seconds": 1], context: ToolContext())
        }
        XCTAssertEqual(slow?.message, "shortcut \"slow\" was killed after 1 s, its timeout\nstdout:\nstarted\n")
        let child = try XCTUnwrap(home.pid(in: home.slowPIDs.child))
        eventually("its child gone") { !Subprocess.isRunning(child) }

        try home.script("chatty.sh", "#!/bin/sh\n# Talks a lot\nseq 1 30000\n")
        let chatty = outputText(try await tool.execute(["name": "chatty"], context: ToolContext()))
        XCTAssertLessThan(chatty.utf8.count, RunShortcutTool.outputLimit + 300)
        XCTAssertTrue(chatty.contains("bytes of output were left out in the middle"), String(chatty.prefix(300)))
        XCTAssertTrue(chatty.hasSuffix("29999\n30000\n"))

        for bad: JSONValue in [["name": "slow", "timeout_seconds": 301], ["name": ""], [:]] {
            let error = await expectToolError { try await tool.execute(bad, context: ToolContext()) }
            XCTAssertNotNil(error, "\(bad)")
        }
        let draft = await expectToolError { try await tool.execute(["name": "draft"], context: ToolContext()) }
        XCTAssertTrue(draft?.message.contains("chmod +x") == true, "\(String(describing: draft))")
    }

    /// Seed 4.4 with the loopback model: the model asks for a shortcut that does not exist, reads the closest names
    /// in the error, and runs the one it meant.
    func testTheModelGetsTheClosestNamesForAMissingShortcutAndRunsTheRightOne() async throws {
        let server = try MockMessagesServer(handler: { request, index in
            switch index {
            case 0:
                return .toolUse(name: "run_shortcut", input: #"{"name": "backup notes"}"#, id: "toolu_wrong")
            case 1:
                // The scripted model acts on the error: the first of the closest names it was given.
                let (isError, text) = Self.lastToolResult(request)
                guard isError, let name = Self.firstQuoted(after: "the closest names are ", in: text) else {
                    return .text("No such shortcut.")
                }
                return .toolUse(name: "run_shortcut", input: #"{"name": "\#(name)"}"#, id: "toolu_right")
            default:
                return .text("Backed up.")
            }
        })
        defer { server.stop() }
        let model = try ModelCatalog.load(overlay: "/nonexistent").model("claude-sonnet-4-6")
        let runner = AgentRunner(
            client: ClaudeClient(
                configuration: ClientConfiguration(baseURL: server.baseURL, apiKey: APIKey("sk-" + "shortcuts"))),
            registry: ToolRegistry([
                ListShortcutsTool(environment: home.environment), RunShortcutTool(environment: home.environment),
            ]),
            options: RunOptions(model: model, system: "You are a test.", maxSteps: 5))
        let result = await runner.run(task: "back up my notes", context: ToolContext())
        XCTAssertEqual(result.outcome, .completed)
        XCTAssertEqual(result.finalText, "Backed up.")
        let requests = server.requests
        XCTAssertEqual(requests.count, 3)
        let offered = try JSONValue.parse(requests[0].body)["tools"]?.array?.compactMap { $0["name"]?.string }
        XCTAssertEqual(offered, ["list_shortcuts", "run_shortcut"])

        let (wrongIsError, wrong) = Self.lastToolResult(requests[1])
        XCTAssertTrue(wrongIsError)
        XCTAssertTrue(
            wrong.hasPrefix("no shortcut is named \"backup notes\"; the closest names are \"backup-notes\", "), wrong)
        // The second call asked for the closest name, and the script ran.
        let calls = try XCTUnwrap(try JSONValue.parse(requests[2].body)["messages"]?.array).compactMap { message in
            message["content"]?.array?.first { $0["type"]?.string == "tool_use" }
        }
        XCTAssertEqual(calls.map { $0["input"]?["name"]?.string }, ["backup notes", "backup-notes"])
        let (rightIsError, right) = Self.lastToolResult(requests[2])
        XCTAssertFalse(rightIsError, right)
        XCTAssertTrue(right.hasSuffix("stdout:\nbacked up 3 notes\n"), right)
        XCTAssertTrue(ran)
    }

    /// The last message's tool_result: whether it is an error, and its text.
    static func lastToolResult(_ request: RecordedRequest) -> (Bool, String) {
        let body = (try? JSONValue.parse(request.body)) ?? .null
        let block = body["messages"]?.array?.last?["content"]?.array?.first { $0["type"]?.string == "tool_result" }
        let text = (block?["content"]?.array ?? []).compactMap { $0["text"]?.string }.joined(separator: " ")
        return (block?["is_error"]?.bool ?? false, text)
    }

    /// The first double-quoted name after `marker` in `text`.
    static func firstQuoted(after marker: String, in text: String) -> String? {
        guard let start = text.range(of: marker + "\"")?.upperBound,
            let end = text[start...].firstIndex(of: "\"")
        else { return nil }
        return String(text[start..<end])
    }
}

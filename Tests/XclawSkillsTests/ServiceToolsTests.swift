import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawScreen
import XclawSkills
import XclawTesting
import XclawTimeTesting

/// `open` and `user_units` as the agent calls them: gated where they act (the label is what the approval policy
/// reads), free where they read, against a real handler and a real systemd user manager.
final class ServiceToolsTests: XCTestCase {
    /// What the gates were asked, in order.
    private final class Asked: Sendable {
        let subjects = Mutex<[ActionSubject]>([])
        func append(_ subject: ActionSubject) { subjects.withLock { $0.append(subject) } }
        var all: [ActionSubject] { subjects.withLock { $0 } }
    }

    /// A gate that records what it was asked and allows it, or denies everything.
    private func gate(allow: Bool, asked: Asked) -> @Sendable (GateRequest) async -> GateVerdict {
        { request in
            asked.append(request.subject)
            return allow ? .allow : .deny("a person must approve this first")
        }
    }

    func testOpenHandsATargetToItsHandlerBehindTheGate() async throws {
        let home = try TestDesktopHome()
        defer { home.remove() }
        try home.installOpenHandler()
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let tool = OpenTool(environment: home.environment, display: display.name)
        XCTAssertTrue(tool.description.contains("it does not depend on what is on screen"))
        let trace = { (try? String(contentsOf: home.openTrace, encoding: .utf8)) ?? "" }
        let asked = Asked()

        let denied = outputText(
            try await tool.execute(
                ["target": "xclawtest://denied"], context: ToolContext(gate: gate(allow: false, asked: asked))))
        XCTAssertEqual(denied, "a person must approve this first")
        let dry = outputText(try await tool.execute(["target": "xclawtest://dry"], context: ToolContext(dryRun: true)))
        XCTAssertEqual(dry, "dry run: would open \"xclawtest://dry\"")
        XCTAssertEqual(trace(), "")

        let opened = outputText(
            try await tool.execute(
                ["target": "xclawtest://hello"], context: ToolContext(gate: gate(allow: true, asked: asked))))
        XCTAssertTrue(opened.hasPrefix("opened \"xclawtest://hello\" via xdg-open"), opened)
        XCTAssertEqual(trace(), "xclawtest://hello\n")
        XCTAssertEqual(
            asked.all,
            [
                ActionSubject(label: "open xclawtest://denied", role: "service"),
                ActionSubject(label: "open xclawtest://hello", role: "service"),
            ])
        let missing = await expectToolError {
            try await tool.execute(["target": "nothing-here.txt"], context: ToolContext())
        }
        XCTAssertTrue(
            missing?.message.hasPrefix("no file at \(home.environment["HOME"]!)/nothing-here.txt") == true,
            "\(String(describing: missing))")
    }

    func testUserUnitsReadsFreelyAndGatesWhatItChanges() async throws {
        let manager = try TestUserManager()
        defer { manager.stop() }
        try manager.writeUnit("sleeper.service", "[Unit]\nDescription=Sleeps\n[Service]\nExecStart=/bin/sleep 300\n")
        let tool = UserUnitsTool(environment: manager.environment)
        XCTAssertTrue(tool.description.contains("it does not depend on what is on screen"))
        let asked = Asked()

        let denied = outputText(
            try await tool.execute(
                ["action": "restart", "name": "sleeper"], context: ToolContext(gate: gate(allow: false, asked: asked))))
        XCTAssertEqual(denied, "a person must approve this first")
        XCTAssertEqual(asked.all, [ActionSubject(label: "restart unit sleeper.service", role: "service")])
        XCTAssertEqual(try manager.systemctl(["is-active", "sleeper"]).output, "inactive\n", "nothing was started")

        let started = outputText(
            try await tool.execute(
                ["action": "start", "name": "sleeper"], context: ToolContext(gate: gate(allow: true, asked: asked))))
        XCTAssertTrue(started.hasPrefix("start sleeper.service: done\nsleeper.service: active (running)"), started)
        let pid = try manager.systemctl(["show", "-p", "MainPID", "--value", "sleeper"]).output
        XCTAssertTrue(started.contains("main pid: \(pid)"), started)
        // Reads are not gated: a gate that denies everything is never asked.
        let reads = ToolContext(gate: gate(allow: false, asked: asked))
        let count = asked.all.count
        let listed = outputText(try await tool.execute(["action": "list"], context: reads))
        XCTAssertTrue(listed.contains("sleeper.service: active (running) \"Sleeps\""), listed)
        let status = outputText(try await tool.execute(["action": "status", "name": "sleeper"], context: reads))
        XCTAssertTrue(status.hasPrefix("sleeper.service: active (running)"), status)
        XCTAssertEqual(asked.all.count, count)
        let stopped = outputText(try await tool.execute(["action": "stop", "name": "sleeper"], context: ToolContext()))
        XCTAssertTrue(stopped.hasPrefix("stop sleeper.service: done\nsleeper.service: inactive (dead)"), stopped)

        let missing = await expectToolError {
            try await tool.execute(["action": "status", "name": "nosuch"], context: ToolContext())
        }
        XCTAssertTrue(missing?.message.contains("no unit \"nosuch.service\"") == true, "\(String(describing: missing))")
        let bus = try TestSessionBus()
        let absent = await expectToolError {
            try await UserUnitsTool(environment: bus.environment).execute(["action": "list"], context: ToolContext())
        }
        XCTAssertTrue(
            absent?.message.hasPrefix("no systemd user manager runs on this session bus") == true,
            "\(String(describing: absent))")
    }
}

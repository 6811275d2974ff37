import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawPolling
import XclawServices
import XclawTesting

@testable import XclawSkills

/// `dbus_call` as the model uses it, against mpv's MPRIS interface on a private bus: the run's gates (dry run, a
/// denial) stop the call before it is made, an allowed call acts (mpv's own IPC says so), and the tool is off unless
/// an allow-list names what it may reach.
final class DBusCallToolTests: XCTestCase {
    private var bus: TestSessionBus!
    private var mpv: TestMediaPlayer!

    override func setUpWithError() throws {
        bus = try TestSessionBus()
        mpv = try TestMediaPlayer(on: bus)
    }

    override func tearDown() {
        bus?.stop()
    }

    private func tool(_ allow: String = "org.mpris.MediaPlayer2.*") throws -> DBusCallTool {
        DBusCallTool(caller: GuardedBusCall(allow: try BusAllowList.parse(allow), environment: bus.environment))
    }

    private let pause: JSONValue = [
        "action": "call", "bus_name": "org.mpris.MediaPlayer2.mpv", "object_path": "/org/mpris/MediaPlayer2",
        "interface": "org.mpris.MediaPlayer2.Player", "method": "Pause",
    ]

    private func text(_ output: ToolOutput) -> String {
        output.content.compactMap { if case .text(let t) = $0 { return t } else { return nil } }.joined()
    }

    func testAnAllowedCallActsAndItsReplyIsServiceData() async throws {
        let records = Mutex<[ActionRecord]>([])
        let context = ToolContext(log: { record in records.withLock { $0.append(record) } })
        let listed = text(try await tool().execute(["action": "list"], context: context))
        XCTAssertTrue(listed.contains("running: org.mpris.MediaPlayer2.mpv"), listed)
        let described = text(
            try await tool().execute(
                [
                    "action": "introspect", "bus_name": "org.mpris.MediaPlayer2.mpv",
                    "object_path": "/org/mpris/MediaPlayer2",
                ],
                context: context))
        XCTAssertTrue(described.contains("method Seek(x) -> ()"), described)
        XCTAssertTrue(described.hasPrefix("<service_data source="), described)

        let reply = text(try await tool().execute(pause, context: context))
        XCTAssertTrue(reply.contains("<service_data") && reply.contains("[]"), reply)
        XCTAssertTrue(poll(within: .seconds(5)) { self.mpv.isPaused == true })
        XCTAssertEqual(records.withLock { $0.map(\.result) }, ["ok"])
    }

    func testTheGatesStopTheCallBeforeItIsMade() async throws {
        let subjects = Mutex<[ActionSubject]>([])
        let denying = ToolContext(gate: { request in
            subjects.withLock { $0.append(request.subject) }
            return .deny("a person said no")
        })
        let denied = text(try await tool().execute(pause, context: denying))
        XCTAssertEqual(denied, "a person said no")
        XCTAssertEqual(subjects.withLock { $0.first?.label }, "pause (org.mpris.MediaPlayer2.mpv)")
        XCTAssertEqual(subjects.withLock { $0.first?.role }, "service")
        let dry = text(try await tool().execute(pause, context: ToolContext(dryRun: true)))
        XCTAssertEqual(dry, "dry run: would pause (org.mpris.MediaPlayer2.mpv)")
        // Neither reached mpv: both were refused before any call was made.
        XCTAssertEqual(mpv.isPaused, false)

        // The method's verb is what the approval policy reads: RemoveObjects is a deletion, SendObjects a send.
        let removing = ActionSubject(label: DBusCallTool.words("RemoveObjects") + " (org.x.Y)", role: "service")
        XCTAssertEqual(ApprovalPolicy.kinds(of: removing), [.delete])
        let sending = ActionSubject(label: DBusCallTool.words("SendObjects"), role: "service")
        XCTAssertEqual(ApprovalPolicy.kinds(of: sending), [.send])
    }

    func testANameOffTheListIsAnErrorTheModelReads() async throws {
        do {
            _ = try await tool("org.freedesktop.Notifications").execute(pause, context: ToolContext())
            XCTFail("the call went through")
        } catch let error as ToolError {
            XCTAssertTrue(error.message.contains("not in this agent's D-Bus allow-list"), error.message)
        }
        XCTAssertEqual(mpv.isPaused, false)
    }

    func testTheToolIsOffByDefaultAndNeedsAnAllowList() throws {
        XCTAssertFalse(SkillCatalog.defaultToolNames.contains("dbus_call"))
        XCTAssertThrowsError(
            try SkillCatalog.tools(named: ["dbus_call"], dependencies: ToolDependencies(session: nil))
        ) { error in
            XCTAssertEqual(error as? SkillError, .noBusAllowList)
            XCTAssertEqual((error as? SkillError)?.exitStatus, .usage)
        }
        let built = try SkillCatalog.tools(
            named: ["dbus_call"],
            dependencies: ToolDependencies(session: nil, busAllow: try BusAllowList.parse("org.mpris.MediaPlayer2.*")))
        XCTAssertEqual(built.map(\.name), ["dbus_call"])
        XCTAssertTrue(built[0].description.contains("Only these bus names may be called: org.mpris.MediaPlayer2.*"))
    }
}

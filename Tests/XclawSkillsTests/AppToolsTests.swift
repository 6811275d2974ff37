import Foundation
import XCTest
import XclawAgent
import XclawMessages
import XclawScreen
import XclawSkills
import XclawTesting

/// `list_apps` and `launch_app` with .desktop entries the test writes, on a real Xvfb: the window that comes up is
/// the X server's, found by the launched pid.
final class AppToolsTests: XCTestCase {
    func testListAndLaunchAnApplicationAndNothingInADryRun() async throws {
        let display = try TestDisplay(size: Size(width: 800, height: 600))
        defer { display.stop() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-app-tools-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        let applications = root.appendingPathComponent("applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try
            "[Desktop Entry]\nType=Application\nName=Agent Probe\nGenericName=Probe Terminal\nExec=xterm -T \"from the agent\"\n"
            .write(to: applications.appendingPathComponent("agent-probe.desktop"), atomically: true, encoding: .utf8)
        let environment = [
            "XDG_DATA_HOME": root.path, "XDG_DATA_DIRS": root.appendingPathComponent("none").path,
            "PATH": "/usr/bin:/bin",
        ]
        let session = try ScreenSession(display: display.name)

        let listed = outputText(
            try await ListAppsTool(environment: environment).execute(["query": "probe"], context: ToolContext()))
        XCTAssertEqual(listed, "agent-probe.desktop: \"Agent Probe\" (\"Probe Terminal\")")
        let none = outputText(
            try await ListAppsTool(environment: environment).execute(["query": "zzz"], context: ToolContext()))
        XCTAssertTrue(none.contains("no installed application matches"), none)

        let launch = LaunchAppTool(session: session, environment: environment)
        // A dry run launches nothing.
        let dry = outputText(try await launch.execute(["name": "Agent Probe"], context: ToolContext(dryRun: true)))
        XCTAssertTrue(dry.hasPrefix("dry run: would launch Agent Probe"), dry)
        let manager = WindowManager(connection: try display.connect())
        XCTAssertFalse(try manager.list().contains { $0.title == "from the agent" })

        let result = outputText(try await launch.execute(["name": "agent-probe"], context: ToolContext()))
        let window = try XCTUnwrap(try manager.list().first { $0.title == "from the agent" }, result)
        defer { window.pid.map { _ = kill(Int32($0), SIGKILL) } }
        XCTAssertTrue(result.contains("its window \(window.hexID) \"from the agent\" is on screen"), result)
        XCTAssertTrue(result.contains("(pid \(window.pid ?? -1))"), result)

        let unknown = await expectToolError {
            try await launch.execute(["name": "No Such App"], context: ToolContext())
        }
        XCTAssertTrue(unknown?.message.contains("no application is named") == true, "\(String(describing: unknown))")
        // A file, not an installed application: never (text on the screen could name a planted one).
        let planted = await expectToolError {
            try await launch.execute(
                ["name": .string(applications.appendingPathComponent("agent-probe.desktop").path)],
                context: ToolContext())
        }
        XCTAssertTrue(planted?.message.contains("not a file") == true, "\(String(describing: planted))")
        let badWait = await expectToolError {
            try await launch.execute(["name": "Agent Probe", "wait_seconds": 600], context: ToolContext())
        }
        XCTAssertNotNil(badWait)
    }
}

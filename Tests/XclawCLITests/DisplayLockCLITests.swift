import Foundation
import XCTest
import XclawBase
import XclawMockAPI
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// One input lock per display for every actor of every xclaw process: an MCP `click` (the official Python client
/// over stdio, its own `xclaw mcp` process) waits while an agent run in another process holds Shift, so the click
/// never lands shift-clicked in the middle of the agent's action. The fixture, which reports each event with the
/// modifier state the server gave it, is the oracle.
final class DisplayLockCLITests: XCTestCase {
    func testAnMCPClickWaitsForAnAgentsActionInAnotherProcess() throws {
        let python = try PythonVenv.testClients()
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        defer { display.stop() }
        // Under the pointer (the screen's middle), so the keys reach it as well as the click.
        let fixture = try Fixture(display: display.name, frame: Rect(x: 100, y: 100, width: 700, height: 500))
        defer { fixture.stop() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-lock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let state = dir.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        chmod(state.path, 0o700)

        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [
                        .toolUse(
                            id: "toolu_1", name: "computer",
                            input: #"{"action":"hold_key","text":"shift","duration":3}"#)
                    ], stopReason: "tool_use")),
            .stream(.turn(blocks: [.text("Held.")])),
        ])
        defer { server.stop() }
        let env = [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-lock-SECRET", "HOME": dir.path,
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path, "XCLAW_STATE_DIR": state.path,
            "XDG_STATE_HOME": dir.appendingPathComponent("xdg-state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path, "XCLAW_NO_DAEMON": "1",
            "XCLAW_TEST_DAEMON": "0",
        ]
        // The MCP client starts its server and is ready before the agent acts, so the call goes out mid-action.
        let arguments = #"{"x": 300, "y": 250, "display": "\#(display.name)"}"#
        let mcpEnv = String(
            decoding: try JSONSerialization.data(withJSONObject: ["XCLAW_STATE_DIR": state.path, "HOME": dir.path]),
            as: UTF8.self)
        let client = Process()
        client.executableURL = URL(fileURLWithPath: python)
        client.arguments = [
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("mcp/call.py").path,
            productsDirectory.appendingPathComponent("xclaw").path, "click", arguments, mcpEnv,
        ]
        let (toClient, fromClient) = (Pipe(), Pipe())
        client.standardInput = toClient
        client.standardOutput = fromClient
        client.standardError = FileHandle.nullDevice
        try client.run()
        defer { if client.isRunning { client.terminate() } }
        let output = fromClient.fileHandleForReading
        var lines: [String] = []
        func nextLine() -> String? {
            var line = Data()
            while true {
                let byte = output.readData(ofLength: 1)
                if byte.isEmpty { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
                if byte.first == 0x0A { return String(decoding: line, as: UTF8.self) }
                line.append(byte)
            }
        }
        XCTAssertEqual(nextLine(), "ready", "the MCP client did not start")

        let agent = try launchCLI(
            ["run", "Hold shift", "--display", display.name, "--tools", "computer", "--max-steps", "3"],
            environment: env)
        defer { if agent.isRunning { kill(agent.processIdentifier, SIGKILL) } }
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(30)))
        // The call goes out once the fixture saw the agent press Shift (a 3 s hold: it is still down then).
        eventually("the fixture saw the agent press Shift", within: .seconds(20)) {
            fixture.received.contains { $0.kind == .keyPress }
        }
        try toClient.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
        if let line = nextLine() { lines.append(line) }
        client.waitUntilExit()
        XCTAssertEqual(client.terminationStatus, 0)
        let result =
            try lines.first.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        XCTAssertEqual(result["isError"] as? Bool, false, "\(result)")
        agent.waitUntilExit()
        XCTAssertEqual(agent.terminationStatus, 0)

        // The click came after Shift was let go, and without it.
        eventually("the click reached the fixture", within: .seconds(5)) {
            fixture.received.contains { $0.kind == .buttonPress }
        }
        let events = fixture.received
        let press = try XCTUnwrap(events.firstIndex { $0.kind == .buttonPress }, "the click reached the fixture")
        XCTAssertEqual((events[press].state ?? 0) & 1, 0, "the MCP click was shift-clicked: \(events)")
        let shiftDown = try XCTUnwrap(events.firstIndex { $0.kind == .keyPress }, "the agent pressed Shift")
        let shiftUp = try XCTUnwrap(
            events.indices.first { $0 > shiftDown && events[$0].kind == .keyRelease }, "the agent let Shift go")
        XCTAssertLessThan(shiftUp, press, "the click waited for the agent's action: \(events)")
    }
}

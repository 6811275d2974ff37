import Foundation
import XCTest
import XclawAgent
import XclawMessages
import XclawScreen
import XclawSkills
import XclawTesting

/// The `clipboard` tool on a real Xvfb, with xclip as the other app.
final class ClipboardToolTests: XCTestCase {
    func testGetAndSetWithXclipAsTheOtherApp() async throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let tool = ClipboardTool(session: try ScreenSession(display: display.name))

        let empty = outputText(try await tool.execute(["action": "get"], context: ToolContext()))
        XCTAssertEqual(empty, "the clipboard holds no text")
        let dry = outputText(
            try await tool.execute(["action": "set", "text": "x"], context: ToolContext(dryRun: true)))
        XCTAssertTrue(dry.hasPrefix("dry run: would set the clipboard"), dry)
        XCTAssertEqual(try oracle(["xclip", "-o", "-selection", "clipboard"], display: display.name), "")

        let set = outputText(try await tool.execute(["action": "set", "text": "für dich ✓"], context: ToolContext()))
        XCTAssertTrue(set.contains("10 characters"), set)
        XCTAssertEqual(try oracle(["xclip", "-o", "-selection", "clipboard"], display: display.name), "für dich ✓")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-tool-clip-\(getpid())").path
        try Data("copied elsewhere".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try oracle(["xclip", "-i", "-selection", "clipboard", path], display: display.name)
        let got = outputText(try await tool.execute(["action": "get"], context: ToolContext()))
        XCTAssertTrue(got.contains("<screen_data") && got.contains("copied elsewhere"), got)

        let bad = await expectToolError { try await tool.execute(["action": "paste"], context: ToolContext()) }
        XCTAssertEqual(bad?.message, "action must be get or set")
    }
}

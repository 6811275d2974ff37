import ArgumentParser
import Foundation
import XCTest
import XclawCommandLine
import XclawMCP
import XclawMessages
import XclawPerception
import XclawScreen

@testable import XclawCommands

/// What an MCP tool's caller reads names the tool's arguments (`nth`), while the command line keeps its options
/// (`--nth N`); `xclaw mcp --help` lists the tools the server offers, from the same table.
final class MCPToolTextTests: XCTestCase {
    private func tool(_ name: String) throws -> MCPCommandTool {
        try XCTUnwrap(MCPTools.table.first { $0.name == name }, name)
    }

    /// `message` as the tool `name` answers it when its command fails with it.
    private func failure(_ name: String, _ message: String) throws -> String {
        let result = try tool(name).result(MCPCommandRunner.Outcome(status: 1, stdout: Data(), stderr: message))
        XCTAssertTrue(result.isError)
        guard case .text(let text)? = result.content.first else { throw ScreenError.invalidArgument("no text") }
        return text
    }

    func testATieNamesTheToolsArgumentsAndTheCommandLineKeepsItsOptions() throws {
        let tie = PerceptionError.ambiguous(
            label: "Repeat", candidates: [#"e5 text "Repeat" @24,256 54x13"#, #"e6 text "Repeat" @304,256 54x13"#])
        XCTAssertTrue(tie.description.contains("pick one with --nth N, --near LABEL, --window or --role"))
        for name in ["tap", "find"] {
            let text = try failure(name, "xclaw: \(tie)")
            XCTAssertTrue(text.contains("pick one with nth, near, window or role, or tap a ref"), text)
            XCTAssertFalse(text.contains("--"), text)
            XCTAssertTrue(text.contains(#"e6 text "Repeat" @304,256 54x13"#), "the candidates as they were: \(text)")
            XCTAssertTrue(text.hasSuffix("(exit status 1)"), text)
        }
        let guess = PerceptionError.uncertain(label: "Sve", reason: "it was read fuzzily", candidates: [])
        XCTAssertTrue(
            try failure("tap", "xclaw: \(guess)").contains(
                "check with the find tool, then tap a ref, or pick with nth, near, role or window"))
    }

    func testEachToolSpellsItsOwnArguments() throws {
        // An image search: every option the message names is an argument of find, tap and watch.
        let below = ImageSearchError.belowConfidence(path: "save.png", confidence: 0.9, best: nil, floor: 0.5)
        for name in ["find", "tap", "watch"] {
            let text = try failure(name, "xclaw: \(below)")
            XCTAssertTrue(text.contains("with confidence 0.9"), "\(name): \(text)")
            XCTAssertTrue(text.contains("lower confidence, try grayscale or scales"), "\(name): \(text)")
        }
        // Another spelling (--with is modifiers); an option the tool lacks keeps the command line's (still true).
        XCTAssertEqual(
            try failure("click", "xclaw: --with: bad; --count must be 1, 2 or 3 (more with --interval)"),
            "xclaw: modifiers: bad; count must be 1, 2 or 3 (more with --interval)\n(exit status 1)")
        XCTAssertTrue(
            try failure("launch", "waited 10 s, or wait longer with --wait-window SECONDS")
                .contains("wait longer with wait_window\n"))
        XCTAssertTrue(try failure("windows", "no display: pass --display :N").contains("pass display :N"))
    }

    func testTheImageOptionsTheMessagesNameAreArgumentsOfTapAndWatch() throws {
        let image: [String: JSONValue] = [
            "image": .string("save.png"), "confidence": .number(0.8), "grayscale": .bool(true),
            "scales": .string("0.8,1"),
        ]
        let tapCall = MCPCall(arguments: image.merging(["region": .string("0,0,100,100")]) { $1 })
        let tap = try XCTUnwrap(
            try CommandRunner.parse(
                Xclaw.self, arguments: try tool("tap").commandLine(tapCall, display: ":9").arguments)
                as? Tap)
        XCTAssertEqual(tap.image.options, ImageSearchOptions(confidence: 0.8, grayscale: true, scales: [0.8, 1]))
        XCTAssertEqual(tap.region, "0,0,100,100")
        let watchCall = MCPCall(arguments: image)
        let watch = try XCTUnwrap(
            try CommandRunner.parse(
                Xclaw.self, arguments: try tool("watch").commandLine(watchCall, display: ":9").arguments) as? Watch)
        XCTAssertEqual(watch.image.options, ImageSearchOptions(confidence: 0.8, grayscale: true, scales: [0.8, 1]))
    }

    func testQuotedTextAndCommandLinesForTheUserStayAsTheyAre() {
        let arguments = MCPToolText.arguments(of: MCPTools.table[0])
        func rendered(_ text: String) -> String {
            MCPToolText.rendered(text, arguments: arguments, tools: MCPTools.names)
        }
        // A label or title the message quotes is an echo of what was there, an escaped quote inside it too.
        XCTAssertEqual(rendered(#""--window \" --window" --window"#), #""--window \" --window" window"#)
        // A command line in backticks is for a shell: it keeps its options. `xclaw TOOL` alone is the tool.
        XCTAssertEqual(
            rendered("run `xclaw ocr`, or `xclaw display start --accessibility` and --window X,Y,W,H."),
            "run the ocr tool, or `xclaw display start --accessibility` and window.")
        XCTAssertEqual(rendered("`xclaw pixel`, `xclaw ocr --window A`"), "`xclaw pixel`, `xclaw ocr --window A`")
        // Only whole options: inside a word, a value, or a longer option, nothing changes.
        XCTAssertEqual(
            rendered("a--window --windows --window Editor --window=3"), "a--window --windows window Editor window=3")
        XCTAssertEqual(rendered("unclosed `--window"), "unclosed `--window")
    }

    func testMCPHelpListsEveryToolTheServerOffers() throws {
        let server = MCPTools.all(MCPCommandRunner(defaultDisplay: ":1"))
        XCTAssertEqual(server.map(\.name), MCPTools.names)
        XCTAssertTrue(MCPTools.names.contains("clipboard"))
        let help = Xclaw.helpMessage(for: MCPCommand.self, columns: 10_000)
        XCTAssertTrue(
            help.contains("The tools are the commands of the same names: \(MCPTools.names.joined(separator: ", ")). "),
            help)
    }
}

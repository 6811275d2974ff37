import ArgumentParser
import Foundation
import XCTest
import XclawCommandLine
import XclawMCP
import XclawMessages

@testable import XclawCommands

/// `type --into` takes tap's ways to pick among the fields a label names (the advice a tie prints names them), in
/// the CLI and through the MCP `type` tool; without --into they mean nothing and are refused as bad usage.
final class TypeIntoParseTests: XCTestCase {
    func testThePickingOptionsOfTapGoWithInto() throws {
        let parsed = try CommandRunner.parse(
            Xclaw.self,
            arguments: [
                "type", "hi", "--into", "Name", "--nth", "2", "--near", "Age", "--role", "field", "--source", "ocr",
            ])
        let type = try XCTUnwrap(parsed as? TypeText)
        XCTAssertEqual(type.into, "Name")
        XCTAssertEqual(type.choose.nth, 2)
        XCTAssertEqual(type.choose.near, "Age")
        XCTAssertEqual(type.choose.role, .field)
        XCTAssertEqual(type.choose.source, .ocr)
        for alone in [["--nth", "2"], ["--near", "Age"], ["--role", "field"], ["--source", "ocr"]] {
            do {
                _ = try CommandRunner.parse(Xclaw.self, arguments: ["type", "hi"] + alone)
                XCTFail("accepted without --into: \(alone)")
            } catch {
                let failure = CommandRunner.failure(of: error, root: Xclaw.self)
                XCTAssertEqual(failure.status, 2, "\(alone)")
                XCTAssertTrue(failure.message?.contains("go with --into") == true, failure.message ?? "")
            }
        }
    }

    func testTheMCPTypeToolPassesThemOn() throws {
        let tool = try XCTUnwrap(MCPTools.table.first { $0.name == "type" })
        let call = MCPCall(arguments: [
            "text": .string("hi"), "into": .string("Name"), "nth": .number(2), "near": .string("Age"),
            "role": .string("field"), "source": .string("atspi"),
        ])
        let line = try tool.commandLine(call, display: ":9")
        let type = try XCTUnwrap(try CommandRunner.parse(Xclaw.self, arguments: line.arguments) as? TypeText)
        XCTAssertEqual(type.into, "Name")
        XCTAssertEqual(type.choose.nth, 2)
        XCTAssertEqual(type.choose.near, "Age")
        XCTAssertEqual(type.choose.role, .field)
        XCTAssertEqual(type.choose.source, .atspi)
        XCTAssertEqual(line.stdin, Data("hi".utf8))
    }
}

import ArgumentParser
import Foundation
import XCTest
import XclawBase
import XclawCommandLine
import XclawCommands

/// The `--json` face of the commands, in-process: which command lines ask for JSON (so a failure prints the error
/// object), what that object says, and that every command with `--json` has its schema in `docs/json`.
final class JSONOutputTests: XCTestCase {
    /// `docs/json` in the source tree.
    private static let schemas = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/json")

    /// Every command, by its path (`window move` → `window-move`), with its type.
    private static func commands(
        _ type: any ParsableCommand.Type = Xclaw.self, path: [String] = []
    ) -> [(String, any ParsableCommand.Type)] {
        type.configuration.subcommands.flatMap { sub in
            let name = path + [sub._commandName]
            return [(name.joined(separator: "-"), sub)] + commands(sub, path: name)
        }
    }

    func testEveryCommandWithJSONHasItsSchemaAndEverySchemaItsCommand() throws {
        let withJSON = Set(Self.commands().filter { JSONFlag.isDeclared(by: $0.1) }.map(\.0))
        XCTAssertGreaterThan(withJSON.count, 50, "the flag is found in the commands and their option groups")
        for name in ["find", "window-move", "clipboard-get", "daemon-status", "run"] {
            XCTAssertTrue(withJSON.contains(name), name)
        }
        for name in ["click", "type", "export", "daemon-stop"] { XCTAssertFalse(withJSON.contains(name), name) }
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.schemas.path)
            .filter { $0.hasSuffix(".schema.json") }.map { String($0.dropLast(".schema.json".count)) }
        XCTAssertEqual(Set(files).subtracting(["defs", "error"]), withJSON, "docs/json has one schema per command")
    }

    func testJSONIsAskedByTheFlagBeforeDoubleDashOfACommandThatTakesIt() {
        let asked: [([String], Bool)] = [
            (["find", "--json"], true),
            (["find", "Save", "--json", "--nth", "0"], true),
            (["find", "--", "--json"], false),  // an operand: the label "--json"
            (["find", "Save"], false),
            (["click", "--json"], false),  // click takes no --json: stdout stays as it was
            (["nosuch", "--json"], false),
            (["window", "move", "--json", "0x1", "x", "y"], true),  // the flag of an option group
            (["schedule", "add", "--json"], true),
            (["pipeline", "do it", "--json"], true),  // the default subcommand's
            (["daemon", "stop", "--json"], false),
        ]
        for (arguments, expected) in asked {
            XCTAssertEqual(JSONFlag.isAsked(in: arguments, root: Xclaw.self), expected, "\(arguments)")
        }
    }

    func testAParsedCommandSaysWhetherItsFlagIsSet() throws {
        XCTAssertTrue(JSONFlag.isSet(in: try CommandRunner.parse(Xclaw.self, arguments: ["windows", "--json"])))
        XCTAssertFalse(JSONFlag.isSet(in: try CommandRunner.parse(Xclaw.self, arguments: ["windows"])))
        XCTAssertTrue(
            JSONFlag.isSet(in: try CommandRunner.parse(Xclaw.self, arguments: ["window", "close", "0x1", "--json"])))
        XCTAssertFalse(JSONFlag.isSet(in: try CommandRunner.parse(Xclaw.self, arguments: ["click"])))
    }

    func testTheErrorObjectCarriesStderrsMessageTheStatusAndItsName() throws {
        let usage: CommandFailure
        do {
            _ = try CommandRunner.parse(Xclaw.self, arguments: ["find", "--json"])
            return XCTFail("find without a target parsed")
        } catch { usage = CommandRunner.failure(of: error, root: Xclaw.self) }
        XCTAssertEqual(usage.status, 2)
        XCTAssertEqual(usage.jsonError.error.message, usage.message)
        XCTAssertEqual(usage.jsonError.error.exit_code, 2)
        XCTAssertEqual(usage.jsonError.error.kind, "usage")
        let line = usage.jsonError.line
        XCTAssertTrue(line.hasPrefix(#"{"error":{"exit_code":2,"kind":"usage","message":""#), line)
        XCTAssertTrue(line.hasSuffix("}}\n"), line)
        XCTAssertEqual(line.filter { $0 == "\n" }.count, 1, "one line")

        let names =
            (0...6).map { JSONErrorObject.kind(of: Int32($0)) } + [130, 143, 7].map { JSONErrorObject.kind(of: $0) }
        XCTAssertEqual(
            names,
            [
                "ok", "not_found", "usage", "display", "api", "internal", "failed", "interrupted", "interrupted",
                "failed",
            ])
        // An exit that printed nothing still says what it was.
        let interrupted = CommandRunner.failure(of: ExitCode(130), root: Xclaw.self).jsonError
        XCTAssertEqual(interrupted.error.message, "xclaw: interrupted (signal 2)")
        XCTAssertEqual(interrupted.error.kind, "interrupted")
    }
}

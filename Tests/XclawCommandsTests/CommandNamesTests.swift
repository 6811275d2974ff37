import ArgumentParser
import XCTest

@testable import XclawCommands

/// Every command spells its name in its configuration. Without one, ArgumentParser derives it with
/// `String(describing:)` of the type, which searches the binary's protocol conformances: building the command tree
/// that way was 7 % of a `snapshot`'s CPU and 20 % of `--version`'s, in every process the CLI starts.
final class CommandNamesTests: XCTestCase {
    func testEveryCommandNamesItself() {
        var unnamed: [String] = []
        var count = 0
        func walk(_ type: any ParsableCommand.Type, _ path: String) {
            count += 1
            let name = type.configuration.commandName ?? "?"
            if type.configuration.commandName == nil { unnamed.append("\(path) \(String(reflecting: type))") }
            for sub in type.configuration.subcommands { walk(sub, path + " " + name) }
        }
        walk(Xclaw.self, "")
        XCTAssertGreaterThan(count, 90, "the tree lost its commands")
        XCTAssertEqual(unnamed, [], "commands without commandName in their CommandConfiguration")
    }
}

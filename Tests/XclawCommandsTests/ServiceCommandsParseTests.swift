import XCTest
import XclawCommandLine
import XclawCommands

/// What `shortcut run`, `open`, `units` and `unit` refuse before anything runs: bad usage exits 2, in-process.
final class ServiceCommandsParseTests: XCTestCase {
    /// The exit status of parsing `arguments` (0: accepted).
    private func status(_ arguments: [String]) -> Int32 {
        do {
            _ = try CommandRunner.parse(Xclaw.self, arguments: arguments)
            return 0
        } catch {
            return CommandRunner.failure(of: error, root: Xclaw.self).status
        }
    }

    func testBadValuesAreUsageAndGoodOnesParse() {
        for refused in [
            ["shortcut", "run", "x", "--timeout", "0"], ["shortcut", "run", "x", "--timeout", "86401"],
            ["shortcut", "run", "x", "--timeout", "nan"], ["shortcut", "run", " "], ["shortcut", "run"],
            ["open"], ["open", "x", "--timeout", "0"], ["open", "x", "--timeout", "301"],
            ["unit", "start", "x", "--timeout", "0"], ["unit", "status", ""], ["unit", "frobnicate", "x"],
            ["unit", "stop"], ["units", "extra"],
        ] {
            XCTAssertEqual(status(refused), 2, "\(refused)")
        }
        for accepted in [
            ["shortcuts"], ["shortcuts", "new", "window", "--json"],
            ["shortcut", "run", "backup", "--input", "text", "--timeout", "0.5", "--json"],
            ["open", "https://example.org", "a.txt", "--display", ":3", "--timeout", "300"],
            ["units", "--all", "--json"], ["unit", "status", "x.timer", "--json"],
            ["unit", "restart", "x", "--wait", "--timeout", "3600", "--json"],
        ] {
            XCTAssertEqual(status(accepted), 0, "\(accepted)")
        }
    }
}

import ArgumentParser
import XCTest
import XclawWire

@testable import XclawCommands

/// The served-command list lives in `XclawWire` for the front; these tie it to the command table and the MCP tools,
/// so a command added, renamed or removed on one side without the other fails here rather than running in the wrong
/// process.
final class ServedCommandsTests: XCTestCase {
    /// The top-level commands that run in-process on purpose, each with why: whatever is in neither list is a
    /// command nobody decided about.
    private let inProcess: [String: String] = [
        "display": "starts and stops private X servers; the daemon keeps displays, it does not own them",
        "models": "reads a table, no display",
        "agent": "the store's agents", "agents": "the store", "history": "the store", "export": "the store",
        "usage": "the store", "memory": "the store", "schedule": "the store and the scheduler's rows",
        "runs": "the store", "report": "the store and files", "script": "the store and files",
        "replay": "a replay owns its display and run directory for its whole length",
        "stop": "must work when the daemon is the one stuck", "approve": "the store", "deny": "the store",
        "approvals": "the store", "daemon": "manages the daemon itself", "mcp": "a server of its own",
        "bench": "measures the process itself", "keymap-restore": "recovery after a killed owner",
        "input-restore": "recovery after a killed owner", "clipboard-serve": "the clipboard owner's own process",
        "apps": "reads desktop files, no display", "launch": "starts a program in the caller's environment",
        "fleet": "the fleet's tables; a worker's runs are its own daemon's", "db": "the store",
        // Of the desktop services, those that start programs in the caller's session (a shortcut's script, the
        // handler of an opened file) run where the caller runs; the quick bus calls are served.
        "shortcut": "runs the caller's scripts in the caller's environment and session",
        "open": "hands targets to the caller's portal or xdg-open, whose handler starts in the caller's session",
    ]

    /// The names `xclaw --help` lists.
    private var commandNames: Set<String> {
        Set(Xclaw.configuration.subcommands.map { $0._commandName })
    }

    func testEveryServedNameIsACommandAndEveryCommandIsDecided() {
        let names = commandNames
        XCTAssertEqual(ServedCommands.names.subtracting(names), [], "served, but no such command")
        XCTAssertEqual(Set(inProcess.keys).subtracting(names), [], "listed as in-process, but no such command")
        XCTAssertEqual(ServedCommands.names.intersection(inProcess.keys), [], "both served and in-process")
        XCTAssertEqual(
            names.subtracting(ServedCommands.names).subtracting(inProcess.keys), [],
            "new commands: add each to ServedCommands.names (it touches a display or runs an agent) or to inProcess")
    }

    func testEveryMCPToolRunsACommandTheDaemonServes() {
        for tool in MCPTools.table {
            let word = (tool.command ?? [tool.name]).first ?? ""
            XCTAssertTrue(commandNames.contains(word), "MCP tool \(tool.name) runs `\(word)`, which is no command")
            // `launch` starts a program in the environment of whoever runs it: the MCP server's own, as the CLI's.
            if tool.usesDisplay && word != "launch" {
                XCTAssertTrue(
                    ServedCommands.names.contains(word),
                    "MCP tool \(tool.name) uses a display through `\(word)`, which the daemon does not serve")
            }
        }
    }

    func testTheFrontAsksOnlyForTheFirstWord() {
        XCTAssertTrue(ServedCommands.serves(["snapshot", "--json"]))
        XCTAssertFalse(ServedCommands.serves(["--json", "snapshot"]))
        XCTAssertFalse(ServedCommands.serves([]))
        XCTAssertFalse(ServedCommands.serves(["daemon", "status"]))
    }
}

import Foundation
import Synchronization
import XCTest
import XclawBase
import XclawMessages
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `xclaw shortcuts` and `xclaw shortcut run` on a home of the test's own (scripts, and an application with actions):
/// the listing and its schema, a run with input whose output streams as it comes, a failure's status, a missing name
/// with the closest ones, the timeout and Ctrl-C that end the script's whole group, and an action's window on a real
/// display.
final class ShortcutsCLITests: XCTestCase {
    private var home: TestDesktopHome!

    override func setUpWithError() throws { home = try TestDesktopHome() }
    override func tearDown() { home?.remove() }

    private func xclaw(_ arguments: [String]) throws -> CLIResult {
        try runCLI(arguments, environment: home.environment, directory: home.directory)
    }

    /// Seed 4.1.
    func testListsBothKindsAsTextAndAsTheSchemaSays() throws {
        let text = try xclaw(["shortcuts"])
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.text.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 7, text.text)
        XCTAssertEqual(
            lines[0], "backup-notes\tscript\tBacks up the notes folder\t\(home.scripts.path)/backup-notes.sh")
        XCTAssertEqual(
            lines[1],
            "draft\tscript\tNot ready yet\t\(home.scripts.path)/draft.sh\t"
                + "not executable: make it so with `chmod +x \(home.scripts.path)/draft.sh`")
        XCTAssertTrue(lines[5].hasPrefix("Probe Browser: New Window\tdesktop-action\tBrowses probes\t"), lines[5])
        let json = try xclaw(["shortcuts", "probe", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let listed = try XCTUnwrap(JSONValue.parse(json.stdout).array)
        XCTAssertEqual(
            listed.compactMap { $0["id"]?.string },
            ["xclaw-probe.desktop:new-window", "xclaw-probe.desktop:terminal-here"])
        let all = try xclaw(["shortcuts", "--json"])
        let errors = try JSONSchemas.errors([
            .init(name: "shortcuts", schema: "shortcuts", stdout: all.stdout),
            .init(name: "shortcuts probe", schema: "shortcuts", stdout: json.stdout),
        ])
        XCTAssertTrue(errors.isEmpty, errors.joined(separator: "\n"))
    }

    /// Seed 4.2, and a failing script's status.
    func testRunPassesInputAndPrintsTheOutputAndAFailureExitsOne() throws {
        let shouted = try xclaw(["shortcut", "run", "shout", "--input", "hello"])
        XCTAssertEqual(shouted.status, 0, shouted.stderr)
        XCTAssertEqual(shouted.text, "HELLO\ndone\n")
        XCTAssertEqual(shouted.stderr, "shouted 5 characters\n")
        let json = try xclaw(["shortcut", "run", "shout", "--input", "hello", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(json.stderr, "", "with --json the output is in the result, not streamed")
        let result = try JSONValue.parse(json.stdout)
        XCTAssertEqual(result["status"]?.string, "ok")
        XCTAssertEqual(result["stdout"]?.string, "HELLO\ndone\n")
        XCTAssertEqual(result["stderr"]?.string, "shouted 5 characters\n")

        let failed = try xclaw(["shortcut", "run", "fails"])
        XCTAssertEqual(failed.status, 1)
        XCTAssertEqual(failed.stderr, "about to fail\nxclaw: shortcut \"fails\" failed: it exited with status 3\n")
        let failedJSON = try xclaw(["shortcut", "run", "fails", "--json"])
        XCTAssertEqual(failedJSON.status, 1)
        XCTAssertEqual(failedJSON.text.filter { $0 == "\n" }.count, 1, "the result, and no error object after it")
        XCTAssertEqual(try JSONValue.parse(failedJSON.stdout)["exit_code"]?.int, 3)
        let errors = try JSONSchemas.errors([
            .init(name: "shortcut run", schema: "shortcut-run", stdout: json.stdout),
            .init(name: "shortcut run fails", schema: "shortcut-run", stdout: failedJSON.stdout),
        ])
        XCTAssertTrue(errors.isEmpty, errors.joined(separator: "\n"))
    }

    /// Seed 4.4.
    func testAMissingShortcutExitsOneWithTheClosestNames() throws {
        let missing = try xclaw(["shortcut", "run", "backup notes"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(
            missing.stderr.hasPrefix("xclaw: no shortcut is named \"backup notes\" (closest: \"backup-notes\", "),
            missing.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home.backupTrace.path))
        let draft = try xclaw(["shortcut", "run", "draft"])
        XCTAssertEqual(draft.status, 2)
        XCTAssertTrue(draft.stderr.contains("chmod +x"), draft.stderr)
    }

    /// Seed 4.5: killed at the timeout with its group, the partial output printed, exit 1.
    func testASlowScriptIsKilledAtItsTimeoutWithWhatItPrintedKept() throws {
        let slow = try xclaw(["shortcut", "run", "slow", "--timeout", "0.5"])
        XCTAssertEqual(slow.status, 1)
        XCTAssertEqual(slow.text, "started\n")
        XCTAssertTrue(slow.stderr.contains("shortcut \"slow\" was killed after 0.5 s"), slow.stderr)
        let script = try XCTUnwrap(home.pid(in: home.slowPIDs.script))
        let child = try XCTUnwrap(home.pid(in: home.slowPIDs.child))
        eventually("the script and its child gone", within: .seconds(10)) {
            !Subprocess.isRunning(script) && !Subprocess.isRunning(child)
        }
        eventually("nothing of its group runs") { TestDesktopHome.liveMembers(ofGroup: script).isEmpty }
    }

    /// Output streams as it comes (a line before the script ends), and Ctrl-C ends the script's group with xclaw.
    func testOutputStreamsAsItComesAndCtrlCEndsTheScript() throws {
        let out = Pipe()
        let seen = Mutex(Data())
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            seen.withLock { $0.append(data) }
        }
        defer { out.fileHandleForReading.readabilityHandler = nil }
        let process = try launchCLI(["shortcut", "run", "slow"], environment: home.environment, stdout: out)
        eventually("the first line came while the script still ran", within: .seconds(20)) {
            seen.withLock { String(decoding: $0, as: UTF8.self) } == "started\n"
        }
        XCTAssertTrue(process.isRunning)
        let child = try XCTUnwrap(home.pid(in: home.slowPIDs.child))
        process.interrupt()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 130)
        eventually("its sleep went with it", within: .seconds(10)) { !Subprocess.isRunning(child) }

        // Killed outright, xclaw cannot end the script itself: its process guard does.
        try FileManager.default.removeItem(at: home.slowPIDs.child)
        let killed = try launchCLI(["shortcut", "run", "slow"], environment: home.environment)
        let orphan = try XCTUnwrap(
            eventually("the second run's child") { self.home.pid(in: self.home.slowPIDs.child) })
        kill(killed.processIdentifier, SIGKILL)
        killed.waitUntilExit()
        eventually("the guard ended the script's group", within: .seconds(10)) { !Subprocess.isRunning(orphan) }
    }

    /// An application's action: launched on the display with the input in its title, its pid printed.
    func testAnActionOpensItsWindowOnTheDisplay() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480))
        defer { display.stop() }
        let launched = try xclaw([
            "shortcut", "run", "Probe Browser: Terminal Here", "--input", "hello", "--display", display.name,
        ])
        XCTAssertEqual(launched.status, 0, launched.stderr)
        let pid = try XCTUnwrap(Int32(launched.text.trimmingCharacters(in: .whitespacesAndNewlines)), launched.text)
        defer { kill(pid, SIGKILL) }
        let window = try AppLauncher.waitForWindow(
            pid: pid, manager: WindowManager(connection: try display.connect()), timeout: 20)
        XCTAssertEqual(window.title, "xclaw probe hello")
        XCTAssertEqual(getsid(pid), pid, "detached: a session of its own")
        let noDisplay = try xclaw(["shortcut", "run", "Probe Browser: Terminal Here", "--display", ":59999"])
        XCTAssertEqual(noDisplay.status, 3, noDisplay.stderr)
    }
}

import Foundation
import Synchronization
import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// Shortcuts of both kinds from a home of the test's own: the user's scripts and an application's `.desktop` actions,
/// listed, found (or not, with the closest names), run with input and streamed output, killed with their whole
/// process group at the timeout or on cancellation, and launched on a real display.
final class ShortcutsTests: XCTestCase {
    private var home: TestDesktopHome!

    override func setUpWithError() throws { home = try TestDesktopHome() }
    override func tearDown() { home?.remove() }

    private var all: [Shortcut] { Shortcuts.all(environment: home.environment) }

    private func run(
        _ name: String, input: String? = nil, timeout: Duration = .seconds(20), display: String? = nil,
        cancelled: @escaping () -> Bool = { false }
    ) throws -> (ShortcutRun, [(ShortcutStream, String)]) {
        var lines: [(ShortcutStream, String)] = []
        let runner = ShortcutRunner(environment: home.environment, directory: home.directory.path)
        let run = try runner.run(
            try Shortcuts.find(name, in: all), input: input, timeout: timeout, display: display, cancelled: cancelled
        ) { stream, data in lines.append((stream, String(decoding: data, as: UTF8.self))) }
        return (run, lines)
    }

    /// Seed 4.1.
    func testListsScriptsAndApplicationActionsWithTheirDescriptions() throws {
        let shortcuts = all
        XCTAssertEqual(
            shortcuts.map(\.name),
            [
                "backup-notes", "draft", "fails", "shout", "slow", "Probe Browser: New Window",
                "Probe Browser: Terminal Here",
            ], "scripts first, then actions; hidden files, backups and unlisted or missing actions are not shortcuts")
        let backup = try XCTUnwrap(shortcuts.first)
        XCTAssertEqual(backup.id, "backup-notes.sh")
        XCTAssertEqual(backup.kind, .script)
        XCTAssertEqual(backup.description, "Backs up the notes folder", "the first comment line after the shebang")
        XCTAssertEqual(backup.runs, home.scripts.appendingPathComponent("backup-notes.sh").path)
        XCTAssertTrue(backup.runnable)
        let draft = try Shortcuts.find("draft", in: shortcuts)
        XCTAssertFalse(draft.runnable)
        XCTAssertEqual(draft.note, "not executable: make it so with `chmod +x \(draft.path)`")
        let action = try Shortcuts.find("probe browser: new window", in: shortcuts)
        XCTAssertEqual(action.id, "xclaw-probe.desktop:new-window")
        XCTAssertEqual(action.kind, .desktopAction)
        XCTAssertEqual(action.description, "Browses probes")
        XCTAssertTrue(action.runs.hasSuffix("probe-action new-window %u"), action.runs)
        XCTAssertEqual(try Shortcuts.find("xclaw-probe:new-window", in: shortcuts).id, action.id)
        XCTAssertEqual(Shortcuts.matching("terminal", in: shortcuts).map(\.name), ["Probe Browser: Terminal Here"])
        XCTAssertEqual(Shortcuts.matching("notes folder", in: shortcuts).map(\.name), ["backup-notes"])

        // The JSON a command prints: snake_case, no internals.
        let json = String(decoding: try JSONEncoder.xclaw.encode(backup), as: UTF8.self)
        XCTAssertTrue(json.contains("\"kind\":\"script\""), json)
        XCTAssertFalse(json.contains("application"), json)
    }

    /// Seed 4.2: input in, output out, line by line as it comes.
    func testRunsAScriptWithItsInputAndStreamsItsOutputLineByLine() throws {
        let (run, lines) = try run("shout", input: "hello there")
        XCTAssertEqual(run.status, .ok)
        XCTAssertEqual(run.exitCode, 0)
        XCTAssertEqual(run.stdout, "HELLO THERE\ndone\n")
        XCTAssertEqual(run.stderr, "shouted 11 characters\n")
        XCTAssertEqual(lines.filter { $0.0 == .stdout }.map(\.1), ["HELLO THERE\n", "done\n"])
        XCTAssertEqual(lines.filter { $0.0 == .stderr }.map(\.1), ["shouted 11 characters\n"])
        XCTAssertNil(run.failure)

        // Without input the script reads an empty stdin (it does not wait on the caller's); it runs in the caller's
        // directory.
        let (empty, _) = try self.run("shout")
        XCTAssertEqual(empty.stdout, "\ndone\n")
        let (backup, _) = try self.run("backup-notes")
        XCTAssertEqual(backup.stdout, "backed up 3 notes\n")
        XCTAssertEqual(
            try String(contentsOf: home.backupTrace, encoding: .utf8),
            home.directory.path + "\n")
    }

    func testAFailingScriptReportsItsStatusAndOneThatCannotRunIsRefused() throws {
        let (run, lines) = try run("fails")
        XCTAssertEqual(run.status, .failed)
        XCTAssertEqual(run.exitCode, 3)
        XCTAssertEqual(lines.map(\.1), ["about to fail\n"])
        XCTAssertEqual(run.failure, .failed("fails", status: 3))
        XCTAssertEqual(run.failure?.exitStatus, .notFound)
        XCTAssertEqual("\(run.failure!)", "shortcut \"fails\" failed: it exited with status 3")

        XCTAssertThrowsError(try self.run("draft")) { error in
            guard case .notRunnable(let name, let why) = error as? ShortcutError else { return XCTFail("\(error)") }
            XCTAssertEqual(name, "draft")
            XCTAssertTrue(why.contains("chmod +x"), why)
            XCTAssertEqual((error as? ShortcutError)?.exitStatus, .usage)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: home.directory.appendingPathComponent("draft").path))
    }

    /// Seed 4.4: a missing shortcut is exit 1 with the closest names.
    func testAMissingShortcutIsNotFoundWithTheClosestNames() throws {
        XCTAssertThrowsError(try Shortcuts.find("backup notes", in: all)) { error in
            guard case .notFound(let name, let closest) = error as? ShortcutError else { return XCTFail("\(error)") }
            XCTAssertEqual(name, "backup notes")
            XCTAssertEqual(closest.first, "backup-notes")
            XCTAssertEqual(closest.count, 3)
            XCTAssertEqual((error as? ShortcutError)?.exitStatus, .notFound)
            XCTAssertTrue("\(error)".hasPrefix("no shortcut is named \"backup notes\" (closest: \"backup-notes\", "))
        }
        XCTAssertEqual(Shortcuts.closest(to: "new window", in: all).first, "Probe Browser: New Window")
        XCTAssertEqual(Shortcuts.closest(to: "shuot", in: all).first, "shout")
        // Two scripts of one name: the ids tell them apart.
        try home.script("shout.py", "#!/usr/bin/python3\n# Also shouts\nprint('PY')\n")
        XCTAssertThrowsError(try Shortcuts.find("shout", in: all)) { error in
            XCTAssertEqual(error as? ShortcutError, .ambiguous("shout", ids: ["shout.py", "shout.sh"]))
        }
        XCTAssertEqual(try self.run("shout.py").0.stdout, "PY\n")
    }

    /// Seed 4.5: past the timeout the script's whole group is killed; what it printed before is kept.
    func testASlowScriptIsKilledWithItsProcessGroupAtTheTimeout() throws {
        let (run, lines) = try run("slow", timeout: .milliseconds(800))
        XCTAssertEqual(run.status, .timedOut)
        XCTAssertEqual(lines.map(\.1), ["started\n"], "the partial output was handed over")
        XCTAssertEqual(run.stdout, "started\n")
        guard case .timedOut("slow", _) = run.failure else { return XCTFail("\(String(describing: run.failure))") }
        XCTAssertTrue("\(run.failure!)".contains("was killed after 0.8 s"), "\(run.failure!)")
        let script = try XCTUnwrap(home.pid(in: home.slowPIDs.script))
        let child = try XCTUnwrap(home.pid(in: home.slowPIDs.child))
        XCTAssertEqual(run.pid, script)
        XCTAssertFalse(Subprocess.isRunning(script))
        eventually("the script's child (sleep 30) went with its group") { !Subprocess.isRunning(child) }
        eventually("nothing of the group runs") { TestDesktopHome.liveMembers(ofGroup: script).isEmpty }
    }

    func testCancellingARunEndsTheScriptsGroup() throws {
        let started = Mutex(false)
        let runner = ShortcutRunner(environment: home.environment)
        let childFile = home.slowPIDs.child.path
        // Cancelled once it printed its first line and started its child.
        let run = try runner.run(
            try Shortcuts.find("slow", in: all), input: nil, timeout: .seconds(60),
            cancelled: { started.withLock { $0 } && FileManager.default.fileExists(atPath: childFile) }
        ) { _, line in
            if String(decoding: line, as: UTF8.self) == "started\n" { started.withLock { $0 = true } }
        }
        XCTAssertEqual(run.status, .cancelled)
        XCTAssertNil(run.failure)
        let child = try XCTUnwrap(home.pid(in: home.slowPIDs.child))
        XCTAssertFalse(Subprocess.isRunning(run.pid))
        eventually("the child gone", within: .seconds(10)) { !Subprocess.isRunning(child) }
    }

    func testOutputPastTheLimitKeepsItsHeadAndTail() throws {
        try home.script("chatty.sh", "#!/bin/sh\n# Talks a lot\nseq 1 20000\n")
        let runner = ShortcutRunner(environment: home.environment)
        let run = try runner.run(try Shortcuts.find("chatty", in: all), input: nil, timeout: .seconds(20), keep: 1000)
        XCTAssertEqual(run.status, .ok)
        XCTAssertTrue(run.stdout.hasPrefix("1\n2\n3\n"), run.stdout)
        XCTAssertTrue(run.stdout.hasSuffix("19999\n20000\n"), run.stdout)
        let total = (1...20000).map { "\($0)\n" }.joined().utf8.count
        XCTAssertEqual(run.cutBytes, total - 1000)
        XCTAssertTrue(run.stdout.contains("[… \(total - 1000) bytes left out …]"), run.stdout)
    }

    /// A desktop action starts detached on the display, its input in place of %u.
    func testADesktopActionLaunchesOnTheDisplayWithItsInput() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let (run, lines) = try run("Probe Browser: New Window", input: "https://example.org/a b", display: display.name)
        XCTAssertEqual(run.status, .launched)
        XCTAssertTrue(lines.isEmpty)
        eventually("the action ran", within: .seconds(10)) {
            (try? String(contentsOf: self.home.actionTrace, encoding: .utf8))?.contains("DISPLAY=") == true
        }
        XCTAssertEqual(
            try String(contentsOf: home.actionTrace, encoding: .utf8),
            "new-window\nhttps://example.org/a b\nDISPLAY=\(display.name)\n")
        // Without a display named, and none in the environment, an action cannot run.
        XCTAssertThrowsError(
            try ShortcutRunner(environment: home.environment).run(
                try Shortcuts.find("xclaw-probe.desktop:new-window", in: all), input: nil, timeout: .seconds(1))
        ) { error in
            guard case .notRunnable(_, let why) = error as? ShortcutError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("no display"), why)
        }
    }
}

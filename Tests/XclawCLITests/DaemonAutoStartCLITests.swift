import Foundation
import XCTest
import XclawBase
import XclawDaemon
import XclawPolling
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Fast by default: a command the daemon serves starts one when none runs, says so once, and the daemon leaves
/// after its idle time; `XCLAW_NO_DAEMON=1`, `daemon = off` (config) and `XCLAW_DAEMON=off` start none; a setting
/// that means nothing is refused (exit 2); commands started together start one daemon between them.
final class DaemonAutoStartCLITests: XCTestCase {
    private var root: URL!
    private var state: URL { root.appendingPathComponent("state") }
    private var config: URL { root.appendingPathComponent("config") }
    nonisolated(unsafe) private static var display: TestDisplay?

    /// The automatic start on (the suite turns it off for every other test), in a state directory of its own; the
    /// daemon pass leaves it to the test (`XCLAW_TEST_DAEMON=0`). A daemon a failed test left leaves after a minute.
    private var env: [String: String] {
        [
            "XCLAW_STATE_DIR": state.path, "XCLAW_TEST_DAEMON": "0", "XCLAW_DAEMON": "auto",
            "XCLAW_DAEMON_IDLE_EXIT": "60", "XDG_CONFIG_HOME": config.path,
        ]
    }

    override class func setUp() {
        super.setUp()
        display = try? TestDisplay(size: Size(width: 320, height: 240))
    }

    override class func tearDown() {
        display?.stop()
        super.tearDown()
    }

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-autostart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        displayName = try XCTUnwrap(Self.display, "the test display did not start").name
    }

    override func tearDown() {
        _ = try? runCLI(["daemon", "stop"], environment: env)
        try? FileManager.default.removeItem(at: root)
    }

    private var displayName = ""
    private var windows: [String] { ["windows", "--display", displayName] }

    private func daemonStatus(_ environment: [String: String]) throws -> DaemonStatus? {
        let status = try runCLI(["daemon", "status", "--json"], environment: environment)
        guard status.status == 0 else { return nil }
        return try JSONDecoder().decode(DaemonStatus.self, from: status.stdout)
    }

    func testTheFirstServedCommandStartsADaemonAndSaysSoOnce() throws {
        XCTAssertNil(try daemonStatus(env), "none runs before")
        let help = try runCLI(windows + ["--help"], environment: env)
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertNil(try daemonStatus(env), "help is not worth a daemon")
        let inProcess = try runCLI(windows, environment: env.merging(["XCLAW_NO_DAEMON": "1"]) { $1 })
        XCTAssertEqual(inProcess.status, 0, inProcess.stderr)
        XCTAssertNil(try daemonStatus(env), "XCLAW_NO_DAEMON=1 starts none")

        let first = try runCLI(windows, environment: env)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(first.text, inProcess.text, "the daemon's answer is the in-process one")
        XCTAssertTrue(first.stderr.contains("xclaw: started a daemon"), first.stderr)
        XCTAssertTrue(first.stderr.contains("daemon = off in \(config.path)/xclaw/config"), first.stderr)
        XCTAssertTrue(first.stderr.contains("XCLAW_NO_DAEMON=1"), first.stderr)
        XCTAssertTrue(first.stderr.contains("after 1 min"), first.stderr)
        let status = try XCTUnwrap(try daemonStatus(env), "a daemon runs after the first command")
        XCTAssertEqual(status.idle_exit_s, 60)
        XCTAssertEqual(status.socket, state.appendingPathComponent("daemon.sock").path)

        let second = try runCLI(windows, environment: env)
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(second.text, inProcess.text)
        XCTAssertEqual(second.stderr, "", "said once")
        XCTAssertEqual(try daemonStatus(env)?.pid, status.pid, "the same daemon served it")

        // Killed, it leaves a stale socket: the next command starts a new one without a word about the old. (Not
        // our child: watched until its socket refuses, which it does once its last thread is gone.)
        kill(status.pid, SIGKILL)
        XCTAssertTrue(
            poll(within: .seconds(30), every: .milliseconds(20)) {
                !DaemonMode.answers(status.socket)
            }, "the killed daemon's socket stopped answering")
        let third = try runCLI(windows, environment: env)
        XCTAssertEqual(third.status, 0, third.stderr)
        XCTAssertEqual(third.stderr, "", "the notice was said once in this state directory")
        let restarted = try XCTUnwrap(try daemonStatus(env))
        XCTAssertNotEqual(restarted.pid, status.pid)
    }

    func testDaemonOffInTheConfigOrTheEnvironmentStartsNone() throws {
        let file = config.appendingPathComponent("xclaw/config")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try "# mine\ndaemon = off\n".write(to: file, atomically: true, encoding: .utf8)
        var environment = env
        environment.removeValue(forKey: "XCLAW_DAEMON")
        let result = try runCLI(windows, environment: environment, removing: ["XCLAW_DAEMON"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertNil(try daemonStatus(environment), "daemon = off starts none")
        let auto = try runCLI(["daemon", "start", "--auto"], environment: environment, removing: ["XCLAW_DAEMON"])
        XCTAssertEqual(auto.status, 1)
        XCTAssertTrue(auto.stderr.contains("daemon = off in \(file.path)"), auto.stderr)
        // The environment overrides the file, either way.
        let onAgain = try runCLI(windows, environment: env)
        XCTAssertEqual(onAgain.status, 0, onAgain.stderr)
        XCTAssertNotNil(try daemonStatus(env), "XCLAW_DAEMON=auto over the file's off")
        XCTAssertEqual(try runCLI(["daemon", "stop"], environment: env).status, 0)
        let off = try runCLI(windows, environment: env.merging(["XCLAW_DAEMON": "off"]) { $1 })
        XCTAssertEqual(off.status, 0, off.stderr)
        XCTAssertNil(try daemonStatus(env))
        // `daemon start --auto` with one running already: exit 0, the same daemon.
        XCTAssertEqual(try runCLI(["daemon", "start", "--auto"], environment: env).status, 0)
        let running = try XCTUnwrap(try daemonStatus(env))
        let again = try runCLI(["daemon", "start", "--auto", "--json"], environment: env)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try JSONDecoder().decode(DaemonStatus.self, from: again.stdout).pid, running.pid)
    }

    func testASettingThatMeansNothingIsRefusedAndStartsNothing() throws {
        let bad = try runCLI(windows + ["--json"], environment: env.merging(["XCLAW_DAEMON": "sometimes"]) { $1 })
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("XCLAW_DAEMON is \"sometimes\": it takes auto or off"), bad.stderr)
        let object = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: bad.stdout) as? [String: [String: Any]], bad.text)
        XCTAssertEqual(object["error"]?["kind"] as? String, "usage")
        let file = config.appendingPathComponent("xclaw/config")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try "daemon_idle_exit = soon\n".write(to: file, atomically: true, encoding: .utf8)
        var fromFile = env
        fromFile.removeValue(forKey: "XCLAW_DAEMON_IDLE_EXIT")
        let idle = try runCLI(windows, environment: fromFile, removing: ["XCLAW_DAEMON_IDLE_EXIT"])
        XCTAssertEqual(idle.status, 2)
        XCTAssertTrue(idle.stderr.contains("\(file.path): daemon_idle_exit is \"soon\""), idle.stderr)
        for unit in ["2d", "5x"] {
            let days = try runCLI(windows, environment: env.merging(["XCLAW_DAEMON_IDLE_EXIT": unit]) { $1 })
            XCTAssertEqual(days.status, 2, "\(unit) is no duration xclaw takes: \(days.stderr)")
        }
        let option = try runCLI(["daemon", "start", "--idle-exit", "tomorrow"], environment: env)
        XCTAssertEqual(option.status, 2)
        XCTAssertTrue(option.stderr.contains("--idle-exit tomorrow: give a duration"), option.stderr)
        XCTAssertNil(try daemonStatus(env), "nothing started")
    }

    func testADaemonStartedSoLeavesWhenIdleAndOneStartedByHandStays() throws {
        let quick = env.merging(["XCLAW_DAEMON_IDLE_EXIT": "1s"]) { $1 }
        XCTAssertEqual(try runCLI(windows, environment: quick).status, 0)
        let status = try XCTUnwrap(try daemonStatus(quick))
        XCTAssertEqual(status.idle_exit_s, 1)
        // Not this process's child (it runs in a session of its own): watched, not waited for.
        XCTAssertTrue(
            poll(within: .seconds(30), every: .milliseconds(50)) { !Subprocess.isRunning(status.pid) },
            "it left after its idle second")
        XCTAssertFalse(FileManager.default.fileExists(atPath: status.socket), "and took its socket with it")
        // By hand: no idle exit, whatever the settings say.
        let started = try runCLI(["daemon", "start", "--json"], environment: quick)
        XCTAssertEqual(started.status, 0, started.stderr)
        let byHand = try JSONDecoder().decode(DaemonStatus.self, from: started.stdout)
        XCTAssertNil(byHand.idle_exit_s)
    }

    func testAScheduleStillToFireKeepsAnIdleDaemon() throws {
        // A database of the test's own, with an hourly schedule: it would not fire without a daemon.
        let quick = env.merging([
            "XCLAW_DAEMON_IDLE_EXIT": "1s", "XDG_DATA_HOME": root.appendingPathComponent("data").path,
        ]) { $1 }
        XCTAssertEqual(try runCLI(["agent", "create", "bot"], environment: quick).status, 0)
        let added = try runCLI(
            ["schedule", "add", "bot", "look", "--every", "1h", "--name", "hourly"], environment: quick)
        XCTAssertEqual(added.status, 0, added.stderr)
        XCTAssertEqual(try runCLI(windows, environment: quick).status, 0)
        let status = try XCTUnwrap(try daemonStatus(quick))
        // Its scheduler looks each second; well past the idle second, it is still there.
        Thread.sleep(forTimeInterval: 4)
        XCTAssertTrue(Subprocess.isRunning(status.pid), "a schedule still to fire keeps it")
        // Once none is left, it leaves.
        XCTAssertEqual(try runCLI(["schedule", "remove", "hourly"], environment: quick).status, 0)
        XCTAssertTrue(
            poll(within: .seconds(30), every: .milliseconds(50)) { !Subprocess.isRunning(status.pid) },
            "it left once no schedule was left")
    }

    /// Two daemons of two state directories typing on one display (a daemon started by hand, and one a command
    /// started): the second must not take the first's typing bindings for keymap entries, which the first unbinds
    /// on its timer — its later `✓` would type nothing.
    func testTwoDaemonsTypingOnOneDisplayStayExact() throws {
        let probe = try Fixture(display: displayName, frame: Rect(x: 0, y: 0, width: 200, height: 150))
        defer { probe.stop() }
        XCTAssertEqual(try runCLI(["activate", String(probe.window), "--display", displayName]).status, 0)
        let other = root.appendingPathComponent("other")
        let first = env.merging(["XCLAW_STATE_DIR": other.path]) { $1 }
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: first).status, 0)
        defer { _ = try? runCLI(["daemon", "stop"], environment: first) }
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: env).status, 0)
        probe.clear()
        func type(_ text: String, _ environment: [String: String]) throws {
            let typed = try runCLI(["type", text, "--display", displayName], environment: environment)
            XCTAssertEqual(typed.status, 0, typed.stderr)
        }
        // The second daemon reads the keymap while the first's bindings for ✓ and € are in it (the first keeps them
        // 1.5 s: its keyboard's settle time, from the first command it served)…
        try type("✓€", first.merging(["XCLAW_KEYMAP_SETTLE_MS": "1500"]) { $1 })
        try type("x", env)
        // …and types them again after the first unbound them (waited for: no keycode holds them any more).
        let keyboard = try Keyboard(connection: DisplayConnection(name: displayName))
        let symbols = ["✓", "€"].map { Keyboard.keysym(for: Unicode.Scalar($0)!) }
        XCTAssertTrue(
            try poll(within: .seconds(30), every: .milliseconds(50)) {
                try symbols.allSatisfy { try keyboard.keycodes(holding: $0).isEmpty }
            }, "the first daemon unbound its keycodes")
        try type("✓€", env)
        XCTAssertEqual(probe.typed(count: 5), "✓€x✓€")
    }

    func testCommandsStartedTogetherStartOneDaemon() throws {
        let runs = try (0..<4).map { _ in
            try launchCLI(windows, environment: env, stdout: Pipe(), stderr: Pipe())
        }
        for run in runs {
            run.waitUntilExit()
            XCTAssertEqual(run.terminationStatus, 0)
        }
        let log = try String(contentsOf: state.appendingPathComponent("daemon.log"), encoding: .utf8)
        XCTAssertEqual(log.components(separatedBy: "listening").count - 1, 1, log)
        XCTAssertNotNil(try daemonStatus(env))
    }
}

import Foundation
import XCTest
import XclawBase
import XclawDaemon
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The daemon's lifecycle through the real binary: one per user, a 0600 socket, status, a stale socket after
/// `kill -9`, a refusal of other users (SO_PEERCRED) and of another protocol version.
final class DaemonCLITests: XCTestCase {
    private var state: URL!
    /// These tests manage their daemon themselves, in both modes of the suite (`XCLAW_TEST_DAEMON=0`).
    private var env: [String: String] { ["XCLAW_STATE_DIR": state.path, "XCLAW_TEST_DAEMON": "0"] }

    override func setUpWithError() throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-daemon-\(UUID().uuidString)")
    }

    override func tearDown() {
        _ = try? runCLI(["daemon", "stop"], environment: env)
        try? FileManager.default.removeItem(at: state)
    }

    func testStartStatusStopAndOnlyOneDaemonPerUser() throws {
        let none = try runCLI(["daemon", "status"], environment: env)
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("no daemon is running"), none.stderr)
        let started = try runCLI(["daemon", "start", "--json"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let status = try JSONDecoder().decode(DaemonStatus.self, from: started.stdout)
        XCTAssertTrue(Subprocess.isRunning(status.pid))
        XCTAssertEqual(status.socket, state.appendingPathComponent("daemon.sock").path)
        XCTAssertEqual(status.version, "0.1.0")
        XCTAssertGreaterThan(status.rss_bytes, 1 << 20)
        var info = stat()
        XCTAssertEqual(lstat(status.socket, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "only this user may connect")
        let second = try runCLI(["daemon", "start"], environment: env)
        XCTAssertEqual(second.status, 1)
        XCTAssertTrue(second.stderr.contains("already running (pid \(status.pid)"), second.stderr)
        let again = try runCLI(["daemon", "status", "--json"], environment: env)
        XCTAssertEqual(try JSONDecoder().decode(DaemonStatus.self, from: again.stdout).pid, status.pid)
        let stopped = try runCLI(["daemon", "stop"], environment: env)
        XCTAssertEqual(stopped.status, 0, stopped.stderr)
        XCTAssertFalse(Subprocess.isRunning(status.pid))
        XCTAssertFalse(FileManager.default.fileExists(atPath: status.socket), "the socket is removed")
        XCTAssertEqual(try runCLI(["daemon", "stop"], environment: env).status, 1)
    }

    func testADaemonKilledWithSIGKILLLeavesAStaleSocketThatIsReplaced() throws {
        let first = try JSONDecoder().decode(
            DaemonStatus.self, from: try runCLI(["daemon", "start", "--json"], environment: env).stdout)
        kill(first.pid, SIGKILL)
        _ = Subprocess.waitForExit(first.pid, deadline: .now + .seconds(5))
        XCTAssertTrue(FileManager.default.fileExists(atPath: first.socket), "kill -9 leaves the socket behind")
        let status = try runCLI(["daemon", "status"], environment: env)
        XCTAssertEqual(status.status, 1, status.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.socket), "the stale socket was removed")
        let restarted = try runCLI(["daemon", "start", "--json"], environment: env)
        XCTAssertEqual(restarted.status, 0, restarted.stderr)
        XCTAssertNotEqual(try JSONDecoder().decode(DaemonStatus.self, from: restarted.stdout).pid, first.pid)
    }

    func testOtherUsersAndOtherProtocolVersionsAreRefused() throws {
        // The seam: only the daemon's own uid is served.
        XCTAssertTrue(DaemonServer.authorize(peer: 1000, owner: 1000))
        XCTAssertFalse(DaemonServer.authorize(peer: 65534, owner: 1000))
        XCTAssertFalse(DaemonServer.authorize(peer: 0, owner: 1000))
        // A server in this process on a socket others can reach, so a second uid can really try it.
        let open = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-peer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: open) }
        chmod(open.path, 0o755)
        let path = open.appendingPathComponent("d.sock").path
        let server = try DaemonServer(socketPath: path, version: "test", execute: { _ in 0 })
        let thread = Thread { server.run() }
        thread.start()
        defer { server.stop() }
        // Another protocol version gets a message that says so, not a misreading.
        let socket = try UnixSocket.connect(path: path)
        socket.write(Data(#"{"version": 99, "op": "status", "future": true}"#.utf8 + [0x0a]))
        let reply = try JSONDecoder().decode(DaemonReply.self, from: try XCTUnwrap(socket.readLine()))
        XCTAssertTrue(reply.error?.contains("protocol version 99") ?? false, "\(reply)")
        XCTAssertNil(reply.status)
        // A real second user, where this test runs as root: `nobody` connects and is refused by SO_PEERCRED.
        let candidates: [String] = ["/usr/bin/setpriv", "/bin/setpriv"]
        guard getuid() == 0, let setpriv = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return }
        chmod(path, 0o666)  // past the file mode, so the refusal below is the daemon's own check
        // The daemon may answer and close before the request is written (it refuses at accept): the refusal is
        // still there to read after a broken pipe.
        let script = """
            import socket; s = socket.socket(socket.AF_UNIX); s.connect("\(path)")
            try:
                s.sendall(b'{"version": 2, "op": "status"}\\n')
            except BrokenPipeError:
                pass
            print(s.makefile().readline().strip())
            """
        let child = try Subprocess.spawn(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script])
        let output = child.read(until: .now + .seconds(10))
        let (stdout, stderr) = (
            String(decoding: output.stdout, as: UTF8.self), String(decoding: output.stderr, as: UTF8.self)
        )
        XCTAssertEqual(child.wait(deadline: .now + .seconds(5)), Subprocess.Termination.exited(0), stderr)
        XCTAssertTrue(stdout.contains("refused: uid 65534"), stdout + stderr)
        XCTAssertFalse(stdout.contains("\"pid\""), "nothing about the daemon was told")
    }

    // MARK: - Input held by a process that is killed

    /// The ways a command holds input for a while: a button held down, Shift held down, and a slow `type` of
    /// characters the keymap lacks (bound to spare keycodes while it types).
    private enum Holding: CaseIterable {
        case button, shift, typing

        var arguments: [String] {
            switch self {
            case .button: return ["click", "--hold-ms", "60000", "20", "20"]
            case .shift: return ["key", "--hold", "60", "shift"]
            case .typing: return ["type", "--delay", "100", String(repeating: "€ɐ", count: 200)]
            }
        }
    }

    /// Whether `holding` shows on the display now, read through the test's own connection: button 1 or Shift_L
    /// down (`XQueryPointer`, `XQueryKeymap`), or a keycode bound to € (`XGetKeyboardMapping`).
    private func shows(_ holding: Holding, on display: TestDisplay) throws -> Bool {
        let input = try InputController(connection: try display.connect())
        switch holding {
        case .button: return try input.pressedNow().buttons.contains(1)
        case .shift:
            let shift = try input.keyboard.keycodesToHold(KeyCombo.parse("shift"))
            return try !Set(input.pressedNow().keys).isDisjoint(with: shift)
        case .typing: return try !input.keyboard.keycodes(holding: Keyboard.keysym(for: "€")).isEmpty
        }
    }

    /// No key and no button is down on the display (through the test's own connection).
    private func assertNothingDown(on display: TestDisplay, file: StaticString = #filePath, line: UInt = #line) throws {
        let pressed = try InputController(connection: try display.connect()).pressedNow()
        XCTAssertEqual(pressed.keys, [], "keys still down", file: file, line: line)
        XCTAssertEqual(pressed.buttons, [], "buttons still down", file: file, line: line)
    }

    /// An in-process xclaw killed with SIGKILL mid-hold or mid-type: its guard releases the button or Shift and
    /// unbinds the spare keycodes it had bound.
    func testAnXclawKilledMidHoldOrTypeLeavesNothingHeldOrBound() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        for holding in Holding.allCases {
            let run = try launchCLI(holding.arguments + ["--display", display.name], environment: env)
            defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
            XCTAssertTrue(
                try eventually("\(holding) shows", within: .seconds(20)) { try shows(holding, on: display) },
                "\(holding) never showed")
            kill(run.processIdentifier, SIGKILL)  // the front became xclaw-core: this is the process that pressed
            run.waitUntilExit()
            XCTAssertTrue(
                try eventually("\(holding) goes", within: .seconds(10)) { try !shows(holding, on: display) },
                "\(holding) stayed after the kill")
            try assertNothingDown(on: display)
        }
    }

    /// The daemon killed with SIGKILL while it serves such a command: its guard releases and unbinds what it held,
    /// and the front exits 5 saying what to run should anything stay held.
    func testADaemonKilledMidHoldOrTypeLeavesNothingHeldOrBound() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        for holding in Holding.allCases {
            let daemon = try startDaemon()
            let stderr = Pipe()
            let run = try launchCLI(holding.arguments + ["--display", display.name], environment: env, stderr: stderr)
            defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
            XCTAssertTrue(
                try eventually("\(holding) shows", within: .seconds(20)) { try shows(holding, on: display) },
                "\(holding) never showed")
            kill(daemon.pid, SIGKILL)
            run.waitUntilExit()
            XCTAssertEqual(run.terminationStatus, 5)
            let said = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertTrue(said.contains("xclaw release-all --everything"), said)
            XCTAssertTrue(
                try eventually("\(holding) goes", within: .seconds(10)) { try !shows(holding, on: display) },
                "\(holding) stayed after the kill")
            try assertNothingDown(on: display)
        }
    }

    // MARK: - Commands through the daemon

    private func status() throws -> DaemonStatus {
        let result = try runCLI(["daemon", "status", "--json"], environment: env)
        guard result.status == 0 else { throw DaemonError.notRunning(socket: result.stderr) }
        return try JSONDecoder().decode(DaemonStatus.self, from: result.stdout)
    }

    private func startDaemon() throws -> DaemonStatus {
        let started = try runCLI(["daemon", "start", "--json"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        return try JSONDecoder().decode(DaemonStatus.self, from: started.stdout)
    }

    func testCommandsRunInTheDaemonUnlessToldNotToAndInProcessOnceItIsKilled() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        let spare = try TestDisplay(size: Size(width: 320, height: 240))
        defer { (display.stop(), spare.stop()) }
        let daemon = try startDaemon()
        XCTAssertEqual(daemon.displays, [])
        // (Plain `cursor`, `click X Y`, `move` and `key` the front does itself, daemon or not.)
        let served = try runCLI(["windows", "--display", display.name], environment: env)
        XCTAssertEqual(served.status, 0, served.stderr)
        XCTAssertEqual(served.stderr, "")
        XCTAssertEqual(try status().displays, [display.name], "the daemon ran it and keeps the display")
        let plain = try runCLI(["cursor", "--display", spare.name], environment: env)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(try status().displays, [display.name], "plain input never reaches the daemon")
        // --no-daemon and XCLAW_NO_DAEMON=1 run in-process: the daemon never hears of the spare display.
        let flagged = try runCLI(["windows", "--no-daemon", "--display", spare.name], environment: env)
        XCTAssertEqual(flagged.status, 0, flagged.stderr)
        let variable = try runCLI(
            ["windows", "--display", spare.name], environment: env.merging(["XCLAW_NO_DAEMON": "1"]) { $1 })
        XCTAssertEqual(variable.status, 0, variable.stderr)
        XCTAssertEqual(try status().displays, [display.name])

        // kill -9 while it serves a command: the CLI says so and exits 5; the command is never run twice.
        let stderr = Pipe()
        let watching = try launchCLI(
            ["watch", "--text", "NEVER SHOWN", "--timeout", "30", "--display", display.name], environment: env,
            stderr: stderr)
        try eventually("the daemon serves the watch") { try status().running == 1 }
        kill(daemon.pid, SIGKILL)
        let said = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        watching.waitUntilExit()
        XCTAssertEqual(watching.terminationStatus, 5, said)
        XCTAssertTrue(said.contains("the daemon died during the command"), said)
        // SIGKILL returns before the process is gone: the kernel closes its descriptors one by one as it exits, the
        // connection the CLI saw close possibly before the listening socket. "Killed" means gone, or a zombie.
        try eventually("the killed daemon is gone") { [nil, "Z"].contains(Subprocess.processState(daemon.pid)) }
        // The next command runs in-process with a one-line notice, and the stale socket is gone.
        let after = try runCLI(["windows", "--display", display.name], environment: env)
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertEqual(after.stderr.split(separator: "\n").count, 1, after.stderr)
        XCTAssertTrue(after.stderr.contains("removed its stale socket); running in-process"), after.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.socket))
        let quiet = try runCLI(["windows", "--display", display.name], environment: env)
        XCTAssertEqual(quiet.status, 0, quiet.stderr)
        XCTAssertEqual(quiet.stderr, "", "no daemon and no socket: nothing to say")
    }

    func testTheDaemonOutlivesTheXServerAndReconnectsWhenItReturns() throws {
        var display = try TestDisplay.restartable(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let number = try XCTUnwrap(Int(display.name.dropFirst()))
        let daemon = try startDaemon()
        XCTAssertEqual(try runCLI(["windows", "--display", display.name], environment: env).status, 0)
        XCTAssertEqual(try runCLI(["snapshot", "--display", display.name], environment: env).status, 0)
        display.stop()
        let gone = try runCLI(["windows", "--display", display.name], environment: env)
        XCTAssertEqual(gone.status, 3, gone.stderr)
        XCTAssertEqual(try status().pid, daemon.pid, "the daemon lives on")
        display = try TestDisplay(size: Size(width: 320, height: 240), number: number)
        for command in [["windows"], ["snapshot"], ["click", "10", "10", "--count", "1"], ["ocr"]] {
            let back = try runCLI(command + ["--display", display.name], environment: env)
            XCTAssertEqual(back.status, 0, "\(command): \(back.stderr)")
        }
        XCTAssertEqual(try status().pid, daemon.pid)
        XCTAssertEqual(try status().displays, [display.name])
    }

    func testAWarmSnapshotKeepsTheTreeUntilAnEventSaysItChanged() throws {
        let display = try TestDisplay(size: Size(width: 640, height: 480), accessibility: true)
        defer { display.stop() }
        let input = Pipe()
        let zenity = Process()
        zenity.executableURL = URL(fileURLWithPath: "/usr/bin/zenity")
        zenity.arguments = ["--progress", "--title", "Progress", "--text", "Step one of two"]
        var appEnvironment = ProcessInfo.processInfo.environment
        for key in display.server.environmentToRemove + ["NO_AT_BRIDGE", "GTK_A11Y"] {
            appEnvironment.removeValue(forKey: key)
        }
        zenity.environment = appEnvironment.merging(display.environment) { $1 }
        zenity.standardInput = input
        zenity.standardOutput = FileHandle.nullDevice
        zenity.standardError = FileHandle.nullDevice
        try zenity.run()
        defer {
            kill(zenity.processIdentifier, SIGKILL)
            zenity.waitUntilExit()
        }
        _ = try startDaemon()
        let snapshot = ["snapshot", "--source", "atspi", "--display", display.name]
        func snapshotUntil(_ text: String) throws -> String {
            var last = ""
            try eventually("a snapshot shows \(text)", every: .milliseconds(50)) {
                let result = try runCLI(snapshot, environment: env)
                last = result.text + result.stderr
                return last.contains(text)
            }
            return last
        }
        XCTAssertTrue(try snapshotUntil("\"Step one of two\"").contains("button \"Cancel\""))
        // A window that just opened still sends events (focus, activation): wait until a snapshot reads no tree.
        var reads = try XCTUnwrap(try status().tree_reads)
        try eventually("a snapshot reads no tree", every: .milliseconds(100)) {
            XCTAssertEqual(try runCLI(snapshot, environment: env).status, 0)
            let now = try XCTUnwrap(try status().tree_reads)
            defer { reads = now }
            return now == reads
        }
        for _ in 0..<3 {
            let warm = try runCLI(snapshot, environment: env)
            XCTAssertEqual(warm.status, 0, warm.stderr)
            XCTAssertTrue(warm.text.contains("\"Step one of two\""), warm.text)
        }
        XCTAssertEqual(try status().tree_reads, reads, "warm snapshots of an unchanged screen read no tree")

        // The dialog's label changes (zenity reads "# text" lines): the next snapshot shows it.
        input.fileHandleForWriting.write(Data("# Step two of two\n".utf8))
        let changed = try snapshotUntil("\"Step two of two\"")
        XCTAssertTrue(changed.contains("\"Step two of two\""), changed)
        XCTAssertFalse(changed.contains("Step one of two"), changed)
        XCTAssertGreaterThan(try XCTUnwrap(try status().tree_reads), reads)
    }

    func testMemoryStaysWithinTheCachesOverThreeHundredSnapshotsOfAChangingScreen() throws {
        let display = try TestDisplay(size: Size(width: 360, height: 80))
        defer { display.stop() }
        // A terminal whose clock line changes every 10 ms: each snapshot has new text for OCR. One process prints it:
        // a shell loop of `date` and `sleep` started 200 processes a second, 2.5 % of the whole suite's CPU.
        let clock = Process()
        clock.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        clock.arguments = [
            "-geometry", "30x3+0+0", "-e", "python3", "-c",
            "import time\nwhile True:\n    print(f'{time.time():.6f}', flush=True)\n    time.sleep(0.01)",
        ]
        clock.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display.name]) { $1 }
        try clock.run()
        defer {
            kill(clock.processIdentifier, SIGKILL)
            clock.waitUntilExit()
        }
        // A small OCR cache, so 300 snapshots (each with a new clock line) fill it twice over and its trimming is what
        // keeps memory bounded. One OCR engine: a second (about 30 MB) is made the first time a snapshot has two
        // blocks to read at once, which a clock line did at snapshot 50-300 once (RSS +30 MB, no cache growing).
        let started = try runCLI(
            ["daemon", "start"],
            environment: env.merging(["XCLAW_OCR_CACHE_BLOCKS": "150", "XCLAW_OCR_WORKERS": "1"]) { $1 })
        XCTAssertEqual(started.status, 0, started.stderr)
        let snapshot = ["snapshot", "--display", display.name]
        var early: DaemonStatus?
        for count in 1...300 {
            let result = try runCLI(snapshot, environment: env)
            XCTAssertEqual(result.status, 0, result.stderr)
            if count == 50 { early = try status() }
        }
        let late = try status()
        let first = try XCTUnwrap(early)
        let blocks = try XCTUnwrap(late.ocr_blocks)
        XCTAssertGreaterThanOrEqual(blocks, 150, "the screen kept changing: the cache filled up")
        XCTAssertLessThanOrEqual(blocks, 187, "the OCR cache is trimmed to its capacity (150) past 187 blocks")
        // What the daemon holds beyond its warm-up is its caches: OCR text (well under a MB at its cap), one frame,
        // the refs and tree of one snapshot. 250 more snapshots of a changing screen must not add more than that.
        let growth = late.rss_bytes - first.rss_bytes
        XCTAssertLessThan(growth, 24 << 20, "RSS \(first.rss_bytes) → \(late.rss_bytes) bytes")
        print("daemon RSS after 50 snapshots: \(first.rss_bytes), after 300: \(late.rss_bytes); OCR blocks \(blocks)")
    }

    func testACLIOfAnotherProtocolVersionSaysSoAndRunsInProcess() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        try FileManager.default.createDirectory(
            at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // A daemon of another build: it answers every request with its own version's refusal.
        let socket = state.appendingPathComponent("daemon.sock").path
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); print("ready", flush=True)
            c, _ = s.accept(); c.makefile().readline()
            c.sendall(b'{"version": 2, "error": "protocol version 3 is not this daemon\\'s 2"}\\n'); c.close()
            """
        let old = try Subprocess.spawn(["/usr/bin/python3", "-c", script, socket])
        defer { _ = old.kill() }
        _ = old.read(until: .now + .seconds(10)) { String(decoding: $0, as: UTF8.self).contains("ready") }
        let result = try runCLI(["windows", "--display", display.name], environment: env)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(
            result.stderr.contains(
                "the daemon speaks protocol 2, this xclaw \(DaemonProtocol.version): running in-process"),
            result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: " + result.stderr)
    }

    func testCtrlCOnAServedWatchEndsTheCLIAndTheWatchInTheDaemon() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        _ = try startDaemon()
        let watching = try launchCLI(
            ["watch", "--text", "NEVER SHOWN", "--timeout", "60", "--display", display.name], environment: env)
        // Ctrl-C ends it at once, as in-process, and the watch stops at its next poll instead of going on for the
        // rest of its 60 s.
        try signalServed(watching, SIGINT, expecting: 130)
    }

    /// Waits until the daemon serves `cli`'s command, sends `cli` the signal, and checks that it exits with
    /// `status` at once and that the daemon stops the command too.
    private func signalServed(_ cli: Process, _ signal: Int32, expecting status: Int32) throws {
        try eventually("the daemon serves the command") { try self.status().running == 1 }
        kill(cli.processIdentifier, signal)
        XCTAssertTrue(cli.exits(within: .seconds(10)), "the command went on after the signal")
        XCTAssertEqual(cli.terminationStatus, status)
        try eventually("the daemon stopped the command as well") { try self.status().running == 0 }
    }

    func testSIGTERMOnAServedChatEndsItWithoutReadingTheShellsInput() throws {
        // Nothing is sent to a model before a line is read: the base URL leads nowhere.
        let chatEnv = env.merging([
            "XCLAW_DB": state.appendingPathComponent("db.sqlite").path, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": "sk-" + "ant-daemon-test", "HOME": state.path,
            "XDG_CONFIG_HOME": state.appendingPathComponent("config").path,
        ]) { $1 }
        _ = try startDaemon()
        XCTAssertEqual(try runCLI(["agent", "create", "pat", "--tools", "memory"], environment: chatEnv).status, 0)
        let input = Pipe()
        let chat = try launchCLI(["chat", "pat"], environment: chatEnv, stdin: input)
        // SIGTERM ends it at once, as in-process; the served chat, waiting for a line, stops reading the stdin it
        // was given (still open here), and so ends too.
        try signalServed(chat, SIGTERM, expecting: 143)
        try input.fileHandleForWriting.close()
    }

    // MARK: - Issue 31: what a caller sends cannot grow the daemon, break it, or leave it confused

    func testRestartingTheXServerOftenLeaksNoConnection() throws {
        var display = try TestDisplay.restartable(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let number = try XCTUnwrap(Int(display.name.dropFirst()))
        let daemon = try startDaemon()
        XCTAssertEqual(try runCLI(["snapshot", "--display", display.name], environment: env).status, 0)
        let before = try XCTUnwrap(try status().x_connections)
        let descriptorsBefore = Self.descriptors(of: daemon.pid)
        for round in 0..<6 {
            switch round % 3 {
            case 0:
                // The server goes while a command waits on it: Xlib itself meets the loss.
                let watching = try launchCLI(
                    ["watch", "--text", "NEVER SHOWN", "--timeout", "30", "--display", display.name], environment: env)
                try eventually("the daemon serves the watch") { try status().running == 1 }
                display.stop()
                watching.waitUntilExit()
                XCTAssertEqual(watching.terminationStatus, 3, "round \(round)")
            case 1:
                // Gone between commands, and a command finds it gone.
                display.stop()
                XCTAssertEqual(try runCLI(["windows", "--display", display.name], environment: env).status, 3)
            default:
                // Gone and back between commands: the kept display reconnects.
                display.stop()
            }
            display = try TestDisplay(size: Size(width: 320, height: 240), number: number)
            let back = try runCLI(["snapshot", "--display", display.name], environment: env)
            XCTAssertEqual(back.status, 0, "round \(round): \(back.stderr)")
        }
        // Each loss dropped its connection at once (socket closed, Xlib's structure kept): one per round, and no
        // descriptor stays behind (a leak would be six sockets; the daemon's request socket closes just after it
        // answers, so the counts are compared once quiet).
        // (A request's thread lets go of the connection just after the client has its answer.)
        XCTAssertTrue(
            eventually("six connections dropped", within: .seconds(5)) {
                (try? self.status().x_connections?.dropped) == before.dropped + 6
            })
        let after = try XCTUnwrap(try status().x_connections)
        XCTAssertEqual(after.dropped - before.dropped, 6, "one connection dropped per loss: \(before) → \(after)")
        XCTAssertLessThanOrEqual(after.open, before.open, "no connection stays open per restart: \(before) → \(after)")
        XCTAssertGreaterThanOrEqual(after.reconnects, 2, "the kept display reconnected: \(after)")
        XCTAssertTrue(
            eventually("no descriptor gained", within: .seconds(5)) {
                Self.descriptors(of: daemon.pid) <= descriptorsBefore
            },
            "the daemon holds \(Self.descriptors(of: daemon.pid)) descriptors, \(descriptorsBefore) before the restarts"
        )
        XCTAssertEqual(try status().displays, [display.name])
    }

    func testAfterItsLimitOfLostConnectionsTheDaemonRecyclesItselfWhenIdleKeepingPidSocketWebAndClipboard() throws {
        var display = try TestDisplay.restartable(size: Size(width: 320, height: 240))
        let steady = try TestDisplay(size: Size(width: 320, height: 240))
        defer { (display.stop(), steady.stop()) }
        let number = try XCTUnwrap(Int(display.name.dropFirst()))
        // Its database exists before it starts, so the threads that follow it (the scheduler, the web view's
        // action log) hold it from the start and the descriptors counted below are the daemon's steady ones.
        let database = state.appendingPathComponent("xclaw.sqlite").path
        let created = try runCLI(["agents", "--json"], environment: self.env.merging(["XCLAW_DB": database]) { $1 })
        XCTAssertEqual(created.status, 0, created.stderr)
        // A daemon with its web view on a port it picked (`--web 127.0.0.1:0`): the port must survive too.
        let daemon = try WebDaemon(environment: ["XCLAW_DAEMON_RECYCLE_AFTER": "2", "XCLAW_DB": database])
        defer { daemon.stop() }
        let env = daemon.environment.merging(["XCLAW_TEST_DAEMON": "0"]) { $1 }
        XCTAssertEqual(try daemon.request("api/agents", token: daemon.token).status, 200)
        func status() throws -> DaemonStatus {
            let result = try runCLI(["daemon", "status", "--json"], environment: env)
            guard result.status == 0 else { throw DaemonError.notRunning(socket: result.stderr) }
            return try JSONDecoder().decode(DaemonStatus.self, from: result.stdout)
        }
        for name in [display.name, steady.name] {
            let warm = try runCLI(["snapshot", "--display", name], environment: env)
            XCTAssertEqual(warm.status, 0, warm.stderr)
        }
        let copied = "recycled \(UUID().uuidString)"
        let set = try runCLI(["clipboard", "set", copied, "--display", steady.name], environment: env)
        XCTAssertEqual(set.status, 0, set.stderr)
        let first = try status()
        XCTAssertEqual(first.pid, daemon.pid)
        XCTAssertEqual(first.x_connections?.recycle_after, 2)
        XCTAssertEqual(first.x_connections?.recycles, 0)
        let web = try XCTUnwrap(first.web)
        XCTAssertTrue(try eventually("no command running", within: .seconds(5)) { try status().running == 0 })
        let descriptorsBefore = Self.descriptors(of: daemon.pid)

        // A command in flight (a watch on the other display) holds the recycle off; commands that arrive meanwhile
        // are served as ever.
        let watching = try launchCLI(
            ["watch", "--text", "NEVER SHOWN", "--timeout", "60", "--display", steady.name], environment: env)
        XCTAssertTrue(
            try eventually("the daemon serving the watch", within: .seconds(10)) { try status().running == 1 },
            "the daemon serves the watch")
        for round in 0..<2 {
            display.stop()
            display = try TestDisplay(size: Size(width: 320, height: 240), number: number)
            let back = try runCLI(["snapshot", "--display", display.name], environment: env)
            XCTAssertEqual(back.status, 0, "round \(round): \(back.stderr)")
        }
        XCTAssertTrue(
            try eventually("two connections dropped", within: .seconds(5)) {
                (try status().x_connections?.dropped ?? 0) >= 2
            }, "\(String(describing: try? status()))")
        let busy = try XCTUnwrap(try status().x_connections)
        XCTAssertEqual(busy.recycles, 0, "no recycle while the watch runs: \(busy)")
        let rssBefore = try status().rss_bytes

        // Once it ends, the daemon re-executes itself: the same process, its lost connections given back.
        kill(watching.processIdentifier, SIGINT)
        watching.waitUntilExit()
        XCTAssertEqual(watching.terminationStatus, 130)
        XCTAssertTrue(
            try eventually("one recycle", within: .seconds(30)) { (try? status().x_connections?.recycles) == 1 },
            "no recycle: \(String(describing: try? status())); log: \(daemon.logText)")
        let after = try status()
        let connections = try XCTUnwrap(after.x_connections)
        XCTAssertEqual(after.pid, daemon.pid, "the same process, re-executed in place")
        XCTAssertTrue(Subprocess.isRunning(daemon.pid))
        XCTAssertLessThan(connections.dropped, 2, "dropped counts this image's losses: \(connections)")
        XCTAssertGreaterThanOrEqual(
            connections.reconnects, 2, "reconnects count over the daemon's life: \(connections)")
        XCTAssertGreaterThanOrEqual(after.uptime_s, first.uptime_s, "the uptime goes on")
        XCTAssertEqual(after.web?.url, web.url, "the same address and token")
        XCTAssertEqual(after.web?.token, daemon.token)
        let log = daemon.logText
        XCTAssertEqual(log.components(separatedBy: "recycling: re-executing").count - 1, 1, log)
        XCTAssertFalse(log.contains(daemon.token), "the token is never logged")
        XCTAssertFalse(log.contains(" error "), log)
        print("daemon RSS before the recycle \(rssBefore / 1024) KB, after \(after.rss_bytes / 1024) KB")

        // It serves commands on the restarted display, its web view with the same token, and the clipboard it
        // held.
        let served = try runCLI(["snapshot", "--display", display.name], environment: env)
        XCTAssertEqual(served.status, 0, served.stderr)
        XCTAssertEqual(try daemon.request("api/agents", token: daemon.token).status, 200)
        XCTAssertEqual(try daemon.request("api/agents", token: String(repeating: "0", count: 64)).status, 401)
        let pasted = try runCLI(["clipboard", "get", "--display", steady.name], environment: env)
        XCTAssertEqual(pasted.status, 0, pasted.stderr)
        XCTAssertEqual(String(decoding: pasted.stdout, as: UTF8.self), copied)
        XCTAssertTrue(
            try eventually("both displays kept again", within: .seconds(10)) {
                Set(try status().displays) == [display.name, steady.name]
            },
            "the kept displays are opened again: \(String(describing: try? status().displays))")
        XCTAssertTrue(
            try eventually("no command running after the recycle", within: .seconds(5)) { try status().running == 0 })
        XCTAssertTrue(
            eventually("no descriptor gained", within: .seconds(5)) {
                Self.descriptors(of: daemon.pid) <= descriptorsBefore
            },
            "the daemon holds \(Self.descriptors(of: daemon.pid)) descriptors, \(descriptorsBefore) before")
        XCTAssertEqual(try status().x_connections?.recycles, 1)
    }

    func testABadRecycleLimitIsRefusedBeforeTheDaemonStarts() throws {
        for bad in ["0", "-3", "many", "2.5"] {
            let variable = env.merging(["XCLAW_DAEMON_RECYCLE_AFTER": bad]) { $1 }
            for command in [["daemon", "start"], ["daemon", "run"]] {
                let refused = try runCLI(command, environment: variable)
                XCTAssertEqual(refused.status, 2, "\(command) \(bad): \(refused.stderr)")
                XCTAssertTrue(
                    refused.stderr.contains("XCLAW_DAEMON_RECYCLE_AFTER=\(bad): give a positive integer"),
                    refused.stderr)
            }
        }
        XCTAssertEqual(try runCLI(["daemon", "status"], environment: env).status, 1, "no daemon was started")
    }

    /// How many descriptors process `pid` holds.
    static func descriptors(of pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    func testAMegabyteEnvironmentRunsTheCommandInProcessWithANotice() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let daemon = try startDaemon()
        let reference = try runCLI(["windows", "--json", "--display", display.name], environment: env)
        XCTAssertEqual(reference.status, 0, reference.stderr)
        // One variable may hold at most 128 KB (the kernel's limit per string): eleven make 1.1 MB.
        var large = env
        for index in 0..<11 { large["XCLAW_TEST_LARGE_\(index)"] = String(repeating: "x", count: 100_000) }
        let served = try runCLI(["windows", "--json", "--display", display.name], environment: large)
        XCTAssertEqual(served.status, 0, served.stderr)
        XCTAssertEqual(served.stdout, reference.stdout)
        XCTAssertTrue(served.stderr.contains("more than the daemon takes"), served.stderr)
        XCTAssertTrue(served.stderr.contains("running in-process"), served.stderr)
        let failing = try runCLI(["windows", "--display", ":\(Int32.max)"], environment: large)
        XCTAssertEqual(failing.status, 3, "the in-process command's own status: \(failing.stderr)")
        XCTAssertEqual(try status().pid, daemon.pid, "the daemon lives on")
    }

    func testALineThatIsNotAnXclawRequestIsAnsweredSo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-line-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("d.sock").path
        let server = try DaemonServer(socketPath: path, version: "test", execute: { _ in 0 })
        Thread { server.run() }.start()
        defer { server.stop() }
        func ask(_ line: Data) throws -> DaemonReply {
            let socket = try UnixSocket.connect(path: path)
            defer { socket.close() }
            socket.write(line + Data([0x0a]))
            return try JSONDecoder().decode(DaemonReply.self, from: try XCTUnwrap(socket.readLine()))
        }
        for line in ["GET / HTTP/1.1", "[1, 2]", #"{"op": "status"}"#] {
            let reply = try ask(Data(line.utf8))
            let error = reply.error ?? ""
            XCTAssertTrue(error.contains("not an xclaw request"), "\(line): \(error)")
            XCTAssertTrue(error.contains("\"version\": \(DaemonProtocol.version)"), error)
            XCTAssertFalse(error.contains("protocol version 0"), error)
        }
        let versioned = try ask(Data(#"{"version": \#(DaemonProtocol.version), "op": "dance"}"#.utf8))
        XCTAssertTrue(versioned.error?.contains("does not understand") ?? false, "\(versioned)")
        let long = try ask(Data(repeating: 0x7b, count: DaemonProtocol.maximumRequest + 10))
        XCTAssertTrue(long.error?.contains("longer than \(DaemonProtocol.maximumRequest) bytes") ?? false, "\(long)")
    }
}

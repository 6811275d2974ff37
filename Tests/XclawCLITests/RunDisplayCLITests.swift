import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawStore
import XclawTesting
import XclawTimeTesting

/// `--display new[:WxH]` and `--setup` as a user runs them: each run of the agent (or of a scheduled task) gets its
/// own Xvfb and accessibility bus with an xterm the setup command started, the loopback Messages API sees that
/// display's screenshots, and afterwards nothing started for the run is left: after a good run, a failed setup, and
/// the running xclaw killed with SIGKILL mid-run.
final class RunDisplayCLITests: XCTestCase {
    private var dir: URL!
    private var db: String { dir.appendingPathComponent("agents.sqlite").path }
    private var record: String { dir.appendingPathComponent("setup.txt").path }

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-rundisplay-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    private func env(_ server: MockMessagesServer) -> [String: String] {
        [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-display-SECRET"), "XCLAW_DB": db,
            "HOME": dir.path, "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]
    }

    /// A setup command that writes down what runs for the run (its display, its mark, the Xvfb's pid from the
    /// display's lock file, the accessibility bus's daemons by their mark), starts an xterm in the background and
    /// writes its pid, then exits with `status`.
    private func setup(exit status: Int = 0) -> String {
        """
        d=${DISPLAY#:}; { echo "$DISPLAY"; echo "$XCLAW_RUN_ID"; cat /tmp/.X$d-lock; \
        grep -lzx "XCLAW_A11Y_DISPLAY=$DISPLAY" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; } > \(record); \
        xterm -geometry 40x10 & echo $! >> \(record); echo "setup says bye" >&2; exit \(status)
        """
    }

    /// What the setup command wrote: the display, the run's mark and the pids of what was started for the run.
    private func started() throws -> (display: String, token: String, pids: [pid_t]) {
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertGreaterThanOrEqual(lines.count, 5, "display, mark, Xvfb, at least one bus daemon, xterm: \(lines)")
        return (lines.first ?? "", lines.count > 1 ? lines[1] : "", lines.dropFirst(2).compactMap { pid_t($0) })
    }

    /// Live (not zombie) processes carrying the run's mark in their environment.
    private static func marked(_ token: String) -> [pid_t] {
        let wanted = Data("XCLAW_RUN_ID=\(token)".utf8)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), Subprocess.isRunning(pid),
                let environ = FileHandle(forReadingAtPath: "/proc/\(pid)/environ")?.readDataToEndOfFile()
            else { return nil }
            return environ.split(separator: 0).contains { Data($0) == wanted } ? pid : nil
        }
    }

    /// Waits (polling, up to a deadline) until every process the run started is gone; fails naming those left.
    private func assertTornDown(
        _ run: (display: String, token: String, pids: [pid_t]), file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertFalse(run.token.isEmpty, "the setup command got the run's mark", file: file, line: line)
        var left: [pid_t] = []
        let names = {
            left.map { pid in
                "\(pid) "
                    + ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "?")
                    .replacingOccurrences(of: "\0", with: " ")
            }
        }
        eventually("every process gone after the run on \(run.display), left: \(names())", file: file, line: line) {
            left = run.pids.filter(Subprocess.isRunning) + Self.marked(run.token)
            return left.isEmpty
        }
    }

    /// Width and height from a base64 PNG's IHDR.
    private static func pngSize(_ base64: String) -> (Int, Int)? {
        guard let data = Data(base64Encoded: base64), data.count > 24 else { return nil }
        let b = [UInt8](data)
        func be(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        return (be(16), be(20))
    }

    /// The size of the screenshot in a request's last tool result.
    private static func screenshotSize(_ request: RecordedRequest) -> (Int, Int)? {
        let body = (try? JSONValue.parse(request.body)) ?? .null
        for block in body["messages"]?.array?.last?["content"]?.array ?? [] {
            for c in block["content"]?.array ?? [] {
                if let data = c["source"]?["data"]?.string { return pngSize(data) }
            }
        }
        return nil
    }

    private static let screenshot = MockReply.stream(
        .turn(
            blocks: [.toolUse(id: "toolu_1", name: "computer", input: "{\"action\": \"screenshot\"}")],
            stopReason: "tool_use"))

    func testEachRunGetsItsOwnDisplayOfItsSizeAndNothingIsLeftAfterIt() throws {
        let server = try MockMessagesServer(replies: [
            Self.screenshot, .stream(.turn(blocks: [.text("Saw 800x600.")])),
            Self.screenshot, .stream(.turn(blocks: [.text("Saw 640x480.")])),
        ])
        defer { server.stop() }
        let e = env(server)
        let created = try runCLI(
            [
                "agent", "create", "private", "--tools", "computer", "--display", "new:800x600", "--setup", setup(),
                "--json",
            ], environment: e)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual(try JSONValue.parse(created.stdout)["display"]?.string, "new:800x600")

        // Display numbers are reused: a name the shared daemon kept from an earlier test's display is not this run's.
        func kept() throws -> [String] {
            guard DaemonMode.isOn else { return [] }
            let status = try runCLI(["daemon", "status", "--json"], environment: e)
            return try JSONValue.parse(status.stdout)["displays"]?.array?.compactMap(\.string) ?? []
        }
        let keptBefore = try kept()
        let sent = try runCLI(["send", "private", "look at the screen"], environment: e)
        XCTAssertEqual(sent.status, 0, sent.stderr)
        XCTAssertTrue(sent.text.contains("Saw 800x600."), sent.text)
        let first = try started()
        XCTAssertTrue(first.display.hasPrefix(":"), first.display)
        let requests = server.requests
        XCTAssertEqual(requests.count, 2)
        // The model was offered the private display and shown its screenshot, at its own size.
        let tools = try JSONValue.parse(requests[0].body)["tools"]?.array ?? []
        let computer = tools.first { $0["name"]?.string == "computer" }
        XCTAssertEqual(computer?["display_width_px"]?.int, 800)
        XCTAssertEqual(computer?["display_height_px"]?.int, 600)
        let shot = try XCTUnwrap(Self.screenshotSize(requests[1]))
        XCTAssertEqual(shot.0, 800)
        XCTAssertEqual(shot.1, 600)
        assertTornDown(first)
        if DaemonMode.isOn, !keptBefore.contains(first.display) {
            // The daemon's kept displays never include a run's own.
            let after = try kept()
            XCTAssertFalse(after.contains(first.display), "\(after)")
        }

        // A scheduled task's own display and setup replace the agent's for its runs.
        let added = try runCLI(
            [
                "schedule", "add", "private", "look again", "--every", "1h", "--name", "small", "--display",
                "new:640x480", "--setup", setup(), "--json",
            ], environment: e)
        XCTAssertEqual(added.status, 0, added.stderr)
        let row = try JSONValue.parse(added.stdout)
        XCTAssertEqual(row["display"]?.string, "new:640x480")
        XCTAssertEqual(row["setup"]?.string, setup())
        let listed = try JSONValue.parse(try runCLI(["schedule", "list", "--json"], environment: e).stdout)
        XCTAssertEqual(listed.array?.first?["display"]?.string, "new:640x480")
        let ran = try runCLI(["schedule", "run-now", "small"], environment: e)
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertTrue(ran.text.contains("Saw 640x480."), ran.text)
        let second = try started()
        XCTAssertNotEqual(second.token, first.token, "each run has its own")
        let small = try XCTUnwrap(Self.screenshotSize(server.requests[3]))
        XCTAssertEqual(small.0, 640)
        XCTAssertEqual(small.1, 480)
        assertTornDown(second)
    }

    func testTheDaemonFiresATaskOnADisplayOfItsOwn() throws {
        let server = try MockMessagesServer(replies: [Self.screenshot, .stream(.turn(blocks: [.text("Fired.")]))])
        defer { server.stop() }
        // A daemon of this test's own, on a state directory of its own (both suite passes).
        var e = env(server)
        e["XCLAW_STATE_DIR"] = dir.appendingPathComponent("state").path
        e["XCLAW_TEST_DAEMON"] = "0"
        defer { _ = try? runCLI(["daemon", "stop"], environment: e) }
        XCTAssertEqual(try runCLI(["agent", "create", "night", "--tools", "computer"], environment: e).status, 0)
        let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        let added = try runCLI(
            [
                "schedule", "add", "night", "look", "--at", soon, "--name", "once", "--display", "new:640x480",
                "--setup", setup(),
            ], environment: e)
        XCTAssertEqual(added.status, 0, added.stderr)
        XCTAssertEqual(try runCLI(["daemon", "start"], environment: e).status, 0)
        let runs: [JSONValue] =
            try eventually("the schedule ran once", within: .seconds(30), every: .milliseconds(100)) {
                let shown = try runCLI(["schedule", "show", "once", "--json"], environment: e)
                let runs = (try? JSONValue.parse(shown.stdout))?["runs"]?.array ?? []
                return runs.isEmpty ? nil : runs
            } ?? []
        let logs = ["schedule.log", "daemon.log"].map {
            (try? String(contentsOf: dir.appendingPathComponent("state/\($0)"), encoding: .utf8)) ?? ""
        }
        XCTAssertEqual(runs.first?["status"]?.string, "completed", "\(logs)")
        let shot = try XCTUnwrap(server.requests.count == 2 ? Self.screenshotSize(server.requests[1]) : nil)
        XCTAssertEqual(shot.0, 640)
        XCTAssertEqual(shot.1, 480)
        let run = try started()
        assertTornDown(run)
        let status = try runCLI(["daemon", "status", "--json"], environment: e)
        let kept = try JSONValue.parse(status.stdout)["displays"]?.array?.compactMap(\.string) ?? []
        XCTAssertFalse(kept.contains(run.display), "the daemon keeps no run's display: \(kept)")
    }

    func testRunOnANewDisplayUsesItAndEndsIt() throws {
        let server = try MockMessagesServer(replies: [Self.screenshot, .stream(.turn(blocks: [.text("Tiny.")]))])
        defer { server.stop() }
        let e = env(server)
        let ran = try runCLI(
            ["run", "look", "--tools", "computer", "--display", "new:320x240", "--setup", setup()], environment: e)
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertTrue(ran.text.contains("Tiny."), ran.text)
        let shot = try XCTUnwrap(server.requests.count == 2 ? Self.screenshotSize(server.requests[1]) : nil)
        XCTAssertEqual(shot.0, 320)
        XCTAssertEqual(shot.1, 240)
        let run = try started()
        assertTornDown(run)
        if DaemonMode.isOn {
            let status = try runCLI(["daemon", "status", "--json"], environment: e)
            let kept = try JSONValue.parse(status.stdout)["displays"]?.array?.compactMap(\.string) ?? []
            XCTAssertFalse(kept.contains(run.display), "\(kept)")
        }
    }

    func testAFailingSetupFailsTheRunBeforeTheModelIsAskedAndEndsEverything() throws {
        let server = try MockMessagesServer(replies: [.stream(.turn(blocks: [.text("never")]))])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(
            try runCLI(
                ["agent", "create", "broken", "--tools", "computer", "--display", "new", "--setup", setup(exit: 1)],
                environment: e
            ).status, 0)
        let sent = try runCLI(["send", "broken", "hello"], environment: e)
        XCTAssertEqual(sent.status, 1, sent.stderr)
        XCTAssertTrue(sent.stderr.contains("exited with status 1"), sent.stderr)
        XCTAssertTrue(sent.stderr.contains("setup says bye"), "the end of its output is shown: \(sent.stderr)")
        XCTAssertEqual(server.requests.count, 0, "the model was never asked")
        let sessions = try AgentStore(path: db).sessions(agent: "broken")
        XCTAssertEqual(sessions.map(\.status), [.failed])
        XCTAssertTrue(sessions.first?.error?.contains("setup command") == true, "\(sessions)")
        assertTornDown(try started())
    }

    func testKilledMidRunItsDisplayBusAndSetupAppsGoToo() throws {
        let server = try MockMessagesServer(replies: [.hang])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(
            try runCLI(
                ["agent", "create", "doomed", "--tools", "computer", "--display", "new:800x600", "--setup", setup()],
                environment: e
            ).status, 0)
        let process = try launchCLI(["send", "doomed", "wait for me"], environment: e)
        // The model is asked only once the display is up and the setup has run.
        eventually("the run asked the model", within: .seconds(20)) { !server.requests.isEmpty }
        XCTAssertEqual(server.requests.count, 1, "the run reached the model")
        let run = try started()
        XCTAssertTrue(run.pids.allSatisfy(Subprocess.isRunning), "all up while the run waits for the model")
        DaemonMode.killRunner(of: process, environment: e)
        assertTornDown(run)
    }

    func testAMalformedPrivateDisplayIsBadUsage() throws {
        let server = try MockMessagesServer(replies: [])
        defer { server.stop() }
        let e = env(server)
        XCTAssertEqual(try runCLI(["agent", "create", "ok", "--tools", "memory"], environment: e).status, 0)
        for arguments in [
            ["agent", "create", "bad", "--display", "new:abc"],
            ["agent", "set", "ok", "--display", "new:"],
            ["agent", "set", "ok", "--display", "new:0x600"],
            ["schedule", "add", "ok", "p", "--every", "1h", "--display", "new:800"],
            ["run", "do it", "--display", "new:800x600x24"],
        ] {
            let refused = try runCLI(arguments, environment: e)
            XCTAssertEqual(refused.status, 2, "\(arguments): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("new:WIDTHxHEIGHT"), "\(arguments): \(refused.stderr)")
        }
        let agents = try JSONValue.parse(try runCLI(["agents", "--json"], environment: e).stdout)
        XCTAssertEqual(agents.array?.compactMap { $0["name"]?.string }, ["ok"])
        XCTAssertNil(agents.array?.first?["display"]?.string)
        XCTAssertEqual(try runCLI(["schedule", "list", "--json"], environment: e).text, "[]\n")
        XCTAssertEqual(server.requests.count, 0)
    }
}

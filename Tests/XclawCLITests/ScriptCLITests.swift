import Foundation
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawRuntime
import XclawScreen
import XclawStore
import XclawTesting
import XclawTimeTesting

/// Recording and exporting a run's steps: a run driven by the loopback model clicks the fixture's Submit button,
/// types text from its prompt and presses Return; its script has each step anchored (label, role, window, place,
/// image patch), the typed text as a parameter, and its shell export, run on its own with another value, does the
/// same to the fixture.
final class ScriptCLITests: XCTestCase {
    private var display: TestDisplay!
    private var fixture: Fixture!
    private var dir: URL!
    private let frame = Rect(x: 200, y: 150, width: 800, height: 400)
    private var button: Rect { Rect(x: frame.x + 300, y: frame.y + 40, width: 120, height: 36) }
    /// The default model (Sonnet 5) sees the 1080p screen whole.
    private let geometry = ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: .highRes)

    override func setUpWithError() throws {
        display = try TestDisplay(size: Size(width: 1920, height: 1080))
        fixture = try Fixture(
            display: display.name, title: "form", frame: frame,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:Submit"])
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-script-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
        // The run presses "Submit" unattended; the approval gate has tests of its own.
        try "approval = none\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        fixture?.stop()
        display?.stop()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    /// The test's own database, config and state; the loopback model and a fake key when `server` is given.
    private func environment(_ server: MockMessagesServer?) -> [String: String] {
        var env = [
            "HOME": dir.path, "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
        ]
        if let server {
            env["ANTHROPIC_BASE_URL"] = server.baseURL
            env["ANTHROPIC_API_KEY"] = "sk-" + "ant-script-SECRET"
        }
        return env
    }

    private static func tool(_ id: String, _ input: String) -> MockReply {
        .stream(.turn(blocks: [.toolUse(id: id, name: "computer", input: input)], stopReason: "tool_use"))
    }

    func testARunsStepsExportAsAnchoredScriptsAndTheShellScriptRunsOnItsOwn() throws {
        let target = geometry.toModel(button.center)
        let server = try MockMessagesServer(replies: [
            Self.tool("toolu_1", "{\"action\": \"left_click\", \"coordinate\": [\(target.x), \(target.y)]}"),
            Self.tool("toolu_2", "{\"action\": \"type\", \"text\": \"order 42\"}"),
            Self.tool("toolu_3", "{\"action\": \"key\", \"text\": \"Return\"}"),
            .stream(.turn(blocks: [.text("Done.")])),
        ])
        defer { server.stop() }
        let env = environment(server)
        let ran = try runCLI(
            [
                "run", "Press Submit, then type order 42 and press Return", "--display", display.name, "--tools",
                "computer",
            ],
            environment: env)
        XCTAssertEqual(ran.status, 0, ran.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        let runs = try XCTUnwrap(try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array)
        let id = try XCTUnwrap(runs.last?["id"]?.int)

        // The replay format: three steps, anchored, with the typed text as a parameter.
        let exported = try runCLI(["script", "export", "\(id)"], environment: env)
        XCTAssertEqual(exported.status, 0, exported.stderr)
        let script = try JSONValue.parse(exported.stdout)
        XCTAssertEqual(script["format"]?.string, "xclaw-script")
        XCTAssertEqual(script["parameters"]?["p1"]?.string, "order 42")
        let steps = try XCTUnwrap(script["steps"]?.array)
        XCTAssertEqual(steps.map { $0["action"]?.string }, ["left_click", "type", "key"])
        let click = steps[0]
        XCTAssertEqual(click["target"]?["label"]?.string, "Submit")
        XCTAssertEqual(click["target"]?["role"]?.string, "button")
        XCTAssertEqual(click["target"]?["window_title"]?.string, "form")
        XCTAssertEqual(click["pre"]?["anchor_visible"], true)
        XCTAssertEqual(click["screen"]?.array?.compactMap(\.int), [1920, 1080])
        // Its place in the window: the click's point less the window's corner (the frame's, borders aside).
        let relative = try XCTUnwrap(click["target"]?["relative"]?.array?.compactMap(\.int))
        let windowBox = try XCTUnwrap(click["target"]?["window_box"]?.array?.compactMap(\.int))
        XCTAssertEqual(relative, [(click["x"]?.int ?? 0) - windowBox[0], (click["y"]?.int ?? 0) - windowBox[1]])
        XCTAssertTrue(button.contains(Point(x: click["x"]?.int ?? 0, y: click["y"]?.int ?? 0)))
        // The image patch is a 48x48 PNG.
        let patch = try XCTUnwrap(Data(base64Encoded: click["target"]?["patch"]?.string ?? ""))
        XCTAssertEqual(Array(patch.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let image = try PNG.decode([UInt8](patch))
        XCTAssertEqual(image.width, 48)
        XCTAssertEqual(image.height, 48)
        XCTAssertEqual(steps[1]["parameter"]?.string, "p1")
        XCTAssertEqual(steps[2]["text"]?.string, "Return")

        // Shown, and written to a file that `show` reads back.
        let file = dir.appendingPathComponent("task.json").path
        XCTAssertEqual(try runCLI(["script", "export", "\(id)", "-o", file], environment: env).status, 0)
        let shown = try runCLI(["script", "show", file], environment: env)
        XCTAssertEqual(shown.status, 0, shown.stderr)
        XCTAssertTrue(shown.text.contains("1. computer left_click button \"Submit\" in \"form\""), shown.text)
        XCTAssertTrue(shown.text.contains("parameter P1 = \"order 42\""), shown.text)

        // The shell export reads as commands and runs on its own, with another value for the parameter.
        let sh = dir.appendingPathComponent("task.sh").path
        XCTAssertEqual(
            try runCLI(["script", "export", "\(id)", "--format", "sh", "-o", sh], environment: env).status, 0)
        let text = try String(contentsOfFile: sh, encoding: .utf8)
        XCTAssertTrue(text.contains("$xclaw tap --role 'button' --window 'form' --timeout 10 -- 'Submit'"), text)
        XCTAssertTrue(text.contains("P1=${P1:-'order 42'}"), text)
        XCTAssertTrue(text.contains("$xclaw type -- \"$P1\""), text)
        XCTAssertTrue(text.contains("$xclaw key -- 'Return'"), text)
        XCTAssertFalse(text.contains("SECRET"))
        // Onto /dev/null and /dev/stdout: written through, and a shell export does not chmod the device.
        for format in ["sh", "json"] {
            let null = try runCLI(
                ["script", "export", "\(id)", "--format", format, "-o", "/dev/null"], environment: env)
            XCTAssertEqual(null.status, 0, null.stderr)
            XCTAssertNil(SpecialFiles.nullDeviceProblem())
        }
        let piped = try runCLI(["script", "export", "\(id)", "--format", "sh", "-o", "/dev/stdout"], environment: env)
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(piped.text, text)
        server.stop()  // no model from here on
        fixture.clear()
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = [sh]
        shell.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }.merging([
            "DISPLAY": display.name, "P1": "order 7",
            "XCLAW": productsDirectory.appendingPathComponent("xclaw").path,
        ]) { $1 }
        try shell.run()
        shell.waitUntilExit()
        XCTAssertEqual(shell.terminationStatus, 0)
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertTrue(button.contains(Point(x: press.rootX ?? -1, y: press.rootY ?? -1)), "\(press)")
        // The parameter's new value, then Return (the probe shows it as a line break).
        let typed = fixture.typed(count: 8)
        XCTAssertEqual(typed.trimmingCharacters(in: .newlines), "order 7")
        XCTAssertEqual(typed.unicodeScalars.count, 8, typed)

        // Replayed without the model (the loopback server is stopped) after the window moved: the tap finds
        // Submit again by its label in its window.
        fixture.stop()
        let moved = Rect(x: frame.x + 350, y: frame.y + 250, width: frame.width, height: frame.height)
        fixture = try Fixture(
            display: display.name, title: "form", frame: moved,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:Submit"])
        let replayed = try runCLI(
            ["replay", "\(id)", "--param", "P1=order 9", "--display", display.name, "--json"], environment: env)
        XCTAssertEqual(replayed.status, 0, replayed.stderr)
        XCTAssertEqual(try JSONValue.parse(replayed.stdout)["replayed"]?.int, 3)
        XCTAssertEqual(try JSONValue.parse(replayed.stdout)["model_requests"]?.int, 0)
        let movedButton = Rect(x: moved.x + 300, y: moved.y + 40, width: 120, height: 36)
        let again = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertTrue(movedButton.contains(Point(x: again.rootX ?? -1, y: again.rootY ?? -1)), "\(again)")
        XCTAssertEqual(fixture.typed(count: 8).trimmingCharacters(in: .newlines), "order 9")

        // The button renamed: the replay stops at that step (exit 1) and clicks nothing.
        fixture.stop()
        fixture = try Fixture(
            display: display.name, title: "form", frame: moved,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:Finish"])
        let diverged = try runCLI(
            ["replay", file, "--display", display.name, "--timeout", "1", "--heal", "never"], environment: env)
        XCTAssertEqual(diverged.status, 1, diverged.stderr)
        XCTAssertTrue(diverged.stderr.contains("step 1 diverged"), diverged.stderr)
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress || $0.kind == .keyPress }.isEmpty)
        XCTAssertEqual(server.requests.count, 4, "replays asked no model")

        // Each replay is a run: listed with its counts, and its report shows its steps and where it diverged.
        let listed = try XCTUnwrap(try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array)
        let replays = listed.filter { $0["replay"] != nil && $0["replay"] != .null }
        XCTAssertEqual(replays.count, 2, "\(listed)")
        XCTAssertEqual(replays[0]["status"]?.string, "completed")
        XCTAssertEqual(replays[0]["replay"]?["replayed"]?.int, 3)
        XCTAssertEqual(replays[0]["replay"]?["script"]?.string, "run \(id)")
        XCTAssertEqual(replays[0]["cost_usd"]?.double, 0)
        XCTAssertEqual(replays[1]["status"]?.string, "failed")
        XCTAssertEqual(replays[1]["replay"]?["failed"]?.int, 1)
        XCTAssertEqual(replays[1]["replay"]?["diverged_step"]?.int, 1)
        XCTAssertEqual(replays[1]["replay"]?["replayed"]?.int, 0)
        let failedRun = try XCTUnwrap(replays[1]["id"]?.int)
        let page = dir.appendingPathComponent("replay.html").path
        let reported = try runCLI(["report", "\(failedRun)", "-o", page], environment: env)
        XCTAssertEqual(reported.status, 0, reported.stderr)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        XCTAssertTrue(html.contains("Replayed steps"), html)
        XCTAssertTrue(html.contains("<tr class=\"failed\"><td>1</td><td>left_click</td><td>Submit</td>"), html)
        XCTAssertTrue(html.contains("alt=\"the screen when the replay diverged\""), html)
        XCTAssertTrue(html.contains("0 model request(s)"), html)
        XCTAssertFalse(html.contains("SECRET"))
        XCTAssertEqual(try runCLI(["replay", file, "--param", "P9=x"], environment: env).status, 2)
        XCTAssertEqual(try runCLI(["replay", file, "--heal", "maybe"], environment: env).status, 2)

        // Healed: only the diverged step goes to the model, which names the control's new label; the fix is saved
        // as the script's next version, and the next replay needs no model.
        let healer = try MockMessagesServer(replies: [.stream(.turn(blocks: [.text("Finish")]))])
        defer { healer.stop() }
        var healEnv = env
        healEnv["ANTHROPIC_BASE_URL"] = healer.baseURL
        let healed = try runCLI(
            ["replay", file, "--display", display.name, "--timeout", "1", "--json"], environment: healEnv)
        XCTAssertEqual(healed.status, 0, healed.stderr)
        let report = try JSONValue.parse(healed.stdout)
        XCTAssertEqual(report["healed"]?.int, 1)
        XCTAssertEqual(report["model_requests"]?.int, 1)
        XCTAssertEqual(healer.requests.count, 1)
        let healedPress = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertTrue(movedButton.contains(Point(x: healedPress.rootX ?? -1, y: healedPress.rootY ?? -1)))
        let saved = try JSONValue.parse(String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(saved["revision"]?.int, 2)
        XCTAssertEqual(saved["steps"]?.array?.first?["target"]?["label"]?.string, "Finish")
        healer.stop()
        fixture.clear()
        let next = try runCLI(
            ["replay", file, "--display", display.name, "--timeout", "1", "--heal", "never", "--json"],
            environment: healEnv)
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertEqual(try JSONValue.parse(next.stdout)["model_requests"]?.int, 0)
        XCTAssertEqual(healer.requests.count, 1, "the healed step needed no model the next time")
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)

        // Kept in the database (SQLite here) and replayed by name.
        let kept = try runCLI(["script", "save", file, "--name", "order"], environment: env)
        XCTAssertEqual(kept.status, 0, kept.stderr)
        XCTAssertEqual(kept.text, "stored 3 step(s) as script order revision 2\n")
        XCTAssertEqual(
            try runCLI(["script", "show", "--stored", "order"], environment: env).text,
            try runCLI(["script", "show", file], environment: env).text)
        fixture.clear()
        let byName = try runCLI(
            ["replay", "--stored", "order", "--display", display.name, "--heal", "never", "--param", "P1=x"],
            environment: env)
        XCTAssertEqual(byName.status, 0, byName.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        XCTAssertEqual(try runCLI(["script", "save", "9999", "--name", "x"], environment: env).status, 1)
        XCTAssertEqual(try runCLI(["script", "save", file, "--name", ""], environment: env).status, 2)

        // Bad input.
        XCTAssertEqual(try runCLI(["script", "export", "9999"], environment: env).status, 1)
        XCTAssertEqual(try runCLI(["script", "export", "\(id)", "--format", "xml"], environment: env).status, 2)
        XCTAssertEqual(
            try runCLI(["script", "show", dir.appendingPathComponent("nope.json").path], environment: env).status, 2)
    }

    /// A script written by hand: a tap of `label` in the form, then typing `typed` into whatever is active, which
    /// must be the window titled `active`.
    private func script(label: String, typed: String? = nil, active: String? = nil, appeared: [String] = []) throws
        -> String
    {
        var steps = [
            RecordedStep(
                tool: "computer", action: .leftClick, x: button.center.x, y: button.center.y, screen: [1920, 1080],
                target: StepAnchor(
                    source: "ocr", label: label, role: "button",
                    box: [button.x, button.y, button.width, button.height],
                    windowClass: "XclawFixture", windowTitle: "form", nth: 1),
                post: StepPostcondition(appeared: appeared, changed: true))
        ]
        if let typed {
            steps.append(
                RecordedStep(
                    tool: "computer", action: .type, text: typed, pre: StepPrecondition(activeWindow: active)))
        }
        let file = dir.appendingPathComponent("hand-\(UUID().uuidString).json").path
        let encoder = JSONEncoder()
        try encoder.encode(
            ReplayScript(run: 1, agent: "replayer", prompt: "by hand", parameters: [:], steps: steps)
        ).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// The newest run of the replay agent after `after`, once `done` holds it (10 s at most).
    private func waitForRun(
        _ store: AgentStore, after: Int64, file: StaticString = #filePath, line: UInt = #line,
        _ done: (SessionRecord) -> Bool
    ) throws -> SessionRecord? {
        try eventually(
            "a replay run after \(after) in the wanted state", every: .milliseconds(50), file: file, line: line
        ) {
            try store.sessions(agent: "replayer").last { $0.id > after }.flatMap { done($0) ? $0 : nil }
        }
    }

    /// A replay under the default approval policy waits for approval of a gated control (and is denied at the
    /// timeout); a replay waiting for its control stops at `xclaw stop` (exit 130, recorded `stopped`); typing
    /// waits for the window that was active, and stops rather than type elsewhere; an unknown agent is refused.
    func testReplaysAreGatedStoppableAndTypeOnlyIntoTheRecordedWindow() throws {
        try "approval_timeout = 1\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        let env = environment(nil)
        XCTAssertEqual(try runCLI(["agent", "create", "replayer"], environment: env).status, 0)
        let gated = try runCLI(
            ["replay", try script(label: "Submit"), "--display", display.name, "--timeout", "2"], environment: env)
        XCTAssertEqual(gated.status, 1, gated.stderr)
        XCTAssertTrue(gated.stderr.contains("needs approval"), gated.stderr)
        XCTAssertTrue(fixture.wait(for: .buttonPress, timeout: 0.5).isEmpty, "the gated Submit was not pressed")

        // Stopped while it waits for a control that is not there.
        let waiting = try launchCLI(
            ["replay", try script(label: "Missing"), "--display", display.name, "--timeout", "60"], environment: env)
        defer { if waiting.isRunning { kill(waiting.processIdentifier, SIGKILL) } }
        let store = try AgentStore(path: try XCTUnwrap(env["XCLAW_DB"]))
        let running = try eventually(
            "the replay shows as a running run", within: .seconds(20), every: .milliseconds(50)
        ) {
            try store.sessions(agent: "replayer").last { $0.status == .running }
        }
        let run = try XCTUnwrap(running, "the replay shows as a running run")
        XCTAssertEqual(run.replay?.steps, 1)
        XCTAssertEqual(try runCLI(["stop", "\(run.id)"], environment: env).status, 0)
        waiting.waitUntilExit()
        XCTAssertEqual(waiting.terminationStatus, 130)
        XCTAssertEqual(try store.session(run.id).status, .stopped)

        // Ctrl-C stops it the same way: recorded as stopped, exit 130.
        let interrupted = try launchCLI(
            ["replay", try script(label: "Missing"), "--display", display.name, "--timeout", "60"], environment: env)
        defer { if interrupted.isRunning { kill(interrupted.processIdentifier, SIGKILL) } }
        let second = try XCTUnwrap(waitForRun(store, after: run.id) { $0.status == .running })
        kill(interrupted.processIdentifier, SIGINT)
        interrupted.waitUntilExit()
        XCTAssertEqual(interrupted.terminationStatus, 130)
        XCTAssertEqual(try store.session(second.id).status, .stopped)
        XCTAssertEqual(try store.session(second.id).error, "stopped by Ctrl-C")

        // A stop ends a wait for approval at once, without a decision.
        try "approval_timeout = 120\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        let approving = try launchCLI(
            ["replay", try script(label: "Submit"), "--display", display.name, "--timeout", "5"], environment: env)
        defer { if approving.isRunning { kill(approving.processIdentifier, SIGKILL) } }
        let third = try XCTUnwrap(waitForRun(store, after: second.id) { $0.status == .needsApproval })
        XCTAssertEqual(try runCLI(["stop", "\(third.id)", "--wait", "10"], environment: env).status, 0)
        approving.waitUntilExit()
        XCTAssertEqual(approving.terminationStatus, 130)
        XCTAssertEqual(try store.session(third.id).status, .stopped)
        XCTAssertTrue(fixture.wait(for: .buttonPress, timeout: 0.5).isEmpty, "nothing was pressed")

        // A plain OK is judged by its dialog: "Delete 3 files?" makes it a delete, which waits; a neutral one does not.
        try "approval_timeout = 1\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        for (question, gated) in [("Delete 3 files?", true), ("Welcome back", false)] {
            fixture.stop()
            fixture = try Fixture(
                display: display.name, title: "form", frame: frame,
                extra: ["--text", "20,40,10x20,#000000:\(question)", "--button", "300,40,120,36:OK"])
            let answered = try runCLI(
                ["replay", try script(label: "OK"), "--display", display.name, "--timeout", "2"], environment: env)
            XCTAssertEqual(answered.status, gated ? 1 : 0, answered.stderr)
            XCTAssertEqual(fixture.wait(for: .buttonPress, timeout: gated ? 0.5 : 5).count, gated ? 0 : 1, question)
            if gated { XCTAssertTrue(answered.stderr.contains("(delete: left_click button"), answered.stderr) }
        }
        fixture.stop()
        fixture = try Fixture(
            display: display.name, title: "form", frame: frame,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:Submit"])

        // Bad input, refused before anything: a password step with no value; --heal ask with nobody to ask.
        var password = try ReplayScript.read(
            try script(label: "Submit", typed: "x"), resolved: try script(label: "Submit", typed: "x"))
        (password.steps[1].text, password.steps[1].parameter) = (nil, "password")
        let secret = dir.appendingPathComponent("password.json").path
        try password.write(to: secret)
        let unasked = try runCLI(["replay", secret, "--display", display.name], environment: env)
        XCTAssertEqual(unasked.status, 2, unasked.stderr)
        XCTAssertTrue(unasked.stderr.contains("--param PASSWORD=VALUE"), unasked.stderr)
        let noTerminal = try runCLI(
            ["replay", try script(label: "Submit"), "--heal", "ask", "--display", display.name],
            environment: env.merging(["ANTHROPIC_API_KEY": "sk-" + "ant-unused"]) { $1 })
        XCTAssertEqual(noTerminal.status, 2, noTerminal.stderr)
        XCTAssertEqual(
            try runCLI(
                ["schedule", "add", "replayer", "p", "--every", "1h", "--replay", secret], environment: env
            ).status, 2)
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress || $0.kind == .keyPress }.isEmpty)

        // Typing waits for the recorded active window; another one is active, so nothing is typed.
        try "approval = none\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        fixture.clear()
        let elsewhere = try runCLI(
            [
                "replay", try script(label: "Submit", typed: "abc", active: "Elsewhere"), "--display", display.name,
                "--timeout", "1", "--json",
            ], environment: env)
        XCTAssertEqual(elsewhere.status, 1, elsewhere.stderr)
        let outcome = try JSONValue.parse(elsewhere.stdout)
        XCTAssertEqual(outcome["replayed"]?.int, 1)
        XCTAssertEqual(outcome["diverged_step"]?.int, 2)
        XCTAssertTrue(outcome["reason"]?.string?.contains("active window is \"form\"") == true, elsewhere.text)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        XCTAssertTrue(fixture.received.filter { $0.kind == .keyPress }.isEmpty, "nothing was typed")
        // The recorded window active: typed.
        fixture.clear()
        let typed = try runCLI(
            [
                "replay", try script(label: "Submit", typed: "abc", active: "form"), "--display", display.name,
                "--timeout", "2",
            ], environment: env)
        XCTAssertEqual(typed.status, 0, typed.stderr)
        XCTAssertEqual(fixture.typed(count: 3), "abc")

        // The window's title changed (a document's name in it): found by its class, the only one of that class.
        fixture.stop()
        fixture = try Fixture(
            display: display.name, title: "report.txt", frame: frame,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:Submit"])
        let retitled = try runCLI(
            ["replay", try script(label: "Submit"), "--display", display.name, "--timeout", "2"], environment: env)
        XCTAssertEqual(retitled.status, 0, retitled.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        // Two windows of that class, neither titled as recorded: which one is not certain, so nothing is clicked.
        let twin = try Fixture(
            display: display.name, title: "notes.txt", frame: Rect(x: 1100, y: 500, width: 600, height: 300),
            extra: ["--button", "300,40,120,36:Submit"])
        defer { twin.stop() }
        fixture.clear()
        let twins = try runCLI(
            ["replay", try script(label: "Submit"), "--display", display.name, "--timeout", "1"], environment: env)
        XCTAssertEqual(twins.status, 1, twins.stderr)
        XCTAssertTrue(twins.stderr.contains("its window \"form\" is not on the screen"), twins.stderr)
        XCTAssertTrue(fixture.wait(for: .buttonPress, timeout: 0.5).isEmpty)
        XCTAssertTrue(twin.wait(for: .buttonPress, timeout: 0.5).isEmpty)

        // A script from elsewhere names an agent this database lacks: refused before anything happens.
        let other = try runCLI(
            ["replay", try script(label: "Submit"), "--agent", "nobody", "--display", display.name], environment: env)
        XCTAssertEqual(other.status, 1, other.stderr)
        XCTAssertTrue(other.stderr.contains("no agent named \"nobody\""), other.stderr)
    }

    /// A step whose outcome reads differently now: the model is asked whether the screen shows the same outcome, and
    /// its words count only when they are on the screen; the fix is saved, and the next replay needs no model.
    func testADivergedOutcomeIsHealedOnlyWithWordsThatAreOnTheScreen() throws {
        try "approval = none\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text("Shipped")])), .stream(.turn(blocks: [.text("\"Order form\"")])),
        ])
        defer { server.stop() }
        let env = environment(server)
        XCTAssertEqual(try runCLI(["agent", "create", "replayer"], environment: env).status, 0)
        let file = try script(label: "Submit", appeared: ["text Order sent"])
        // The model names words that are not on the screen: not believed.
        let refused = try runCLI(
            ["replay", file, "--display", display.name, "--timeout", "1", "--json"], environment: env)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(
            try JSONValue.parse(refused.stdout)["reason"]?.string?.contains("\"Shipped\", which is not on the screen")
                == true, refused.text)
        // It names what the screen shows: healed, saved as the script's next revision.
        let healed = try runCLI(
            ["replay", file, "--display", display.name, "--timeout", "1", "--json"], environment: env)
        XCTAssertEqual(healed.status, 0, healed.stderr)
        XCTAssertEqual(try JSONValue.parse(healed.stdout)["healed"]?.int, 1)
        let saved = try JSONValue.parse(String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(saved["revision"]?.int, 2)
        XCTAssertEqual(saved["steps"]?.array?.first?["post"]?["appeared"]?.array?.first?.string, "text Order form")
        XCTAssertEqual(server.requests.count, 2)
        server.stop()
        let next = try runCLI(
            ["replay", file, "--display", display.name, "--timeout", "1", "--heal", "never"], environment: env)
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertEqual(server.requests.count, 2, "the healed outcome needed no model the next time")
        // The healing requests are the replay's: their cost is on its run.
        let store = try AgentStore(path: try XCTUnwrap(env["XCLAW_DB"]))
        let runs = try store.sessions(agent: "replayer")
        XCTAssertEqual(runs.map(\.status), [.failed, .completed, .completed])
        XCTAssertEqual(runs.map { $0.replay?.requests }, [1, 1, 0])
        XCTAssertEqual(try store.steps(session: runs[1].id).count, 1, "its request is recorded with the run")
    }
}

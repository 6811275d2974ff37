import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Text typed into a password field reaches the field and nothing else: a run driven by the loopback model types a
/// password into zenity's password dialog (GTK, its entry a "password text" on the accessibility bus), and the
/// action log, the store's steps (script export), the report, the export and the history show it masked. The app is
/// the oracle that the text was typed: zenity prints what it got.
final class SecretTextCLITests: XCTestCase {
    private var display: TestDisplay!
    private var dir: URL!
    private var dialog: Subprocess?

    override func setUpWithError() throws {
        display = try TestDisplay(size: Size(width: 1280, height: 800), accessibility: true)
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
    }

    override func tearDown() {
        _ = dialog?.kill()
        dialog?.closePipes()
        display?.stop()
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    private static func tool(_ id: String, _ input: String) -> MockReply {
        .stream(.turn(blocks: [.toolUse(id: id, name: "computer", input: input)], stopReason: "tool_use"))
    }

    /// With `approval` as the config sets it: `none` (no gate: the field is looked up for the typing alone) and the
    /// default (the gate's own look classifies it).
    private func typeAPassword(approval: String?, batch: Bool = false) throws {
        try (approval.map { "approval = \($0)\n" } ?? "").write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        var env = [
            "HOME": dir.path, "XCLAW_DB": dir.appendingPathComponent("db-\(approval ?? "default").sqlite").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XCLAW_STATE_DIR": dir.appendingPathComponent("xclaw-state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "XCLAW_NO_DAEMON": "1", "XCLAW_TEST_DAEMON": "0",
        ].merging(display.environment) { $1 }
        var appEnv = ProcessInfo.processInfo.environment.merging(display.environment) { $1 }
        appEnv["DISPLAY"] = display.name
        appEnv["NO_AT_BRIDGE"] = nil
        let title = "Vault \(approval ?? "default")"
        let started = try Subprocess.spawn(
            ["/usr/bin/zenity", "--password", "--title", title], stdout: .pipe, stderr: .null, environment: appEnv)
        dialog = started
        // The model clicks into the field first (where a person would), then types: the dialog is ready once a
        // snapshot reads its field from the accessibility bus.
        let field = try XCTUnwrap(
            try eventually("\(title)'s field on the accessibility bus", within: .seconds(30), every: .milliseconds(100))
            {
                () -> JSONValue? in
                let look = try ReplayApps.xclaw(
                    ["snapshot", "--window", title, "--json", "--display", display.name], environment: env, timeout: 30)
                let elements = (try? JSONValue.parse(look.stdout))?["elements"]?.array ?? []
                return elements.first { $0["role"]?.string == "field" && $0["source"]?.string == "atspi" }?["box"]
            })
        let x = (field["x"]?.int ?? 0) + (field["width"]?.int ?? 0) / 2
        let y = (field["y"]?.int ?? 0) + (field["height"]?.int ?? 0) / 2

        let secret = ["Tr0ub4dor", "x", String(UUID().uuidString.prefix(8))].joined(separator: "-")
        let actions = [
            "{\"action\": \"left_click\", \"coordinate\": [\(x), \(y)]}",
            "{\"action\": \"type\", \"text\": \"\(secret)\"}",
            "{\"action\": \"key\", \"text\": \"Return\"}",
        ]
        // One call a step, or the three in one `computer_batch` call.
        let calls: [MockReply] =
            batch
            ? [
                .stream(
                    .turn(
                        blocks: [
                            .toolUse(
                                id: "toolu_0", name: "computer_batch",
                                input: "{\"actions\": [\(actions.joined(separator: ", "))]}")
                        ], stopReason: "tool_use"))
            ] : actions.enumerated().map { Self.tool("toolu_\($0.offset)", $0.element) }
        let server = try MockMessagesServer(replies: calls + [.stream(.turn(blocks: [.text("Unlocked.")]))])
        defer { server.stop() }
        env["ANTHROPIC_BASE_URL"] = server.baseURL
        env["ANTHROPIC_API_KEY"] = "sk-" + "ant-secret-SECRET"
        let log = dir.appendingPathComponent("actions-\(approval ?? "default").jsonl").path
        let ran = try ReplayApps.xclaw(
            [
                "run", "Unlock the vault", "--display", display.name, "--tools",
                batch ? "computer,computer_batch" : "computer", "--log", log,
            ],
            environment: env, timeout: 120)
        XCTAssertEqual(ran.status, 0, ran.stderr)
        // The app got the password: typing it was not hindered.
        let (out, _, _) = started.read(until: ContinuousClock.now + .seconds(10))
        let printed = String(decoding: out, as: UTF8.self).trimmingCharacters(in: .newlines)
        XCTAssertEqual(printed, secret, "zenity did not get the password")

        // The model is told where its text went (and reads no text back).
        XCTAssertEqual(server.requests.count, batch ? 2 : 4)
        let answer = String(decoding: server.requests[batch ? 1 : 2].body, as: UTF8.self)
        XCTAssertTrue(
            answer.contains("typed \(secret.count) characters into a password field"), String(answer.suffix(300)))

        let runs = try JSONValue.parse(try ReplayApps.xclaw(["runs", "--json"], environment: env, timeout: 30).stdout)
        let id = try XCTUnwrap(runs.array?.last?["id"]?.int)
        let agent = try XCTUnwrap(runs.array?.last?["agent"]?.string)
        let report = dir.appendingPathComponent("report.html").path
        var views: [(String, String)] = [("action log", try String(contentsOfFile: log, encoding: .utf8))]
        for (what, arguments) in [
            ("report", ["report", "\(id)", "-o", "/dev/stdout"]), ("script", ["script", "export", "\(id)"]),
            ("markdown export", ["export", agent]), ("json export", ["export", agent, "--format", "json"]),
            ("history", ["history", agent]), ("history json", ["history", agent, "--json"]),
            ("report written", ["report", "\(id)", "-o", report]),
        ] {
            let shown = try ReplayApps.xclaw(arguments, environment: env, timeout: 60)
            XCTAssertEqual(shown.status, 0, "\(what): \(shown.stderr)")
            views.append((what, shown.stdout))
        }
        views.append(("report file", try String(contentsOfFile: report, encoding: .utf8)))
        for (what, text) in views {
            XCTAssertFalse(text.contains(secret), "\(what) shows the password")
        }
        for (what, text) in views where !["script", "report written"].contains(what) {
            XCTAssertTrue(
                text.contains("(\(secret.count) characters, hidden)"), "\(what) masks it: \(text.prefix(2000))")
        }
        // The script keeps the step as a parameter a replay must be given.
        let script = try XCTUnwrap(views.first { $0.0 == "script" }?.1)
        XCTAssertTrue(script.contains("\"parameter\" : \"password\""), String(script.prefix(2000)))
    }

    func testAPasswordTypedWithoutAGateIsMaskedEverywhere() throws {
        try typeAPassword(approval: "none")
    }

    func testAPasswordTypedInABatchIsMaskedEverywhere() throws {
        try typeAPassword(approval: "none", batch: true)
    }

    func testAPasswordTypedPastTheGateIsMaskedEverywhere() throws {
        // The default policy gates typing into password fields; `run` on no terminal is unattended, so the gate
        // would wait: the config allows it, with the gate still looking.
        try typeAPassword(approval: "delete")
    }
}

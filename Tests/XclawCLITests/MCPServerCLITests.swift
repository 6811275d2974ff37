import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting

/// `xclaw mcp` through the official MCP Python client (PyPI `mcp`, in a venv the tests make once), started as MCP
/// clients start servers: over stdio, without DISPLAY. Real Xvfb, real fixture, real OCR.
final class MCPServerCLITests: XCTestCase {
    /// The venv's python, or why there is none.
    private static let python: Result<String, any Error> = Result {
        try PythonVenv.python("mcp-client", packages: ["mcp"])
    }
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("mcp")

    var state: URL!

    override func setUpWithError() throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-mcp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        chmod(state.path, 0o700)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: state)
    }

    /// What the client script saw in `scenario`, and what the server wrote on stderr.
    /// With `http`, the client talks to that daemon's MCP over streamable HTTP instead of starting `xclaw mcp`.
    func client(
        _ scenario: String, display: String, serverDisplay: Bool = false, environment: [String: String] = [:],
        http: WebDaemon? = nil
    ) throws -> (result: [String: Any], stdout: String, stderr: String) {
        let python = try Self.python.get()
        let errlog = state.appendingPathComponent("server-stderr.log").path
        var env = ["XCLAW_STATE_DIR": state.path]
        env.merge(environment) { $1 }
        var config: [String: Any] = [
            "display": display, "server_display": serverDisplay, "env": env, "errlog": errlog,
        ]
        if let http { config["http"] = ["url": http.url + "mcp", "token": http.token] }
        let configText = String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
        let outcome = try Subprocess.run(
            [
                python, Self.scripts.appendingPathComponent("client.py").path,
                productsDirectory.appendingPathComponent("xclaw").path, scenario, configText,
            ], timeout: .seconds(180))
        let stdout = String(decoding: outcome.stdout, as: UTF8.self)
        let stderr = http?.logText ?? (try? String(contentsOfFile: errlog, encoding: .utf8)) ?? ""
        guard outcome.ending == .exited(0),
            let result = try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any]
        else {
            throw ScreenError.invalidArgument(
                "client \(scenario) ended \(outcome.ending): \(String(decoding: outcome.stderr, as: UTF8.self)) "
                    + "server: \(stderr)")
        }
        return (result, stdout, stderr)
    }

    /// A fake API key, built from parts so no scanner mistakes it for a real one: no reply or log may show it.
    static func fakeKey() -> String {
        ["sk", "ant", "api03", UUID().uuidString.replacingOccurrences(of: "-", with: "")].joined(separator: "-")
    }

    static func summary(_ value: Any?) -> (isError: Bool, text: String) {
        let object = value as? [String: Any] ?? [:]
        return (object["isError"] as? Bool ?? false, (object["texts"] as? [String] ?? []).joined(separator: "\n"))
    }

    func testToolsAnnotationsSnapshotTapAndErrorsWithoutLeakingTheKey() throws {
        let scene = try WidgetScene()
        defer {
            scene.fixture.stop()
            scene.display.stop()
        }
        let key = Self.fakeKey()
        let (result, stdout, stderr) = try client(
            "basic", display: scene.display.name, environment: ["ANTHROPIC_API_KEY": key])
        XCTAssertEqual(result["protocolVersion"] as? String, "2025-11-25")
        XCTAssertEqual(result["serverInfo"] as? String, "xclaw")

        let tools = try XCTUnwrap(result["tools"] as? [String: [String: Any]])
        let reads = ["snapshot", "find", "capture", "ocr", "watch", "windows", "apps"]
        let inputs = ["tap", "type", "key", "click", "scroll", "drag", "clipboard"]
        XCTAssertEqual(Set(tools.keys), Set(reads + inputs + ["activate", "launch"]))
        for name in reads {
            XCTAssertEqual(tools[name]?["readOnlyHint"] as? Bool, true, name)
            XCTAssertEqual(tools[name]?["destructiveHint"] as? Bool, false, name)
        }
        for name in inputs {
            XCTAssertEqual(tools[name]?["readOnlyHint"] as? Bool, false, name)
            XCTAssertEqual(tools[name]?["destructiveHint"] as? Bool, true, name)
        }
        XCTAssertEqual(tools["launch"]?["openWorldHint"] as? Bool, true)
        XCTAssertEqual(tools["activate"]?["idempotentHint"] as? Bool, true)
        for (name, tool) in tools where name != "apps" {
            XCTAssertTrue((tool["properties"] as? [String] ?? []).contains("display"), "\(name) takes display")
        }
        XCTAssertTrue((tools["tap"]?["properties"] as? [String] ?? []).contains("ref"))

        // No display anywhere (the client gave the server no DISPLAY, nor --display, and no daemon runs).
        let none = Self.summary(result["no_display"])
        XCTAssertTrue(none.isError)
        XCTAssertTrue(none.text.contains("pass display"), none.text)

        // The clipboard: set (through stdin, so text that looks like an option stays text), then read back; set
        // without text is an isError result.
        XCTAssertFalse(Self.summary(result["clipboard_set"]).isError, Self.summary(result["clipboard_set"]).text)
        let clip = Self.summary(result["clipboard_get"])
        XCTAssertFalse(clip.isError, clip.text)
        XCTAssertTrue(clip.text.contains("--clip \u{2713} one"), clip.text)
        let clipBad = Self.summary(result["clipboard_bad"])
        XCTAssertTrue(clipBad.isError && clipBad.text.contains("needs text"), clipBad.text)

        let snapshot = Self.summary(result["snapshot"])
        XCTAssertFalse(snapshot.isError, snapshot.text)
        XCTAssertTrue(snapshot.text.contains("button \"Save\""), snapshot.text)
        let tap = Self.summary(result["tap"])
        XCTAssertFalse(tap.isError, tap.text)
        XCTAssertTrue(tap.text.hasPrefix("tapped "), tap.text)
        XCTAssertEqual(scene.fixture.wait(for: .buttonPress).first?.target, "Save", "the tap landed")
        for name in ["activate", "type", "key"] {
            XCTAssertFalse(Self.summary(result[name]).isError, "\(name): \(Self.summary(result[name]).text)")
        }
        XCTAssertEqual(scene.fixture.typed(count: 10), "--héllo ✓x", "typed exactly, then the key")

        // Tool failures are isError results, never protocol errors; an unknown tool is a protocol error.
        for (name, words) in [
            ("tap_ref_and_label", "not both"), ("bad_type", "x must be an integer"),
            ("bad_value", "--amount must be from 1 to 1000"), ("unknown_argument", "colour is not an argument"),
            ("not_found", "nothing on screen matches"),
        ] {
            let reply = Self.summary(result[name])
            XCTAssertTrue(reply.isError, name)
            XCTAssertTrue(reply.text.contains(words), "\(name): \(reply.text)")
        }
        XCTAssertFalse(Self.summary(result["bad_value"]).text.contains("Usage:"), "no usage lines of the CLI")
        XCTAssertTrue((result["unknown_tool"] as? String ?? "").contains("-32602"), "\(result["unknown_tool"] ?? "")")
        XCTAssertFalse(Self.summary(result["apps"]).isError)

        XCTAssertFalse(stdout.contains(key), "a reply shows the key")
        XCTAssertFalse(stderr.contains(key), "the server's log shows the key")
        XCTAssertFalse(stdout.contains(key.suffix(12)), "a reply shows part of the key")
    }

    func testACallWithoutADisplayUsesTheDaemonsElseDISPLAY() throws {
        let display = try TestDisplay()
        defer { display.stop() }
        // A daemon on the test's state directory that holds the display (a command went through it).
        let daemon = Process()
        daemon.executableURL = productsDirectory.appendingPathComponent("xclaw-core")
        daemon.arguments = ["daemon", "run", "--parent", String(getpid())]
        daemon.environment = ProcessInfo.processInfo.environment.merging(["XCLAW_STATE_DIR": state.path]) { $1 }
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer { daemon.terminate() }
        let socket = state.appendingPathComponent("daemon.sock").path
        let deadline = Date().addingTimeInterval(10)
        while !DaemonMode.answers(socket) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let held = try runCLI(["windows", "--display", display.name], environment: ["XCLAW_STATE_DIR": state.path])
        XCTAssertEqual(held.status, 0, held.stderr)
        let fromDaemon = Self.summary(try client("defaults", display: display.name).result["windows"])
        XCTAssertFalse(fromDaemon.isError, fromDaemon.text)

        daemon.terminate()
        daemon.waitUntilExit()
        let none = Self.summary(try client("defaults", display: display.name).result["windows"])
        XCTAssertTrue(none.isError, "no daemon, no DISPLAY: \(none.text)")
        let fromEnvironment = Self.summary(
            try client("defaults", display: display.name, environment: ["DISPLAY": display.name]).result["windows"])
        XCTAssertFalse(fromEnvironment.isError, fromEnvironment.text)
    }

    func testTwentyConcurrentCallsAllAnswer() throws {
        let scene = try WidgetScene()
        defer {
            scene.fixture.stop()
            scene.display.stop()
        }
        // The display from the server's --display this time.
        let (result, _, stderr) = try client(
            "concurrent", display: scene.display.name, serverDisplay: true, environment: ["XCLAW_LOG": "debug"])
        let calls = try XCTUnwrap(result["calls"] as? [String])
        let results = try XCTUnwrap(result["results"] as? [[String: Any]])
        XCTAssertEqual(calls.count, 20)
        XCTAssertEqual(results.count, 20)
        for (name, reply) in zip(calls, results) {
            let (isError, text) = Self.summary(reply)
            XCTAssertFalse(isError, "\(name): \(text)")
            XCTAssertEqual(reply["images"] as? Int, name == "capture" ? 1 : 0, name)
            if name == "snapshot" { XCTAssertTrue(text.contains("button \"Save\""), text) }
        }
        // The cancelled watch ended about when it was cancelled (1 s in), not at its 60 s timeout nor at the end of
        // the session 3 s later.
        XCTAssertFalse(Self.summary(result["after_cancel"]).isError)
        // The concurrent calls had all ended before it started, so its line is the last watch's.
        let watch = try XCTUnwrap(stderr.split(separator: "\n").last { $0.contains("tool=watch") }, stderr)
        XCTAssertGreaterThan(Self.ms(watch) ?? 0, 900, String(watch))
        XCTAssertLessThan(Self.ms(watch) ?? .max, 3000, String(watch))
    }

    /// A window of random pixels, which PNG cannot compress: 1700x1100 of them make a PNG of more than 5 MB. Returns
    /// once it is shown.
    static func noiseWindow(on display: String) throws -> Process {
        let noise = Process()
        noise.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        noise.arguments = [scripts.appendingPathComponent("noise_window.py").path, "1700", "1100"]
        noise.environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display]) { $1 }
        let ready = Pipe()
        noise.standardOutput = ready
        try noise.run()
        let said = String(decoding: ready.fileHandleForReading.availableData, as: UTF8.self)
        guard said.trimmingCharacters(in: .whitespacesAndNewlines) == "ready" else {
            noise.terminate()
            throw ScreenError.invalidArgument("the noise window did not start: \(said)")
        }
        return noise
    }

    /// The `ms=` of a server log line.
    private static func ms(_ line: Substring) -> Int? {
        line.split(separator: " ").first { $0.hasPrefix("ms=") }.flatMap { Int($0.dropFirst(3)) }
    }

    func testAFiveMegabyteScreenshotArrivesWhole() throws {
        let display = try TestDisplay(size: Size(width: 3840, height: 2160))
        defer { display.stop() }
        let noise = try Self.noiseWindow(on: display.name)
        defer { noise.terminate() }

        let (result, _, _) = try client("large", display: display.name)
        let shots = try XCTUnwrap(result["shots"] as? [[String: Any]])
        XCTAssertEqual(shots.count, 3)
        let reference = try runCLI(["capture", "-o", "-", "--display", display.name])
        XCTAssertEqual(reference.status, 0, reference.stderr)
        for shot in shots {
            XCTAssertEqual(shot["png"] as? Bool, true)
            XCTAssertEqual(shot["mimeType"] as? String, "image/png")
            XCTAssertEqual(shot["width"] as? Int, 3840)
            XCTAssertEqual(shot["height"] as? Int, 2160)
            XCTAssertGreaterThan(shot["bytes"] as? Int ?? 0, 5_000_000)
            XCTAssertEqual(shot["sha256"] as? String, SHA256.hex(reference.stdout), "the same PNG as `xclaw capture`")
        }
        for reply in result["windows"] as? [[String: Any]] ?? [] {
            XCTAssertFalse(Self.summary(reply).isError, Self.summary(reply).text)
        }
    }
}

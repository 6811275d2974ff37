import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// `xclaw mcp` through the official MCP Python client (PyPI `mcp`, in a venv the tests make once), started as MCP
/// clients start servers: over stdio, without DISPLAY. Real Xvfb, real fixture, real OCR.
final class MCPServerCLITests: XCTestCase {
    /// The venv's python, or why there is none.
    private static let python: Result<String, any Error> = Result {
        try PythonVenv.testClients()
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
            ("bad_value", "amount must be from 1 to 1000"), ("unknown_argument", "colour is not an argument"),
            ("not_found", "nothing on screen matches"), ("ambiguous", "matches 2 elements equally"),
        ] {
            let reply = Self.summary(result[name])
            XCTAssertTrue(reply.isError, name)
            XCTAssertTrue(reply.text.contains(words), "\(name): \(reply.text)")
        }
        XCTAssertFalse(Self.summary(result["bad_value"]).text.contains("Usage:"), "no usage lines of the CLI")
        // The tool's argument names, not the command line's options (`xclaw tap` itself says --nth N).
        for name in ["bad_value", "ambiguous"] {
            XCTAssertFalse(Self.summary(result[name]).text.contains("--"), Self.summary(result[name]).text)
        }
        let ambiguous = Self.summary(result["ambiguous"]).text
        XCTAssertTrue(ambiguous.contains("pick one with nth, near, window or role, or tap a ref"), ambiguous)
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
        eventually("the daemon answers on \(socket)") { DaemonMode.answers(socket) }
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

    /// What `remote_display` saw, checked: every name that is not a display of this machine is refused in words, and
    /// the listener on its TCP port got no connection (not even for `:N`, which Xlib would try on TCP without a socket).
    static func checkNoRemoteDisplay(_ result: [String: Any], file: StaticString = #filePath, line: UInt = #line) {
        for key in ["ip", "host"] {
            let reply = summary(result[key])
            XCTAssertTrue(reply.isError, "\(key): \(reply.text)", file: file, line: line)
            XCTAssertTrue(reply.text.contains("is not a display of this machine"), reply.text, file: file, line: line)
        }
        let local = summary(result["local"])
        XCTAssertTrue(local.isError, local.text, file: file, line: line)
        XCTAssertEqual(result["connections"] as? Int, 0, "the listener on 6000+N was reached", file: file, line: line)
    }

    func testADisplayArgumentNeverReachesAnotherHostsXServer() throws {
        let (result, _, _) = try client("remote_display", display: ":0")
        Self.checkNoRemoteDisplay(result)
    }

    /// `xclaw mcp` as a raw stdio peer: what the official client cannot send (a line over the limit).
    private func rawSession(_ lines: [Data], display: String) throws -> [[String: Any]] {
        let server = Process()
        server.executableURL = productsDirectory.appendingPathComponent("xclaw")
        server.arguments = ["mcp", "--display", display]
        server.environment = ["XCLAW_STATE_DIR": state.path, "PATH": "/usr/bin:/bin"]
        let input = Pipe(), output = Pipe()
        server.standardInput = input
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        let writer = Thread {
            for line in lines { input.fileHandleForWriting.write(line + Data([0x0A])) }
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let replies = output.fileHandleForReading.readDataToEndOfFile()
        server.waitUntilExit()
        return try replies.split(separator: 0x0A).map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
    }

    func testALineOverTheLimitIsRefusedTheNextAnsweredAndErrorsQuoteArgumentsShort() throws {
        let display = try TestDisplay(size: Size(width: 320, height: 240))
        defer { display.stop() }
        let huge = String(repeating: "A", count: 10 << 20)
        let overLimit = String(repeating: "B", count: 17 << 20)
        let lines = [
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":""# + overLimit + #""}}"#,
            #"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            #"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"activate","arguments":{"window":""#
                + huge + #"","display":"\#(display.name)"}}}"#,
            #"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":""# + huge + #"","arguments":{}}}"#,
            #"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"windows","arguments":{"display":""#
                + huge + #""}}}"#,
        ].map { Data($0.utf8) }
        let replies = try rawSession(lines, display: display.name)
        let byID = Dictionary(
            replies.compactMap { reply in (reply["id"] as? Int).map { ($0, reply) } }, uniquingKeysWith: { a, _ in a })
        // The long line: one error with id null, and nothing for its id 2; the line after it is answered.
        let refused = replies.filter { $0["id"] is NSNull }
        XCTAssertEqual(refused.count, 1, "\(replies.map { $0["id"] ?? "?" })")
        let error = refused.first?["error"] as? [String: Any]
        XCTAssertEqual(error?["code"] as? Int, -32600)
        XCTAssertTrue((error?["message"] as? String ?? "").contains("longer than \(16 << 20) bytes"), "\(error ?? [:])")
        XCTAssertNil(byID[2])
        XCTAssertNotNil(byID[3]?["result"], "the request after the long line is answered")
        // Errors about a 10 MB argument quote a little of it.
        for id in [4, 5, 6] {
            let reply = try XCTUnwrap(byID[id], "no reply to \(id)")
            let size = try JSONSerialization.data(withJSONObject: reply).count
            XCTAssertLessThan(size, 4_000, "reply \(id) is \(size) bytes")
        }
        let activate = byID[4]?["result"] as? [String: Any]
        XCTAssertEqual(activate?["isError"] as? Bool, true)
        let unknown = (byID[5]?["error"] as? [String: Any])?["message"] as? String ?? ""
        XCTAssertTrue(unknown.contains("Unknown tool: AAAA") && unknown.contains("…"), unknown)
        let remote = byID[6]?["result"] as? [String: Any]
        XCTAssertEqual(remote?["isError"] as? Bool, true)
    }
}

import Foundation
import XCTest
import XclawBase
import XclawScreen
import XclawTesting

/// MCP over streamable HTTP on the daemon (`daemon run --web`), through the official Python client: the same tools
/// and answers as `xclaw mcp` on stdio, behind the web view's token.
extension MCPServerCLITests {
    func testOverHTTPToolsSnapshotTapAndErrorsBehindTheTokenWithoutLeakingTheKey() throws {
        let scene = try WidgetScene()
        defer {
            scene.fixture.stop()
            scene.display.stop()
        }
        let key = Self.fakeKey()
        let daemon = try WebDaemon(environment: ["ANTHROPIC_API_KEY": key, "XCLAW_LOG": "debug"])
        defer { daemon.stop() }
        let (result, stdout, _) = try client("basic", display: scene.display.name, http: daemon)
        XCTAssertEqual(result["protocolVersion"] as? String, "2025-11-25")
        let tools = try XCTUnwrap(result["tools"] as? [String: [String: Any]])
        XCTAssertEqual(
            Set(tools.keys),
            Set([
                "snapshot", "find", "capture", "ocr", "watch", "windows", "apps", "tap", "type", "key", "click",
                "scroll", "drag", "clipboard", "activate", "launch",
            ]))
        XCTAssertEqual(tools["snapshot"]?["readOnlyHint"] as? Bool, true)
        XCTAssertEqual(tools["click"]?["destructiveHint"] as? Bool, true)
        let snapshot = Self.summary(result["snapshot"])
        XCTAssertFalse(snapshot.isError, snapshot.text)
        XCTAssertTrue(snapshot.text.contains("button \"Save\""), snapshot.text)
        let tap = Self.summary(result["tap"])
        XCTAssertTrue(tap.text.hasPrefix("tapped "), tap.text)
        XCTAssertEqual(scene.fixture.wait(for: .buttonPress).first?.target, "Save", "the tap landed")
        XCTAssertEqual(scene.fixture.typed(count: 10), "--héllo ✓x", "typed exactly, then the key")
        for (name, words) in [
            ("tap_ref_and_label", "not both"), ("bad_type", "x must be an integer"),
            ("bad_value", "amount must be from 1 to 1000"), ("not_found", "nothing on screen matches"),
        ] {
            let reply = Self.summary(result[name])
            XCTAssertTrue(reply.isError, name)
            XCTAssertTrue(reply.text.contains(words), "\(name): \(reply.text)")
        }
        XCTAssertTrue((result["unknown_tool"] as? String ?? "").contains("-32602"), "\(result["unknown_tool"] ?? "")")
        XCTAssertFalse(stdout.contains(key), "a reply shows the key")
        XCTAssertFalse(stdout.contains(key.suffix(12)), "a reply shows part of the key")
        XCTAssertFalse(daemon.logText.contains(key.suffix(12)), "the daemon's log shows the key")
        XCTAssertFalse(daemon.logText.contains(daemon.token), "the daemon's log shows the web token")
        XCTAssertTrue(daemon.logText.contains("tool=snapshot"), "the calls were the daemon's")

        // The transport's rules, asked directly.
        let initialize = Data(
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
                .utf8)
        let json = ["Content-Type": "application/json", "Accept": "application/json, text/event-stream"]
        XCTAssertEqual(try daemon.request("mcp", method: "POST", headers: json, body: initialize).status, 401)
        XCTAssertEqual(
            try daemon.request(
                "mcp", method: "POST", headers: json, body: initialize, token: String(repeating: "0", count: 64)
            )
            .status, 401)
        XCTAssertEqual(
            try daemon.request(
                "mcp", method: "POST", headers: json.merging(["Origin": "http://attacker.example"]) { $1 },
                body: initialize, token: daemon.token
            ).status, 401, "a page elsewhere may not drive it")
        let opened = try daemon.request("mcp", method: "POST", headers: json, body: initialize, token: daemon.token)
        XCTAssertEqual(opened.status, 200)
        let session = try XCTUnwrap(opened.headers["mcp-session-id"])
        XCTAssertTrue(String(decoding: opened.body, as: UTF8.self).contains("\"serverInfo\""))
        let list = Data(#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.utf8)
        XCTAssertEqual(
            try daemon.request("mcp", method: "POST", headers: json, body: list, token: daemon.token).status, 400,
            "no session named")
        let withSession = json.merging(["Mcp-Session-Id": session]) { $1 }
        let listed = try daemon.request("mcp", method: "POST", headers: withSession, body: list, token: daemon.token)
        XCTAssertEqual(listed.status, 200)
        XCTAssertTrue(String(decoding: listed.body, as: UTF8.self).contains("\"snapshot\""))
        let note = Data(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.utf8)
        XCTAssertEqual(
            try daemon.request("mcp", method: "POST", headers: withSession, body: note, token: daemon.token).status, 202
        )
        XCTAssertEqual(try daemon.request("mcp", token: daemon.token).status, 405, "no server-sent stream")
        XCTAssertEqual(
            try daemon.request("mcp", method: "DELETE", headers: withSession, token: daemon.token).status, 200)
        XCTAssertEqual(
            try daemon.request("mcp", method: "POST", headers: withSession, body: list, token: daemon.token).status,
            404, "an ended session")
    }

    func testOverHTTPTwentyConcurrentCallsAndAFiveMegabyteScreenshot() throws {
        let scene = try WidgetScene()
        defer {
            scene.fixture.stop()
            scene.display.stop()
        }
        let daemon = try WebDaemon(environment: ["XCLAW_LOG": "debug"])
        defer { daemon.stop() }
        let (result, _, _) = try client("concurrent", display: scene.display.name, http: daemon)
        let calls = try XCTUnwrap(result["calls"] as? [String])
        let results = try XCTUnwrap(result["results"] as? [[String: Any]])
        XCTAssertEqual(calls.count, 20)
        XCTAssertEqual(results.count, 20)
        for (name, reply) in zip(calls, results) {
            let (isError, text) = Self.summary(reply)
            XCTAssertFalse(isError, "\(name): \(text)")
            XCTAssertEqual(reply["images"] as? Int, name == "capture" ? 1 : 0, name)
        }
        XCTAssertFalse(Self.summary(result["after_cancel"]).isError)
        // The cancelled watch (notifications/cancelled, POSTed) ended when it was cancelled, not at its timeout.
        let watch = try XCTUnwrap(
            daemon.logText.split(separator: "\n").last { $0.contains("tool=watch") && $0.contains("ms=") },
            daemon.logText)
        let ms = watch.split(separator: " ").first { $0.hasPrefix("ms=") }.flatMap { Int($0.dropFirst(3)) } ?? -1
        XCTAssertGreaterThan(ms, 900, String(watch))
        XCTAssertLessThan(ms, 3000, String(watch))

        // A 4K screen of noise: a PNG of more than 5 MB, whole, as `xclaw capture` makes it.
        let big = try TestDisplay(size: Size(width: 3840, height: 2160))
        defer { big.stop() }
        let noise = try Self.noiseWindow(on: big.name)
        defer { noise.terminate() }
        let (large, _, _) = try client("large", display: big.name, http: daemon)
        let reference = try runCLI(["capture", "-o", "-", "--display", big.name])
        let shots = try XCTUnwrap(large["shots"] as? [[String: Any]])
        XCTAssertEqual(shots.count, 3)
        for shot in shots {
            XCTAssertGreaterThan(shot["bytes"] as? Int ?? 0, 5_000_000)
            XCTAssertEqual(shot["sha256"] as? String, SHA256.hex(reference.stdout), "the same PNG as `xclaw capture`")
        }
    }

    func testOverHTTPADisplayArgumentNeverReachesAnotherHostsXServer() throws {
        let daemon = try WebDaemon()
        defer { daemon.stop() }
        let (result, _, _) = try client("remote_display", display: ":0", http: daemon)
        Self.checkNoRemoteDisplay(result)
    }

    func testOverHTTPDisplaysThatDoNotExistAreNotKept() throws {
        let daemon = try WebDaemon()
        defer { daemon.stop() }
        let (result, _, _) = try client("missing_displays", display: ":0", http: daemon)
        XCTAssertEqual(result["errors"] as? Int, 300, "\(result)")
        let asked = try runCLI(["daemon", "status", "--json"], environment: daemon.environment)
        XCTAssertEqual(asked.status, 0, asked.stderr)
        let status = try JSONSerialization.jsonObject(with: asked.stdout) as? [String: Any]
        XCTAssertEqual(status?["displays"] as? [String], [], "no display that failed is kept")
    }
}

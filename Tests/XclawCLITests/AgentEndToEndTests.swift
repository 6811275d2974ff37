import Foundation
import XCTest
import XclawAgent
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawStore
import XclawTesting
import XclawTimeTesting

/// `xclaw run` end to end: the real binary on a real 1920x1080 Xvfb with the fixture app, a scripted "model" on the
/// loopback Messages API. The fixture reports every event, so each click is checked to the screen pixel.
final class AgentEndToEndTests: XCTestCase {
    private var display: TestDisplay!
    private var fixture: Fixture!
    private var workDir: URL!
    private let frame = Rect(x: 200, y: 150, width: 800, height: 400)
    /// The Submit button, in screen pixels.
    private var button: Rect { Rect(x: frame.x + 300, y: frame.y + 40, width: 120, height: 36) }
    /// The default model (Claude Sonnet 5) takes high-resolution screenshots: a 1080p screen whole, 1:1.
    private let geometry = ScreenGeometry(screen: Size(width: 1920, height: 1080), sizing: .highRes)
    /// A model under the reference rule (Claude Sonnet 4.6): 1456x819.
    private let reference = ScreenGeometry(screen: Size(width: 1920, height: 1080))

    override func setUpWithError() throws {
        display = try TestDisplay(size: Size(width: 1920, height: 1080))
        fixture = try Fixture(
            display: display.name, title: "form", frame: frame,
            extra: [
                "--text", "20,40,10x20,#000000:Order form",
                "--button", "300,40,120,36:Submit",
                "--text", "20,120,10x20,#000000:Status: waiting",
            ])
        workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-e2e-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        fixture?.stop()
        display?.stop()
        if let workDir { try? FileManager.default.removeItem(at: workDir) }
    }

    private func environment(_ server: MockMessagesServer, key: String = ("sk-" + "ant-e2e-SECRET")) -> [String: String]
    {
        // These runs press "Submit" unattended; the approval gate has tests of its own (StopAndApprovalTests).
        let config = workDir.appendingPathComponent("config/xclaw")
        try? FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try? "approval = none\n".write(to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        return [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": key, "HOME": workDir.path,
            "XDG_STATE_HOME": workDir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": workDir.appendingPathComponent("config").path,
        ]
    }

    private static func tool(_ id: String, _ name: String, _ input: String) -> MockReply {
        .stream(
            .turn(
                blocks: [.text("Step \(id). "), .toolUse(id: id, name: name, input: input)], stopReason: "tool_use",
                usage: MockUsage(input: 1500, output: 60, cacheRead: 800, cacheWrite: 300), jsonFragments: 6,
                chunking: .random(seed: 3, max: 40)))
    }

    /// Width and height from a base64 PNG's IHDR.
    private static func pngSize(_ base64: String) -> Size? {
        guard let data = Data(base64Encoded: base64), data.count > 24 else { return nil }
        let b = [UInt8](data)
        func be(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        return Size(width: be(16), height: be(20))
    }

    /// Images and texts of the tool_results in a request's last message.
    private static func lastResult(_ request: RecordedRequest) -> (images: [String], text: String, ids: [String]) {
        let body = (try? JSONValue.parse(request.body)) ?? .null
        var images: [String] = [], texts: [String] = [], ids: [String] = []
        for block in body["messages"]?.array?.last?["content"]?.array ?? [] where block["type"]?.string == "tool_result"
        {
            ids.append(block["tool_use_id"]?.string ?? "")
            for c in block["content"]?.array ?? [] {
                if let d = c["source"]?["data"]?.string { images.append(d) }
                if let t = c["text"]?.string { texts.append(t) }
            }
        }
        return (images, texts.joined(separator: "\n"), ids)
    }

    /// A model under the reference rule (Sonnet 4.6) sees 1456x819 and its click is mapped back exactly.
    func testScriptedModelClicksTypesAndReadsOnARealDisplay() throws {
        let geometry = reference
        let target = geometry.toModel(button.center)
        let server = try MockMessagesServer(replies: [
            Self.tool("toolu_1", "computer", "{\"action\": \"screenshot\"}"),
            Self.tool(
                "toolu_2", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(target.x), \(target.y)]}"),
            Self.tool("toolu_3", "computer", "{\"action\": \"type\", \"text\": \"héllo 世界\"}"),
            Self.tool("toolu_4", "read_screen_text", "{}"),
            .stream(.turn(blocks: [.text("Done: clicked Submit and typed the text.")], chunking: .every(3))),
        ])
        defer { server.stop() }
        let log = workDir.appendingPathComponent("actions.jsonl").path
        let result = try runCLI(
            [
                "run", "Submit the order form", "--display", display.name, "--log", log,
                "--tools", "computer,read_screen_text", "--model", "claude-sonnet-4-6",
            ], environment: environment(server))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.text.contains("Done: clicked Submit and typed the text."), result.text)
        XCTAssertTrue(result.stderr.contains("step 5"), result.stderr)
        XCTAssertTrue(result.stderr.contains("$"), "prints the cost: \(result.stderr)")

        let requests = server.requests
        XCTAssertEqual(requests.count, 5)
        // What xclaw offered: the computer tool at the model's size, its beta header, the untrusted-data warning.
        let body = try JSONValue.parse(requests[0].body)
        let computer = body["tools"]?.array?.first { $0["name"]?.string == "computer" }
        XCTAssertEqual(computer?["type"]?.string, "computer_20251124")
        XCTAssertEqual(computer?["display_width_px"]?.int, 1456)
        XCTAssertEqual(computer?["display_height_px"]?.int, 819)
        XCTAssertEqual(computer?["enable_zoom"], true)
        // The computer tool's beta, then server-side compaction's (Sonnet 4.6 compacts on the server).
        XCTAssertEqual(requests[0].headers["anthropic-beta"], "computer-use-2025-11-24,compact-2026-01-12")
        XCTAssertEqual(body["context_management"]?["edits"]?.array?.first?["type"]?.string, "compact_20260112")
        XCTAssertTrue(body.jsonText.contains("untrusted"), "system prompt says screen text is data")
        // The screenshot is scaled for the model.
        let shot = Self.lastResult(requests[1])
        XCTAssertEqual(shot.ids, ["toolu_1"])
        XCTAssertEqual(shot.images.count, 1)
        XCTAssertEqual(shot.images.first.flatMap(Self.pngSize), Size(width: 1456, height: 819))
        // The click landed on the screen pixel under the model's coordinate, inside the button.
        let presses = fixture.wait(for: .buttonPress)
        let expected = geometry.toScreen(target)
        XCTAssertEqual(presses.first?.rootX, expected.x)
        XCTAssertEqual(presses.first?.rootY, expected.y)
        XCTAssertTrue(button.contains(expected))
        XCTAssertEqual(Self.lastResult(requests[2]).ids, ["toolu_2"])
        XCTAssertEqual(Self.lastResult(requests[2]).images.count, 1, "a click returns the settled screenshot")
        // Exact Unicode typing.
        XCTAssertEqual(fixture.typed(count: 8), "héllo 世界")
        // OCR read the form back to the model.
        let read = Self.lastResult(requests[4])
        XCTAssertEqual(read.ids, ["toolu_4"])
        XCTAssertTrue(read.text.contains("Order form"), read.text)
        XCTAssertTrue(read.text.contains("Submit"), read.text)
        // The action log holds the click in screen pixels.
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        let click = try XCTUnwrap(
            lines.compactMap { try? JSONValue.parse(String($0)) }
                .first { $0["action"]?.string == "left_click" })
        XCTAssertEqual(click["x"]?.int, expected.x)
        XCTAssertEqual(click["y"]?.int, expected.y)
        XCTAssertEqual(click["result"]?.string, "ok")
    }

    func testVisionToolsAskClaudeWithTheScreenshotAndTapWhereItPoints() throws {
        // The fixture's red square has no text, so find_and_tap must ask vision; the scripted "vision model" points
        // at the square's centre in the screenshot's pixels.
        let square = Rect(x: frame.x + 600, y: frame.y + 200, width: 60, height: 60)
        fixture.stop()
        fixture = try Fixture(
            display: display.name, title: "icons", frame: frame,
            rects: [
                (Rect(x: 600, y: 200, width: 60, height: 60), "#cc0000")
            ], extra: ["--text", "20,40,10x20,#000000:Order form"])
        let target = geometry.toModel(square.center)
        let server = try MockMessagesServer(replies: [
            Self.tool("toolu_1", "analyze_screen", "{\"question\": \"What is the form called?\"}"),
            .stream(.turn(blocks: [.text("The form is called Order form.")])),  // the vision sub-request
            Self.tool("toolu_2", "find_and_tap", "{\"description\": \"the red square\"}"),
            .stream(.turn(blocks: [.text("{\"x\": \(target.x), \"y\": \(target.y)}")])),  // the vision sub-request
            .stream(.turn(blocks: [.text("Tapped the red square.")])),
        ])
        defer { server.stop() }
        let result = try runCLI(
            [
                "run", "Tap the red square", "--display", display.name, "--json",
                "--tools", "analyze_screen,find_and_tap",
            ], environment: environment(server))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("incl. 2 vision question(s)"), result.stderr)
        // The cost counts the two side questions too (100 in / 20 out each, like the three steps).
        let summary = try JSONValue.parse(result.stdout)
        XCTAssertEqual(summary["usage"]?["input_tokens"]?.int, 1500 * 2 + 100 * 3)
        let requests = server.requests
        XCTAssertEqual(requests.count, 5)
        // The sub-requests carry the model-sized screenshot and the question, and offer no tools.
        for i in [1, 3] {
            let body = try JSONValue.parse(requests[i].body)
            XCTAssertNil(body["tools"], "request \(i) is a plain vision question")
            let content = body["messages"]?.array?.first?["content"]?.array ?? []
            let image = try XCTUnwrap(content.first { $0["type"]?.string == "image" }?["source"]?["data"]?.string)
            XCTAssertEqual(Self.pngSize(image), Size(width: 1920, height: 1080), "the default model sees 1080p whole")
        }
        XCTAssertTrue(try JSONValue.parse(requests[1].body).jsonText.contains("What is the form called?"))
        XCTAssertTrue(Self.lastResult(requests[2]).text.contains("The form is called Order form."))
        // The tap landed where vision pointed, mapped back to the screen.
        let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
        XCTAssertEqual(Point(x: press.rootX ?? -1, y: press.rootY ?? -1), geometry.toScreen(target))
        XCTAssertTrue(square.contains(geometry.toScreen(target)))
        XCTAssertTrue(Self.lastResult(requests[4]).text.contains("vision"), Self.lastResult(requests[4]).text)
    }

    /// The default model (Sonnet 5) takes high-resolution screenshots: the 1080p screen whole, its coordinates the
    /// screen's own; `--screenshot-size 720p` trades that for a smaller image, still mapped back exactly; a zoom
    /// says its coordinates still refer to the full screenshot.
    func testAHighResolutionModelSeesTheScreenWholeAndACapShrinksIt() throws {
        for (size, expected) in [(nil, Size(width: 1920, height: 1080)), ("720p", Size(width: 1280, height: 720))] {
            fixture.clear()
            let g = ScreenGeometry(
                screen: Size(width: 1920, height: 1080),
                sizing: ImageSizing.highRes.capped(try size.flatMap { try ImageSizing.cap(parsing: $0) }))
            XCTAssertEqual(g.model, expected)
            let target = g.toModel(button.center)
            let server = try MockMessagesServer(replies: [
                Self.tool(
                    "toolu_1", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(target.x), \(target.y)]}"),
                Self.tool("toolu_2", "computer", "{\"action\": \"zoom\", \"region\": [0, 0, 200, 100]}"),
                .stream(.turn(blocks: [.text("Done.")])),
            ])
            defer { server.stop() }
            let result = try runCLI(
                ["run", "Submit", "--display", display.name, "--tools", "computer"]
                    + (size.map { ["--screenshot-size", $0] } ?? []), environment: environment(server))
            XCTAssertEqual(result.status, 0, result.stderr)
            let body = try JSONValue.parse(server.requests[0].body)
            let computer = body["tools"]?.array?.first { $0["name"]?.string == "computer" }
            XCTAssertEqual(computer?["display_width_px"]?.int, expected.width)
            XCTAssertEqual(computer?["display_height_px"]?.int, expected.height)
            XCTAssertEqual(Self.lastResult(server.requests[1]).images.first.flatMap(Self.pngSize), expected)
            let press = try XCTUnwrap(fixture.wait(for: .buttonPress).first)
            XCTAssertEqual(Point(x: press.rootX ?? -1, y: press.rootY ?? -1), g.toScreen(target))
            XCTAssertTrue(button.contains(g.toScreen(target)))
            XCTAssertTrue(
                Self.lastResult(server.requests[2]).text.contains("Coordinates still refer to the full"),
                Self.lastResult(server.requests[2]).text)
        }
        let bad = try runCLI(["run", "x", "--display", display.name, "--screenshot-size", "huge"], environment: [:])
        XCTAssertEqual(bad.status, 2, bad.stderr)
    }

    /// Effort goes out as `output_config.effort` in the form the model takes, from `run --effort`, an agent's own
    /// level or `send --effort`; a level the model does not take, and a retired model, are refused before anything
    /// is sent, naming what to use instead.
    func testEffortIsSentAsTheModelTakesItAndRetiredModelsNameTheirSuccessor() throws {
        let server = try MockMessagesServer(replies: (0..<3).map { _ in .stream(.turn(blocks: [.text("ok")])) })
        defer { server.stop() }
        var env = environment(server)
        env["XCLAW_DB"] = workDir.appendingPathComponent("effort.sqlite").path
        let run = try runCLI(
            ["run", "look", "--display", display.name, "--tools", "computer", "--effort", "xhigh"], environment: env)
        XCTAssertEqual(run.status, 0, run.stderr)
        let body = try JSONValue.parse(server.requests[0].body)
        XCTAssertEqual(body["output_config"]?["effort"]?.string, "xhigh")
        XCTAssertEqual(body["model"]?.string, "claude-sonnet-5")
        XCTAssertNil(body["thinking"], "thinking is left to the model's default, in the one form every model takes")
        // An agent's own level, and one call's.
        XCTAssertEqual(
            try runCLI(["agent", "create", "careful", "--tools", "memory", "--effort", "max"], environment: env).status,
            0)
        XCTAssertEqual(try runCLI(["send", "careful", "hi"], environment: env).status, 0)
        XCTAssertEqual(try JSONValue.parse(server.requests[1].body)["output_config"]?["effort"]?.string, "max")
        XCTAssertEqual(try runCLI(["send", "careful", "hi", "--effort", "low"], environment: env).status, 0)
        XCTAssertEqual(try JSONValue.parse(server.requests[2].body)["output_config"]?["effort"]?.string, "low")
        // Refused before sending: a level the model does not take; a model change that would break the agent's level.
        let haiku = try runCLI(
            ["run", "x", "--display", display.name, "--model", "claude-haiku-4-5", "--effort", "high"], environment: env
        )
        XCTAssertEqual(haiku.status, 2, haiku.stderr)
        XCTAssertTrue(haiku.stderr.contains("takes no effort setting"), haiku.stderr)
        let old = try runCLI(["agent", "set", "careful", "--model", "claude-opus-4-5"], environment: env)
        XCTAssertEqual(old.status, 2, old.stderr)
        XCTAssertTrue(old.stderr.contains("takes effort low, medium, high, not max"), old.stderr)
        let retired = try runCLI(
            ["run", "x", "--display", display.name, "--model", "claude-sonnet-4-0"], environment: env)
        XCTAssertEqual(retired.status, 2, retired.stderr)
        XCTAssertTrue(
            retired.stderr.contains("is retired") && retired.stderr.contains("claude-sonnet-5"), retired.stderr)
        XCTAssertEqual(server.requests.count, 3, "nothing refused was sent")
        XCTAssertFalse((run.stderr + haiku.stderr + retired.stderr).contains("SECRET"))
    }

    /// `models --refresh` reads every page of `GET /v1/models` (the loopback serves the API's shape, two a page) and
    /// caches each model's capabilities, which then win over the built-in table: a level the API no longer lists is
    /// refused, and the output limit follows the API.
    func testModelsRefreshReadsEveryPageAndTheAPIsCapabilitiesWin() throws {
        let server = try MockMessagesServer()
        defer { server.stop() }
        func model(_ id: String, effort: [String], maxTokens: Int) -> String {
            let levels = ["low", "medium", "high", "xhigh", "max"].map {
                "\"\($0)\": {\"supported\": \(effort.contains($0))}"
            }.joined(separator: ", ")
            return """
                {"id": "\(id)", "type": "model", "display_name": "\(id)", "created_at": "2026-09-01T00:00:00Z",
                 "max_input_tokens": 1000000, "max_tokens": \(maxTokens),
                 "capabilities": {"image_input": {"supported": true},
                  "thinking": {"supported": true, "types": {"enabled": {"supported": false},
                   "adaptive": {"supported": true}}},
                  "effort": {"supported": \(!effort.isEmpty), \(levels)},
                  "context_management": {"compact_20260112": {"supported": true}}}}
                """
        }
        server.models = [
            model("claude-sonnet-5", effort: ["low", "high"], maxTokens: 64000),
            model("claude-opus-5", effort: ["low", "medium", "high", "xhigh", "max"], maxTokens: 128000),
            model("claude-haiku-4-5-20251001", effort: [], maxTokens: 64000),
        ]
        server.modelsPageSize = 2
        var env = environment(server)
        env["XCLAW_DB"] = workDir.appendingPathComponent("models.sqlite").path
        let refreshed = try runCLI(["models", "--refresh", "--json"], environment: env)
        XCTAssertEqual(refreshed.status, 0, refreshed.stderr)
        XCTAssertTrue(refreshed.stderr.contains("the API serves 3 model(s)"), refreshed.stderr)
        let gets = server.requests.filter { $0.method == "GET" }
        XCTAssertEqual(gets.map(\.path), ["/v1/models", "/v1/models"], "two pages")
        XCTAssertEqual(gets.last?.query, "limit=100&after_id=claude-opus-5")
        XCTAssertEqual(gets.first?.headers["anthropic-version"], "2023-06-01")
        let models = try XCTUnwrap(try JSONValue.parse(refreshed.stdout)["models"]?.array)
        let sonnet = try XCTUnwrap(models.first { $0["id"]?.string == "claude-sonnet-5" })
        XCTAssertEqual(sonnet["effort"]?.array?.compactMap(\.string), ["low", "high"])
        XCTAssertEqual(sonnet["max_output"]?.int, 64000)
        let cache = try String(
            contentsOfFile: workDir.appendingPathComponent("state/xclaw/models-cache.json").path, encoding: .utf8)
        XCTAssertTrue(cache.contains("\"compaction\" : true"), cache)
        XCTAssertFalse(cache.contains("SECRET"))
        // The cached levels win: medium is no longer Sonnet 5's, and nothing is sent.
        let medium = try runCLI(["run", "x", "--display", display.name, "--effort", "medium"], environment: env)
        XCTAssertEqual(medium.status, 2, medium.stderr)
        XCTAssertTrue(medium.stderr.contains("takes effort low, high, not medium"), medium.stderr)
        XCTAssertEqual(server.requests.filter { $0.method == "POST" }.count, 0)
        // The API out of reach: exit 4, and the cache stays as it was.
        server.stop()
        let unreachable = try runCLI(["models", "--refresh"], environment: env)
        XCTAssertEqual(unreachable.status, 4, unreachable.stderr)
        XCTAssertEqual(
            try String(
                contentsOfFile: workDir.appendingPathComponent("state/xclaw/models-cache.json").path, encoding: .utf8),
            cache)
    }

    /// `--screenshot-format jpeg:70` sends JPEG screenshots (the media type says so, the size is the model's) with far
    /// fewer bytes than PNG; the click still lands, and the run's report shows the JPEG.
    func testJPEGScreenshotsCutTheRequestsBytes() throws {
        var sizes: [String: (bytes: Int, media: String?)] = [:]
        for format in ["png", "jpeg:70"] {
            fixture.clear()
            let target = geometry.toModel(button.center)
            let server = try MockMessagesServer(replies: [
                Self.tool(
                    "toolu_1", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(target.x), \(target.y)]}"),
                .stream(.turn(blocks: [.text("Done.")])),
            ])
            defer { server.stop() }
            var env = environment(server)
            env["XCLAW_DB"] = workDir.appendingPathComponent("jpeg.sqlite").path
            let result = try runCLI(
                ["run", "Submit", "--display", display.name, "--tools", "computer", "--screenshot-format", format],
                environment: env)
            XCTAssertEqual(result.status, 0, result.stderr)
            let body = try JSONValue.parse(server.requests[1].body)
            let block = body["messages"]?.array?.last?["content"]?.array?.first?["content"]?.array?.first {
                $0["type"]?.string == "image"
            }
            let data = try XCTUnwrap(block?["source"]?["data"]?.string)
            sizes[format] = (data.utf8.count, block?["source"]?["media_type"]?.string)
            if format != "png" {
                XCTAssertEqual(JPEG.size(of: try XCTUnwrap(Data(base64Encoded: data))), Size(width: 1920, height: 1080))
            }
            XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        }
        XCTAssertEqual(sizes["png"]?.media, "image/png")
        XCTAssertEqual(sizes["jpeg:70"]?.media, "image/jpeg")
        let (png, jpeg) = (sizes["png"]?.bytes ?? 0, sizes["jpeg:70"]?.bytes ?? 0)
        print("a 1080p screenshot: PNG \(png / 1024) KB base64, JPEG q70 \(jpeg / 1024) KB; tokens ≈ 2,765 either way")
        XCTAssertGreaterThan(png, 0)
        XCTAssertGreaterThan(jpeg, 0)
        // The report of the JPEG run shows its screenshot.
        var env = environment(try MockMessagesServer())
        env["XCLAW_DB"] = workDir.appendingPathComponent("jpeg.sqlite").path
        let runs = try XCTUnwrap(try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array)
        let page = workDir.appendingPathComponent("jpeg.html").path
        let reported = try runCLI(["report", "\(runs.last?["id"]?.int ?? 0)", "-o", page], environment: env)
        XCTAssertEqual(reported.status, 0, reported.stderr)
        XCTAssertTrue(try String(contentsOfFile: page, encoding: .utf8).contains("data:image/jpeg;base64,"))
        let bad = try runCLI(["run", "x", "--screenshot-format", "gif"], environment: [:])
        XCTAssertEqual(bad.status, 2, bad.stderr)
    }

    /// `agent reset`: the next run sends nothing from before (the earlier request carried the first exchange),
    /// while `history` keeps every message; an unknown agent is refused.
    func testAgentResetStartsTheConversationAfreshAndKeepsTheHistory() throws {
        let server = try MockMessagesServer(replies: [
            .stream(.turn(blocks: [.text("Noted: BLUE.")])), .stream(.turn(blocks: [.text("Second answer.")])),
            .stream(.turn(blocks: [.text("Third answer.")])),
        ])
        defer { server.stop() }
        var env = environment(server)
        env["XCLAW_DB"] = workDir.appendingPathComponent("reset.sqlite").path
        XCTAssertEqual(try runCLI(["agent", "create", "keeper", "--tools", "memory"], environment: env).status, 0)
        XCTAssertEqual(try runCLI(["send", "keeper", "remember BLUE"], environment: env).status, 0)
        XCTAssertEqual(try runCLI(["send", "keeper", "what colour?"], environment: env).status, 0)
        func text(_ i: Int) -> String { String(decoding: server.requests[i].body, as: UTF8.self) }
        XCTAssertTrue(text(1).contains("BLUE"), "the second run sends the first exchange")
        let reset = try runCLI(["agent", "reset", "keeper"], environment: env)
        XCTAssertEqual(reset.status, 0, reset.stderr)
        XCTAssertTrue(reset.text.contains("agent keeper starts afresh: 6 earlier message(s)"), reset.text)
        XCTAssertEqual(try runCLI(["send", "keeper", "and now?"], environment: env).status, 0)
        let third = try JSONValue.parse(server.requests[2].body)
        XCTAssertEqual(third["messages"]?.array?.count, 1, "only the new batch: \(text(2))")
        XCTAssertFalse(text(2).contains("BLUE"))
        let history = try runCLI(["history", "keeper"], environment: env)
        XCTAssertTrue(history.text.contains("remember BLUE") && history.text.contains("and now?"), history.text)
        XCTAssertEqual(try runCLI(["agent", "reset", "nobody"], environment: env).status, 1)
    }

    func testDryRunInjectsNothing() throws {
        let target = geometry.toModel(button.center)
        let server = try MockMessagesServer(replies: [
            Self.tool(
                "toolu_1", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(target.x), \(target.y)]}"),
            Self.tool("toolu_2", "computer", "{\"action\": \"type\", \"text\": \"nothing\"}"),
            .stream(.turn(blocks: [.text("planned")])),
        ])
        defer { server.stop() }
        let log = workDir.appendingPathComponent("dry.jsonl").path
        let result = try runCLI(
            ["run", "Plan it", "--display", display.name, "--dry-run", "--log", log],
            environment: environment(server))
        XCTAssertEqual(result.status, 0, result.stderr)
        Thread.sleep(forTimeInterval: 0.3)  // kept: time for a stray event to arrive, to show none does
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress || $0.kind == .keyPress }.isEmpty)
        XCTAssertTrue(Self.lastResult(server.requests[1]).text.lowercased().contains("dry run"))
        let logText = try String(contentsOfFile: log, encoding: .utf8)
        XCTAssertTrue(logText.contains("\"dry-run\""), logText)
        XCTAssertTrue(try JSONValue.parse(server.requests[0].body).jsonText.contains("DRY RUN"))
    }

    func testADisplayKilledMidRunEndsTheRunWithExit3AndRecordsIt() throws {
        let server = try MockMessagesServer(replies: [
            .stream(
                .turn(
                    blocks: [
                        .toolUse(
                            id: "toolu_1", name: "computer",
                            input: #"{"action":"hold_key","text":"shift","duration":30}"#),
                        .toolUse(
                            id: "toolu_2", name: "computer", input: #"{"action":"left_click","coordinate":[10,10]}"#),
                    ], stopReason: "tool_use")),
            .stream(.turn(blocks: [.text("never asked")])),
        ])
        defer { server.stop() }
        let log = workDir.appendingPathComponent("lost.jsonl").path
        let db = workDir.appendingPathComponent("lost.sqlite").path
        let err = Pipe()
        let process = try launchCLI(
            ["run", "Hold shift", "--display", display.name, "--log", log, "--db", db],
            environment: environment(server), stderr: err)
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(20)))
        do {  // a connection of the test's own, closed before the display dies
            let input = try InputController(connection: display.connect())
            try eventually("the agent holds shift") { try !input.pressedNow().keys.isEmpty }
        }
        kill(display.server.pid, SIGKILL)
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 3, errText)
        XCTAssertTrue(errText.contains("lost the connection"), errText)
        XCTAssertEqual(server.requests.count, 1, "the model was not asked again after the display died")
        // One record per action: the failed hold with its time, the click that was never run.
        let records = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
            try JSONValue.parse(String($0))
        }
        XCTAssertEqual(records.count, 2, "\(records.map(\.jsonText))")
        XCTAssertEqual(records.first?["action"]?.string, "hold_key")
        XCTAssertTrue(records.first?["result"]?.string?.contains("lost the connection") ?? false)
        XCTAssertNotNil(records.first?["ms"]?.double)
        XCTAssertEqual(records.last?["action"]?.string, "left_click")
        XCTAssertEqual(records.last?["result"]?.string, "not run")
        // The stored conversation stays valid (both calls answered) and the failure is written to the history.
        let store = try AgentStore(path: db)
        let agent = try XCTUnwrap(try store.agents().first?.name)
        let messages = try store.messages(agent: agent)
        let answered = messages.flatMap(\.content).compactMap { block -> String? in
            if case .toolResult(let r) = block { return r.toolUseID }
            return nil
        }
        XCTAssertEqual(answered, ["toolu_1", "toolu_2"])
        XCTAssertTrue(messages.last?.content.description.contains("lost the connection") ?? false)
        XCTAssertEqual(messages.last?.status, .error)
        XCTAssertEqual(try store.sessions(agent: agent).first?.status, .failed)
    }

    func testAgentsKeepTheirInputGatesAndACallMayOverrideThem() throws {
        let target = geometry.toModel(button.center)
        let click = Self.tool(
            "toolu_1", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(target.x), \(target.y)]}")
        let server = try MockMessagesServer(replies: [
            click, .stream(.turn(blocks: [.text("planned")])), click, .stream(.turn(blocks: [.text("clicked")])),
        ])
        defer { server.stop() }
        let db = workDir.appendingPathComponent("gates.sqlite").path
        let e = environment(server)
        let created = try runCLI(
            ["agent", "create", "careful", "--tools", "computer", "--display", display.name, "--dry-run", "--db", db],
            environment: e)
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertTrue(created.text.contains("dry run"), created.text)
        // The stored gate holds: nothing is clicked, the model reads that it was a dry run.
        let planned = try runCLI(["send", "careful", "Submit the form", "--db", db], environment: e)
        XCTAssertEqual(planned.status, 0, planned.stderr)
        Thread.sleep(forTimeInterval: 0.3)  // kept: time for a stray click to arrive, to show none does
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty, "a dry-run agent clicked")
        XCTAssertTrue(Self.lastResult(server.requests[1]).text.lowercased().contains("dry run"))
        XCTAssertTrue(try JSONValue.parse(server.requests[0].body).jsonText.contains("DRY RUN"))
        // One call overrides it; the stored setting stays.
        let acted = try runCLI(["send", "careful", "Now really", "--no-dry-run", "--db", db], environment: e)
        XCTAssertEqual(acted.status, 0, acted.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).count, 1)
        let agents = try JSONValue.parse(try runCLI(["agents", "--json", "--db", db], environment: e).stdout)
        XCTAssertEqual(agents.array?.first?["dry_run"]?.bool, true)
        // The stored gate changes with `agent set`; what is not named stays.
        let set = try runCLI(
            ["agent", "set", "careful", "--no-dry-run", "--confirm", "--json", "--db", db], environment: e)
        XCTAssertEqual(set.status, 0, set.stderr)
        let changed = try JSONValue.parse(set.stdout)
        XCTAssertEqual(changed["dry_run"]?.bool, false)
        XCTAssertEqual(changed["confirm"]?.bool, true)
        XCTAssertEqual(changed["tools"]?.array?.compactMap(\.string), ["computer"])
        XCTAssertEqual(changed["display"]?.string, display.name)
        XCTAssertEqual(
            try runCLI(["agent", "set", "careful", "--no-confirm", "--dry-run", "--db", db], environment: e).status, 0)
        XCTAssertEqual(try runCLI(["agent", "set", "nobody", "--dry-run", "--db", db], environment: e).status, 1)
        // An agent that asks first cannot run where there is no terminal to ask on: refused before any request.
        XCTAssertEqual(
            try runCLI(["agent", "create", "asker", "--tools", "computer", "--confirm", "--db", db], environment: e)
                .status, 0)
        let refused = try runCLI(["send", "asker", "Click it", "--db", db], environment: e)
        XCTAssertEqual(refused.status, 2, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("no terminal to ask on"), refused.stderr)
        XCTAssertEqual(server.requests.count, 4, "nothing was sent for the refused call")
    }

    func testRetriesAreShownOnStderrAndJSONSummaryOnStdout() throws {
        let overloaded = MockReply.error(
            status: 529, type: "overloaded_error", message: "Overloaded",
            headers: ["retry-after-ms": "10"])
        let server = try MockMessagesServer(replies: [
            overloaded, overloaded,
            .stream(.turn(blocks: [.text("Nothing to do.")], usage: MockUsage(input: 2000, output: 100))),
        ])
        defer { server.stop() }
        let result = try runCLI(
            ["run", "Look only", "--display", display.name, "--json"], environment: environment(server))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("retry 1/5"), result.stderr)
        XCTAssertTrue(result.stderr.contains("retry 2/5"), result.stderr)
        XCTAssertTrue(result.stderr.contains("req_mock_1"), "names the request id: \(result.stderr)")
        let summary = try JSONValue.parse(result.stdout)
        XCTAssertEqual(summary["outcome"]?.string, "completed")
        XCTAssertEqual(summary["text"]?.string, "Nothing to do.")
        XCTAssertEqual(summary["steps"]?.array?.count, 1)
        XCTAssertEqual(summary["cost_usd"]?.double ?? 0, (2000.0 * 2 + 100.0 * 10) / 1e6, accuracy: 1e-9)  // Sonnet 5
        XCTAssertEqual(server.requests.count, 3)
    }

    func testInvalidKeyExitsFourWithoutPrintingIt() throws {
        let server = try MockMessagesServer(replies: [
            .error(status: 401, type: "authentication_error", message: "invalid x-api-key")
        ])
        defer { server.stop() }
        let result = try runCLI(["run", "anything", "--display", display.name], environment: environment(server))
        XCTAssertEqual(result.status, 4, result.stderr)
        XCTAssertTrue(result.stderr.lowercased().contains("invalid api key"), result.stderr)
        XCTAssertFalse(result.stderr.contains("SECRET"))
        XCTAssertFalse(result.text.contains("SECRET"))
        XCTAssertEqual(server.requests.count, 1)
    }

    func testBadUsageExitsTwoAndSendsNothing() throws {
        let server = try MockMessagesServer(replies: [])
        defer { server.stop() }
        let env = environment(server)
        let cases: [([String], String)] = [
            (["run", "x", "--display", display.name, "--model", "claude-nonexistent-9"], "unknown model"),
            (["run", "x", "--display", display.name, "--tools", "computer,teleport"], "teleport"),
            (["run", "x", "--display", display.name, "--max-steps", "0"], "--max-steps"),
            (["run", "x", "--display", display.name, "--settle-ms", "0"], "--settle-ms"),
            (["run", "x", "--display", display.name, "--log", "/proc/nope/run.jsonl"], "--log"),
        ]
        for (args, expected) in cases {
            let result = try runCLI(args, environment: env)
            XCTAssertEqual(result.status, 2, "\(args): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(expected), "\(args): \(result.stderr)")
        }
        var noKey = env
        noKey.removeValue(forKey: "ANTHROPIC_API_KEY")
        let result = try runCLI(
            ["run", "x", "--display", display.name], environment: noKey, removing: ["ANTHROPIC_API_KEY"])
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("ANTHROPIC_API_KEY"), result.stderr)
        XCTAssertEqual(server.requests.count, 0)
    }

    func testCtrlCStopsTheRunAndExits130AndSIGTERMExits143() throws {
        for (signal, status, word) in [(SIGINT, Int32(130), "interrupted"), (SIGTERM, 143, "terminated")] {
            let server = try MockMessagesServer(replies: [.hang])
            defer { server.stop() }
            let err = Pipe()
            let process = try launchCLI(
                ["run", "wait forever", "--display", display.name], environment: environment(server),
                stdout: Pipe(), stderr: err)
            XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(20)))
            kill(process.processIdentifier, signal)
            let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, status, errText)
            XCTAssertTrue(errText.contains(word), errText)
            XCTAssertTrue(server.waitForDisconnects(1, timeout: .seconds(10)), "the transfer was aborted")
        }
    }
}

import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// The daemon's web view in a real headless Chromium (driven over the DevTools protocol by `web/pages.py`): the
/// token from the address's fragment into the tab's own storage (no cookie), the dashboard, a chat streamed from the
/// loopback Messages API and rendered as Markdown with highlighted code, the live screen of a real Xvfb with the
/// fixture app, a CLI click in the action log and the overlay, an approval granted and an emergency stop pressed
/// from the page, the pipeline, agent and runs pages (a report opened with a single-use ticket), the websocket's
/// refusal of a foreign Origin, and a server on another port of 127.0.0.1: nothing the browser sends it works for
/// another user. What is checked is what the page rendered.
final class WebViewCLITests: XCTestCase {
    /// The venv's python, or why there is none.
    private static let python: Result<String, any Error> = Result {
        try PythonVenv.testClients()
    }
    private static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("web")

    /// The fixture's window, in screen pixels; its Delete button is at (200, 60) inside it.
    private let frame = Rect(x: 100, y: 100, width: 600, height: 300)

    private static let markdown = """
        ## Weekly report

        Here is **the table** with `inline` code, a [safe link](https://example.com/docs) and a \
        [bad link](javascript:alert(1)).

        | name | value |
        |------|------:|
        | apples | 3 |
        | pears | 5 |

        - first
        - second
          - nested item

        <img src=x onerror=alert(1)>

        ```swift
        let answer = 42 // the answer
        func greet(_ name: String) -> String { return "hi \\(name)" }
        ```

        ```python
        def f(x):
            return None  # nothing
        ```
        """

    /// The loopback model: each agent's script, told apart by what its request carries.
    private static func reply(_ request: RecordedRequest, _ index: Int) -> MockReply {
        let body = String(decoding: request.body, as: UTF8.self)
        let first = request.toolResults.isEmpty
        if body.contains("You are the orchestrator") {
            return first
                ? .stream(
                    .turn(
                        blocks: [
                            .toolUse(
                                id: "d1", name: "delegate", input: #"{"role":"researcher","task":"find the facts"}"#)
                        ], stopReason: "tool_use"))
                : .text("The final report: 42.")
        }
        if body.contains("You are the researcher") { return .text("Fact: 42.") }
        if body.contains("MARKDOWN-PLEASE") {
            if first {
                return .toolUse(name: "memory", input: #"{"action":"set","key":"deadline","value":"Friday"}"#)
            }
            var stream = MockStream.turn(blocks: [.text(markdown)], textFragments: 16, chunking: .perFrame)
            stream.interChunkDelay = .milliseconds(60)
            return .stream(stream)
        }
        if body.contains("delete the old files") {
            return first ? .toolUse(name: "tap_element", input: #"{"label": "Delete"}"#) : .text("Deleted.")
        }
        if body.contains("WAIT-FOREVER") { return .hang }
        return .text("ok")
    }

    func testThePagesInAHeadlessBrowser() throws {
        let began = Date()
        let python = try Self.python.get()
        let display = try TestDisplay(size: Size(width: 1024, height: 768))
        let fixture = try Fixture(
            display: display.name, title: "files", frame: frame,
            extra: ["--text", "20,20,10x20,#000000:Old files", "--button", "200,60,120,40:Delete"])
        let server = try MockMessagesServer(handler: Self.reply)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("config/xclaw"), withIntermediateDirectories: true)
        chmod(dir.path, 0o700)
        try "approval_timeout = 300\n".write(
            to: dir.appendingPathComponent("config/xclaw/config"), atomically: true, encoding: .utf8)
        let env = [
            "XCLAW_STATE_DIR": dir.appendingPathComponent("run").path, "XCLAW_TEST_DAEMON": "0", "HOME": dir.path,
            "XCLAW_DB": dir.appendingPathComponent("db.sqlite").path,
            "XDG_DATA_HOME": dir.appendingPathComponent("data").path,
            "XDG_STATE_HOME": dir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": dir.appendingPathComponent("config").path,
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": ("sk-" + "ant-web-SECRET"),
        ]
        var approvalRun: Process?
        defer {
            if let approvalRun, approvalRun.isRunning { kill(approvalRun.processIdentifier, SIGKILL) }
            _ = try? runCLI(["daemon", "stop"], environment: env)
            server.stop()
            fixture.stop()
            display.stop()
            try? FileManager.default.removeItem(at: dir)
        }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("run"), withIntermediateDirectories: true)
        chmod(dir.appendingPathComponent("run").path, 0o700)
        let started = try runCLI(["daemon", "start", "--web", "127.0.0.1:0", "--json"], environment: env)
        XCTAssertEqual(started.status, 0, started.stderr)
        let web = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: started.stdout) as? [String: Any])?["web"] as? [String: Any],
            String(decoding: started.stdout, as: UTF8.self))
        let pageURL = try XCTUnwrap(web["url"] as? String)
        let token = try XCTUnwrap(web["token"] as? String)
        XCTAssertTrue(pageURL.hasSuffix("/#token=" + token), "web.url carries the token in its fragment")
        let url = String(pageURL.prefix(pageURL.count - "#token=".count - token.count))

        for (name, tools) in [("writer", "memory"), ("deleter", "tap_element"), ("hanger", "computer")] {
            let created = try runCLI(
                ["agent", "create", name, "--tools", tools, "--display", display.name], environment: env)
            XCTAssertEqual(created.status, 0, created.stderr)
        }
        let pipeline = try runCLI(["pipeline", "write a report"], environment: env)
        XCTAssertEqual(pipeline.status, 0, pipeline.stderr)
        // A one-shot run, whose agent the dashboard lists only when asked for all.
        let oneShot = try runCLI(["run", "say ok", "--tools", "memory"], environment: env)
        XCTAssertEqual(oneShot.status, 0, oneShot.stderr)
        let oneShotAgent = try XCTUnwrap(
            oneShot.stderr.range(of: #"recorded as agent run-[0-9-]+"#, options: .regularExpression).map {
                String(oneShot.stderr[$0].dropFirst("recorded as agent ".count))
            }, oneShot.stderr)
        // A run that waits for approval, for the screen page's buttons.
        approvalRun = try launchCLI(["send", "deleter", "delete the old files"], environment: env)
        let waiting = try eventually("an approval waits", within: .seconds(30), every: .milliseconds(100)) {
            let approvals = try runCLI(["approvals", "--json"], environment: env)
            return (try? JSONValue.parse(approvals.stdout).array?.isEmpty == false) ?? false
        }
        XCTAssertTrue(waiting, "the deleter's tap waits for approval")
        let setup = Date().timeIntervalSince(began)

        let clickPoint = [frame.x + 450, frame.y + 230]
        let config: [String: Any] = [
            "url": url, "page_url": pageURL, "token": token,
            "xclaw": productsDirectory.appendingPathComponent("xclaw").path, "env": env,
            "display": display.name, "writer": "writer", "deleter": "deleter", "hanger": "hanger",
            "one_shot": oneShotAgent,
            "click": clickPoint, "window_pixel": [frame.x + 60, frame.y + 260], "pipeline": 1,
            "shots": ProcessInfo.processInfo.environment["XCLAW_WEB_SHOTS"] as Any,
        ]
        let configText = String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
        let outcome = try Subprocess.run(
            [python, Self.scripts.appendingPathComponent("pages.py").path, configText], timeout: .seconds(150))
        let stderr = String(decoding: outcome.stderr, as: UTF8.self)
        guard outcome.ending == .exited(0),
            let result = try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any]
        else {
            return XCTFail("pages.py ended \(outcome.ending): \(stderr)")
        }
        print("web view: setup \(Int(setup)) s; browser \(result["timings"] ?? [:])")
        XCTAssertEqual(result["errors"] as? [String], [], "\(result["errors"] ?? "")")
        XCTAssertEqual(result["page_exceptions"] as? [String], [], "no script error in any page")

        // No token: the page says how to get in and asks the daemon nothing; a wrong one in an old link, 401.
        let noToken = result["no_token"] as? [String: Any]
        XCTAssertEqual(noToken?["status"] as? Int, 200, "the page itself holds no secret")
        XCTAssertEqual(noToken?["has_agents"] as? Bool, false)
        XCTAssertTrue((noToken?["heading"] as? String)?.contains("not authorized") == true, "\(noToken ?? [:])")
        XCTAssertEqual((result["wrong_token"] as? [String: Any])?["status"] as? Int, 401)
        // web.url: the token from the fragment into this tab's sessionStorage, out of the address bar; no cookie.
        // An old link (?token=) is sent (303) to the fragment form, no cookie either.
        for (name, redirects) in [("login", [Int]()), ("old_link", [303])] {
            let login = try XCTUnwrap(result[name] as? [String: Any], name)
            XCTAssertEqual(login["redirected"] as? [Int], redirects, name)
            XCTAssertEqual(login["location"] as? String, url + "#/", name)
            XCTAssertEqual(login["stored_is_token"] as? Bool, true, name)
            XCTAssertEqual(login["document_cookie"] as? String, "", name)
            XCTAssertEqual(login["cookies"] as? Int, 0, "\(name): no cookie at all")
        }
        XCTAssertEqual((result["login"] as? [String: Any])?["status"] as? Int, 200)

        // The dashboard: the agents created here, with their state; the run waiting for approval is in flight.
        let dashboard = try XCTUnwrap(result["dashboard"] as? [String: Any])
        // (The pipeline made the default orchestrator, an agent like any other.)
        XCTAssertEqual(Set(dashboard["agents"] as? [String] ?? []), ["writer", "deleter", "hanger", "orchestrator"])
        // With the "all" box: the one-shot run's agent too, marked, and the pipeline's own agents.
        let everyAgent = try XCTUnwrap(result["dashboard_all"] as? [String: Any])
        XCTAssertEqual(everyAgent["hash"] as? String, "#/?all=1")
        XCTAssertEqual(everyAgent["checked"] as? Bool, true)
        let allNames = Set(everyAgent["agents"] as? [String] ?? [])
        XCTAssertTrue(
            allNames.isSuperset(of: ["writer", "deleter", "hanger", "orchestrator", oneShotAgent, "pipeline-1"]),
            "\(allNames)")
        XCTAssertEqual(everyAgent["marked"] as? [String], [oneShotAgent])
        let states = dashboard["states"] as? [String: [String]] ?? [:]
        XCTAssertEqual(states["deleter"], ["needs-approval"])
        XCTAssertEqual(states["hanger"], ["idle"])
        XCTAssertEqual(dashboard["in_flight"] as? [String], ["needs-approval"])
        XCTAssertTrue((dashboard["cost"] as? String)?.hasPrefix("$") == true)

        // The chat: streamed in several chunks, rendered as Markdown, code highlighted, the untrusted parts inert.
        XCTAssertEqual(result["chat_stop_shown"] as? Bool, true, "the stop button shows while the reply streams")
        let chat = try XCTUnwrap(result["chat"] as? [String: Any])
        XCTAssertEqual(chat["exit"] as? Int, 0, "\(chat["error"] ?? "")")
        XCTAssertGreaterThan(chat["chunks"] as? Int ?? 0, 1, "the reply arrived in more than one chunk")
        XCTAssertEqual(chat["h2"] as? [String], ["Weekly report"])
        XCTAssertEqual(chat["th"] as? [String], ["name", "value"])
        XCTAssertEqual(chat["td"] as? [String], ["apples", "3", "pears", "5"])
        XCTAssertEqual(chat["nested_li"] as? [String], ["nested item"])
        XCTAssertEqual((chat["li"] as? [String])?.first, "first")
        XCTAssertEqual(chat["strong"] as? [String], ["the table"])
        XCTAssertEqual(chat["inline_code"] as? [String], ["inline"])
        XCTAssertEqual(chat["keywords"] as? [String], ["let", "func", "return"])
        XCTAssertEqual(chat["numbers"] as? [String], ["42"])
        XCTAssertEqual(chat["comments"] as? [String], ["// the answer"])
        XCTAssertEqual((chat["strings"] as? [String])?.count, 1)
        XCTAssertEqual(chat["python_keywords"] as? [String], ["def", "return"])
        let links = chat["links"] as? [[String: Any]] ?? []
        XCTAssertEqual(links.count, 1, "only the https link is a link: \(links)")
        XCTAssertEqual(links.first?["href"] as? String, "https://example.com/docs")
        XCTAssertEqual(links.first?["rel"] as? String, "noopener noreferrer")
        XCTAssertEqual(chat["images"] as? Int, 0)
        XCTAssertEqual(chat["scripts_in_md"] as? Int, 0)
        XCTAssertEqual(chat["raw_html_text"] as? Bool, true, "raw HTML is shown as text")
        XCTAssertEqual(chat["stop_hidden"] as? Bool, true)
        let history = result["chat_history"] as? [String: Any]
        XCTAssertEqual(history?["h2"] as? [String], ["Weekly report"], "the history renders the stored reply")
        XCTAssertEqual(history?["tools"] as? [String], ["memory"])
        XCTAssertTrue((history?["user"] as? [String])?.contains("MARKDOWN-PLEASE") == true)

        // The screen: frames drawn on the canvas at the screen's size, the fixture's white window where it is.
        let canvas = try XCTUnwrap(result["canvas"] as? [String: Any])
        XCTAssertEqual(canvas["width"] as? Int, 1024)
        XCTAssertEqual(canvas["height"] as? Int, 768)
        let windowPixel = canvas["window_pixel"] as? [Int] ?? []
        XCTAssertTrue(windowPixel.prefix(3).allSatisfy { $0 > 220 }, "the window is white: \(windowPixel)")
        let rootPixel = canvas["root_pixel"] as? [Int] ?? []
        XCTAssertTrue(rootPixel.prefix(3).allSatisfy { $0 < 40 }, "the root is dark: \(rootPixel)")
        XCTAssertGreaterThan(canvas["lit_fraction"] as? Double ?? 0, 0.1)
        // The CLI's click: in the log (newest first) with its place and source, ringed on the overlay, then faded.
        XCTAssertEqual((result["click_cli"] as? [String: Any])?["status"] as? Int, 0, "\(result["click_cli"] ?? "")")
        let action = try XCTUnwrap(result["action"] as? [String: Any])
        XCTAssertEqual(action["action"] as? String, "click")
        XCTAssertTrue((action["source"] as? String)?.hasPrefix("cli (pid ") == true, "\(action)")
        XCTAssertTrue(
            (action["row_text"] as? String)?.contains("\(clickPoint[0]),\(clickPoint[1])") == true, "\(action)")
        XCTAssertEqual(action["first_row_is_it"] as? Bool, true)
        XCTAssertGreaterThan(action["overlay_red_pixels"] as? Int ?? 0, 20, "a ring at the click")
        XCTAssertEqual(action["overlay_red_after_fade"] as? Int, 0, "the ring faded")
        XCTAssertEqual(action["overlay_size"] as? [Int], [1024, 768])

        // The approval, granted from the page: the run went on and tapped Delete.
        XCTAssertEqual(result["approval_run_status"] as? String, "completed")
        XCTAssertTrue(
            ((result["approval_shown"] as? [String: Any])?["text"] as? String)?.contains("deleter") == true,
            "\(result["approval_shown"] ?? "")")
        _ = fixture.wait(timeout: 5) { $0.contains { $0.kind == .buttonPress && $0.target == "Delete" } }
        XCTAssertTrue(
            fixture.received.contains { $0.kind == .buttonPress && $0.target == "Delete" },
            "Delete was tapped after the approval")
        approvalRun?.waitUntilExit()
        XCTAssertEqual(approvalRun?.terminationStatus, 0)

        // The emergency stop: it stopped the hanging run, said so, and the run is recorded stopped.
        let hangerRun = try XCTUnwrap(result["hanger_run"] as? Int, "the hanger's run was seen running")
        let stop = try XCTUnwrap(result["stop"] as? [String: Any])
        XCTAssertEqual((stop["rows"] as? [[String: Any]])?.compactMap { $0["id"] as? Int }, [hangerRun])
        XCTAssertTrue((stop["text"] as? String)?.contains("#\(hangerRun) hanger") == true, "\(stop)")
        XCTAssertEqual(result["hanger_exit"] as? Int, 130)
        let runs = try JSONValue.parse(try runCLI(["runs", "hanger", "--json"], environment: env).stdout)
        XCTAssertEqual(runs.array?.last?["status"]?.string, "stopped")

        // The pipeline: listed; its tree with the researcher's subtask, its result and the answer.
        XCTAssertEqual((result["pipelines"] as? [String])?.count, 1)
        let tree = try XCTUnwrap(result["pipeline"] as? [String: Any])
        XCTAssertEqual(tree["status"] as? String, "completed")
        XCTAssertEqual(tree["roles"] as? [String], ["researcher"])
        XCTAssertEqual(tree["statuses"] as? [String], ["completed"])
        XCTAssertEqual(tree["results"] as? [String], ["Fact: 42."])
        XCTAssertEqual(tree["answer"] as? String, "The final report: 42.")

        // The agent: its config, the memory note its run wrote, its usage, the exports; errors shown in the page.
        let agent = try XCTUnwrap(result["agent"] as? [String: Any])
        let agentConfig = agent["config"] as? [String: String] ?? [:]
        XCTAssertEqual(agentConfig["tools"], "memory")
        XCTAssertEqual(agentConfig["display"], display.name)
        XCTAssertNotNil(agentConfig["model"])
        XCTAssertNotNil(agentConfig["approval"])
        XCTAssertTrue((agent["memory"] as? String)?.contains("deadline") == true, "\(agent)")
        XCTAssertTrue((agent["memory"] as? String)?.contains("Friday") == true, "\(agent)")
        XCTAssertEqual(agent["usage_rows"] as? Int, 1)
        XCTAssertEqual(agent["export_md"] as? String, "/api/export/writer?format=md")
        let export = result["export_md"] as? [String: Any]
        XCTAssertEqual(export?["status"] as? Int, 200)
        XCTAssertTrue((export?["disposition"] as? String)?.contains("writer.md") == true, "\(export ?? [:])")
        XCTAssertEqual(export?["has_reply"] as? Bool, true)
        XCTAssertEqual((result["api_error"] as? [String: Any])?["status"] as? Int, 404)
        XCTAssertTrue((result["agent_missing"] as? String)?.contains("nobody-here") == true)

        // The runs: each links to its report in a new tab, and the report is served.
        let rows = try XCTUnwrap(result["runs"] as? [[String: Any]])
        XCTAssertTrue(Set(rows.compactMap { $0["agent"] as? String }).isSuperset(of: ["writer", "deleter", "hanger"]))
        for row in rows {
            XCTAssertEqual(row["report"] as? String, "/api/reports/\(row["id"] as? Int ?? 0)")
            XCTAssertEqual(row["target"] as? String, "_blank")
        }
        let report = result["report"] as? [String: Any]
        XCTAssertEqual(report?["status"] as? Int, 200)
        XCTAssertEqual(report?["is_html"] as? Bool, true)
        // Clicked: a new tab with a single-use ticket for that report only, never the token.
        let click = try XCTUnwrap(result["report_click"] as? [String: Any])
        XCTAssertEqual(click["path"] as? String, rows.last.map { $0["report"] as? String ?? "" })
        XCTAssertEqual(click["target"] as? String, "_blank")
        XCTAssertEqual(click["features"] as? String, "noopener")
        XCTAssertEqual(click["has_ticket"] as? Bool, true)
        XCTAssertEqual(click["has_token"] as? Bool, false)
        XCTAssertEqual(click["status"] as? Int, 200)
        XCTAssertEqual(click["is_html"] as? Bool, true)
        XCTAssertEqual(click["second_status"] as? Int, 401, "the ticket was for one visit")
        XCTAssertEqual(click["without_ticket"] as? Int, 401)

        // Another port of 127.0.0.1, visited after logging in: it got the browser's requests, and every header it
        // got, replayed to the API and the chat websocket by another user (uid 65534), is refused. (A cookie of
        // the web view would have been among them: browsers send a host's cookies to all its ports.)
        let other = try XCTUnwrap(result["other_port"] as? [String: Any])
        XCTAssertTrue((other["paths"] as? [String])?.contains("/fetched") == true, "\(other)")
        XCTAssertEqual(other["token_seen"] as? Bool, false)
        XCTAssertFalse((other["header_names"] as? [String] ?? []).contains("cookie"), "\(other)")
        let replay = try XCTUnwrap(other["replayed"] as? [String: Any])
        XCTAssertEqual(replay["uid"] as? Int, 65534)
        let replayed = try XCTUnwrap(replay["results"] as? [[String: Any]])
        XCTAssertGreaterThan(replayed.count, 4, "\(replayed)")
        for row in replayed where row["path"] as? String != "control" {
            XCTAssertEqual(row["api"] as? Int, 401, "\(row)")
            XCTAssertEqual(row["ws"] as? Int, 401, "\(row)")
        }
        XCTAssertEqual(
            replayed.last?["api"] as? Int, 200, "the replay reaches the daemon: with the token it is served")

        // Origins: a foreign page's websocket and API calls are refused with 401 even with the token (the handshake
        // by `WebSocketGate`); the same request with this machine's Origin is upgraded (101), so the Origin alone
        // made the difference; no token, 401.
        let origins = try XCTUnwrap(result["origins"] as? [String: Int])
        XCTAssertEqual(origins["foreign"], 401)
        XCTAssertEqual(origins["local"], 101)
        XCTAssertEqual(origins["subprotocol"], 101, "the page's way: the token offered as a subprotocol")
        XCTAssertEqual(origins["subprotocol_wrong"], 401)
        XCTAssertEqual(origins["no_token"], 401)
        XCTAssertEqual(origins["api_foreign"], 401)
        XCTAssertEqual(origins["other_port"], 401, "another local server's page is not this one")
        XCTAssertEqual(origins["post_plain"], 415, "a POST that is not JSON")

        XCTAssertEqual(result["frames_while_still"] as? Int, 0, "an unchanged screen sends no frame")

        // No secret anywhere a person or a page could see it: the rendered pages, what the script printed (the
        // API answers it read), the daemon's log.
        let pages = try XCTUnwrap(result["html"] as? [String])
        XCTAssertEqual(pages.count, 6)
        let log = (try? String(contentsOf: dir.appendingPathComponent("run/daemon.log"), encoding: .utf8)) ?? ""
        XCTAssertFalse(log.isEmpty, "the daemon's log was read")
        for (name, text) in [
            ("pages", pages.joined()), ("script", String(decoding: outcome.stdout, as: UTF8.self)), ("log", log),
        ] {
            XCTAssertFalse(text.contains("ant-web-SECRET"), "the API key in the \(name)")
            XCTAssertFalse(text.contains(token), "the web token in the \(name)")
        }
        print("web view test: \(Int(Date().timeIntervalSince(began))) s in all")
    }
}

import Foundation
import XCTest
import XclawBase
import XclawStore
import XclawTesting

/// The web view's HTTP side (`daemon run --web`), asked as a browser and a script would: the token's way in, the
/// pages' headers, the JSON routes (the CLI's own `--json`), their errors, and no secret in any answer or log.
final class WebAPICLITests: XCTestCase {
    func testTheTokenThePagesAndTheRoutes() throws {
        let key = ["sk", "ant", "api03", UUID().uuidString.replacingOccurrences(of: "-", with: "")].joined(
            separator: "-")
        let daemon = try WebDaemon(environment: ["ANTHROPIC_API_KEY": key])
        defer { daemon.stop() }
        var bodies: [Data] = []

        // The page, its script and style: anyone's, no secret in them; the JSON needs the token.
        let home = try daemon.request("/")
        XCTAssertEqual(home.status, 200)
        XCTAssertTrue(home.headers["content-type"]?.hasPrefix("text/html") == true)
        XCTAssertNil(home.headers["set-cookie"])
        let policy = try XCTUnwrap(home.headers["content-security-policy"])
        XCTAssertTrue(policy.contains("script-src 'self'") && !policy.contains("unsafe"), policy)
        for asset in ["app.js", "markdown.js", "app.css"] {
            let served = try daemon.request(asset)
            XCTAssertEqual(served.status, 200, asset)
            XCTAssertFalse(served.body.isEmpty, asset)
            XCTAssertFalse(String(decoding: served.body, as: UTF8.self).contains("://cdn"), "no CDN in \(asset)")
            bodies.append(served.body)
        }
        let api = try daemon.request("api/agents")
        XCTAssertEqual(api.status, 401)
        let refusal = (try JSONSerialization.jsonObject(with: api.body) as? [String: Any])?["error"] as? String
        XCTAssertTrue(refusal?.contains("xclaw daemon status --json") == true, refusal ?? "")
        XCTAssertEqual(try daemon.request("api/agents?token=\(daemon.token)").status, 401, "the query is no way in")
        XCTAssertEqual(try daemon.request("/?token=" + String(repeating: "a", count: 64)).status, 401)

        // An old link with ?token=: sent to the fragment form, which the browser keeps to itself; no cookie ever.
        let old = try daemon.request("/?token=\(daemon.token)&x=1")
        XCTAssertEqual(old.status, 303)
        XCTAssertEqual(old.headers["location"], "/#token=\(daemon.token)")
        XCTAssertNil(old.headers["set-cookie"])
        XCTAssertEqual(try daemon.request("api/agents", token: daemon.token).status, 200)
        XCTAssertEqual(
            try daemon.request("api/agents", headers: ["Origin": "http://attacker.example"], token: daemon.token)
                .status,
            401, "a page elsewhere, even with the token")
        XCTAssertEqual(
            try daemon.request("api/agents", headers: ["Origin": "http://127.0.0.1:1"], token: daemon.token).status,
            401, "another local server's page, even with the token")
        XCTAssertEqual(
            try daemon.request("api/agents", headers: ["Sec-Fetch-Site": "same-site"], token: daemon.token).status,
            401, "a request the browser says came from another port")
        XCTAssertEqual(
            try daemon.request(
                "api/stop", method: "POST", headers: ["Content-Type": "text/plain"], body: Data(#"{"all":true}"#.utf8),
                token: daemon.token
            ).status, 415, "a POST a page elsewhere could send without asking")

        // A navigation the page cannot put its header on takes a ticket: one GET of one report or export.
        let ticketAnswer = try daemon.request(
            "api/tickets", method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"path": "/api/export/bot"}"#.utf8), token: daemon.token)
        XCTAssertEqual(ticketAnswer.status, 200)
        let ticket = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: ticketAnswer.body) as? [String: String])?["ticket"])
        XCTAssertEqual(
            try daemon.request(
                "api/tickets", method: "POST", headers: ["Content-Type": "application/json"],
                body: Data(#"{"path": "/api/agents"}"#.utf8), token: daemon.token
            ).status, 400, "only for a report or an export")
        XCTAssertEqual(
            try daemon.request(
                "api/tickets", method: "POST", headers: ["Content-Type": "application/json"],
                body: Data(#"{"path": "/api/export/bot"}"#.utf8)
            ).status, 401, "asked for with the token only")

        // The routes are the CLI's JSON.
        let made = try runCLI(["agent", "create", "bot", "--tools", "memory"], environment: daemon.environment)
        XCTAssertEqual(made.status, 0, made.stderr)
        let store = try AgentStore(path: daemon.environment["XDG_DATA_HOME"]! + "/xclaw/xclaw.sqlite")
        try store.setMemory(agent: "bot", key: "colour", value: "teal")
        let session = try store.startSession(agent: "bot", kind: .message)
        _ = try store.requestApproval(
            session: session, kind: "send", tool: "computer", action: "left_click", detail: "click \"Send\"",
            expiresAt: Date().addingTimeInterval(600))

        func json(_ path: String, method: String = "GET", body: Data? = nil) throws -> (Int, Any) {
            let answer = try daemon.request(
                path, method: method, headers: body == nil ? [:] : ["Content-Type": "application/json"], body: body,
                token: daemon.token)
            bodies.append(answer.body)
            return (answer.status, try JSONSerialization.jsonObject(with: answer.body, options: [.fragmentsAllowed]))
        }
        let (agentsStatus, agents) = try json("api/agents")
        XCTAssertEqual(agentsStatus, 200)
        XCTAssertEqual((agents as? [[String: Any]])?.map { $0["name"] as? String }, ["bot"])
        let (_, memory) = try json("api/memory/bot")
        XCTAssertEqual((memory as? [String: String])?["colour"], "teal")
        let (_, approvals) = try json("api/approvals")
        let waiting = try XCTUnwrap((approvals as? [[String: Any]])?.first)
        XCTAssertEqual(waiting["run"] as? Int, Int(session))
        XCTAssertEqual(waiting["action"] as? String, "click \"Send\"")
        let (runsStatus, runs) = try json("api/runs?agent=bot")
        XCTAssertEqual(runsStatus, 200)
        XCTAssertEqual((runs as? [[String: Any]])?.first?["status"] as? String, "needs-approval")
        let second = try store.startSession(agent: "bot", kind: .message)
        let (_, newest) = try json("api/runs?last=1")
        XCTAssertEqual((newest as? [[String: Any]])?.map { $0["id"] as? Int }, [Int(second)], "the newest run only")
        let badLast = try runCLI(["runs", "--last", "0"], environment: daemon.environment)
        XCTAssertEqual(badLast.status, 2, badLast.stderr)
        let (approved, decision) = try json("api/approve/\(session)", method: "POST")
        XCTAssertEqual(approved, 200)
        XCTAssertEqual((decision as? [String: Any])?["decision"] as? String, "approved")
        XCTAssertEqual((try json("api/approvals").1 as? [[String: Any]])?.count, 0, "decided")
        let (stopStatus, _) = try json("api/stop", method: "POST", body: Data(#"{"all": true}"#.utf8))
        XCTAssertEqual(stopStatus, 200)
        XCTAssertTrue(try store.stopRequest(session: session) != nil, "the stop reached the run through the store")
        for path in ["api/schedules", "api/usage", "api/usage?agent=bot", "api/pipelines", "api/history/bot?last=5"] {
            XCTAssertEqual(try json(path).0, 200, path)
        }
        let export = try daemon.request("api/export/bot?format=json", token: daemon.token)
        XCTAssertEqual(export.status, 200)
        XCTAssertEqual(export.headers["content-disposition"], "attachment; filename=\"bot.json\"")
        XCTAssertEqual(try daemon.request("api/export/bot?format=json&ticket=\(ticket)").status, 200)
        XCTAssertEqual(try daemon.request("api/export/bot?format=json&ticket=\(ticket)").status, 401, "used up")

        // Errors: the command's message and exit code, with the HTTP status that says the same.
        let (missing, why) = try json("api/history/nobody")
        XCTAssertEqual(missing, 404)
        XCTAssertTrue(((why as? [String: Any])?["error"] as? String ?? "").contains("no agent named"), "\(why)")
        XCTAssertEqual((why as? [String: Any])?["exit"] as? Int, 1)
        XCTAssertEqual(try json("api/reports/abc").0, 400)
        XCTAssertEqual(try json("api/approve/99999", method: "POST").0, 404)
        XCTAssertEqual(try json("api/stop", method: "POST", body: Data("{}".utf8)).0, 400)
        XCTAssertEqual(try json("api/history/--help").0, 404, "a name is never read as an option")

        for body in bodies {
            let text = String(decoding: body, as: UTF8.self)
            XCTAssertFalse(text.contains(key.suffix(12)), "an answer shows the key")
        }
        XCTAssertFalse(daemon.logText.contains(key.suffix(12)), "the log shows the key")
        XCTAssertFalse(daemon.logText.contains(daemon.token), "the log shows the token")
    }

    func testAPortTakenIsSaidAtOnce() throws {
        let daemon = try WebDaemon()
        defer { daemon.stop() }
        let port = try XCTUnwrap(URL(string: daemon.url)?.port)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-web2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        chmod(state.path, 0o700)
        defer { try? FileManager.default.removeItem(at: state) }
        let started = Date()
        let second = try runCLI(
            ["daemon", "start", "--web", "127.0.0.1:\(port)"], environment: ["XCLAW_STATE_DIR": state.path],
            removing: ["XCLAW_TEST_DAEMON"])
        XCTAssertEqual(second.status, 5, second.stderr)
        XCTAssertTrue(second.stderr.contains("cannot listen"), second.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "not the whole 30 s wait")
        let bad = try runCLI(
            ["daemon", "start", "--web", "127.0.0.1:99999"], environment: ["XCLAW_STATE_DIR": state.path],
            removing: ["XCLAW_TEST_DAEMON"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
        let stray = try runCLI(
            ["daemon", "start", "127.0.0.1:9"], environment: ["XCLAW_STATE_DIR": state.path],
            removing: ["XCLAW_TEST_DAEMON"])
        XCTAssertEqual(stray.status, 2, stray.stderr)
        XCTAssertTrue(stray.stderr.contains("--web"), stray.stderr)
    }
}

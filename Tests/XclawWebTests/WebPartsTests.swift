import Foundation
import HummingbirdCore
import XCTest
import XclawBase

@testable import XclawWeb

/// The web view's parts that need no server: addresses, origins, the token, the action feed's bound.
final class WebPartsTests: XCTestCase {
    func testAddressesAndTheirErrors() throws {
        XCTAssertTrue(try WebConfiguration.address(nil) == ("127.0.0.1", 7878))
        XCTAssertTrue(try WebConfiguration.address("9000") == ("127.0.0.1", 9000))
        XCTAssertTrue(try WebConfiguration.address(":0") == ("127.0.0.1", 0))
        XCTAssertTrue(try WebConfiguration.address("0.0.0.0:8080") == ("0.0.0.0", 8080))
        XCTAssertTrue(try WebConfiguration.address("localhost") == ("localhost", 7878))
        XCTAssertTrue(try WebConfiguration.address("[::1]:7000") == ("::1", 7000))
        XCTAssertTrue(try WebConfiguration.address("[::1]") == ("::1", 7878))
        for bad in ["127.0.0.1:70000", "host:port", "::1:80", "[::1", "[::1]x"] {
            XCTAssertThrowsError(try WebConfiguration.address(bad), bad) { error in
                XCTAssertEqual((error as? WebError)?.exitStatus, .usage, bad)
                XCTAssertTrue("\(error)".contains("--web"), "\(error)")
            }
        }
    }

    func testOnlyLoopbackOriginsAreLocal() {
        for local in [
            "http://127.0.0.1:7878", "http://localhost:9", "http://[::1]:7878", "http://127.1.2.3",
            "http://a.localhost",
        ] {
            XCTAssertTrue(WebOrigin.isLocal(local), local)
        }
        for foreign in ["http://example.com", "http://127.0.0.1.evil.com", "null", "http://10.0.0.1:7878", "file://"] {
            XCTAssertFalse(WebOrigin.isLocal(foreign), foreign)
        }
    }

    func testTheTokenIsKeptPrivateAndComparedWhole() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-token-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("web.token").path
        let token = try WebToken.load(at: path)
        XCTAssertEqual(token.count, 64)
        XCTAssertTrue(token.allSatisfy(\.isHexDigit))
        XCTAssertEqual(try WebToken.load(at: path), token, "kept across restarts")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600)
        XCTAssertTrue(WebToken.matches(token, token))
        XCTAssertFalse(WebToken.matches(String(token.dropLast()), token))
        XCTAssertFalse(WebToken.matches(String(token.dropLast()) + "x", token))
        XCTAssertFalse(WebToken.matches(nil, token))
        XCTAssertFalse(WebToken.matches("", token))
    }

    func testTheFeedKeepsABoundedTailAndHandsEachActionToItsWatchers() async throws {
        let feed = ActionFeed()
        let (stream, cancel) = feed.subscribe()
        XCTAssertEqual(feed.subscriberCount, 1)
        for index in 0..<500 {
            feed.publish(WebAction(display: ":1", source: "cli", action: "click", x: index, y: 1, detail: nil))
        }
        let recent = feed.recent()
        XCTAssertEqual(recent.count, ActionFeed.capacity, "a page left open keeps the daemon's memory flat")
        XCTAssertEqual(recent.last?.seq, 500)
        XCTAssertEqual(recent.first?.seq, 301)
        XCTAssertEqual(feed.recent(after: 498).map(\.seq), [499, 500])
        var seen: [Int] = []
        for await action in stream {
            seen.append(action.seq)
            if seen.count == ActionFeed.capacity { break }
        }
        XCTAssertEqual(seen.last, 500, "a slow watcher keeps the newest")
        cancel()
        XCTAssertEqual(feed.subscriberCount, 0)
        let long = WebAction(display: nil, source: "agent", action: "type", detail: String(repeating: "é", count: 500))
        XCTAssertEqual(long.detail?.count, 120, "a long text is shortened")
    }

    func testOnlyExactlyApplicationJSONIsJSON() {
        for json in ["application/json", "application/json; charset=utf-8", "Application/JSON", " application/json ;x"]
        {
            XCTAssertTrue(WebResponses.isJSON(json), json)
        }
        for other in ["application/jsonp", "application/json-patch+json", "text/plain", "application/x-json", "", nil] {
            XCTAssertFalse(WebResponses.isJSON(other), other ?? "nil")
        }
    }
}

/// Who may ask, decided from a request's parts alone.
final class WebAccessTests: XCTestCase {
    private let access = WebAccess(token: String(repeating: "ab", count: 32), tickets: WebTickets())

    private func parts(
        path: String = "/api/agents", method: String = "GET", origin: String? = nil, host: String? = "127.0.0.1:7878",
        site: String? = nil, bearer: String? = nil, protocols: String? = nil, ticket: String? = nil
    ) -> WebRequestParts {
        WebRequestParts(
            path: path, method: method, origin: origin, host: host, fetchSite: site,
            authorization: bearer.map { "Bearer " + $0 }, protocols: protocols, ticket: ticket)
    }

    func testTheTokenInAHeaderOnlyAndOnlyFromThisServersOwnPages() {
        let token = access.token
        XCTAssertNil(access.refusal(parts(bearer: token)))
        XCTAssertNotNil(access.refusal(parts()))
        XCTAssertNotNil(access.refusal(parts(bearer: String(token.dropLast()) + "0")))
        XCTAssertNil(access.refusal(parts(origin: "http://127.0.0.1:7878", bearer: token)))
        XCTAssertNotNil(
            access.refusal(parts(origin: "http://127.0.0.1:3000", bearer: token)), "another local server's page")
        XCTAssertNotNil(access.refusal(parts(origin: "http://evil.example", bearer: token)))
        XCTAssertNotNil(
            access.refusal(parts(origin: "http://evil.example:7878", host: "evil.example:7878", bearer: token)),
            "a rebound name is not this machine")
        XCTAssertNotNil(access.refusal(parts(site: "same-site", bearer: token)))
        XCTAssertNil(access.refusal(parts(site: "same-origin", bearer: token)))
        XCTAssertNil(access.refusal(parts(site: "none", bearer: token)))
        XCTAssertNil(access.refusal(parts(path: "/mcp", bearer: token)))
        XCTAssertNotNil(
            access.refusal(parts(path: "/mcp", protocols: "xclaw.token." + token)), "MCP takes the Bearer token only")
        // A websocket offers the token as a subprotocol; nothing else may.
        XCTAssertNil(access.refusal(parts(path: "/ws/chat", protocols: "xclaw, xclaw.token." + token)))
        XCTAssertNotNil(access.refusal(parts(path: "/ws/chat", protocols: "xclaw, xclaw.token.00")))
        XCTAssertNotNil(access.refusal(parts(path: "/api/agents", protocols: "xclaw.token." + token)))
        // The page, its script and style are anyone's (they hold no secret); nothing else is.
        for page in ["/", "/app.js", "/markdown.js", "/app.css"] {
            XCTAssertNil(access.refusal(parts(path: page)), page)
        }
        XCTAssertNotNil(access.refusal(parts(path: "/", site: "cross-site")), "still not from another site")
        XCTAssertNotNil(access.refusal(parts(path: "/", method: "POST")))
    }

    func testATicketIsForOneGetOfOnePathForAMinute() throws {
        let tickets = access.tickets
        XCTAssertNil(tickets.issue(for: "/api/agents"), "only a report or an export")
        XCTAssertNil(tickets.issue(for: "/api/reports/"))
        let ticket = try XCTUnwrap(tickets.issue(for: "/api/reports/7"))
        XCTAssertNotNil(access.refusal(parts(path: "/api/reports/8", ticket: ticket)), "another path")
        let again = try XCTUnwrap(tickets.issue(for: "/api/reports/7"))
        XCTAssertNotNil(access.refusal(parts(path: "/api/reports/7", method: "POST", ticket: again)))
        let third = try XCTUnwrap(tickets.issue(for: "/api/reports/7"))
        XCTAssertNil(access.refusal(parts(path: "/api/reports/7", ticket: third)))
        XCTAssertNotNil(access.refusal(parts(path: "/api/reports/7", ticket: third)), "used up")
        let export = try XCTUnwrap(tickets.issue(for: "/api/export/bot"))
        XCTAssertNil(access.refusal(parts(path: "/api/export/bot", ticket: export)))
        let early = try XCTUnwrap(tickets.issue(for: "/api/reports/7"))
        for _ in 0..<WebTickets.maximum { _ = tickets.issue(for: "/api/reports/1") }
        XCTAssertNotNil(access.refusal(parts(path: "/api/reports/7", ticket: early)), "the oldest went first")
    }

    func testOnlyThisMachinesDisplaysAreWatched() {
        for local in [":0", ":12", ":1.0", "unix:3"] { XCTAssertTrue(ScreenSocket.isLocalDisplay(local), local) }
        for remote in ["host:0", "10.0.0.1:0", ":", ":a", ":1.2.3", "localhost:1", ""] {
            XCTAssertFalse(ScreenSocket.isLocalDisplay(remote), remote)
        }
    }

    func testTextCutInTheMiddleOfACharacterWaitsForItsOtherBytes() {
        let bytes = Data("a✓é😀".utf8)
        for cut in 0...bytes.count {
            let (first, rest) = UTF8Chunks.split(bytes.prefix(cut))
            let (second, left) = UTF8Chunks.split(rest + bytes.suffix(from: cut))
            XCTAssertEqual(first + second, "a✓é😀", "cut at \(cut)")
            XCTAssertTrue(left.isEmpty)
            XCTAssertFalse(first.contains("\u{FFFD}"), "cut at \(cut)")
        }
    }
}

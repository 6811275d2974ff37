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

    func testTheTokenLeavesTheAddress() {
        XCTAssertEqual(WebResponses.withoutToken(URI("/?token=abc")), "/")
        XCTAssertEqual(WebResponses.withoutToken(URI("/x?token=abc&a=1")), "/x?a=1")
    }
}

/// Who may ask, decided from a request's parts alone.
final class WebAccessTests: XCTestCase {
    private let access = WebAccess(
        token: String(repeating: "ab", count: 32), cookieName: "xclaw_c", session: String(repeating: "cd", count: 32))

    private func parts(
        path: String = "/api/agents", origin: String? = nil, host: String? = "127.0.0.1:7878", site: String? = nil,
        query: String? = nil, bearer: String? = nil, cookie: String? = nil
    ) -> WebRequestParts {
        WebRequestParts(
            path: path, method: "GET", origin: origin, host: host, fetchSite: site, queryToken: query,
            authorization: bearer.map { "Bearer " + $0 }, cookies: cookie.map { "other=1; xclaw_c=" + $0 })
    }

    func testTheTokenOnceThenTheSessionAndOnlyFromThisServersOwnPages() {
        let token = access.token
        XCTAssertNil(access.refusal(parts(query: token)))
        XCTAssertNil(access.refusal(parts(bearer: token)))
        XCTAssertNil(access.refusal(parts(cookie: access.session)))
        XCTAssertNotNil(access.refusal(parts(cookie: token)), "the cookie holds the session, never the token")
        XCTAssertNotNil(access.refusal(parts()))
        XCTAssertNotNil(access.refusal(parts(query: String(token.dropLast()) + "0")))
        XCTAssertNil(access.refusal(parts(origin: "http://127.0.0.1:7878", cookie: access.session)))
        XCTAssertNotNil(
            access.refusal(parts(origin: "http://127.0.0.1:3000", cookie: access.session)),
            "another local server's page")
        XCTAssertNotNil(access.refusal(parts(origin: "http://evil.example", bearer: token)))
        XCTAssertNotNil(
            access.refusal(parts(origin: "http://evil.example:7878", host: "evil.example:7878", bearer: token)),
            "a rebound name is not this machine")
        XCTAssertNotNil(access.refusal(parts(site: "same-site", cookie: access.session)))
        XCTAssertNil(access.refusal(parts(site: "same-origin", cookie: access.session)))
        XCTAssertNil(access.refusal(parts(site: "none", cookie: access.session)))
        XCTAssertNil(access.refusal(parts(path: "/mcp", bearer: token)))
        XCTAssertNotNil(access.refusal(parts(path: "/mcp", cookie: access.session)), "MCP takes the Bearer token only")
        XCTAssertNotNil(access.refusal(parts(path: "/mcp", query: token)))
        XCTAssertTrue(access.setCookie.contains("HttpOnly") && access.setCookie.contains("SameSite=Strict"))
        XCTAssertFalse(access.setCookie.contains(token))
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

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

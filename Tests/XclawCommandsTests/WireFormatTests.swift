import Foundation
import XCTest
import XclawWire

@testable import XclawDaemon

/// The front speaks the daemon's wire through `DaemonWire` (standard library only), the daemon through Foundation's
/// coders over `DaemonRequest` and `DaemonReply`: these pin that both read what the other writes.
final class WireFormatTests: XCTestCase {
    /// Strings a shell can hand over: quotes, backslashes, every control character, non-ASCII and astral scalars.
    private let hostile: [String] = [
        "", "plain", "say \"hi\"", "back\\slash", "line\nbreak", "tab\there", "\r\n", "\u{1}\u{7}\u{1f}\u{7f}",
        "é ü ß", "日本語", "🦀 emoji 👍🏽", "=", "a=b=c", "{\"json\":[1,2]}", "\\u0041", "\u{FEFF}bom",
    ]

    func testTheDaemonDecodesExactlyTheRequestTheFrontWrites() throws {
        var environment: [String: String] = [:]
        for (index, text) in hostile.enumerated() { environment["VAR_\(index)\(text.prefix(2))"] = text }
        let line = DaemonWire.runRequest(
            arguments: hostile, environment: environment, directory: "/tmp/a \"b\"", pid: 4242)
        XCTAssertTrue(line.hasSuffix("\n"))
        XCTAssertFalse(line.dropLast().contains("\n"), "a request is one line: newlines inside must be escaped")
        let decoded = try JSONDecoder().decode(DaemonRequest.self, from: Data(line.utf8))
        XCTAssertEqual(
            decoded, DaemonRequest(run: hostile, environment: environment, directory: "/tmp/a \"b\"", pid: 4242))
        XCTAssertEqual(decoded.version, DaemonProtocol.version)
        XCTAssertEqual(DaemonProtocol.version, DaemonWire.version)
        XCTAssertEqual(DaemonProtocol.maximumRequest, DaemonWire.maximumRequest)
    }

    func testTheFrontReadsEveryReplyTheDaemonWrites() throws {
        let replies: [(DaemonReply, DaemonWire.Reply?)] = [
            (DaemonReply(version: 3, exit: 130), nil),
            (DaemonReply(version: 3, exit: -1), nil),
            (DaemonReply(version: 3, error: "refused: uid 65534 is not this daemon's user \"é\"\n"), nil),
            (DaemonReply(version: 2, error: "protocol version 9 is not this daemon's 2"), nil),
        ]
        for (reply, _) in replies {
            let line = String(decoding: try JSONEncoder().encode(reply), as: UTF8.self) + "\n"
            let read = try XCTUnwrap(DaemonWire.Reply(line: line), line)
            XCTAssertEqual(read.version, reply.version, line)
            XCTAssertEqual(read.exit, reply.exit, line)
            XCTAssertEqual(read.error, reply.error, line)
        }
        // A status reply nests objects (the web view, the connections): the front must not take a nested key.
        let status = DaemonStatus(
            pid: 7, socket: "/run/x", version: "0.1", uptime_s: 1.5, displays: [":1"], rss_bytes: 1,
            web: DaemonWebStatus(base: "http://127.0.0.1:1/", token: "t"))
        let line = String(decoding: try JSONEncoder().encode(DaemonReply(version: 3, status: status)), as: UTF8.self)
        XCTAssertEqual(DaemonWire.Reply(line: line), DaemonWire.Reply(line: "{\"version\":3}"))
        XCTAssertNil(DaemonWire.Reply(line: "not json"))
        XCTAssertNil(DaemonWire.Reply(line: "[3]"))
    }

    func testTheReaderTakesValidJSONOnlyAndRoundTripsWhatItWrites() throws {
        for text in ["{", "[1,]", "{\"a\":}", "\"\u{1}\"", "tru", "1 2", "{\"a\" 1}", "\"\\x\"", "\"\\ud800\\u0041\""] {
            XCTAssertNil(WireJSON.parse(text), text)
        }
        XCTAssertNil(WireJSON.parse(String(repeating: "[", count: 200) + String(repeating: "]", count: 200)))
        XCTAssertEqual(WireJSON.parse("\"\\ud83e\\udd80\""), .string("🦀"))
        XCTAssertEqual(
            WireJSON.parse(" {\"a\" : [1, -2.5e3, true, null, \"x\"]} "),
            .object([("a", .array([.number(1), .number(-2500), .bool(true), .null, .string("x")]))]))
        for text in hostile {
            let value = WireJSON.object([(text, .array([.string(text), .number(-7), .number(0.25)]))])
            XCTAssertEqual(WireJSON.parse(value.text), value, text)
            // Foundation reads what the wire writes, to the same string.
            let decoded = try JSONDecoder().decode(
                [String: [String]].self, from: Data(WireJSON.object([(text, .array([.string(text)]))]).text.utf8))
            XCTAssertEqual(decoded, [text: [text]])
        }
    }
}

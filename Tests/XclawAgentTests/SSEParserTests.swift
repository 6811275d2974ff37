import Foundation
import XCTest
import XclawBase

@testable import XclawAgent
@testable import XclawClient
@testable import XclawMessages

/// The Claude client's pure parts: SSE framing under every possible network split, stream assembly, the retry
/// rules, key redaction and config loading. No network.
final class SSEParserTests: XCTestCase {
    // MARK: fixtures

    /// A realistic Messages API stream: thinking with a signature, text with non-ASCII, a tool_use whose input
    /// arrives in fragments (one splits a \u escape, one a multi-byte character's neighbourhood), pings.
    private static let stream: String = #"""
        event: message_start
        data: {"type":"message_start","message":{"id":"msg_01XY","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":10,"cache_creation_input_tokens":0}}}

        event: ping
        data: {"type": "ping"}

        event: content_block_start
        data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think… 🤔"}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" about it."}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA"}}

        event: content_block_stop
        data: {"type":"content_block_stop","index":0}

        event: content_block_start
        data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Héllo"}}

        event: ping
        data: {"type": "ping"}

        event: content_block_delta
        data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" wörld 你好 ✓"}}

        event: content_block_stop
        data: {"type":"content_block_stop","index":1}

        event: content_block_start
        data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01A","name":"computer","input":{}}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"action\": \"ty"}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"pe\", \"text\": \"caf\\u00"}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"e9 ✓ 你"}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"好 🤖\"}"}}

        event: content_block_stop
        data: {"type":"content_block_stop","index":2}

        event: message_delta
        data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

        event: message_stop
        data: {"type":"message_stop"}


        """#

    private static var streamBytes: [UInt8] { Array(stream.utf8) }

    private func parse(_ chunks: [ArraySlice<UInt8>]) -> [SSEEvent] {
        var parser = SSEParser()
        var events: [SSEEvent] = []
        for chunk in chunks { events += parser.feed(chunk) }
        return events + parser.finish()
    }

    private func parse(_ text: String) -> [SSEEvent] { parse([Array(text.utf8)[...]]) }

    private func assemble(_ events: [SSEEvent]) throws -> (StreamAssembler, [StreamEvent]) {
        var assembler = StreamAssembler()
        var out: [StreamEvent] = []
        for event in events { out += try assembler.apply(event) }
        return (assembler, out)
    }

    /// StreamEvent is not Equatable (RetryNotice carries a Duration); compare a printable form.
    private func describe(_ events: [StreamEvent]) -> [String] {
        events.map {
            switch $0 {
            case .messageStart(let id, let model): return "start \(id) \(model)"
            case .textDelta(let t): return "text \(t)"
            case .thinkingDelta(let t): return "thinking \(t)"
            case .toolUseStart(let id, let name): return "tool \(id) \(name)"
            case .retrying(let n): return "retry \(n)"
            }
        }
    }

    // MARK: SSE framing

    func testWholeStreamParsesIntoExpectedEvents() {
        let events = parse(Self.stream)
        XCTAssertEqual(events.count, 21)
        XCTAssertEqual(events.first?.event, "message_start")
        XCTAssertEqual(events.last, SSEEvent(event: "message_stop", data: #"{"type":"message_stop"}"#))
        XCTAssertEqual(events.filter { $0.event == "ping" }.count, 2)
    }

    func testEverySplitPositionGivesIdenticalEvents() {
        let bytes = Self.streamBytes
        let reference = parse([bytes[...]])
        for i in 0...bytes.count {
            let events = parse([bytes[..<i], bytes[i...]])
            if events != reference { return XCTFail("split at byte \(i) changed the events") }
        }
    }

    func testOneBytePiecesAndRandomChunksGiveIdenticalEvents() {
        let bytes = Self.streamBytes
        let reference = parse([bytes[...]])
        XCTAssertEqual(parse(bytes.indices.map { bytes[$0...$0] }), reference)
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var chunks: [ArraySlice<UInt8>] = []
            var i = 0
            while i < bytes.count {
                let n = Int.random(in: 1...40, using: &rng)
                chunks.append(bytes[i..<min(bytes.count, i + n)])
                i += n
            }
            XCTAssertEqual(parse(chunks), reference)
        }
    }

    func testCRLFAndCRLineEndsUnderEverySplit() {
        let reference = parse(Self.stream)
        for ending in ["\r\n", "\r"] {
            let bytes = Array(Self.stream.replacingOccurrences(of: "\n", with: ending).utf8)
            XCTAssertEqual(parse([bytes[...]]), reference, "line end \(ending.debugDescription)")
            for i in 0...bytes.count where parse([bytes[..<i], bytes[i...]]) != reference {
                return XCTFail("line end \(ending.debugDescription), split at \(i)")
            }
            XCTAssertEqual(parse(bytes.indices.map { bytes[$0...$0] }), reference)
        }
        // Mixed line ends in one stream.
        XCTAssertEqual(
            parse("event: a\r\ndata: 1\r\rdata: 2\n\r\n"),
            [SSEEvent(event: "a", data: "1"), SSEEvent(data: "2")])
    }

    func testCommentsFieldsAndMultiLineData() {
        let text = """
            : this is a comment
            :another
            id: 42
            retry: 1000
            event: custom
            data: line one
            data:line two
            data:  three (one space kept)
            unknownfield: x

            data

            data: no event name

            data: {"a":1}
            data: {"b":2}
            event: second

            """
        XCTAssertEqual(
            parse(text),
            [
                SSEEvent(event: "custom", data: "line one\nline two\n three (one space kept)"),
                SSEEvent(event: "message", data: ""),
                SSEEvent(event: "message", data: "no event name"),
                SSEEvent(event: "second", data: "{\"a\":1}\n{\"b\":2}"),
            ])
        // A block with only comments and an event name dispatches nothing.
        XCTAssertEqual(parse(": ping\nevent: x\n\n"), [])
        // A leading BOM is ignored.
        XCTAssertEqual(parse([([0xEF, 0xBB, 0xBF] + Array("data: x\n\n".utf8))[...]]), [SSEEvent(data: "x")])
    }

    func testTruncatedStream() {
        // Lines complete, blank line missing: delivered.
        XCTAssertEqual(parse("event: message_stop\ndata: {}\n"), [SSEEvent(event: "message_stop", data: "{}")])
        // Half a line: dropped with its event.
        XCTAssertEqual(parse("event: message_stop\ndata: {\"ty"), [])
        var parser = SSEParser()
        XCTAssertEqual(parser.feed(Array("data: a\n\ndata: b".utf8)), [SSEEvent(data: "a")])
        XCTAssertEqual(parser.finish(), [])
    }

    // MARK: assembly

    func testAssemblerBuildsTheReply() throws {
        let (assembler, events) = try assemble(parse(Self.stream))
        XCTAssertTrue(assembler.isComplete)
        XCTAssertEqual(
            describe(events),
            [
                "start msg_01XY claude-sonnet-4-5",
                "thinking Let me think… 🤔", "thinking  about it.",
                "text Héllo", "text  wörld 你好 ✓",
                "tool toolu_01A computer",
            ])
        let response = try assembler.response(requestID: "req_1")
        XCTAssertEqual(response.id, "msg_01XY")
        XCTAssertEqual(response.model, "claude-sonnet-4-5")
        XCTAssertEqual(response.requestID, "req_1")
        XCTAssertEqual(response.stopReason, .toolUse)
        XCTAssertEqual(
            response.usage,
            Usage(
                inputTokens: 25, outputTokens: 89, cacheCreationInputTokens: 0,
                cacheReadInputTokens: 10))
        XCTAssertEqual(response.message.role, .assistant)
        XCTAssertEqual(
            response.message.content,
            [
                .thinking(thinking: "Let me think… 🤔 about it.", signature: "EqQBCgIYAhIM1gbcDa9GJwZA"),
                .text("Héllo wörld 你好 ✓"),
                .toolUse(id: "toolu_01A", name: "computer", input: ["action": "type", "text": "café ✓ 你好 🤖"]),
            ])
    }

    func testEveryByteSplitAssemblesTheSameReply() throws {
        let bytes = Self.streamBytes
        let reference = try assemble(parse([bytes[...]])).0.response(requestID: nil)
        for i in stride(from: 0, through: bytes.count, by: 7) {
            let reply = try assemble(parse([bytes[..<i], bytes[i...]])).0.response(requestID: nil)
            if reply != reference { return XCTFail("split at \(i) changed the reply") }
        }
    }

    private func toolStream(_ fragments: [String]) -> String {
        var s = """
            event: message_start
            data: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":3}}}

            event: content_block_start
            data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"n","input":{}}}


            """
        for f in fragments {
            let partial = JSONValue.string(f).jsonText
            s +=
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                + "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\(partial)}}\n\n"
        }
        s += "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        s += "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        return s
    }

    func testToolInputEdgeCases() throws {
        func input(_ fragments: [String]) throws -> JSONValue? {
            try assemble(parse(toolStream(fragments))).0.response(requestID: nil).message.toolUses.first?.input
        }
        XCTAssertEqual(try input([]), .object([:]))
        XCTAssertEqual(try input([""]), .object([:]))
        XCTAssertEqual(try input(["{\"a\":", " [1, 2]}"]), ["a": [1, 2]])
        XCTAssertEqual(try input(["{\"a\": tru"]), ["_invalid_json": "{\"a\": tru"])
    }

    func testUnknownEventsAndBlocksAreKept() throws {
        let text = """
            event: message_start
            data: {"type":"message_start","message":{"id":"m","model":"x","usage":{}}}

            event: brand_new_event
            data: this is not even JSON

            event: content_block_start
            data: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"q\\": \\"x\\"}"}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":0,"delta":{"type":"future_delta","x":1}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":0}

            event: message_delta
            data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}

            event: message_stop
            data: {"type":"message_stop"}


            """
        let (assembler, _) = try assemble(parse(text))
        let reply = try assembler.response(requestID: nil)
        XCTAssertEqual(
            reply.message.content,
            [
                .other(["type": "server_tool_use", "id": "s1", "name": "web_search", "input": ["q": "x"]])
            ])
        XCTAssertEqual(reply.stopReason, .endTurn)
        XCTAssertEqual(reply.usage.outputTokens, 7)
    }

    func testMidStreamErrorEvents() throws {
        let start =
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\"}}\n\n"
        let overloaded =
            start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
            + "\"message\":\"Overloaded\"}}\n\n"
        XCTAssertThrowsError(try assemble(parse(overloaded))) { error in
            XCTAssertEqual(
                error as? RetryableStreamError,
                RetryableStreamError(
                    type: "overloaded_error",
                    message: "Overloaded"))
        }
        let invalid =
            start + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
            + "\"message\":\"bad\"}}\n\n"
        XCTAssertThrowsError(try assemble(parse(invalid))) { error in
            guard case ClientError.api(_, let type, let message, _)? = error as? ClientError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(type, "invalid_request_error")
            XCTAssertEqual(message, "bad")
            XCTAssertEqual((error as? ClientError)?.exitStatus, .api)
        }
        XCTAssertThrowsError(try assemble(parse(start + "event: content_block_stop\ndata: {not json\n\n"))) {
            guard case ClientError.badResponse? = $0 as? ClientError else { return XCTFail("\($0)") }
        }
    }

    func testIncompleteStreamIsNotAReply() throws {
        let text = Self.stream.components(separatedBy: "event: message_stop")[0]
        let (assembler, _) = try assemble(parse(text))
        XCTAssertFalse(assembler.isComplete)
        XCTAssertThrowsError(try assembler.response(requestID: "req_9")) {
            XCTAssertTrue("\($0)".contains("message_stop"))
            XCTAssertTrue("\($0)".contains("req_9"))
        }
    }

    // MARK: retry rules

    func testRetryDelays() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        func delay(_ attempt: Int, _ headers: [String: String], random: Double = 0) -> Double {
            RetryPolicy.seconds(RetryPolicy.delay(attempt: attempt, headers: headers, random: random, now: now))
        }
        XCTAssertEqual(delay(1, ["retry-after-ms": "1500"]), 1.5)
        XCTAssertEqual(delay(1, ["retry-after-ms": "250", "retry-after": "9"]), 0.25)
        XCTAssertEqual(delay(1, ["retry-after": "3"]), 3)
        XCTAssertEqual(delay(1, ["retry-after": "60"]), 60)
        let date = RetryPolicy.parseHTTPDate("Tue, 14 Nov 2023 22:13:30 GMT")
        XCTAssertEqual(date?.timeIntervalSince1970, 1_700_000_010)
        XCTAssertEqual(delay(1, ["retry-after": "Tue, 14 Nov 2023 22:13:30 GMT"]), 10)
        // Out of range or unusable hints fall back to exponential backoff.
        XCTAssertEqual(delay(1, ["retry-after": "61"]), 0.5)
        XCTAssertEqual(delay(1, ["retry-after-ms": "90000"]), 0.5)
        XCTAssertEqual(delay(1, ["retry-after": "0"]), 0.5)
        XCTAssertEqual(delay(1, ["retry-after": "Tue, 14 Nov 2023 22:00:00 GMT"]), 0.5)  // in the past
        XCTAssertEqual(delay(1, ["retry-after": "soon"]), 0.5)
        XCTAssertEqual(delay(1, [:]), 0.5)
        XCTAssertEqual(delay(2, [:]), 1)
        XCTAssertEqual(delay(4, [:]), 4)
        XCTAssertEqual(delay(5, [:]), 8)
        XCTAssertEqual(delay(9, [:]), 8)
        XCTAssertEqual(delay(1, [:], random: 1), 0.375)
        XCTAssertEqual(delay(5, [:], random: 0.5), 7)
        for _ in 0..<100 {
            let d = delay(3, [:], random: Double.random(in: 0..<1))
            // Delays are whole milliseconds, so a random just under 1 rounds to exactly 1.5 s.
            XCTAssertTrue(d >= 1.5 && d <= 2, "\(d)")
        }
    }

    func testWhichFailuresAreRetried() {
        XCTAssertTrue(RetryPolicy.shouldRetry(status: 529, headers: [:]))
        XCTAssertTrue(RetryPolicy.shouldRetry(status: 500, headers: [:]))
        XCTAssertTrue(RetryPolicy.shouldRetry(status: 429, headers: [:]))
        XCTAssertTrue(RetryPolicy.shouldRetry(status: 408, headers: [:]))
        XCTAssertTrue(RetryPolicy.shouldRetry(status: 409, headers: [:]))
        XCTAssertFalse(RetryPolicy.shouldRetry(status: 400, headers: [:]))
        XCTAssertFalse(RetryPolicy.shouldRetry(status: 404, headers: [:]))
        XCTAssertFalse(RetryPolicy.shouldRetry(status: 413, headers: [:]))
        XCTAssertTrue(RetryPolicy.shouldRetry(status: 400, headers: ["x-should-retry": "true"]))
        XCTAssertFalse(RetryPolicy.shouldRetry(status: 529, headers: ["x-should-retry": "false"]))
        XCTAssertFalse(RetryPolicy.shouldRetry(status: 401, headers: ["x-should-retry": "true"]))
    }

    private let key = APIKey("sk-" + "ant-FAKE-SECRETSECRETSECRETSECRET-WXYZ")

    private func client(maxRetries: Int = 5) -> ClaudeClient {
        ClaudeClient(
            configuration: ClientConfiguration(
                baseURL: "http://127.0.0.1:9/", apiKey: key,
                maxRetries: maxRetries))
    }

    private func outcome(_ status: Int, _ body: String, headers: [String: String] = [:]) -> TransferOutcome {
        var o = TransferOutcome()
        o.status = status
        o.headers = headers
        o.body = Array(body.utf8)
        return o
    }

    private func errorBody(_ type: String, _ message: String) -> String {
        #"{"type":"error","error":{"type":"\#(type)","message":"\#(message)"},"request_id":"req_body"}"#
    }

    func testHTTPErrorClassification() {
        let c = client()
        XCTAssertEqual(c.configuration.baseURL, "http://127.0.0.1:9")
        let url = c.configuration.baseURL + "/v1/messages"
        switch c.classify(
            outcome(
                529, errorBody("overloaded_error", "Overloaded"),
                headers: ["request-id": "req_123", "retry-after": "2"]), url: url)
        {
        case .retry(let reason, let headers, let rid):
            XCTAssertEqual(reason, "HTTP 529 overloaded_error: Overloaded")
            XCTAssertEqual(rid, "req_123")
            XCTAssertEqual(headers["retry-after"], "2")
        default: XCTFail("529 must be retried")
        }
        guard
            case .failure(let e401) = c.classify(
                outcome(401, errorBody("authentication_error", "invalid x-api-key")),
                url: url)
        else { return XCTFail() }
        XCTAssertEqual(e401 as? ClientError, .invalidAPIKey(requestID: "req_body"))
        XCTAssertTrue("\(e401)".contains("invalid API key (HTTP 401"))
        guard
            case .failure(let e404) = c.classify(
                outcome(
                    404, errorBody("not_found_error", "model: nope"),
                    headers: ["request-id": "req_4"]), url: url)
        else {
            return XCTFail()
        }
        XCTAssertTrue("\(e404)".contains("check --model"), "\(e404)")
        XCTAssertTrue("\(e404)".contains("req_4"), "\(e404)")
        guard case .failure(let e413) = c.classify(outcome(413, "<html>Request Entity Too Large</html>"), url: url)
        else { return XCTFail() }
        XCTAssertTrue("\(e413)".contains("keep fewer screenshots"), "\(e413)")
        XCTAssertTrue("\(e413)".contains("Request Entity Too Large"), "\(e413)")
        guard case .failure = c.classify(outcome(503, "", headers: ["x-should-retry": "false"]), url: url) else {
            return XCTFail("x-should-retry: false forbids the retry")
        }
        guard
            case .retry = c.classify(
                outcome(
                    400, errorBody("invalid_request_error", "x"),
                    headers: ["x-should-retry": "true"]), url: url)
        else {
            return XCTFail("x-should-retry: true forces a retry")
        }
        // A server or proxy echoing the key: the error text must not carry it.
        guard
            case .failure(let echoed) = c.classify(
                outcome(
                    400,
                    errorBody(
                        "invalid_request_error",
                        "bad key \(key.value)")), url: url)
        else { return XCTFail() }
        XCTAssertFalse("\(echoed)".contains(key.value))
    }

    func testPlainJSONMessageIsAccepted() {
        var o = outcome(
            200,
            #"{"id":"msg_j","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}"#,
            headers: ["content-type": "application/json", "request-id": "req_j"])
        guard case .success(let reply) = client().classify(o, url: "http://x/v1/messages") else { return XCTFail() }
        XCTAssertEqual(reply.message.text, "hi")
        XCTAssertEqual(reply.stopReason, .endTurn)
        XCTAssertEqual(reply.requestID, "req_j")
        o.body = Array("<html>proxy login</html>".utf8)
        o.headers["content-type"] = "text/html"
        guard case .failure(let e) = client().classify(o, url: "http://x/v1/messages") else { return XCTFail() }
        XCTAssertTrue("\(e)".contains("proxy login"), "\(e)")
        XCTAssertTrue("\(e)".contains("captive portal"), "\(e)")
        // A captive portal's login page, HTML without the content type, a redirect to a login page: not retried.
        for (status, type, body) in [
            (
                200, "text/html; charset=utf-8",
                "<!DOCTYPE html><html><head><title>Hotel WiFi login</title></head></html>"
            ),
            (200, "application/octet-stream", "<html><body>Sign in</body></html>"),
            (302, "text/html", "<html><title>Redirecting</title></html>"),
        ] {
            o.status = status
            o.headers["content-type"] = type
            o.body = Array(body.utf8)
            guard case .failure(let e) = client().classify(o, url: "http://x/v1/messages") else {
                return XCTFail("\(status) \(type) was not a failure")
            }
            guard case .notTheAPI = e as? ClientError else { return XCTFail("\(e)") }
        }
        // Broken JSON under a JSON content type may be a proxy's hiccup: retried, within the budget.
        o.status = 200
        o.headers["content-type"] = "application/json"
        o.body = Array("{\"id\": \"msg_".utf8)
        guard case .retry = client().classify(o, url: "http://x/v1/messages") else { return XCTFail() }
    }

    func testStreamFailuresAreRetried() {
        var o = outcome(200, "", headers: ["content-type": "text/event-stream", "request-id": "req_s"])
        o.streamed = true
        guard case .retry(let reason, _, _) = client().classify(o, url: "http://x") else { return XCTFail() }
        XCTAssertTrue(reason.contains("stream ended early"))
        o.streamError = RetryableStreamError(type: "overloaded_error", message: "Overloaded")
        guard case .retry(let r2, _, let rid) = client().classify(o, url: "http://x") else { return XCTFail() }
        XCTAssertEqual(r2, "stream error overloaded_error: Overloaded")
        XCTAssertEqual(rid, "req_s")
        var n = TransferOutcome()
        n.curlCode = 7
        n.curlMessage = "Failed to connect to 127.0.0.1 port 9: Connection refused"
        guard case .retry(let r3, _, _) = client().classify(n, url: "http://127.0.0.1:9/v1/messages") else {
            return XCTFail()
        }
        XCTAssertEqual(r3, "network: Failed to connect to 127.0.0.1 port 9: Connection refused (127.0.0.1)")
        n.curlCode = 3  // malformed URL: permanent
        guard case .failure(let e) = client().classify(n, url: "nonsense") else { return XCTFail() }
        XCTAssertEqual((e as? ClientError)?.exitStatus, .api)
    }

    func testRetryNoticeAndErrorTexts() {
        let notice = RetryNotice(
            attempt: 1, maxRetries: 5, delay: .milliseconds(600),
            reason: "HTTP 529 overloaded_error: Overloaded", requestID: "req_123")
        XCTAssertEqual(
            notice.description,
            "API overloaded (HTTP 529 overloaded_error: Overloaded, request-id req_123); retry 1/5 in 0.6 s")
        let net = RetryNotice(
            attempt: 2, maxRetries: 5, delay: .seconds(1), reason: "network: Connection refused",
            requestID: nil)
        XCTAssertEqual(net.description, "network error (network: Connection refused); retry 2/5 in 1.0 s")
        let exhausted = ClientError.retriesExhausted(
            last: "HTTP 529 overloaded_error: Overloaded", attempts: 6,
            requestID: "req_9")
        XCTAssertTrue(exhausted.description.contains("6 attempts"))
        XCTAssertTrue(exhausted.description.contains("req_9"))
        XCTAssertEqual(exhausted.exitStatus, .api)
        XCTAssertEqual(ClientError.noAPIKey.exitStatus, .usage)
        XCTAssertTrue(ClientError.noAPIKey.description.contains("ANTHROPIC_API_KEY"))
        XCTAssertTrue(
            ClientError.api(status: 413, type: "request_too_large", message: "too big", requestID: "r")
                .description.contains("limit 32 MB"))
    }

    // MARK: key and configuration

    func testAPIKeyNeverPrints() {
        let secret = ("sk-" + "ant-FAKE-abcdefghijklmnopqrstuvwxyz0123456789-LAST")
        let k = APIKey(" \(secret)\n")
        XCTAssertEqual(k.value, secret)
        XCTAssertEqual(k.description, "sk-ant-…LAST(redacted)")
        XCTAssertEqual("\(k)", k.description)
        XCTAssertEqual(String(reflecting: k), k.description)
        var dumped = ""
        dump(k, to: &dumped)
        for text in [k.description, String(reflecting: k), dumped, "\([k])"] {
            XCTAssertFalse(text.contains("abcdefghij"), text)
            XCTAssertFalse(text.contains("ST-LAST"), text)
        }
        XCTAssertEqual(APIKey("short").description, "…(redacted)")
    }

    private func tempDir() throws -> String {
        let dir = NSTemporaryDirectory() + "xclaw-client-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    private func write(_ text: String, to path: String, mode: Int) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    func testConfigFileLoading() throws {
        let dir = try tempDir()
        let path = dir + "/xclaw/config"
        try write(
            "# xclaw\n\n  api_key = \"sk-\("ant-")fromfile-FAKE-FILE\"\nbase_url = http://127.0.0.1:8080/\n"
                + "model = claude-x\n", to: path, mode: 0o600)
        // Found through XDG_CONFIG_HOME.
        let c = try ClientConfiguration.load(environment: ["XDG_CONFIG_HOME": dir, "HOME": "/nonexistent"])
        XCTAssertEqual(c.apiKey.value, ("sk-" + "ant-fromfile-FAKE-FILE"))
        XCTAssertEqual(c.baseURL, "http://127.0.0.1:8080")
        XCTAssertEqual(c.maxRetries, 5)
        XCTAssertEqual(c.connectTimeout, .seconds(10))
        XCTAssertEqual(c.idleTimeout, .seconds(90))
        XCTAssertEqual(c.retryBudget, .seconds(120))
        // Both limits are settings: the environment wins over the file; an absurd value is a usage error.
        let limits = try tempDir()
        try write("api_key = k\nidle_timeout = 30\nretry_budget = 45.5\n", to: limits + "/xclaw/config", mode: 0o600)
        let fromFile = try ClientConfiguration.load(environment: ["XDG_CONFIG_HOME": limits])
        XCTAssertEqual(fromFile.idleTimeout, .seconds(30))
        XCTAssertEqual(fromFile.retryBudget, .milliseconds(45_500))
        let fromEnv = try ClientConfiguration.load(
            environment: ["XDG_CONFIG_HOME": limits, "XCLAW_IDLE_TIMEOUT": "5", "XCLAW_RETRY_BUDGET": "10"])
        XCTAssertEqual(fromEnv.idleTimeout, .seconds(5))
        XCTAssertEqual(fromEnv.retryBudget, .seconds(10))
        for bad in ["0", "nan", "-3", "1e9", "soon"] {
            XCTAssertThrowsError(
                try ClientConfiguration.load(environment: ["XDG_CONFIG_HOME": limits, "XCLAW_IDLE_TIMEOUT": bad])
            ) { error in
                XCTAssertEqual((error as? ClientError)?.exitStatus, .usage)
                XCTAssertTrue("\(error)".contains("XCLAW_IDLE_TIMEOUT is \"\(bad)\""), "\(error)")
            }
        }
        // Found through HOME.
        let home = try tempDir()
        try write("api_key=k-home\n", to: home + "/.config/xclaw/config", mode: 0o400)
        XCTAssertEqual(try ClientConfiguration.load(environment: ["HOME": home]).apiKey.value, "k-home")
        // The environment wins.
        let e = try ClientConfiguration.load(
            environment: [
                "ANTHROPIC_API_KEY": "k-env",
                "ANTHROPIC_BASE_URL": "https://proxy.example/",
            ],
            configPath: path)
        XCTAssertEqual(e.apiKey.value, "k-env")
        XCTAssertEqual(e.baseURL, "https://proxy.example")
        // Nothing anywhere.
        XCTAssertThrowsError(try ClientConfiguration.load(environment: [:], configPath: dir + "/missing")) {
            XCTAssertEqual($0 as? ClientError, .noAPIKey)
        }
        XCTAssertEqual(
            try ClientConfiguration.load(
                environment: ["ANTHROPIC_API_KEY": "k"],
                configPath: dir + "/missing"
            ).baseURL, "https://api.anthropic.com")
    }

    func testConfigFileReadableByOthersIsRefused() throws {
        let dir = try tempDir()
        let path = dir + "/config"
        try write("api_key = sk-\("ant-")leaky\n", to: path, mode: 0o644)
        XCTAssertThrowsError(try ClientConfiguration.load(environment: [:], configPath: path)) { error in
            XCTAssertEqual(error as? ClientError, .insecureConfig(path: path, mode: 0o644))
            XCTAssertTrue("\(error)".contains("chmod 600 \(path)"), "\(error)")
            XCTAssertFalse("\(error)".contains("leaky"))
            XCTAssertEqual((error as? ClientError)?.exitStatus, .usage)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        XCTAssertThrowsError(try ClientConfiguration.load(environment: [:], configPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        XCTAssertEqual(
            try ClientConfiguration.load(environment: [:], configPath: path).apiKey.value, ("sk-" + "ant-leaky"))
    }

    func testBadConfigLineIsReported() throws {
        let dir = try tempDir()
        let path = dir + "/config"
        try write("# comment\napi_key = k\nthis line is wrong\n", to: path, mode: 0o600)
        XCTAssertThrowsError(try ClientConfiguration.load(environment: [:], configPath: path)) {
            XCTAssertEqual($0 as? ClientError, .badConfig(path: path, line: 3))
            XCTAssertTrue("\($0)".contains("\(path):3"))
        }
    }

    func testRequestHeaders() {
        var request = MessagesRequest(model: "m", maxTokens: 10, messages: [.user("hi")])
        XCTAssertFalse(client().headers(for: request).contains { $0.hasPrefix("anthropic-beta") })
        request.betas = ["computer-use-2025-01-24", "b2"]
        let headers = client().headers(for: request)
        XCTAssertTrue(headers.contains("anthropic-beta: computer-use-2025-01-24,b2"))
        XCTAssertTrue(headers.contains("anthropic-version: 2023-06-01"))
        XCTAssertTrue(headers.contains("x-api-key: \(key.value)"))
        XCTAssertTrue(headers.contains("Expect:"))
    }
}

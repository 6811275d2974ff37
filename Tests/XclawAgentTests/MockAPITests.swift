import Foundation
import Glibc
import Synchronization
import XCTest
import XclawBase
import XclawMockAPI

/// The loopback Messages API server: exact wire format, framing at any byte, errors, recording, failures.
/// Talks to it over raw sockets, because FoundationNetworking on Linux is unreliable for streaming.
final class MockAPITests: XCTestCase {
    private let emojiText = "Hello, 世界! 🌍 family 👨‍👩‍👧 flag 🇯🇵 é ç — done"
    private let toolInput = #"{"action":"type","text":"line1\nline2 \"q\" / 日本語 🎉👨‍👩‍👧","n":[1,2]}"#

    private func sampleTurn(_ chunking: Chunking) -> MockStream {
        var stream = MockStream.turn(
            blocks: [.text(emojiText), .toolUse(id: "toolu_1", name: "computer", input: toolInput)],
            stopReason: "tool_use", usage: MockUsage(input: 1234, output: 56, cacheRead: 7, cacheWrite: 8),
            id: "msg_fixed", chunking: chunking)
        stream.interChunkDelay = .microseconds(20)
        return stream
    }

    private let sampleEventOrder = [
        "message_start", "ping",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta",
        "content_block_stop",
        "ping",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta",
        "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]

    /// Checks every event of `sampleTurn` after reassembly: order, JSON, text and tool input intact, usage.
    private func assertSampleTurn(_ response: RawHTTPResponse, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        XCTAssertEqual(response.status, 200, file: file, line: line)
        XCTAssertEqual(response.headers["content-type"]?.hasPrefix("text/event-stream"), true, file: file, line: line)
        XCTAssertEqual(response.headers["cache-control"], "no-cache", file: file, line: line)
        XCTAssertEqual(response.headers["transfer-encoding"], "chunked", file: file, line: line)
        XCTAssertEqual(response.headers["request-id"], "req_mock_1", file: file, line: line)
        let events = try parseSSE(response.body)
        XCTAssertEqual(events.map(\.name), sampleEventOrder, file: file, line: line)
        var text = "", json = ""
        for event in events {
            let object = try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any],
                "not JSON: \(event.data)", file: file, line: line)
            XCTAssertEqual(object["type"] as? String, event.name, file: file, line: line)
            XCTAssertFalse(event.data.contains("\n"), file: file, line: line)
            if let delta = object["delta"] as? [String: Any] {
                if delta["type"] as? String == "text_delta" { text += delta["text"] as? String ?? "" }
                if delta["type"] as? String == "input_json_delta" { json += delta["partial_json"] as? String ?? "" }
            }
        }
        XCTAssertEqual(text, emojiText, file: file, line: line)
        XCTAssertEqual(json, toolInput, file: file, line: line)
        let start = try jsonObject(events[0].data)
        let message = try XCTUnwrap(start["message"] as? [String: Any])
        XCTAssertEqual(message["id"] as? String, "msg_fixed")
        XCTAssertEqual(message["role"] as? String, "assistant")
        XCTAssertEqual(message["model"] as? String, "claude-sonnet-4-6")
        XCTAssertTrue(message["stop_reason"] is NSNull)
        let usage = try XCTUnwrap(message["usage"] as? [String: Any])
        XCTAssertEqual(usage["input_tokens"] as? Int, 1234)
        XCTAssertEqual(usage["cache_read_input_tokens"] as? Int, 7)
        XCTAssertEqual(usage["cache_creation_input_tokens"] as? Int, 8)
        let toolStart = try jsonObject(events[8].data)
        let block = try XCTUnwrap(toolStart["content_block"] as? [String: Any])
        XCTAssertEqual(block["id"] as? String, "toolu_1")
        XCTAssertEqual(block["name"] as? String, "computer")
        XCTAssertEqual((block["input"] as? [String: Any])?.count, 0)
        let delta = try jsonObject(events[14].data)
        XCTAssertEqual((delta["delta"] as? [String: Any])?["stop_reason"] as? String, "tool_use")
        XCTAssertEqual((delta["usage"] as? [String: Any])?["output_tokens"] as? Int, 56)
    }

    func testEveryByteChunkingReassemblesTheExactTurn() throws {
        let stream = sampleTurn(.every(1))
        let server = try MockMessagesServer(replies: [.stream(stream)])
        defer { server.stop() }
        let response = try rawRequest(port: server.port, body: #"{"model":"m","stream":true}"#)
        try assertSampleTurn(response)
        XCTAssertEqual(response.body, stream.body)
        XCTAssertEqual(response.chunkSizes.count, stream.body.count)
        XCTAssertTrue(response.chunkSizes.allSatisfy { $0 == 1 })
        XCTAssertGreaterThan(response.reads, 1)
    }

    func testRandomChunkingIsDeterministicAndDecodesToTheSameBytes() throws {
        var stream = sampleTurn(.random(seed: 42, max: 64))
        stream.interChunkDelay = nil  // the default pause, 1 ms
        let server = try MockMessagesServer(replies: [.stream(stream), .stream(stream), .stream(sampleTurn(.whole))])
        defer { server.stop() }
        let first = try rawRequest(port: server.port, body: "{}")
        try assertSampleTurn(first)
        let second = try rawRequest(port: server.port, body: "{}")
        let whole = try rawRequest(port: server.port, body: "{}")
        XCTAssertEqual(first.chunkSizes, second.chunkSizes)
        XCTAssertGreaterThan(first.chunkSizes.count, 10)
        XCTAssertTrue(first.chunkSizes.allSatisfy { (1...64).contains($0) })
        XCTAssertEqual(first.body, whole.body)
        XCTAssertEqual(whole.chunkSizes.count, 1)
        XCTAssertEqual(server.requests.map(\.requestID), ["req_mock_1", "req_mock_2", "req_mock_3"])
    }

    func testThinkingSignatureAndEmptyToolInput() throws {
        let stream = MockStream.turn(
            blocks: [
                .thinking("Let me think… 🤔", signature: "sig=="),
                .toolUse(id: "toolu_2", name: "screenshot_now", input: ""),
            ],
            stopReason: "tool_use", pings: false)
        let events = try parseSSE(stream.body)
        XCTAssertEqual(
            events.map(\.name),
            [
                "message_start", "content_block_start", "content_block_delta", "content_block_delta",
                "content_block_delta", "content_block_delta", "content_block_stop",
                "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
            ])
        XCTAssertEqual(
            try jsonObject(events[1].data)["content_block"] as? [String: String],
            ["type": "thinking", "thinking": ""])
        let thinking = try events[2...4].map {
            try XCTUnwrap((try jsonObject($0.data)["delta"] as? [String: Any])?["thinking"] as? String)
        }
        XCTAssertEqual(thinking.joined(), "Let me think… 🤔")
        XCTAssertEqual(
            try jsonObject(events[5].data)["delta"] as? [String: String],
            ["type": "signature_delta", "signature": "sig=="])
        XCTAssertEqual(
            try jsonObject(events[8].data)["delta"] as? [String: String],
            ["type": "input_json_delta", "partial_json": ""])
    }

    func testMidStreamErrorEndsTheStreamWithStatus200() throws {
        let stream = MockStream.turn(
            blocks: [.text("partial"), .text("never")],
            midStreamError: ("overloaded_error", "Overloaded", 1), chunking: .every(7))
        let server = try MockMessagesServer(replies: [.stream(stream)])
        defer { server.stop() }
        let response = try rawRequest(port: server.port, body: "{}")
        XCTAssertEqual(response.status, 200)
        let events = try parseSSE(response.body)
        XCTAssertEqual(events.last?.name, "error")
        XCTAssertEqual(
            events.last?.data, #"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
        XCTAssertFalse(events.contains { $0.name == "message_stop" || $0.name == "message_delta" })
        XCTAssertEqual(events.filter { $0.name == "content_block_stop" }.count, 1)
    }

    func testOddFramingIsSentVerbatim() throws {
        let frames: [SSEFrame] = [
            .comment("keep-alive"), .raw("event: ping\r\ndata: {\"type\":\r\ndata: \"ping\"}\r\n\r\n"),
            .event(name: "two_lines", data: "a\nb"),
        ]
        let server = try MockMessagesServer(replies: [.stream(MockStream(frames: frames, chunking: .perFrame))])
        defer { server.stop() }
        let response = try rawRequest(port: server.port, body: "{}")
        XCTAssertEqual(
            String(decoding: response.body, as: UTF8.self),
            ": keep-alive\n\nevent: ping\r\ndata: {\"type\":\r\ndata: \"ping\"}\r\n\r\nevent: two_lines\ndata: a\ndata: b\n\n"
        )
        XCTAssertEqual(response.chunkSizes.count, 3)
    }

    func testErrorRepliesCarryStatusRequestIDAndTheAPIErrorBody() throws {
        let server = try MockMessagesServer(replies: [
            .error(status: 529, type: "overloaded_error", message: "Overloaded", headers: ["retry-after-ms": "20"]),
            .error(status: 429, type: "rate_limit_error", message: "Slow down", headers: ["retry-after": "1"]),
            .error(status: 401, type: "authentication_error", message: "invalid x-api-key"),
        ])
        defer { server.stop() }
        let cases: [(Int, String, String, String?)] = [
            (529, "overloaded_error", "Overloaded", "retry-after-ms"),
            (429, "rate_limit_error", "Slow down", "retry-after"),
            (401, "authentication_error", "invalid x-api-key", nil),
        ]
        for (n, (status, type, message, header)) in cases.enumerated() {
            let response = try rawRequest(port: server.port, body: "{}")
            XCTAssertEqual(response.status, status)
            let id = "req_mock_\(n + 1)"
            XCTAssertEqual(response.headers["request-id"], id)
            XCTAssertEqual(response.headers["content-type"], "application/json")
            if let header { XCTAssertNotNil(response.headers[header]) }
            let body = try jsonObject(String(decoding: response.body, as: UTF8.self))
            XCTAssertEqual(body["type"] as? String, "error")
            XCTAssertEqual(body["error"] as? [String: String], ["type": type, "message": message])
            XCTAssertEqual(body["request_id"] as? String, id)
        }
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(server.pendingReplies, 0)
    }

    func testRawReplyAndEmptyQueueAndUnknownPath() throws {
        let server = try MockMessagesServer(replies: [
            .raw(status: 502, headers: ["content-type": "text/html"], body: "<h1>502</h1>")
        ])
        defer { server.stop() }
        let notFound = try rawRequest(port: server.port, method: "GET", path: "/v1/files", body: nil)
        XCTAssertEqual(notFound.status, 404)
        XCTAssertEqual(
            try jsonObject(String(decoding: notFound.body, as: UTF8.self))["error"].flatMap {
                $0 as? [String: String]
            }?["type"],
            "not_found_error")
        XCTAssertEqual(server.pendingReplies, 1, "a 404 must not consume a scripted reply")
        let raw = try rawRequest(port: server.port, body: "{}")
        XCTAssertEqual(raw.status, 502)
        XCTAssertEqual(String(decoding: raw.body, as: UTF8.self), "<h1>502</h1>")
        XCTAssertEqual(raw.headers["request-id"], "req_mock_2")
        let empty = try rawRequest(port: server.port, body: "{}")
        XCTAssertEqual(empty.status, 500)
        let error = try jsonObject(String(decoding: empty.body, as: UTF8.self))
        XCTAssertEqual(
            error["error"] as? [String: String], ["type": "api_error", "message": "mock: no scripted reply left"])
        XCTAssertEqual(error["request_id"] as? String, "req_mock_3")
    }

    func testRequestsAreRecordedWithHeadersAndBody() throws {
        let server = try MockMessagesServer(replies: [.text("ok")])
        defer { server.stop() }
        let body = """
            {"model":"claude-sonnet-4-6","max_tokens":1024,"stream":true,
             "system":[{"type":"text","text":"You drive a desktop."}],
             "tools":[{"type":"computer_20251124","name":"computer"},{"name":"find_text","input_schema":{}}],
             "messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"},
               {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"boom"}]}]}
            """
        let response = try rawRequest(
            port: server.port, path: "/v1/messages?beta=true", body: body,
            headers: [
                "X-Api-Key": "sk-test", "Anthropic-Version": "2023-06-01",
                "anthropic-beta": "computer-use-2025-11-24",
            ])
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(1)))
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/messages")
        XCTAssertEqual(request.query, "beta=true")
        XCTAssertEqual(request.headers["x-api-key"], "sk-test")
        XCTAssertEqual(request.header("Anthropic-Version"), "2023-06-01")
        XCTAssertEqual(request.headers["anthropic-beta"], "computer-use-2025-11-24")
        XCTAssertEqual(request.body, Data(body.utf8))
        XCTAssertEqual(request.model, "claude-sonnet-4-6")
        XCTAssertEqual(request.maxTokens, 1024)
        XCTAssertEqual(request.stream, true)
        XCTAssertEqual(request.system, "You drive a desktop.")
        XCTAssertEqual(request.toolNames, ["computer", "find_text"])
        XCTAssertEqual(request.messageCount, 3)
        XCTAssertEqual(
            request.toolResults, [.init(toolUseID: "toolu_1", isError: true, texts: ["boom"], imageCount: 0)])
        XCTAssertFalse(server.waitForRequests(2, timeout: .milliseconds(20)))
    }

    func testExpectContinueAndChunkedRequestBodies() throws {
        let server = try MockMessagesServer(replies: [.text("one"), .text("two")])
        defer { server.stop() }
        let continued = try rawRequest(port: server.port, body: #"{"model":"a"}"#, expectContinue: true)
        XCTAssertEqual(continued.interimStatuses, [100])
        XCTAssertEqual(continued.status, 200)
        let chunked = try rawRequest(port: server.port, body: #"{"model":"b"}"#, chunkedRequest: true)
        XCTAssertEqual(chunked.status, 200)
        XCTAssertEqual(server.requests.map(\.model), ["a", "b"])
        XCTAssertEqual(server.requests[1].body, Data(#"{"model":"b"}"#.utf8))
    }

    func testHandlerScriptsAModelThatReadsToolResults() throws {
        let server = try MockMessagesServer { request, index in
            if let result = request.toolResults.first {
                return .text("saw \(result.texts.joined()) at #\(index)")
            }
            return .toolUse(name: "computer", input: #"{"action":"screenshot"}"#, id: "toolu_h")
        }
        defer { server.stop() }
        let first = try parseSSE(try rawRequest(port: server.port, body: #"{"messages":[]}"#).body)
        XCTAssertEqual(
            (try jsonObject(first[first.count - 2].data)["delta"] as? [String: Any])?["stop_reason"] as? String,
            "tool_use")
        let answer =
            #"{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_h","content":[{"type":"text","text":"pixels"}]}]}]}"#
        let second = try parseSSE(try rawRequest(port: server.port, body: answer).body)
        let text = try second.filter { $0.name == "content_block_delta" }
            .map { (try jsonObject($0.data)["delta"] as? [String: Any])?["text"] as? String ?? "" }.joined()
        XCTAssertEqual(text, "saw pixels at #1")
    }

    func testDisconnectGivesAnEmptyRead() throws {
        let server = try MockMessagesServer(replies: [.disconnect])
        defer { server.stop() }
        let response = try rawRequest(port: server.port, body: "{}", parse: false)
        XCTAssertTrue(response.raw.isEmpty)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testHangRecordsWhenTheClientAborts() throws {
        let server = try MockMessagesServer(replies: [.hang])
        defer { server.stop() }
        let fd = try connectLoopback(port: server.port)
        try sendAll(fd, Array("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}".utf8))
        var received: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains("event: message_start") {
            let n = recv(fd, &scratch, scratch.count, 0)
            guard n > 0 else { close(fd); return XCTFail("no message_start before EOF") }
            received += scratch[..<n]
        }
        // Nothing more arrives while the client waits.
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&pfd, 1, 100), 0)
        let closedAt = Date()
        close(fd)
        XCTAssertTrue(server.waitForDisconnects(1, timeout: .seconds(2)))
        let seen = try XCTUnwrap(server.disconnects.first)
        XCTAssertLessThan(seen.timeIntervalSince(closedAt), 0.5)
    }

    func testStopClosesTheListenerAndIsIdempotent() throws {
        let server = try MockMessagesServer(replies: [.hang])
        let port = server.port
        let fd = try connectLoopback(port: port)
        try sendAll(fd, Array("POST /v1/messages HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}".utf8))
        XCTAssertTrue(server.waitForRequests(1, timeout: .seconds(2)))
        let started = Date()
        server.stop()
        server.stop()
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
        // The hung connection was closed by the server: the client reads to EOF.
        var scratch = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while recv(fd, &scratch, scratch.count, 0) > 0 {}
        close(fd)
        XCTAssertThrowsError(try connectLoopback(port: port))
        XCTAssertTrue(server.disconnects.isEmpty, "a server stop is not a client disconnect")
    }

    func testReleasingTheServerStopsIt() throws {
        var server: MockMessagesServer? = try MockMessagesServer()
        let port = try XCTUnwrap(server?.port)
        XCTAssertEqual(server?.baseURL, "http://127.0.0.1:\(port)")
        close(try connectLoopback(port: port))
        server = nil
        XCTAssertThrowsError(try connectLoopback(port: port))
    }

    func testConcurrentRequestsGetDistinctIndicesInOrder() throws {
        let server = try MockMessagesServer { _, index in .text("reply \(index)") }
        defer { server.stop() }
        let texts = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            guard let response = try? rawRequest(port: server.port, body: "{}"),
                let events = try? parseSSE(response.body)
            else { return }
            let text = events.filter { $0.name == "content_block_delta" }.compactMap {
                ((try? jsonObject($0.data))?["delta"] as? [String: Any])?["text"] as? String
            }.joined()
            texts.withLock { $0.append(text) }
        }
        XCTAssertEqual(Set(texts.withLock { $0 }), Set((0..<8).map { "reply \($0)" }))
        XCTAssertEqual(server.requests.map(\.index), Array(0..<8))
        XCTAssertEqual(Set(server.requests.map(\.requestID)).count, 8)
    }

    func testScriptDefaults() throws {
        let script = try MockScript(
            data: Data(
                """
                {"replies":[{"text":"t","tool_uses":[{"name":"computer","input":{"action":"screenshot"}},{"name":"wait"}]},
                            {"text":"done","usage":{"input":5,"output":6}},
                            {"status":529,"headers":{"retry-after-ms":10}}, {"hang":true}, {"disconnect":true}]}
                """.utf8))
        XCTAssertEqual(script.replies.count, 5)
        guard case .stream(let first) = script.replies[0], case .stream(let second) = script.replies[1],
            case .error(529, "overloaded_error", _, let headers) = script.replies[2],
            case .hang = script.replies[3], case .disconnect = script.replies[4]
        else {
            return XCTFail("unexpected replies \(script.replies)")
        }
        XCTAssertEqual(headers, ["retry-after-ms": "10"])
        let events = try parseSSE(first.body).map { try jsonObject($0.data) }
        let ids = events.compactMap { ($0["content_block"] as? [String: Any])?["id"] as? String }
        XCTAssertEqual(ids, ["toolu_mock_1", "toolu_mock_2"])
        XCTAssertEqual(
            (events.first { $0["type"] as? String == "message_delta" }?["delta"] as? [String: Any])?["stop_reason"]
                as? String,
            "tool_use")
        let done = try parseSSE(second.body).map { try jsonObject($0.data) }
        XCTAssertEqual(
            (done.first { $0["type"] as? String == "message_delta" }?["delta"] as? [String: Any])?["stop_reason"]
                as? String,
            "end_turn")
        XCTAssertThrowsError(try MockScript(data: Data(#"{"replies":[{"tool_uses":[{}]}]}"#.utf8)))
    }

    func testExecutableServesAScriptAndExitsCleanlyOnSIGTERM() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mockapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let scriptURL = dir.appendingPathComponent("script.json"),
            recordURL = dir.appendingPathComponent("record.jsonl")
        try Data(#"{"replies":[{"text":"hi"},{"status":429,"message":"slow"}]}"#.utf8).write(to: scriptURL)
        let tool = XclawPaths.executableDirectory.appendingPathComponent("xclaw-mock-api")

        let bad = Process()
        bad.executableURL = tool
        bad.arguments = ["--port", "x"]
        bad.standardError = Pipe()
        try bad.run()
        bad.waitUntilExit()
        XCTAssertEqual(bad.terminationStatus, 2)

        let process = Process()
        process.executableURL = tool
        process.arguments = ["--script", scriptURL.path, "--record", recordURL.path]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var line = Data()
        while !line.contains(0x0A) {
            let data = out.fileHandleForReading.availableData
            guard !data.isEmpty else { return XCTFail("no URL line") }
            line.append(data)
        }
        let url = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try XCTUnwrap(Int(url.replacingOccurrences(of: "http://127.0.0.1:", with: "")), url)
        XCTAssertEqual(
            try rawRequest(port: port, body: #"{"model":"m"}"#, headers: ["x-api-key": "secret"]).status, 200)
        XCTAssertEqual(try rawRequest(port: port, body: "{}").status, 429)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(log.split(separator: "\n").count, 2, log)
        let records = try String(contentsOf: recordURL, encoding: .utf8).split(separator: "\n").map {
            try jsonObject(String($0))
        }
        XCTAssertEqual(records.count, 2)
        XCTAssertEqual((records[0]["body"] as? [String: Any])?["model"] as? String, "m")
        XCTAssertEqual((records[0]["headers"] as? [String: Any])?["x-api-key"] as? String, "<redacted>")
    }
}

// MARK: - A raw-socket HTTP/1.1 client, small enough to trust

/// One response as bytes on the wire, decoded.
struct RawHTTPResponse {
    var raw: [UInt8] = []
    var interimStatuses: [Int] = []
    var status = 0
    var headers: [String: String] = [:]
    var body = Data()
    var chunkSizes: [Int] = []
    var reads = 0
}

private struct RawHTTPError: Error, CustomStringConvertible { let description: String }

private func connectLoopback(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPError(description: "socket failed") }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard rc == 0 else {
        close(fd)
        throw RawHTTPError(description: "connect to \(port) failed: errno \(errno)")
    }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

private func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    var at = 0
    while at < bytes.count {
        let n = bytes[at...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { throw RawHTTPError(description: "send failed: errno \(errno)") }
        at += n
    }
}

/// Sends one request and reads until the server closes, then decodes status, headers and (chunked) body.
private func rawRequest(
    port: Int, method: String = "POST", path: String = "/v1/messages", body: String?,
    headers: [String: String] = [:], expectContinue: Bool = false, chunkedRequest: Bool = false,
    parse: Bool = true
) throws -> RawHTTPResponse {
    let fd = try connectLoopback(port: port)
    defer { close(fd) }
    let bodyBytes = Array((body ?? "").utf8)
    var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    if body != nil {
        head += "Content-Type: application/json\r\n"
        head += chunkedRequest ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(bodyBytes.count)\r\n"
    }
    if expectContinue { head += "Expect: 100-continue\r\n" }
    head += "\r\n"
    var payload = bodyBytes
    if chunkedRequest {
        let half = bodyBytes.count / 2
        // Appended piece by piece: as one `+` chain this took the type checker 7 s.
        var chunked: [UInt8] = Array("\(String(half, radix: 16));ext=1\r\n".utf8)
        chunked.append(contentsOf: bodyBytes[..<half])
        chunked.append(contentsOf: Array("\r\n\(String(bodyBytes.count - half, radix: 16))\r\n".utf8))
        chunked.append(contentsOf: bodyBytes[half...])
        chunked.append(contentsOf: Array("\r\n0\r\n\r\n".utf8))
        payload = chunked
    }
    var response = RawHTTPResponse()
    var scratch = [UInt8](repeating: 0, count: 65536)
    try sendAll(fd, Array(head.utf8))
    if expectContinue {
        let expected = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        while response.raw.count < expected.count {
            let n = recv(fd, &scratch, scratch.count, 0)
            guard n > 0 else { throw RawHTTPError(description: "no 100 Continue") }
            response.raw += scratch[..<n]
        }
    }
    try sendAll(fd, payload)
    while true {
        let n = recv(fd, &scratch, scratch.count, 0)
        if n == 0 { break }
        guard n > 0 else { throw RawHTTPError(description: "recv failed: errno \(errno)") }
        response.raw += scratch[..<n]
        response.reads += 1
    }
    guard parse else { return response }

    var rest = response.raw[...]
    while true {
        guard let end = rest.firstRange(of: [13, 10, 13, 10]) else { throw RawHTTPError(description: "no header end") }
        let lines = String(decoding: rest[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        rest = rest[end.upperBound...]
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RawHTTPError(description: lines[0])
        }
        if status == 100 {
            response.interimStatuses.append(status)
            continue
        }
        response.status = status
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            response.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        break
    }
    if response.headers["transfer-encoding"] == "chunked" {
        while true {
            guard let lineEnd = rest.firstRange(of: [13, 10]),
                let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16)
            else {
                throw RawHTTPError(description: "bad chunk header")
            }
            rest = rest[lineEnd.upperBound...]
            if size == 0 { break }
            guard rest.count >= size + 2 else { throw RawHTTPError(description: "truncated chunk") }
            response.body.append(contentsOf: rest.prefix(size))
            response.chunkSizes.append(size)
            rest = rest.dropFirst(size + 2)
        }
    } else {
        response.body = Data(rest)
        if let length = response.headers["content-length"], Int(length) != rest.count {
            throw RawHTTPError(description: "content-length \(length) but \(rest.count) bytes")
        }
    }
    return response
}

/// A minimal SSE parser (blank line ends an event, `data:` lines join with "\n", comments skipped).
private func parseSSE(_ body: Data) throws -> [(name: String, data: String)] {
    guard let text = String(data: body, encoding: .utf8) else { throw RawHTTPError(description: "body is not UTF-8") }
    var events: [(name: String, data: String)] = []
    var name = "message", data: [String] = []
    for line in text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n") {
        if line.isEmpty {
            if !data.isEmpty { events.append((name, data.joined(separator: "\n"))) }
            name = "message"
            data = []
        } else if line.hasPrefix(":") {
            continue
        } else if line.hasPrefix("event:") {
            name = line.dropFirst(6).trimmingCharacters(in: .whitespaces)
        } else if line.hasPrefix("data:") {
            var value = line.dropFirst(5)
            if value.first == " " { value = value.dropFirst() }
            data.append(String(value))
        }
    }
    return events
}

private func jsonObject(_ text: String) throws -> [String: Any] {
    try XCTUnwrap(
        try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
}

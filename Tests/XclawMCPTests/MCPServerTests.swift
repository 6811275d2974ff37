import Foundation
import XCTest
import XclawMCP
import XclawMessages
import XclawTimeTesting

/// The protocol core in-process: negotiation, listing, errors that are the protocol's versus the tool's, and the
/// stdio transport's one writer under concurrent large replies. No X: the tools here are the tests' own.
final class MCPServerTests: XCTestCase {
    private static let echo = MCPTool(
        name: "echo", title: "Echo", description: "Answers its text, count times.",
        parameters: [
            MCPParameter("text", .string, "What to answer.", required: true),
            MCPParameter("count", .integer, "How many times."),
        ],
        annotations: MCPToolAnnotations(readOnly: true, destructive: false, idempotent: true, openWorld: false)
    ) { call in
        let text = call.string("text") ?? ""
        if text == "fail" { return .failure("it failed: do something else") }
        if let count = call.arguments["count"]?.int {
            return MCPToolResult([.text(String(repeating: text, count: count))])
        }
        return MCPToolResult([.text(text)])
    }

    private let server = MCPServer(name: "test", version: "1", tools: [echo])

    private func ask(_ message: String) async throws -> [String: JSONValue] {
        let answer = await server.handle(Data(message.utf8))
        let reply = try XCTUnwrap(answer, "no reply to \(message)")
        XCTAssertFalse(reply.contains(0x0A), "a reply is one line")
        return try XCTUnwrap(JSONValue.parse(reply).object)
    }

    func testInitializeNegotiatesTheVersionAndDeclaresTools() async throws {
        for (asked, answered) in [
            ("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"), ("2099-01-01", "2025-11-25"),
        ] {
            let reply = try await ask(
                #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"\#(asked)","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#
            )
            XCTAssertEqual(reply["id"], 1)
            XCTAssertEqual(reply["result"]?["protocolVersion"]?.string, answered)
            XCTAssertNotNil(reply["result"]?["capabilities"]?["tools"])
            XCTAssertEqual(reply["result"]?["serverInfo"]?["name"], "test")
        }
        let notified = await server.handle(Data(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.utf8))
        XCTAssertNil(notified, "notifications are not answered")
        let ping = try await ask(#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        XCTAssertEqual(ping["id"], "p")
        XCTAssertEqual(ping["result"], [:])
    }

    func testToolsListCarriesSchemaAndAnnotations() async throws {
        let reply = try await ask(#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        guard case .array(let tools)? = reply["result"]?["tools"], let tool = tools.first?.object else {
            return XCTFail("no tools in \(reply)")
        }
        XCTAssertEqual(tool["name"], "echo")
        XCTAssertEqual(tool["annotations"]?["readOnlyHint"], true)
        XCTAssertEqual(tool["annotations"]?["destructiveHint"], false)
        XCTAssertEqual(tool["inputSchema"]?["type"], "object")
        XCTAssertEqual(tool["inputSchema"]?["required"], ["text"])
        XCTAssertEqual(tool["inputSchema"]?["properties"]?["count"]?["type"], "integer")
    }

    func testProtocolErrorsOnlyForMalformedMessagesUnknownMethodsAndTools() async throws {
        let parse = try await ask("{not json")
        XCTAssertEqual(parse["error"]?["code"], -32700)
        XCTAssertEqual(parse["id"], .null)
        let batch = try await ask("[]")
        XCTAssertEqual(batch["error"]?["code"], -32600)
        let method = try await ask(#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#)
        XCTAssertEqual(method["error"]?["code"], -32601)
        let unknown = try await ask(
            #"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#)
        XCTAssertEqual(unknown["error"]?["code"], -32602)
        // What the tool refuses, arguments of the wrong type or unknown ones included, is the tool's result.
        for (arguments, words) in [
            (#"{"text":"fail"}"#, "do something else"), (#"{"text":3}"#, "text must be a string"),
            (#"{}"#, "echo needs text"), (#"{"text":"a","colour":1}"#, "colour is not an argument"),
            (#"{"text":"a","count":1.5}"#, "count must be an integer"),
        ] {
            let reply = try await ask(
                #"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":\#(arguments)}}"#)
            XCTAssertNil(reply["error"], arguments)
            XCTAssertEqual(reply["result"]?["isError"], true, arguments)
            let text = (reply["result"]?["content"] ?? .null).jsonText
            XCTAssertTrue(text.contains(words), "\(arguments): \(text)")
        }
        let fine = try await ask(
            #"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\nb"}}}"#)
        XCTAssertEqual(fine["result"]?["isError"], false)
        XCTAssertEqual(fine["result"]?["content"], [["type": "text", "text": "a\nb"]])
    }

    func testConcurrentLargeRepliesLeaveStdoutWhole() throws {
        let (toServer, fromClient) = try pipe(), (toClient, fromServer) = try pipe()
        let transport = MCPStdioTransport(server: server, input: toServer, output: fromServer)
        let done = expectation(description: "the transport ends with its input")
        Thread {
            transport.run()
            close(fromServer)
            done.fulfill()
        }.start()
        // 20 calls at once, each answered with 1 MB of one letter.
        let letters = Array("ABCDEFGHIJKLMNOPQRST")
        var requests = ""
        for (index, letter) in letters.enumerated() {
            requests +=
                #"{"jsonrpc":"2.0","id":\#(index),"method":"tools/call","params":{"name":"echo","arguments":{"text":"\#(letter)","count":1000000}}}"#
                + "\n"
        }
        let reader = FileHandle(fileDescriptor: toClient)
        let output = DataBox()
        Thread { output.data = reader.readDataToEndOfFile() }.start()
        XCTAssertEqual(write(fromClient, requests, requests.utf8.count), requests.utf8.count)
        close(fromClient)
        wait(for: [done], timeout: 60)
        eventually("the replies read to their end") { output.data != nil }
        let lines = (output.data ?? Data()).split(separator: 0x0A)
        XCTAssertEqual(lines.count, 20)
        var seen = Set<Int>()
        for line in lines {
            let reply = try XCTUnwrap(JSONValue.parse(Data(line)).object)
            guard let id = reply["id"]?.int,
                case .array(let content)? = reply["result"]?["content"], let text = content.first?["text"]?.string
            else { return XCTFail("malformed reply") }
            XCTAssertEqual(text, String(repeating: letters[id], count: 1_000_000))
            seen.insert(id)
        }
        XCTAssertEqual(seen, Set(0..<20))
    }

    func testALineOverTheLimitIsRefusedWithoutBeingKeptAndTheNextIsRead() throws {
        let (toServer, fromClient) = try pipe(), (toClient, fromServer) = try pipe()
        let transport = MCPStdioTransport(server: server, input: toServer, output: fromServer)
        let done = expectation(description: "the transport ends with its input")
        Thread {
            transport.run(limit: 1_000)
            close(fromServer)
            done.fulfill()
        }.start()
        let reader = FileHandle(fileDescriptor: toClient)
        let output = DataBox()
        Thread { output.data = reader.readDataToEndOfFile() }.start()
        // A long line in pieces larger and smaller than a read, then a short one; then a long line with no newline.
        let long =
            #"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""# + String(repeating: "x", count: 300_000)
            + "\"}}\n"
        let requests =
            long
            + #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"\#(String(repeating: "n", count: 900))"}}"#
            + "\n" + String(repeating: "y", count: 5_000)
        XCTAssertEqual(write(fromClient, requests, requests.utf8.count), requests.utf8.count)
        close(fromClient)
        wait(for: [done], timeout: 60)
        eventually("the replies read to their end") { output.data != nil }
        let replies = try (output.data ?? Data()).split(separator: 0x0A).map {
            try XCTUnwrap(JSONValue.parse(Data($0)).object)
        }
        // The refusals are written as the lines are read, the call's reply when it is done: in any order.
        let refusals = replies.filter { $0["id"] == .null }
        XCTAssertEqual(refusals.count, 2, "\(replies)")
        XCTAssertEqual(replies.count, 3, "\(replies)")
        for refusal in refusals {
            XCTAssertEqual(refusal["error"]?["code"]?.int, -32600)
            XCTAssertTrue(refusal["error"]?["message"]?.string?.contains("longer than 1000 bytes") ?? false)
        }
        // The unknown tool's 900-character name comes back cut at 200 characters.
        let message = replies.first { $0["id"] == 2 }?["error"]?["message"]?.string ?? ""
        XCTAssertTrue(message.contains(String(repeating: "n", count: 200) + "…"), message)
        XCTAssertFalse(message.contains(String(repeating: "n", count: 201)), message)
    }

    private func pipe() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        return (fds[0], fds[1])
    }
}

/// Data one thread reads while the test waits. Safe because the test reads it only after the writer set it, polling.
private final class DataBox: @unchecked Sendable {
    var data: Data?
}

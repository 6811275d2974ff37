import Foundation
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawTesting

@testable import XclawStore

/// Screenshots in the store are kept once, by content: the same screen twice is one row, a conversation is rebuilt
/// with only the newest ones read back, retention frees what no message refers to, and older files move their
/// inline images out when they open.
final class ImageStoreTests: BackendTestCase {
    private var temporary: URL!

    override func setUpWithError() throws {
        temporary = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-images-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: temporary) }

    /// A small PNG-like payload whose header names `w`x`h`.
    private static func png(_ w: UInt32, _ h: UInt32, salt: UInt8 = 0) -> String {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]
        for v in [w, h] { bytes += (0..<4).map { UInt8(truncatingIfNeeded: v >> UInt32(24 - $0 * 8)) } }
        bytes += [8, 6, 0, 0, 0, salt] + Array(repeating: salt, count: 2_000)
        return Data(bytes).base64EncodedString()
    }

    private static func result(_ id: String, _ image: String) -> ContentBlock {
        .toolResult(
            ToolResultBlock(
                toolUseID: id, content: [.text("shot \(id)"), .image(mediaType: "image/png", base64: image)]))
    }

    private func sqlite(_ path: String, _ sql: String) throws -> String {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [path, sql]
        let out = Pipe()
        shell.standardOutput = out
        try shell.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        shell.waitUntilExit()
        XCTAssertEqual(shell.terminationStatus, 0, sql)
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testTheSameScreenshotIsKeptOnceAndReadBackExactly() throws {
        try eachBackend(sqliteFile: temporary.appendingPathComponent("db.sqlite").path) {
            let store = try AgentStore.at(location)
            try store.createAgent(AgentConfig(name: "a", model: "claude-sonnet-5", tools: ["computer"]))
            let same = Self.png(1456, 819)
            for i in 0..<5 { try store.appendMessage(agent: "a", role: .user, content: [Self.result("t\(i)", same)]) }
            let other = Self.png(1456, 819, salt: 7)
            let last = try store.appendMessage(agent: "a", role: .user, content: [Self.result("t5", other)])
            let totals = try store.imageTotals()
            XCTAssertEqual(totals.count, 2, "five identical screenshots are one row")
            XCTAssertEqual(totals.bytes, 2 * (Data(base64Encoded: same)?.count ?? 0), "bytes, not base64")
            // The messages hold references, not the pixels.
            XCTAssertEqual(try shell("SELECT count(*) FROM messages WHERE content LIKE '%\"data\"%'"), "0")
            XCTAssertEqual(try shell("SELECT count(*) FROM messages WHERE content LIKE '%xclaw_image%'"), "6")
            XCTAssertEqual(try store.message(id: last).content, [Self.result("t5", other)])
            // The rebuild reads back only the newest ones a run's pruning leaves (keep 2, one at a time: 2 of 6; keep 3,
            // three at a time: 3 of 6, as the loop sends it after dropping three; keep 4, three at a time: all 6, since
            // the loop drops only at 7).
            let references = try store.messages(agent: "a", screenshots: false).map(\.message)
            func shown(keep: Int, chunk: Int) throws -> [Bool] {
                try store.resolveScreenshots(references, keep: keep, chunk: chunk, removed: "[removed]").map { m in
                    m.content.contains { block in
                        if case .toolResult(let r) = block { return r.content.contains(where: \.isImage) }
                        return false
                    }
                }
            }
            XCTAssertEqual(try shown(keep: 2, chunk: 1), [false, false, false, false, true, true])
            XCTAssertEqual(try shown(keep: 3, chunk: 3), [false, false, false, true, true, true])
            XCTAssertEqual(try shown(keep: 4, chunk: 3), [true, true, true, true, true, true])
            let newest = try store.resolveScreenshots(references, keep: 2, chunk: 1, removed: "[removed]")
            XCTAssertEqual(newest.last?.content, [Self.result("t5", other)])
            XCTAssertEqual(
                newest.first?.content.first.flatMap { b -> [ContentBlock]? in
                    if case .toolResult(let r) = b { return r.content }; return nil
                }, [.text("shot t0"), .text("[removed]")])
            // Retention replaces the images of old sessions; a screenshot no message refers to is deleted with them.
            let session = try store.startSession(agent: "a", kind: .run)
            try store.appendMessage(
                agent: "a", role: .user, content: [Self.result("s", Self.png(10, 10, salt: 9))], sessionID: session)
            try store.finishSession(session, status: .completed, steps: 1, usd: 0)
            XCTAssertEqual(try store.imageTotals().count, 3)
            XCTAssertEqual(try store.pruneImages(sessionsBefore: session + 1, placeholder: "[gone]"), 1)
            XCTAssertEqual(try store.imageTotals().count, 2, "the unreferenced screenshot is freed")
        }
    }

    /// Deleting an agent deletes its screenshots too: they may show anything that was on its screen.
    func testDeletingAnAgentDeletesItsScreenshots() throws {
        try eachBackend(sqliteFile: temporary.appendingPathComponent("del.sqlite").path) {
            let store = try AgentStore.at(location)
            for name in ["a", "b"] {
                try store.createAgent(AgentConfig(name: name, model: "claude-sonnet-5", tools: ["computer"]))
            }
            try store.appendMessage(agent: "a", role: .user, content: [Self.result("t1", Self.png(5, 5, salt: 1))])
            try store.appendMessage(agent: "a", role: .user, content: [Self.result("t2", Self.png(5, 5, salt: 2))])
            try store.appendMessage(agent: "b", role: .user, content: [Self.result("t3", Self.png(5, 5, salt: 2))])
            XCTAssertEqual(try store.imageTotals().count, 2)
            try store.deleteAgent(named: "a")
            XCTAssertEqual(try store.imageTotals().count, 1, "b's screenshot (the same as one of a's) stays")
            try store.deleteAgent(named: "b")
            XCTAssertEqual(try store.imageTotals().count, 0)
        }
    }

    func testSHA256MatchesTheStandard() {
        XCTAssertEqual(SHA256.hex(Data("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(Data()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // The padding's edges: 55, 56 and 64 bytes (NIST's 448-bit message is 56).
        XCTAssertEqual(
            SHA256.hex(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(
            SHA256.hex(Data(String(repeating: "a", count: 55).utf8)),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        XCTAssertEqual(
            SHA256.hex(Data(String(repeating: "a", count: 64).utf8)),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
        let long = Data(String(repeating: "a", count: 1_000).utf8)
        XCTAssertEqual(SHA256.hex(long), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    /// A version 10 file with screenshots inline in its messages (as every earlier release wrote them): opening it
    /// moves each into `images` once and the messages read back the same.
    func testAVersion10FileMovesItsInlineScreenshotsOut() throws {
        let path = temporary.appendingPathComponent("old.sqlite").path
        do {
            let store = try AgentStore(path: path)
            try store.createAgent(AgentConfig(name: "a", model: "claude-sonnet-5", tools: ["computer"]))
        }
        let image = Self.png(800, 600)
        let inline = JSONValue.array([Self.result("t1", image).json]).jsonText.replacingOccurrences(of: "'", with: "''")
        _ = try sqlite(
            path,
            """
            DROP TABLE images; ALTER TABLE agents DROP COLUMN thinking; DELETE FROM grdb_migrations WHERE identifier = 'v11';
            INSERT INTO messages (agent, role, content, status, created_at, updated_at) VALUES
              ('a', 'user', '\(inline)', 'complete', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
              ('a', 'user', '\(inline)', 'complete', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
            """)
        XCTAssertEqual(try sqlite(path, "SELECT count(*) FROM messages WHERE content LIKE '%\"base64\"%'"), "2")
        let store = try AgentStore(path: path)
        XCTAssertTrue(try store.info().migrations.contains("v11"))
        XCTAssertEqual(try sqlite(path, "SELECT count(*) FROM messages WHERE content LIKE '%\"base64\"%'"), "0")
        XCTAssertEqual(try store.imageTotals().count, 1)
        XCTAssertEqual(
            try store.messages(agent: "a").map(\.content), [[Self.result("t1", image)], [Self.result("t1", image)]])
    }
}

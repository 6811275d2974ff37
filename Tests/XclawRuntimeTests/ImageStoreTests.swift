import Foundation
import XCTest
import XclawAgent
import XclawBase
import XclawMessages

@testable import XclawStore

/// Screenshots in the store are kept once, by content: the same screen twice is one row, a conversation is rebuilt
/// with only the newest ones read back, retention frees what no message refers to, and older files move their
/// inline images out when they open.
final class ImageStoreTests: XCTestCase {
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
        let path = temporary.appendingPathComponent("db.sqlite").path
        let store = try AgentStore(path: path)
        try store.createAgent(AgentConfig(name: "a", model: "claude-sonnet-5", tools: ["computer"]))
        let same = Self.png(1456, 819)
        for i in 0..<5 { try store.appendMessage(agent: "a", role: .user, content: [Self.result("t\(i)", same)]) }
        let other = Self.png(1456, 819, salt: 7)
        let last = try store.appendMessage(agent: "a", role: .user, content: [Self.result("t5", other)])
        let totals = try store.imageTotals()
        XCTAssertEqual(totals.count, 2, "five identical screenshots are one row")
        XCTAssertEqual(totals.bytes, 2 * (Data(base64Encoded: same)?.count ?? 0), "bytes, not base64")
        // The messages hold references, not the pixels.
        XCTAssertEqual(try sqlite(path, "SELECT count(*) FROM messages WHERE content LIKE '%\"data\"%'"), "0")
        XCTAssertEqual(try sqlite(path, "SELECT count(*) FROM messages WHERE content LIKE '%xclaw_image%'"), "6")
        XCTAssertEqual(try store.message(id: last).content, [Self.result("t5", other)])
        // The rebuild reads back only the newest two; the older come as the pruning's placeholder.
        let rebuilt = try store.messages(agent: "a", newestImages: 2, removedImage: "[removed]")
        let images = rebuilt.map { m in
            m.content.flatMap { block -> [ContentBlock] in
                if case .toolResult(let r) = block {
                    return r.content.filter { $0.isImage || $0 == .text("[removed]") }
                }
                return []
            }
        }
        XCTAssertEqual(images.map { $0.first?.isImage }, [false, false, false, false, true, true])
        XCTAssertEqual(images.last?.first, .image(mediaType: "image/png", base64: other))
        // Retention replaces the images of old sessions; a screenshot no message refers to is deleted with them.
        let session = try store.startSession(agent: "a", kind: .run)
        try store.appendMessage(
            agent: "a", role: .user, content: [Self.result("s", Self.png(10, 10, salt: 9))], sessionID: session)
        try store.finishSession(session, status: .completed, steps: 1, usd: 0)
        XCTAssertEqual(try store.imageTotals().count, 3)
        XCTAssertEqual(try store.pruneImages(sessionsBefore: session + 1, placeholder: "[gone]"), 1)
        XCTAssertEqual(try store.imageTotals().count, 2, "the unreferenced screenshot is freed")
    }

    func testSHA256MatchesTheStandard() {
        XCTAssertEqual(SHA256.hex(Data("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(Data()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
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

import Foundation
import XclawBase
import XclawMessages

// MARK: - Screenshots, kept once

/// Screenshots in stored messages are kept once, by content, in `images` (the bytes, not base64); a message holds a
/// reference (`{"type": "image", "source": {"type": "xclaw_image", "sha256": …, "media_type": …}}`). An unchanged
/// screen taken a hundred times is one row, and rebuilding a conversation reads back only the screenshots a run
/// would still send.
extension AgentStore: ImageStore {
    /// The reference type in a stored image block's `source`.
    static let imageReferenceType = "xclaw_image"

    /// The content column for `content`: its images moved into `images` (inside tool results too), the rest as the
    /// API's JSON with sorted keys. Runs in the caller's write transaction.
    static func storeContent(_ content: [ContentBlock], _ db: any SQLConnection) throws -> String {
        func move(_ block: ContentBlock) throws -> ContentBlock {
            switch block {
            case .image(let media, let base64):
                guard let bytes = Data(base64Encoded: base64) else { return block }  // kept as sent
                let name = SHA256.hex(bytes)
                try db.cachedStatement(
                    sql: """
                        INSERT INTO images (sha256, media_type, data, created_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT DO NOTHING
                        """
                ).execute(arguments: [name, media, bytes, now()])
                return .other(
                    [
                        "type": "image",
                        "source": [
                            "type": .string(imageReferenceType), "sha256": .string(name), "media_type": .string(media),
                        ],
                    ])
            case .toolResult(var result):
                result.content = try result.content.map(move)
                return .toolResult(result)
            default:
                return block
            }
        }
        guard content.contains(where: hasImage) else { return encodeContent(content) }
        return encodeContent(try content.map(move))
    }

    /// Whether a block is or holds an inline image.
    private static func hasImage(_ block: ContentBlock) -> Bool {
        if block.isImage { return true }
        if case .toolResult(let r) = block { return r.content.contains(where: \.isImage) }
        return false
    }

    /// The name and media type of a stored image reference, or nil for any other block.
    static func imageReference(_ block: ContentBlock) -> (sha256: String, mediaType: String)? {
        guard case .other(let json) = block, json["type"]?.string == "image",
            json["source"]?["type"]?.string == imageReferenceType, let name = json["source"]?["sha256"]?.string
        else { return nil }
        return (name, json["source"]?["media_type"]?.string ?? "image/png")
    }

    /// `content` with the references `wanted` accepts read back as images; the others (in tool results) become
    /// `removed` text. A reference whose row is gone becomes text saying so, never a broken block.
    static func resolveImages(
        _ content: [ContentBlock], _ db: any SQLConnection, removed: String = "[screenshot removed]",
        wanted: (String) -> Bool
    ) throws -> [ContentBlock] {
        func resolve(_ block: ContentBlock) throws -> ContentBlock {
            if case .toolResult(var result) = block {
                result.content = try result.content.map(resolve)
                return .toolResult(result)
            }
            guard let (name, media) = imageReference(block) else { return block }
            guard wanted(name) else { return .text(removed) }
            guard
                let bytes = try Data.fetchOne(
                    db.cachedStatement(sql: "SELECT data FROM images WHERE sha256 = ?"), arguments: [name])
            else { return .text("[screenshot \(name.prefix(12)) is no longer stored]") }
            return .image(mediaType: media, base64: bytes.base64EncodedString())
        }
        return try content.map(resolve)
    }

    /// A conversation built from messages read with `screenshots: false`, with the screenshots in its tool results
    /// read back as a run's pruning would have left them: the newest `keep`, plus the ones a prune `chunk` at a time
    /// had not yet dropped (`keep + (n - keep) mod chunk` of n), so a run goes on with the images the previous one
    /// last sent. The older ones become `removed` text; references outside tool results are read back.
    public func resolveScreenshots(_ messages: [Message], keep: Int, chunk: Int, removed: String) throws -> [Message] {
        let total = messages.reduce(0) { n, m in
            n
                + m.content.reduce(0) { k, block in
                    guard case .toolResult(let r) = block else { return k }
                    return k + r.content.filter { Self.imageReference($0) != nil }.count
                }
        }
        let keep = max(0, keep)
        let kept = total <= keep ? total : keep + (total - keep) % max(1, chunk)
        var seen = 0
        return try read { db in
            try messages.map { m in
                var m = m
                m.content = try m.content.map { block in
                    guard case .toolResult = block else { return try Self.resolveImages([block], db) { _ in true }[0] }
                    return try Self.resolveImages([block], db, removed: removed) { _ in
                        defer { seen += 1 }
                        return seen >= total - kept
                    }[0]
                }
                return m
            }
        }
    }

    /// How many screenshots the store keeps and their bytes.
    public func imageTotals() throws -> (count: Int, bytes: Int) {
        try read { db in
            let row = try SQLRow.fetchOne(
                db, sql: "SELECT count(*) AS n, coalesce(sum(length(data)), 0) AS b FROM images")
            return (row?["n"] ?? 0, row?["b"] ?? 0)
        }
    }

    /// Deletes stored screenshots no message and no action frame refers to any more (after retention replaced them,
    /// or their messages were deleted).
    public func deleteUnusedImages() throws {
        try write { db in try Self.deleteOrphanImages(db) }
    }

    /// The orphan sweep, inside the caller's write transaction.
    static func deleteOrphanImages(_ db: any SQLConnection) throws {
        // Every `source` object of type `imageReferenceType`, at any depth (tool results nest them).
        let referenced =
            switch db.dialect {
            case .sqlite:
                """
                SELECT json_extract(t.value, '$.sha256') FROM messages m, json_tree(m.content) t
                WHERE m.content LIKE '%xclaw_image%' AND t.key = 'source' AND json_extract(t.value, '$.type') = ?
                """
            case .postgres:
                """
                SELECT r.value #>> '{}' FROM messages m,
                    jsonb_path_query(m.content::jsonb, 'lax $.**.source ? (@.type == $t).sha256',
                        jsonb_build_object('t', CAST(? AS TEXT))) AS r(value)
                WHERE m.content LIKE '%xclaw_image%'
                """
            }
        // (NOT IN a list holding NULL is never true: a removed frame's NULL must not keep every image.)
        try db.execute(
            sql: """
                DELETE FROM images WHERE sha256 NOT IN (\(referenced))
                    AND sha256 NOT IN (SELECT sha256 FROM action_frames WHERE sha256 IS NOT NULL)
                """, arguments: [imageReferenceType])
    }

    /// Replaces the screenshots stored in the tool results of finished sessions older than `cutoff` with a text
    /// block saying `placeholder`, so the database stops growing with every run while each conversation stays
    /// valid (a tool result keeps its id and its text), and removes those sessions' action frames (their rows stay,
    /// so a report says the frame was removed). One transaction per message; returns the images replaced.
    @discardableResult
    public func pruneImages(sessionsBefore cutoff: Int64, placeholder: String) throws -> Int {
        let frames = try write { db -> Int in
            try db.execute(
                sql: """
                    UPDATE action_frames SET sha256 = NULL WHERE session_id < ? AND sha256 IS NOT NULL
                        AND session_id IN (SELECT id FROM sessions WHERE status NOT IN ('running', 'needs-approval'))
                    """, arguments: [cutoff])
            return db.changesCount
        }
        let candidates = try read { db in
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id
                    WHERE m.session_id < ? AND s.status NOT IN ('running', 'needs-approval') AND m.role = 'user'
                        AND m.content LIKE '%"type":"image"%' ORDER BY m.id
                    """, arguments: [cutoff])
        }
        var replaced = 0
        for id in candidates {
            replaced += try write { db -> Int in
                guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM messages WHERE id = ?", arguments: [id])
                else { return 0 }
                let message = try storedMessage(row, db, resolve: false)
                var count = 0
                let content = message.content.map { block -> ContentBlock in
                    guard case .toolResult(var result) = block else { return block }
                    result.content = result.content.map { inner in
                        guard inner.isImage || Self.imageReference(inner) != nil else { return inner }
                        count += 1
                        return .text(placeholder)
                    }
                    return .toolResult(result)
                }
                guard count > 0 else { return 0 }
                try db.execute(
                    sql: "UPDATE messages SET content = ? WHERE id = ?",
                    arguments: [Self.encodeContent(content), id])
                return count
            }
        }
        if replaced + frames > 0 { try deleteUnusedImages() }
        return replaced + frames
    }
}

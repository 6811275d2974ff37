import Foundation
import XclawMessages

/// Screenshots kept once by content, referenced from messages, resolved and pruned.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol ImageStore: AnyObject, Sendable {
    /// A conversation built from messages read with `screenshots: false`, with the screenshots in its tool results
    /// read back as a run's pruning would have left them: the newest `keep`, plus the ones a prune `chunk` at a time
    /// had not yet dropped (`keep + (n - keep) mod chunk` of n), so a run goes on with the images the previous one
    /// last sent. The older ones become `removed` text; references outside tool results are read back.
    func resolveScreenshots(_ messages: [Message], keep: Int, chunk: Int, removed: String) throws -> [Message]

    /// How many screenshots the store keeps and their bytes.
    func imageTotals() throws -> (count: Int, bytes: Int)

    /// Deletes stored screenshots no message refers to any more (after retention replaced them, or their messages
    /// were deleted).
    func deleteUnusedImages() throws

    /// Replaces the screenshots stored in the tool results of finished sessions older than `cutoff` with a text
    /// block saying `placeholder`, so the database stops growing with every run while each conversation stays
    /// valid (a tool result keeps its id and its text). One transaction per message; returns the images replaced.
    @discardableResult
    func pruneImages(sessionsBefore cutoff: Int64, placeholder: String) throws -> Int
}

import Foundation
import XclawStore

/// A store in a fresh directory of its own, removed with `remove()`: the runtime tests' SQLite file.
struct TemporaryStore {
    /// The directory.
    let directory: URL
    /// The store, `db.sqlite` in it.
    let store: AgentStore

    /// Creates the directory (named after `prefix`, this process and a random part) and opens the store in it.
    init(_ prefix: String) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("xclaw-\(prefix)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try AgentStore(path: directory.appendingPathComponent("db.sqlite").path)
    }

    /// Deletes the directory and the store in it.
    func remove() { try? FileManager.default.removeItem(at: directory) }
}

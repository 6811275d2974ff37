import Foundation
import Synchronization

/// Where the `memory` tool keeps its notes. A protocol so the in-process store can later be swapped for a
/// persistent one (SQLite) without touching the tool.
public protocol MemoryBackend: Sendable {
    /// Stores `value` under `key`, replacing what was there.
    func set(_ key: String, value: String) throws
    /// The value under `key`, nil when absent.
    func get(_ key: String) throws -> String?
    /// Every entry.
    func list() throws -> [String: String]
    /// Removes `key`; false when it was absent.
    @discardableResult func delete(_ key: String) throws -> Bool
}

/// The in-process memory: lives as long as the process, shared by every tool that holds it.
public final class MemoryStore: MemoryBackend, Sendable {
    private let entries: Mutex<[String: String]>

    /// An empty store, or one seeded with `entries`.
    public init(_ entries: [String: String] = [:]) { self.entries = Mutex(entries) }

    /// Stores `value` under `key`.
    public func set(_ key: String, value: String) { entries.withLock { $0[key] = value } }

    /// The value under `key`.
    public func get(_ key: String) -> String? { entries.withLock { $0[key] } }

    /// Every entry.
    public func list() -> [String: String] { entries.withLock { $0 } }

    /// Removes `key`; false when it was absent.
    @discardableResult public func delete(_ key: String) -> Bool {
        entries.withLock { $0.removeValue(forKey: key) != nil }
    }
}

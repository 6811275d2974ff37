import Foundation

/// A replay script kept in the database: one revision of a named script.
public struct StoredScript: Sendable, Equatable {
    /// Its row id.
    public var id: Int64
    /// The name it is stored under (`xclaw script save … --name`, or `HOST:PATH` for a file a fleet replays).
    public var name: String
    /// Its revision: one more each time a healed replay saves it, or a different script is stored under its name.
    public var revision: Int
    /// The agent that ran the run it was recorded from.
    public var agent: String
    /// The run it was recorded from.
    public var run: Int64
    /// How many steps it has.
    public var steps: Int
    /// The script (the replay format's JSON).
    public var body: String
    /// When it was stored.
    public var storedAt: Date
    /// Who stored it (`user@host`, or the worker that healed it).
    public var storedBy: String

    /// Creates a record.
    public init(
        id: Int64, name: String, revision: Int, agent: String, run: Int64, steps: Int, body: String, storedAt: Date,
        storedBy: String
    ) {
        (self.id, self.name, self.revision, self.agent, self.run) = (id, name, revision, agent, run)
        (self.steps, self.body, self.storedAt, self.storedBy) = (steps, body, storedAt, storedBy)
    }
}

/// Replay scripts by name and revision, so every host of a fleet replays the same script and sees the revision a
/// healed replay saved. One aggregate of the store (see `ReplayStore`).
public protocol ScriptStore: AnyObject, Sendable {
    /// Stores a script under `name` unless its newest revision is the same script. Its revision is the larger of
    /// `revision` and one more than the newest stored; `body` renders the script at the revision chosen (the JSON
    /// carries its revision). Returns the row and whether it is new.
    func storeScript(
        name: String, revision: Int, agent: String, run: Int64, steps: Int, by: String,
        body: (Int) throws -> String
    ) throws -> (script: StoredScript, created: Bool)

    /// The newest revision of the script named `name` (or that revision); unknown → `StoreError.unknownScript`.
    func script(named name: String, revision: Int?) throws -> StoredScript

    /// The newest revision of each stored script, by name.
    func scripts() throws -> [StoredScript]
}

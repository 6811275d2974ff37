import Foundation
import XclawMessages

/// Each agent's conversation: its messages, its cursor and state, and the batches runs claim from it.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol ConversationStore: AnyObject, Sendable {
    /// Appends one message to an agent's conversation and returns its id, the cursor unit: ids only grow and are
    /// never reused (AUTOINCREMENT), so "after id N" is exact where nanoclaw's timestamps skipped equal ones.
    @discardableResult
    func appendMessage(
        agent: String, role: MessageRole, content: [ContentBlock], status: MessageStatus, sender: String?,
        sessionID: Int64?
    ) throws -> Int64

    /// Replaces a message's content and status: the streaming hot path, called for each batch of tokens, so it
    /// is one cached UPDATE in autocommit mode (no fsync under WAL + `synchronous = NORMAL`).
    func updateMessage(id: Int64, content: [ContentBlock], status: MessageStatus) throws

    /// An agent's messages with id greater than `after`, ascending; with `limit`, one page: pass the last id
    /// returned as the next `after` to get the rest, and nothing is ever skipped. With `screenshots: false` the
    /// screenshots stay references (`resolveScreenshots` reads back the ones a run still sends), so a long history
    /// is not loaded only to be pruned.
    func messages(agent: String, after: Int64, limit: Int?, screenshots: Bool) throws -> [StoredMessage]

    /// The pending input after the cursor: user messages with id greater than `after`, ascending, excluding the
    /// tool-result turns a run stores itself (those answer the model, they are not new input).
    func userMessages(agent: String, after: Int64, limit: Int?) throws -> [StoredMessage]

    /// One message by id.
    func message(id: Int64) throws -> StoredMessage

    /// Deletes one message (e.g. an empty partial reply); its id is never handed out again.
    func deleteMessage(id: Int64) throws

    /// An agent's cursor, retry count and last error.
    func state(agent: String) throws -> AgentState

    /// Overwrites an agent's state: how a failed run restores the cursor it advanced, and records its error.
    func setState(agent: String, _ state: AgentState) throws

    /// Moves the cursor forward to `id` before a run and returns where it was, in one transaction, so the caller
    /// can roll back with `setState` and two processes never both take the same input. It never moves backwards:
    /// if the cursor is already past `id` it stays, and the returned value shows it.
    @discardableResult
    func advanceCursor(agent: String, to id: Int64) throws -> Int64

    /// Takes an agent's pending input for a run in ONE transaction: reads the cursor, selects the input after it
    /// (`isInput` decides which user rows are input), advances the cursor, starts the session (remembering both
    /// cursors) and stores the batch prompt `prompt` builds. A crash leaves either nothing or all of it, so input
    /// is never consumed without a trace. Nil when nothing is pending.
    func claimBatch(
        agent: String, kind: SessionKind, batchSender: String, isInput: (StoredMessage) -> Bool,
        prompt: ([StoredMessage]) -> String
    ) throws -> ClaimedBatch?

    /// Undoes a run that showed and did nothing, in ONE transaction: removes every message it stored (its batch
    /// prompt included, so the model never sees the batch twice) and puts the cursor back, unless a later run has
    /// moved it since. The batch is then pending again.
    func rollBackRun(session: Int64) throws

    /// How many messages a session stored besides its batch prompt and the rows in `ignoring` (a summary of old
    /// turns is xclaw's, not output that reached the user): its replies and tool results.
    func outputCount(session: Int64, batchSender: String, ignoring: [String]) throws -> Int
}

/// A batch a run took: its session, the input messages, the batch prompt row and the cursor before the claim.
public struct ClaimedBatch: Sendable, Hashable {
    /// The run's session.
    public var session: Int64
    /// The input the run answers, ascending.
    public var pending: [StoredMessage]
    /// The stored batch prompt (what the run sends).
    public var batchMessage: Int64
    /// The cursor before the claim, restored if the run is undone.
    public var previousCursor: Int64
}

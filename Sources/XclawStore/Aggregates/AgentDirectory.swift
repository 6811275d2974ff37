import Foundation
import XclawMessages

/// The agents an xclaw database knows: their settings and the notes of their `memory` tool.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol AgentDirectory: AnyObject, Sendable {
    /// Registers a new agent, every setting of `config` with it (a copier needs no follow-up setters), with an empty
    /// conversation and its cursor at 0; refuses a taken or malformed name.
    func createAgent(_ config: AgentConfig) throws

    /// One agent's settings; `unknownAgent` lists the names that exist.
    func agent(named name: String) throws -> AgentConfig

    /// Every agent, sorted by name.
    func agents() throws -> [AgentConfig]

    /// Replaces an agent's settings (all but its name and `createdAt`), found by `config.name`.
    func updateAgent(_ config: AgentConfig) throws

    /// Deletes an agent with everything it owns (messages, state, sessions, memory, usage, tasks).
    func deleteAgent(named name: String) throws

    /// Starts an agent's conversation afresh: its runs send nothing stored before now (`xclaw history` and reports
    /// still show it all). Refused while one of its runs is in flight. Returns how many messages are left out.
    @discardableResult
    func resetContext(agent name: String) throws -> Int

    /// Sets an agent's thinking setting (nil: the config file's).
    func setThinking(agent name: String, thinking: String?) throws

    /// Sets an agent's effort level (nil: the model's default).
    func setEffort(agent name: String, effort: String?) throws

    /// Sets the kinds of action an agent's runs must have approved (nil: back to the config file's default).
    func setApproval(agent name: String, policy: String?) throws

    /// Stores one fact under a key for an agent, replacing the old value; it outlives runs and restarts.
    func setMemory(agent: String, key: String, value: String) throws

    /// The value stored under a key, or nil.
    func memory(agent: String, key: String) throws -> String?

    /// Every key and value of an agent's memory.
    func memoryList(agent: String) throws -> [String: String]

    /// Forgets a key; returns whether it existed, so a tool can tell the model "there was nothing to forget".
    @discardableResult
    func deleteMemory(agent: String, key: String) throws -> Bool
}

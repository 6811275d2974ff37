import XclawBase

/// Why a store call failed, worded so the user knows what to do next.
public enum StoreError: ClassifiedError, Equatable {
    /// `createAgent` found the name taken.
    case agentExists(String)
    /// An agent name is empty, too long, or has characters other than letters, digits, `.`, `_` and `-`.
    case invalidAgentName(String)
    /// No agent has this name; `known` lists the names that exist, sorted.
    case unknownAgent(String, known: [String])
    /// No message has this id (it was never written, or its agent was deleted).
    case unknownMessage(Int64)
    /// No session has this id.
    case unknownSession(Int64)
    /// No task has this id.
    case unknownTask(String)
    /// No pipeline has this id.
    case unknownPipeline(Int64)
    /// The run waits for no approval (it never asked, or it was decided already).
    case notPending(Int64)
    /// An argument is out of range or not one of the allowed values; the text says which.
    case invalidArgument(String)
    /// Another process held the database's write lock longer than the busy timeout.
    case locked(path: String)
    /// The file is not an SQLite database, or SQLite found it damaged.
    case corrupt(path: String, detail: String)
    /// The file or its directory cannot be created, opened or written (permissions, read-only disk, disk full).
    case unwritable(path: String, detail: String)
    /// Any other SQLite failure; `detail` is SQLite's message.
    case database(path: String, detail: String)
    /// The PostgreSQL server cannot be reached, or refused the login (`url` has no password).
    case unreachable(url: String, detail: String)
    /// A fleet command on a store that has no fleet (SQLite).
    case noFleet(path: String)
    /// Another live worker holds this name.
    case workerNameTaken(String, host: String)
    /// No queued run has this id.
    case unknownFleetRun(Int64)
    /// No stored replay script has this name.
    case unknownScript(String, known: [String])

    /// The message the CLI prints: what failed and what the user can do about it.
    public var description: String {
        switch self {
        case .agentExists(let name):
            return "an agent named \"\(name)\" already exists; choose another name or `xclaw agent delete \(name)`"
        case .invalidAgentName(let name):
            return "\"\(name)\" is not a valid agent name: use 1–64 characters, each a letter (A–Z, a–z), "
                + "a digit, '.', '_' or '-'"
        case .unknownAgent(let name, let known):
            let list = known.isEmpty ? "there are no agents yet" : "known agents: " + known.joined(separator: ", ")
            return "no agent named \"\(name)\" (\(list)); check the spelling or create it with "
                + "`xclaw agent create \(name)`"
        case .unknownMessage(let id):
            return "no message with id \(id) (it was never stored, or its agent was deleted)"
        case .unknownSession(let id):
            return "no session with id \(id) (it was never started, or its agent was deleted)"
        case .unknownTask(let id):
            return "no task with id \"\(id)\" (it was never created, or its agent was deleted)"
        case .unknownPipeline(let id):
            return "no pipeline with id \(id); `xclaw pipeline list` shows the pipelines"
        case .notPending(let id):
            return "run \(id) is not waiting for an approval (it never asked, it was decided already, or the "
                + "request timed out and was denied); `xclaw runs` shows each run's status"
        case .invalidArgument(let message):
            return message
        case .locked(let path):
            return "the database \(path) stayed locked by another xclaw process for more than 5 s; wait for that "
                + "process to finish (or stop it) and retry, or set XCLAW_DB to use a separate database file"
        case .corrupt(let path, let detail):
            return "\(path) is not a readable xclaw database (\(detail)); move it aside (`mv \(path) \(path).bad`) "
                + "so xclaw starts a fresh one, or set XCLAW_DB to another file"
        case .unwritable(let path, let detail):
            return "cannot create or write the database \(path) (\(detail)); check that its directory exists and "
                + "belongs to you, that the disk is writable and not full, or set XCLAW_DB to a writable file"
        case .database(let path, let detail):
            return "the database \(path) failed: \(detail)"
        case .noFleet(let path):
            return "the database \(path) is SQLite, which serves one machine: a fleet shares a PostgreSQL database; "
                + "set XCLAW_DATABASE_URL (or `database` in the config file) to postgres://USER:PASSWORD@HOST/DATABASE"
        case .workerNameTaken(let name, let host):
            return "a live worker named \"\(name)\" already runs on \(host); choose another --name, or stop that "
                + "worker first (`xclaw fleet` lists them)"
        case .unknownFleetRun(let id):
            return "no fleet run with id \(id); `xclaw fleet runs` lists them"
        case .unknownScript(let name, let known):
            let list = known.isEmpty ? "none are stored" : "stored: " + known.prefix(10).joined(separator: ", ")
            return
                "no stored script named \"\(name)\" (\(list)); store one with `xclaw script save FILE|RUN --name NAME`"
        case .unreachable(let url, let detail):
            return "cannot reach the PostgreSQL database \(url) (\(detail)); check that the server runs and "
                + "accepts this user, or fix `database` in the config file or XCLAW_DATABASE_URL"
        }
    }

    /// Unknown names are "not found", bad input is a usage error, file trouble is internal.
    public var exitStatus: ExitStatus {
        switch self {
        case .unknownAgent, .unknownMessage, .unknownSession, .unknownTask, .unknownPipeline, .notPending,
            .unknownScript,
            .unknownFleetRun:
            return .notFound
        case .agentExists, .invalidAgentName, .invalidArgument, .noFleet, .workerNameTaken: return .usage
        case .locked, .corrupt, .unwritable, .database, .unreachable: return .internal
        }
    }
}

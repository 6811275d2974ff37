import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawStore

/// What goes wrong before a replay acts: a script that cannot be read, a run with no steps, a parameter it lacks.
public enum ReplayError: ClassifiedError, Equatable {
    /// The file is missing, unreadable or not a script (exit 2).
    case badScript(String)
    /// The run recorded no step (exit 1).
    case nothingRecorded(Int64)
    /// `--param` names a parameter the script does not have (exit 2).
    case unknownParameter(String, known: [String])
    /// Healing was asked for without an API key (exit 2).
    case healingNeedsKey(String)
    /// The script was written by a newer xclaw (exit 2).
    case newerFormat(Int)
    /// A step types a parameter that has no value: a password, which is never recorded (exit 2).
    case missingParameter(String)
    /// `--heal ask` with nobody to ask (exit 2).
    case noTerminal

    /// The exit status each case ends a command with.
    public var exitStatus: ExitStatus {
        switch self {
        case .nothingRecorded: return .notFound
        default: return .usage
        }
    }

    /// What to do about it.
    public var description: String {
        switch self {
        case .badScript(let why): return why
        case .nothingRecorded(let run):
            return "run \(run) recorded no input action (it only looked, or ran before steps were recorded): nothing "
                + "to replay or export"
        case .unknownParameter(let name, let known):
            return "the script has no parameter \(name.uppercased()) (it has: "
                + (known.isEmpty ? "none" : known.map { $0.uppercased() }.joined(separator: ", ")) + ")"
        case .healingNeedsKey(let mode):
            return "--heal \(mode) needs an API key (ANTHROPIC_API_KEY): set one, or use --heal never"
        case .missingParameter(let name):
            return "a step types \(name.uppercased()), which is never recorded (a password): pass "
                + "--param \(name.uppercased())=VALUE"
        case .noTerminal:
            return "--heal ask asks at a terminal, and there is none: use --heal auto or --heal never"
        case .newerFormat(let version):
            return "the script is format version \(version), newer than this xclaw reads (1): update xclaw"
        }
    }
}

/// The replay format: a run's steps with their anchors, and the parameters typed text came from.
public struct ReplayScript: Codable, Sendable {
    /// Always `xclaw-script`.
    public var format = "xclaw-script"
    /// The format's version.
    public var version = 1
    /// The script's revision: 1 as exported, one more each time a replay healed and saved it.
    public var revision: Int? = 1
    /// The run it was recorded from.
    public var run: Int64
    /// The agent that ran it.
    public var agent: String
    /// What the run was asked.
    public var prompt: String
    /// Parameter names → the values recorded.
    public var parameters: [String: String]
    /// The steps, in order.
    public var steps: [RecordedStep]

    /// Creates a script.
    public init(run: Int64, agent: String, prompt: String, parameters: [String: String], steps: [RecordedStep]) {
        (self.run, self.agent, self.prompt, self.parameters, self.steps) = (run, agent, prompt, parameters, steps)
    }

    /// The script of a recorded run in `store`; exit 1 when the run does not exist or recorded no step.
    public static func of(run: Int64, in store: any RunStore) throws -> ReplayScript {
        let transcript = try store.runTranscript(session: run)
        let decoder = JSONDecoder.xclawRecords
        let steps = try store.actionSteps(session: run).map {
            try decoder.decode(RecordedStep.self, from: Data($0.utf8))
        }
        guard !steps.isEmpty else { throw ReplayError.nothingRecorded(run) }
        var parameters: [String: String] = [:]
        for step in steps { if let name = step.parameter, let text = step.text { parameters[name] = text } }
        let prompt = transcript.input.map { Message(role: .user, content: $0.content).text }.joined(separator: "\n")
        return ReplayScript(
            run: run, agent: transcript.session.agent, prompt: prompt, parameters: parameters, steps: steps)
    }

    /// Reads a script file (`path` as given, `resolved` its absolute path); a file that is not one is bad usage.
    public static func read(_ path: String, resolved: String) throws -> ReplayScript {
        guard let data = FileManager.default.contents(atPath: resolved) else {
            throw ReplayError.badScript("cannot read the script \(path)")
        }
        return try decode(
            data, notOne: "\(path) is not an xclaw script (write one with `xclaw script export RUN -o FILE`)")
    }

    /// The newest revision of the script stored as `name` (or that revision).
    public static func stored(_ name: String, revision: Int? = nil, in store: any ScriptStore) throws -> ReplayScript {
        let row = try store.script(named: name, revision: revision)
        return try decode(
            Data(row.body.utf8), notOne: "the stored script \(name) (revision \(row.revision)) is not an xclaw script")
    }

    /// A script from its JSON, of a format version this xclaw reads; `notOne` says what is wrong otherwise.
    private static func decode(_ data: Data, notOne: String) throws -> ReplayScript {
        guard let script = try? JSONDecoder.xclawRecords.decode(ReplayScript.self, from: data),
            script.format == "xclaw-script"
        else { throw ReplayError.badScript(notOne) }
        guard script.version <= 1 else { throw ReplayError.newerFormat(script.version) }
        return script
    }

    /// Stores the script as `name`: a new revision unless the newest stored one is this script.
    public func store(as name: String, in store: any ScriptStore, by: String) throws -> (
        script: StoredScript, created: Bool
    ) {
        try store.storeScript(
            name: name, revision: revision ?? 1, agent: agent, run: run, steps: steps.count, by: by
        ) { chosen in String(decoding: try with(revision: chosen).json(), as: UTF8.self) }
    }

    /// The same script at `revision` (as it is stored: a file written before revisions has none).
    public func with(revision: Int) -> ReplayScript {
        var copy = self
        copy.revision = revision
        return copy
    }

    /// The script as pretty JSON with sorted keys (the same script always gives the same text).
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// Writes the script as pretty JSON (atomically onto a regular file, through a device or FIFO).
    public func write(to path: String) throws {
        try OutputFile.write(try json(), to: path)
    }

    /// The recorded parameter values with `assignments` (`NAME=VALUE`, names case-insensitive) put in.
    public func values(_ assignments: [String]) throws -> [String: String] {
        var values = parameters
        for p in assignments {
            guard let eq = p.firstIndex(of: "=") else {
                throw ReplayError.badScript("--param takes NAME=VALUE (e.g. --param P1=hello), not \(p)")
            }
            let name = String(p[..<eq]).lowercased()
            // A password is never recorded, so its parameter has no value yet, but it is the script's.
            let known = Set(values.keys).union(steps.compactMap(\.parameter))
            guard known.contains(name) else { throw ReplayError.unknownParameter(name, known: known.sorted()) }
            values[name] = String(p[p.index(after: eq)...])
        }
        return values
    }
}

import Foundation
import XclawBase
import XclawSkills

/// One role a delegated subtask runs as: its prompt and the tools it gets when the orchestrator names none.
public struct AgentRole: Sendable, Hashable {
    /// The role's name (`researcher`, `screen-operator`, or a user's file name).
    public var name: String
    /// One line on what it is for, shown to the orchestrator.
    public var summary: String
    /// The system prompt of its agent.
    public var prompt: String
    /// Its default tools: those its file names that this xclaw has (web tools may be absent), in order.
    public var tools: [String]
    /// Where it came from (`built in`, or the user's file), for listings.
    public var source: String
}

/// A role file that cannot be used, with what to fix.
public enum RoleError: ClassifiedError, Equatable {
    /// The orchestrator asked for a role nobody defined.
    case unknownRole(String, known: [String])
    /// A user's role file is unreadable or malformed.
    case badFile(path: String, reason: String)

    /// An unknown role is the model's input (its tool result says so); a bad file is the user's.
    public var exitStatus: ExitStatus { .usage }

    /// The message, naming the roles or the file.
    public var description: String {
        switch self {
        case .unknownRole(let name, let known):
            return "unknown role \"\(name)\"; the roles are: \(known.joined(separator: ", ")) (add one as "
                + "$XDG_CONFIG_HOME/xclaw/roles/NAME.md)"
        case .badFile(let path, let reason):
            return "cannot use the role file \(path): \(reason); fix it or move it out of the roles directory"
        }
    }
}

/// The roles a pipeline's subtasks run as: the built-in ones (Models/roles, compiled in) overlaid by the user's
/// `$XDG_CONFIG_HOME/xclaw/roles/NAME.md`, which replace a built-in role of the same name or add a new one.
///
/// A role file is Markdown with an optional header: `---`, then `description: …` and `tools: a, b` lines (several
/// `tools:` lines add up; `tools:` alone means none), then `---`; the rest is the prompt.
public struct RoleCatalog: Sendable {
    /// The roles by name.
    public let roles: [String: AgentRole]

    /// The built-in roles overlaid by those in `directory` (default: the user's roles directory).
    public static func load(
        directory: String? = nil, environment: [String: String] = Invocation.current.environment
    ) throws -> RoleCatalog {
        var roles: [String: AgentRole] = [:]
        for (name, text) in builtinFiles { roles[name] = parse(name: name, text: text, source: "built in") }
        let dir = directory ?? XclawPaths.configDirectory(environment) + "/roles"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        for file in files.sorted() where file.hasSuffix(".md") {
            let name = String(file.dropLast(3))
            let path = dir + "/" + file
            guard isValidName(name) else {
                throw RoleError.badFile(path: path, reason: "a role's name is letters, digits, '_' and '-'")
            }
            guard let data = FileManager.default.contents(atPath: path),
                let text = String(validating: data, as: UTF8.self)
            else { throw RoleError.badFile(path: path, reason: "it is unreadable or not UTF-8 text") }
            let role = parse(name: name, text: text, source: path)
            guard !role.prompt.isEmpty else { throw RoleError.badFile(path: path, reason: "its prompt is empty") }
            roles[name] = role
        }
        return RoleCatalog(roles: roles)
    }

    /// A catalog of exactly these roles (tests).
    public init(roles: [String: AgentRole]) { self.roles = roles }

    /// The role names, sorted.
    public var names: [String] { roles.keys.sorted() }

    /// The role called `name`; `unknownRole` lists the others.
    public func role(_ name: String) throws -> AgentRole {
        guard let role = roles[name] else { throw RoleError.unknownRole(name, known: names) }
        return role
    }

    /// Whether `name` can name a role file (it becomes part of an agent's name).
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 32
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || $0 == "-" || $0 == "_"
            }
    }

    /// Reads a role file: the header's description and tools, the prompt after it. Tool names this xclaw does not
    /// have are left out, so a role may name tools another build adds.
    public static func parse(name: String, text: String, source: String) -> AgentRole {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var summary = "", tools: [String] = []
        if lines.first == "---", let end = lines.dropFirst().firstIndex(of: "---") {
            for line in lines[1..<end] {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let key = line[..<colon].trimmingCharacters(in: .whitespaces)
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if key == "description" { summary = value }
                if key == "tools" {
                    tools += value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                        .filter { !$0.isEmpty }
                }
            }
            lines.removeSubrange(0...end)
        }
        let known = Set(SkillCatalog.allToolNames)
        return AgentRole(
            name: name, summary: summary,
            prompt: lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines),
            tools: tools.filter(known.contains), source: source)
    }
}

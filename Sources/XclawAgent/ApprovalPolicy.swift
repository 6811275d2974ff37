import Foundation

/// A kind of action a person may want to approve before an unattended run does it.
public enum ApprovalKind: String, Sendable, CaseIterable, Codable {
    /// Deleting, removing, erasing.
    case delete
    /// Sending, submitting, posting, publishing.
    case send
    /// Paying, buying, ordering, subscribing.
    case pay
    /// Accepting terms, agreeing, consenting.
    case acceptTerms = "accept-terms"
    /// Discarding unsaved work (Don't Save, Discard, Close without saving).
    case discard
    /// Running a command (a launched command line, a line typed into a terminal).
    case command
    /// Typing into a password field.
    case password

    /// One line per kind, for `--help` and docs/agents.md ("Approval gates fail closed").
    public var summary: String {
        switch self {
        case .delete: return "delete, remove, erase, trash, uninstall, wipe"
        case .send: return "send, submit, post, publish, reply, forward, share"
        case .pay: return "pay, buy, purchase, checkout, place order, subscribe, donate"
        case .acceptTerms: return "accept, agree, I agree, consent (terms, licences)"
        case .discard: return "discard, don't save, close without saving, revert, lose changes"
        case .command: return "a launched command line, or a line typed into a terminal"
        case .password: return "typing into a password field"
        }
    }
}

/// What an input action acts on, as far as the tool knows it: the control's label and role, the text typed and
/// whether it goes into a password field, a command line. The gate classifies from it.
public struct ActionSubject: Sendable, Hashable, Codable {
    /// The control's visible label ("Delete", "Send now").
    public var label: String?
    /// The control's role (`button`, `menuitem`, `field`...).
    public var role: String?
    /// The toolkit's own role name when the accessibility tree gave it ("password text", "terminal").
    public var toolkitRole: String?
    /// Text typed (or keys pressed) by the action.
    public var typed: String?
    /// The typed text goes into a password field.
    public var intoPassword: Bool
    /// The typed text goes into a terminal.
    public var intoTerminal: Bool
    /// A command line the action runs.
    public var command: String?
    /// `typed` names keys pressed (`ctrl+Return`, `Delete`), not text typed.
    public var keys: Bool

    /// Creates a subject; everything unknown by default.
    public init(
        label: String? = nil, role: String? = nil, toolkitRole: String? = nil, typed: String? = nil,
        intoPassword: Bool = false, intoTerminal: Bool = false, command: String? = nil, keys: Bool = false
    ) {
        self.keys = keys
        self.label = label
        self.role = role
        self.toolkitRole = toolkitRole
        self.typed = typed
        self.intoPassword = intoPassword
        self.intoTerminal = intoTerminal
        self.command = command
    }
}

/// Which kinds of action need approval, and the classification of an action into one of them. Words are matched
/// whole, case-insensitively, on the control's label, so "Delete" and "Delete file" are gated and "Deleted items"
/// (a folder) or "Sender" are not.
public struct ApprovalPolicy: Sendable, Hashable {
    /// The gated kinds.
    public var kinds: Set<ApprovalKind>

    /// A policy gating `kinds`.
    public init(kinds: Set<ApprovalKind>) { self.kinds = kinds }

    /// Every kind: the default, so an unattended run fails closed.
    public static let all = ApprovalPolicy(kinds: Set(ApprovalKind.allCases))
    /// Nothing gated.
    public static let none = ApprovalPolicy(kinds: [])

    /// Parses `all`, `none`, or a comma-separated list of kinds; throws a message naming the valid kinds.
    public static func parse(_ text: String) throws -> ApprovalPolicy {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "all" || trimmed == "default" { return .all }
        if trimmed == "none" || trimmed.isEmpty { return .none }
        var kinds = Set<ApprovalKind>()
        for part in trimmed.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let kind = ApprovalKind(rawValue: name == "accept" ? "accept-terms" : name) else {
                throw ToolError(
                    "\"\(name)\" is not a kind of action: use all, none, or a comma-separated list of "
                        + ApprovalKind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            kinds.insert(kind)
        }
        return ApprovalPolicy(kinds: kinds)
    }

    /// The policy as `parse` reads it back.
    public var text: String {
        if kinds == Self.all.kinds { return "all" }
        if kinds.isEmpty { return "none" }
        return ApprovalKind.allCases.filter(kinds.contains).map(\.rawValue).joined(separator: ",")
    }

    /// The gated kind the action is, or nil when the policy lets it through.
    public func classify(_ subject: ActionSubject) -> ApprovalKind? {
        Self.kinds(of: subject).first(where: kinds.contains)
    }

    /// Every kind the action is, most specific first (a subject can be several: "Delete and send").
    public static func kinds(of subject: ActionSubject) -> [ApprovalKind] {
        var found: [ApprovalKind] = []
        if subject.intoPassword || subject.toolkitRole == "password text" { found.append(.password) }
        if subject.command != nil { found.append(.command) }
        let combos = subject.keys ? Self.combos(subject.typed ?? "") : []
        let entersLine =
            subject.keys
            ? combos.contains { ["return", "enter", "kp_enter", "ret", "ctrl+m", "ctrl+j", "control+m"].contains($0) }
            : (subject.typed.map { $0.contains("\n") || $0.contains("\r") } ?? false)
        if subject.intoTerminal, entersLine { found.append(.command) }
        if subject.keys, !subject.intoTerminal, subject.role != "field" {
            // Keys that act on a selection: Delete in a file manager deletes, Ctrl+Return sends in mail clients.
            if combos.contains(where: { $0.hasSuffix("delete") || $0.hasSuffix("kp_delete") }) { found.append(.delete) }
            if combos.contains(where: { ["ctrl+return", "control+return", "ctrl+enter", "super+return"].contains($0) })
            {
                found.append(.send)
            }
        }
        // What one presses is classified by its label; text typed into a field says nothing about a click. A text
        // element counts when it is short (a borderless button or a link read by OCR), not when it is a sentence.
        if !subject.keys, subject.typed == nil, let label = subject.label,
            subject.role.map({ !["field", "window"].contains($0) }) ?? true
        {
            let words = Self.words(label)
            if subject.role != "text" || words.count <= 4 {
                for (kind, phrases) in Self.phrases where phrases.contains(where: { Self.contains(words, $0) }) {
                    found.append(kind)
                }
            }
        }
        var unique: [ApprovalKind] = []
        for kind in found where !unique.contains(kind) { unique.append(kind) }
        return unique
    }

    /// The words and phrases of each kind, as lower-case word lists (discard before delete: "Discard changes").
    static let phrases: [(ApprovalKind, [[String]])] = [
        (
            .discard,
            [
                ["discard"], ["don't", "save"], ["dont", "save"], ["do", "not", "save"],
                ["close", "without", "saving"],
                ["without", "saving"], ["revert"], ["lose", "changes"], ["quit", "anyway"], ["close", "anyway"],
            ]
        ),
        (
            .delete,
            [
                ["delete"], ["remove"], ["erase"], ["trash"], ["move", "to", "trash"], ["uninstall"], ["wipe"],
                ["destroy"], ["purge"], ["shred"], ["empty", "trash"],
            ]
        ),
        (
            .pay,
            [
                ["pay"], ["buy"], ["purchase"], ["checkout"], ["check", "out"], ["place", "order"], ["order", "now"],
                ["subscribe"], ["donate"], ["confirm", "payment"], ["add", "to", "cart"],
            ]
        ),
        (
            .acceptTerms,
            [
                ["accept"], ["agree"], ["i", "agree"], ["i", "accept"], ["consent"], ["accept", "all"],
            ]
        ),
        (
            .send,
            [
                ["send"], ["submit"], ["post"], ["publish"], ["reply"], ["reply", "all"], ["forward"], ["share"],
                ["tweet"], ["send", "now"],
            ]
        ),
    ]

    /// Key combinations of a key action's text, lower-case, one per space-separated part (`ctrl+Return Tab`).
    static func combos(_ text: String) -> [String] {
        text.lowercased().split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
    }

    /// The label's words, lower-case, apostrophes kept ("don't"), everything else a separator.
    public static func words(_ label: String) -> [String] {
        label.lowercased().replacingOccurrences(of: "\u{2019}", with: "'")
            .split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "'") })
            .map(String.init)
    }

    /// Whether `phrase` occurs in `words` as consecutive whole words.
    static func contains(_ words: [String], _ phrase: [String]) -> Bool {
        guard !phrase.isEmpty, words.count >= phrase.count else { return false }
        return (0...(words.count - phrase.count)).contains { start in
            zip(words[start...], phrase).allSatisfy { $0 == $1 }
        }
    }
}

/// A gated action put to the run's gate: the action's log record, its description, and what it acts on.
public struct GateRequest: Sendable {
    /// The record the tool logs.
    public var record: ActionRecord
    /// The action in words ("tap button "Delete"").
    public var describe: String
    /// What it acts on.
    public var subject: ActionSubject

    /// Creates a request.
    public init(record: ActionRecord, describe: String, subject: ActionSubject) {
        (self.record, self.describe, self.subject) = (record, describe, subject)
    }
}

/// The gate's answer.
public enum GateVerdict: Sendable, Equatable {
    /// Go ahead.
    case allow
    /// Do not; the text tells the model why and what to do instead.
    case deny(String)
}

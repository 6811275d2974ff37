import ArgumentParser
import Foundation
import Synchronization
import XclawBase

/// What a command run with `--json` prints on stdout when it fails: one object, `{"error": {…}}`, so a script that
/// parses stdout learns why and how (`kind`, `exit_code`) without reading stderr. The exit code stays the same.
package struct JSONErrorObject: Encodable, Equatable, Sendable {
    /// The failure itself.
    package struct Detail: Encodable, Equatable, Sendable {
        /// The message stderr shows, as it shows it.
        package var message: String
        /// The process's exit status.
        package var exit_code: Int32
        /// The exit status's name (the exit-code contract, docs/commands.md): `not_found`, `usage`, `display`, `api`,
        /// `internal`, `interrupted`.
        package var kind: String
    }

    /// The failure.
    package var error: Detail

    /// The object for a failure that ends with `status`, saying `message`.
    package init(status: Int32, message: String) {
        error = Detail(message: message, exit_code: status, kind: Self.kind(of: status))
    }

    /// The name of an exit status; 128 + N is a signal's.
    package static func kind(of status: Int32) -> String {
        switch ExitStatus(rawValue: status) {
        case .ok: return "ok"
        case .notFound: return "not_found"
        case .usage: return "usage"
        case .display: return "display"
        case .api: return "api"
        case .internal: return "internal"
        case nil: return status > 128 ? "interrupted" : "failed"
        }
    }

    /// The message of a failure that printed none (an `ExitCode` a command threw after saying why, or a signal).
    package static func silentMessage(status: Int32) -> String {
        status > 128 ? "xclaw: interrupted (signal \(status - 128))" : "xclaw: exit \(status)"
    }

    /// The object as one line of JSON, escaped for a terminal as every `--json` result is.
    package var line: String {
        let data = (try? JSONEncoder.xclaw.encode(self)) ?? Data()
        return UntrustedText.jsonForTerminal(String(decoding: data, as: UTF8.self)) + "\n"
    }
}

/// Whether a command wrote its JSON result: one that did and then fails (`run --json` reporting a failed run,
/// `stop --json` with runs still going) has said what happened, and stdout must stay one JSON object.
package final class JSONResultMark: Sendable {
    private let written = Mutex(false)

    /// A mark nothing was written to yet.
    package init() {}

    /// The running command's mark (set by `CommandRunner.run` for the command's duration).
    @TaskLocal package static var current: JSONResultMark?

    /// Records that a JSON result went to stdout.
    package func set() { written.withLock { $0 = true } }

    /// Whether one did.
    package var isSet: Bool { written.withLock { $0 } }
}

/// Finds a command's `--json` flag (a `@Flag var json`, in the command or one of its option groups), so the failure
/// path knows without each command saying so.
package enum JSONFlag {
    /// Whether the parsed `command` has `--json` set.
    package static func isSet(in command: Any) -> Bool {
        for child in Mirror(reflecting: command).children {
            if child.label == "_json", let flag = child.value as? Flag<Bool> { return flag.wrappedValue }
            if let group = child.value as? any ArgumentGroup, isSet(in: group.groupValue) { return true }
        }
        return false
    }

    /// Whether `type` declares a `--json` flag.
    package static func isDeclared(by type: any ParsableArguments.Type) -> Bool {
        for child in Mirror(reflecting: type.init()).children {
            if child.label == "_json", child.value is Flag<Bool> { return true }
            if let group = Swift.type(of: child.value) as? any ArgumentGroup.Type, isDeclared(by: group.groupType) {
                return true
            }
        }
        return false
    }

    /// Whether `arguments`, which did not parse, ask the command they name for JSON: `--json` before any `--` (after
    /// it, it is an operand), and the command named (or its default subcommand) takes the flag.
    package static func isAsked(in arguments: [String], root: any ParsableCommand.Type) -> Bool {
        let options = arguments.prefix { $0 != "--" }
        guard options.contains("--json") else { return false }
        var command = root
        for argument in options {
            if let next = command.configuration.subcommands.first(where: { $0._commandName == argument }) {
                command = next
            }
        }
        if !isDeclared(by: command), let fallback = command.configuration.defaultSubcommand { command = fallback }
        return isDeclared(by: command)
    }
}

/// An `@OptionGroup`, seen from outside its generic type: what it holds, and the type of what it holds.
package protocol ArgumentGroup {
    /// The parsed group.
    var groupValue: Any { get }
    /// The group's type.
    static var groupType: any ParsableArguments.Type { get }
}

extension OptionGroup: ArgumentGroup {
    /// The parsed group.
    package var groupValue: Any { wrappedValue }
    /// The group's type.
    package static var groupType: any ParsableArguments.Type { Value.self }
}

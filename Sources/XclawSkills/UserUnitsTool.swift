import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawServices

/// `user_units`: the user's systemd services and timers over the user manager's bus API: list and status freely,
/// start, stop and restart behind the run's gates.
public struct UserUnitsTool: AgentTool {
    /// The caller's environment (its session bus).
    public let environment: [String: String]

    /// Creates the tool; `environment` defaults to the running command's (the caller's when the daemon serves it).
    public init(environment: [String: String] = Invocation.current.environment) { self.environment = environment }

    /// The tool's name.
    public var name: String { "user_units" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "systemd user manager (on the session bus): list the user's units (services and timers), read one's status "
            + "(active or not, main pid, last result), or start, stop or restart one. Prefer it to a terminal on the "
            + "screen for these: it is faster, and it does not depend on what is on screen."
    }

    /// The action and the unit.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "required": ["action"],
            "properties": [
                "action": ["type": "string", "enum": ["list", "status", "start", "stop", "restart"]],
                "name": [
                    "type": "string",
                    "description": "The unit, for status, start, stop, restart (\"backup\" is backup.service).",
                ],
                "all": ["type": "boolean", "description": "list: also inactive units and unit files not loaded."],
            ],
        ]
    }

    /// Reads, or gates and does, one action.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let action = input["action"]?.string ?? ""
        let environment = self.environment
        @Sendable func units() throws -> UserUnits {
            UserUnits(connection: try BusConnection.session(environment: environment))
        }
        if action == "list" {
            let all = input["all"]?.bool ?? false
            let listed = try await ServiceAction.read { try units().list(all: all) }
            guard !listed.isEmpty else { return .text(all ? "the user has no units" : "no unit is active") }
            return .text(
                listed.map { unit in
                    "\(unit.name): \(unit.activeState) (\(unit.subState))"
                        + (unit.description.isEmpty ? "" : " \(UntrustedText.quoted(unit.description))")
                }.joined(separator: "\n"))
        }
        guard let name = input["name"]?.string, !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ToolError("name is required for \(action): a unit from action list")
        }
        if action == "status" {
            let status = try await ServiceAction.read { try units().status(name) }
            return .text(status.lines.joined(separator: "\n"))
        }
        guard let change = UnitAction(rawValue: action) else {
            throw ToolError("action must be list, status, start, stop or restart")
        }
        let unit = UserUnits.unitName(name)
        let cancelled = context.isCancelled
        return .text(
            try await ServiceAction.perform(
                tool: self.name, verb: action, label: "\(action) unit \(unit)", text: unit,
                describe: "\(action) unit \(UntrustedText.quoted(unit))", context: context
            ) {
                let done = try units().change(change, unit, wait: .seconds(30), cancelled: cancelled)
                return "\(action) \(unit): \(done.result)\n" + done.status.lines.joined(separator: "\n")
            })
    }
}

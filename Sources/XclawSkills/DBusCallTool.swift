import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawServices

/// `dbus_call`: the guarded generic call for the services the other tools do not cover. Off by default: not in the
/// default tool set, and it reaches only the bus names its agent's allow-list names (`--dbus-allow`).
public struct DBusCallTool: AgentTool {
    /// The guarded caller: the allow-list and the caller's bus.
    public let caller: GuardedBusCall

    /// A tool calling through `caller`.
    public init(caller: GuardedBusCall) { self.caller = caller }

    /// The tool's name.
    public var name: String { "dbus_call" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Call a desktop service over the D-Bus session bus directly, for services the other tools do not cover. "
            + "Prefer a service to the screen when one fits: it is faster and does not depend on what is on screen. "
            + "Only these bus names may be called: \(caller.allow.text). Actions: `list` (the allowed services "
            + "running or startable), `introspect` (an object's interfaces, methods with their argument signatures, "
            + "properties and child paths), `call` (a method; args as a JSON array, typed by `signature` or, when "
            + "omitted, by the method's introspection). Read a property with interface "
            + "org.freedesktop.DBus.Properties, method Get, args [interface, property]."
    }

    /// The input: an action and the call's address.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "action": ["type": "string", "enum": ["list", "introspect", "call"]],
                "bus_name": ["type": "string", "description": "A well-known name, e.g. org.mpris.MediaPlayer2.vlc."],
                "object_path": ["type": "string", "description": "The object, e.g. /org/mpris/MediaPlayer2."],
                "interface": ["type": "string"],
                "method": ["type": "string"],
                "args": ["type": "array", "description": "The method's arguments, in order."],
                "signature": ["type": "string", "description": "D-Bus signature of args, e.g. \"sx\" (optional)."],
                "timeout_s": ["type": "number", "description": "At most this long for the reply (default 3, ≤ 60)."],
            ],
            "required": ["action"],
        ]
    }

    /// Lists, introspects or calls; a call goes through the run's gates like an input action.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let seconds = input["timeout_s"]?.double ?? 3
        guard seconds.isFinite, (0.1...60).contains(seconds) else {
            throw ToolError("timeout_s must be a number of seconds from 0.1 to 60")
        }
        let timeout = Duration.milliseconds(Int(seconds * 1000))
        func text(_ key: String) throws -> String {
            guard let value = input[key]?.string, !value.isEmpty else {
                throw ToolError("\(key) is required for \(input["action"]?.string ?? "this action")")
            }
            return value
        }
        let caller = self.caller
        do {
            switch input["action"]?.string {
            case "list":
                let (running, activatable) = try await ServiceAction.blocking { try caller.names(timeout: timeout) }
                return .text(
                    "running: \(running.isEmpty ? "none" : running.joined(separator: ", "))\n"
                        + "startable on first call: \(activatable.isEmpty ? "none" : activatable.joined(separator: ", "))"
                )
            case "introspect":
                let (bus, path) = (try text("bus_name"), input["object_path"]?.string ?? "/")
                let info = try await ServiceAction.blocking { try caller.introspect(bus, path: path, timeout: timeout) }
                return .text(UntrustedText.serviceData(Self.describe(info), source: "\(bus) \(path)"))
            case "call":
                let (bus, path) = (try text("bus_name"), try text("object_path"))
                let (interface, method) = (try text("interface"), try text("method"))
                // Refused before the gates: a person is never asked about a call that could not be made.
                try caller.check(bus)
                let (args, signature) = (input["args"]?.array ?? [], input["signature"]?.string)
                return .text(
                    try await ServiceAction.perform(
                        tool: name, verb: "call", label: "\(Self.words(method)) (\(bus))",
                        text: "\(bus) \(path) \(interface).\(method)", context: context
                    ) {
                        let reply = try caller.call(
                            bus, path: path, interface: interface, method: method, arguments: args,
                            signature: signature, timeout: timeout)
                        return UntrustedText.serviceData(
                            JSONValue.array(reply).jsonText, source: "\(bus) \(method) reply")
                    })
            default:
                throw ToolError("action must be list, introspect or call")
            }
        } catch let error as BusError {
            throw ToolError("\(error)")
        }
    }

    /// An introspection as lines the model can act on.
    static func describe(_ info: BusIntrospection) -> String {
        var lines: [String] = []
        for interface in info.interfaces.keys.sorted() where !interface.hasPrefix("org.freedesktop.DBus.") {
            lines.append("interface \(interface)")
            for method in info.interfaces[interface] ?? [] {
                lines.append("  method \(method.name)(\(method.input)) -> (\(method.output))")
            }
            if let properties = info.properties[interface], !properties.isEmpty {
                lines.append("  properties: " + properties.joined(separator: ", "))
            }
        }
        if !info.children.isEmpty { lines.append("children: " + info.children.joined(separator: ", ")) }
        return lines.isEmpty ? "(nothing described)" : lines.joined(separator: "\n")
    }

    /// A method's name as words ("DeleteEvent" → "delete event"), so the approval gate reads its verb.
    static func words(_ method: String) -> String {
        var out = ""
        for c in method {
            if c.isUppercase, !out.isEmpty, out.last != " " { out.append(" ") }
            out.append(c == "_" ? " " : Character(c.lowercased()))
        }
        return out
    }
}

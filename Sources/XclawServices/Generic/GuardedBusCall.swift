import XclawBase
import XclawMessages

/// The generic call behind the agent's `dbus_call`: only to names the allow-list names, with arguments typed by the
/// signature given or, when none is, by the method's own introspection, and every call under a timeout.
public struct GuardedBusCall: Sendable {
    /// What may be called.
    public let allow: BusAllowList
    /// The caller's environment (its session bus).
    public let environment: [String: String]

    /// A guarded caller for `allow` on the bus `environment` names.
    public init(allow: BusAllowList, environment: [String: String] = Invocation.current.environment) {
        (self.allow, self.environment) = (allow, environment)
    }

    /// Refuses a name the allow-list does not cover, saying how a person allows it.
    public func check(_ name: String) throws {
        guard allow.allows(name) else {
            throw BusError.denied(
                service: name,
                message: allow.isEmpty
                    ? "this agent may call no D-Bus service: a person allows names with "
                        + "`xclaw agent set AGENT --dbus-allow \(name)`"
                    : "\(name) is not in this agent's D-Bus allow-list (\(allow.text)); a person can add it with "
                        + "`xclaw agent set AGENT --dbus-allow \(allow.text),\(name)`")
        }
    }

    /// The allowed names on the bus now, and those it could start.
    public func names(timeout: Duration = Services.callTimeout) throws -> (running: [String], activatable: [String]) {
        let bus = try BusConnection.session(environment: environment, timeout: timeout)
        let running = try bus.names().filter(allow.allows).sorted()
        let activatable =
            try bus.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                method: "ListActivatableNames"
            ).first?.array?.compactMap(\.string).filter { allow.allows($0) && !running.contains($0) }.sorted() ?? []
        return (running, activatable)
    }

    /// What the object at `path` of `name` offers.
    public func introspect(_ name: String, path: String, timeout: Duration = Services.callTimeout) throws
        -> BusIntrospection
    {
        try check(name)
        let bus = try BusConnection.session(environment: environment, timeout: timeout)
        try checkOwner(bus, name)
        return try introspect(bus, name, path)
    }

    /// A name reached through a family must not be another name for a guarded connection: gnome-keyring owns
    /// `org.gnome.keyring` and `org.freedesktop.secrets` alike, so `org.gnome.*` would reach the secret store.
    private func checkOwner(_ bus: BusConnection, _ name: String) throws {
        guard !allow.namesExactly(name) else { return }
        func owner(_ name: String) -> String? {
            try? bus.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                method: "GetNameOwner", [.string(name)]
            ).first?.string
        }
        guard let reached = owner(name) else { return }
        for guarded in BusAllowList.exactOnly.sorted() where owner(guarded) == reached {
            throw BusError.denied(
                service: name,
                message: "\(name) is served by the same program as \(guarded), which only an entry naming it exactly "
                    + "allows")
        }
    }

    private func introspect(_ bus: BusConnection, _ name: String, _ path: String) throws -> BusIntrospection {
        let xml =
            try bus.call(
                destination: name, path: path, interface: "org.freedesktop.DBus.Introspectable", method: "Introspect"
            ).first?.string ?? ""
        return BusIntrospection(xml: xml)
    }

    /// Calls `method`; `arguments` are JSON typed by `signature`, else by the method's introspected input signature.
    public func call(
        _ name: String, path: String, interface: String, method: String, arguments: [JSONValue],
        signature: String? = nil, timeout: Duration = Services.callTimeout
    ) throws -> [JSONValue] {
        try check(name)
        guard path.hasPrefix("/") else {
            throw BusError.invalidArguments(call: "\(name) \(method)", message: "the object path must start with /")
        }
        let bus = try BusConnection.session(environment: environment, timeout: timeout)
        try checkOwner(bus, name)
        var types: [BusType]
        if let signature {
            types = try BusType.parse(signature)
        } else if arguments.isEmpty {
            types = []
        } else {
            guard let found = try introspect(bus, name, path).method(interface, method) else {
                throw BusError.invalidArguments(
                    call: "\(name) \(interface).\(method)",
                    message: "the object \(path) does not describe this method: give the signature of its arguments")
            }
            types = try BusType.parse(found.input)
        }
        guard types.count == arguments.count else {
            throw BusError.invalidArguments(
                call: "\(name) \(interface).\(method)",
                message: "it takes \(types.count) argument\(types.count == 1 ? "" : "s") "
                    + "(\(types.map(\.signature).joined())), \(arguments.count) given")
        }
        let values = try zip(types, arguments).map { try $0.value($1) }
        return try bus.call(
            destination: name, path: path, interface: interface, method: method, values, timeout: timeout)
    }
}

import CXclawBus
import Foundation
import XclawBase
import XclawMessages

/// One message a connection received: a signal it subscribed to, or anything a monitor saw.
public struct BusMessage: Sendable, Hashable, Decodable {
    /// `method_call`, `method_return`, `error` or `signal`.
    public var type: String
    /// The sender's unique name.
    public var sender: String?
    /// The destination, when addressed.
    public var destination: String?
    /// The object path.
    public var path: String?
    /// The interface.
    public var interface: String?
    /// The method or signal name.
    public var member: String?
    /// The error's name, for an error.
    public var errorName: String?
    /// The message's serial number on its sender's connection.
    public var serial: UInt32
    /// For a reply, the serial of the call it answers.
    public var replySerial: UInt32
    /// The arguments.
    public var body: [JSONValue]

    enum CodingKeys: String, CodingKey {
        case type, sender, destination, path, interface, member, serial, body
        case errorName = "error_name"
        case replySerial = "reply_serial"
    }
}

/// A private connection to the caller's session bus (the daemon serves many callers: each brings its own address).
/// Every call carries a timeout; GDBus makes the connection safe to share between threads.
public final class BusConnection: @unchecked Sendable {
    /// The bus address connected to.
    public let address: String
    /// How long a call waits by default.
    public let timeout: Duration
    private let handle: OpaquePointer

    private init(address: String, timeout: Duration, handle: OpaquePointer) {
        (self.address, self.timeout, self.handle) = (address, timeout, handle)
    }

    deinit { xclaw_bus_close(handle) }

    /// The session bus address in `environment`: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when that
    /// socket exists (systemd's per-user bus); nil when there is none.
    public static func sessionAddress(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            var info = stat()
            let path = runtime + "/bus"
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { return "unix:path=" + path }
        }
        return nil
    }

    /// Connects to the caller's session bus.
    public static func session(
        environment: [String: String] = Invocation.current.environment, timeout: Duration = .seconds(3)
    ) throws -> BusConnection {
        guard let address = sessionAddress(environment: environment) else { throw BusError.noSessionBus }
        return try open(address: address, timeout: timeout, monitorRules: nil)
    }

    /// A monitor of the caller's session bus that receives the messages `rules` select (empty: all), for watching
    /// method calls between other parties (`Notify`), which signals do not show.
    public static func monitor(
        rules: [String], environment: [String: String] = Invocation.current.environment,
        timeout: Duration = .seconds(3)
    ) throws -> BusConnection {
        guard let address = sessionAddress(environment: environment) else { throw BusError.noSessionBus }
        return try open(address: address, timeout: timeout, monitorRules: rules)
    }

    /// Connects to the bus at `address`.
    public static func open(address: String, timeout: Duration = .seconds(3), monitorRules: [String]? = nil) throws
        -> BusConnection
    {
        var error: UnsafeMutablePointer<CChar>?
        let handle: OpaquePointer?
        if let monitorRules {
            // A NULL-terminated array of C strings that lives for the call.
            let copies = monitorRules.map { strdup($0) }
            defer { copies.forEach { free($0) } }
            var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
            handle = pointers.withUnsafeMutableBufferPointer {
                xclaw_bus_open(address, Self.milliseconds(timeout), $0.baseAddress, &error)
            }
        } else {
            handle = xclaw_bus_open(address, Self.milliseconds(timeout), nil, &error)
        }
        guard let handle else {
            let reason = Self.take(error) ?? "unknown error"
            if monitorRules != nil, reason.hasPrefix("the bus refused") {
                throw BusError.denied(service: "the session bus", message: reason)
            }
            throw BusError.unreachable(address: address, reason: reason)
        }
        return BusConnection(address: address, timeout: timeout, handle: handle)
    }

    /// This connection's unique name (`:1.42`).
    public var uniqueName: String { String(cString: xclaw_bus_unique_name(handle)) }

    /// Calls `method` with typed arguments and returns the reply's values. `service` names what is called in the
    /// errors (its absence says what to do); `timeout` defaults to the connection's.
    public func call(
        _ service: BusService, path: String, interface: String, method: String, _ arguments: [BusValue] = [],
        timeout: Duration? = nil
    ) throws -> [JSONValue] {
        try call(
            destination: service.name, path: path, interface: interface, method: method, arguments,
            timeout: timeout, service: service)
    }

    /// Calls `method` on `destination` (a well-known or unique name); the reply's values, as JSON.
    public func call(
        destination: String, path: String, interface: String, method: String, _ arguments: [BusValue] = [],
        timeout: Duration? = nil, service: BusService? = nil
    ) throws -> [JSONValue] {
        let text = arguments.isEmpty ? "" : BusValue.tuple(arguments).gvariantText
        let wait = timeout ?? self.timeout
        var reply: UnsafeMutablePointer<CChar>?
        var errorName: UnsafeMutablePointer<CChar>?
        var error: UnsafeMutablePointer<CChar>?
        let status = xclaw_bus_call(
            handle, destination, path, interface, method, text, Self.milliseconds(wait), &reply, &errorName, &error)
        let what = "\(destination) \(interface).\(method)"
        guard status == 0 else {
            let name = Self.take(errorName) ?? "org.freedesktop.DBus.Error.Failed"
            let message = Self.take(error) ?? ""
            throw Self.classify(
                name: name, message: message, call: what, milliseconds: Self.milliseconds(wait),
                service: service
                    ?? BusService(
                        name: destination, what: "service \(destination)",
                        hint: "start the program that provides it, or use the screen"))
        }
        let json = Self.take(reply) ?? "[]"
        return try JSONValue.parse(json).array ?? []
    }

    /// Reads a property through `org.freedesktop.DBus.Properties.Get`.
    public func property(_ service: BusService, path: String, interface: String, name: String) throws -> JSONValue {
        try call(
            service, path: path, interface: "org.freedesktop.DBus.Properties", method: "Get",
            [.string(interface), .string(name)]
        ).first ?? .null
    }

    /// Every property of `interface` through `org.freedesktop.DBus.Properties.GetAll`.
    public func properties(_ service: BusService, path: String, interface: String) throws -> [String: JSONValue] {
        try call(
            service, path: path, interface: "org.freedesktop.DBus.Properties", method: "GetAll", [.string(interface)]
        ).first?.object ?? [:]
    }

    /// The names on the bus (well-known and unique).
    public func names() throws -> [String] {
        try call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "ListNames"
        ).first?.array?.compactMap(\.string) ?? []
    }

    /// Whether something owns `name` now (no activation).
    public func hasOwner(_ name: String) throws -> Bool {
        try call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "NameHasOwner", [.string(name)]
        ).first?.bool ?? false
    }

    /// Whether the bus could start `name` on demand (a service file names it).
    public func isActivatable(_ name: String) throws -> Bool {
        try call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "ListActivatableNames"
        ).first?.array?.contains { $0.string == name } ?? false
    }

    /// Asks for the signals `rule` selects (a D-Bus match rule); they arrive through `next`.
    public func subscribe(_ rule: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard xclaw_bus_subscribe(handle, rule, Self.milliseconds(timeout), &error) == 0 else {
            throw BusError.denied(service: "the session bus", message: Self.take(error) ?? "AddMatch failed")
        }
    }

    /// The next message subscribed to (a monitor: seen), waiting at most `timeout`; nil when none came in time.
    public func next(timeout: Duration) throws -> BusMessage? {
        var closed: Int32 = 0
        guard let text = Self.take(xclaw_bus_next(handle, Self.milliseconds(timeout), &closed)) else {
            if closed != 0 { throw BusError.disconnected("waiting for a message") }
            return nil
        }
        return try JSONDecoder().decode(BusMessage.self, from: Data(text.utf8))
    }

    /// A failure's D-Bus error name, mapped to what the user can do.
    static func classify(name: String, message: String, call: String, milliseconds: Int32, service: BusService)
        -> BusError
    {
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
            "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", "org.freedesktop.DBus.Error.Spawn.ExecFailed",
            "org.freedesktop.DBus.Error.Spawn.ChildExited", "org.freedesktop.DBus.Error.Spawn.Failed":
            return .absent(service)
        // The bus's NoReply also says a service quit without answering: then it is gone, not slow.
        case "org.freedesktop.DBus.Error.NoReply" where message.localizedCaseInsensitiveContains("disconnected"):
            return .absent(service)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
            "org.freedesktop.DBus.Error.TimedOut":
            return .timedOut(call: call, milliseconds: Int(milliseconds))
        case "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.AuthFailed",
            "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired":
            return .denied(service: service.name, message: message)
        case "org.freedesktop.DBus.Error.InvalidArgs", "xclaw.BadArguments":
            return .invalidArguments(call: call, message: message)
        case "org.freedesktop.DBus.Error.Disconnected":
            return .disconnected("calling \(call)")
        default:
            return .failed(call: call, errorName: name, message: message)
        }
    }

    /// Milliseconds for C, at least 1 and at most a day.
    static func milliseconds(_ d: Duration) -> Int32 {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return Int32(max(1, min(ms, 86_400_000)))
    }

    /// A string the C side allocated, copied and freed.
    static func take(_ p: UnsafeMutablePointer<CChar>?) -> String? {
        guard let p else { return nil }
        defer { xclaw_bus_free(p) }
        return String(cString: p)
    }
}

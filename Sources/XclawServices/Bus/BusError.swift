import XclawBase

/// A service on the bus, named for the messages its absence produces.
public struct BusService: Sendable, Hashable {
    /// The well-known bus name (`org.freedesktop.Notifications`).
    public var name: String
    /// What it is, for messages ("notification server").
    public var what: String
    /// What the user can do when it is absent ("start one (dunst, xfce4-notifyd) or use the screen").
    public var hint: String

    /// A service description.
    public init(name: String, what: String, hint: String) { (self.name, self.what, self.hint) = (name, what, hint) }
}

/// Why a session-bus call failed, with what to do about it. Absence and refusal are the machine's (exit 5), a call
/// left unanswered is a timeout (exit 1), arguments the service rejects are bad input (exit 2).
public enum BusError: ClassifiedError, Equatable {
    /// No session bus address: not in a desktop session.
    case noSessionBus
    /// The bus at the address could not be reached or did not answer.
    case unreachable(address: String, reason: String)
    /// Nothing owns the service's name and nothing could start it.
    case absent(BusService)
    /// The bus or the service refused (a policy, a permission).
    case denied(service: String, message: String)
    /// The call was not answered in time.
    case timedOut(call: String, milliseconds: Int)
    /// The service rejected the arguments.
    case invalidArguments(call: String, message: String)
    /// The service answered with another error.
    case failed(call: String, errorName: String, message: String)
    /// The connection closed while xclaw waited on it.
    case disconnected(String)

    /// 1 for a timeout, 2 for arguments, 5 for a bus or service that is absent, refuses or fails.
    public var exitStatus: ExitStatus {
        switch self {
        case .timedOut: return .notFound
        case .invalidArguments: return .usage
        default: return .internal
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .noSessionBus:
            return "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus does not exist; "
                + "run xclaw inside a desktop session, or start a bus with `dbus-run-session -- xclaw …`"
        case .unreachable(let address, let reason):
            return "the session bus at \(address) cannot be reached (\(reason)); check DBUS_SESSION_BUS_ADDRESS"
        case .absent(let service):
            return "no \(service.what) runs on this session bus (nothing owns \(service.name)): \(service.hint)"
        case .denied(let service, let message):
            return "\(service) refused the call: \(message)"
        case .timedOut(let call, let ms):
            return "\(call) did not answer within \(ms) ms; the service may be hung: try again, or use the screen"
        case .invalidArguments(let call, let message):
            return "\(call) rejected its arguments: \(message)"
        case .failed(let call, let name, let message):
            return "\(call) failed (\(name)): \(message)"
        case .disconnected(let what):
            return "the session bus closed the connection while \(what); check that the bus is still running"
        }
    }
}

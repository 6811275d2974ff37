import Foundation
import Synchronization
import XclawBase
import XclawMessages

/// The freedesktop notification service (`org.freedesktop.Notifications`, spec 1.2): its name, object and interface,
/// and what to do when nothing provides it.
public enum NotificationService {
    /// The service, named for the message its absence produces.
    public static let service = BusService(
        name: "org.freedesktop.Notifications", what: "notification server",
        hint: "start one (dunst, xfce4-notifyd, or your desktop's own), or use the screen")
    /// The object every server exports.
    public static let path = "/org/freedesktop/Notifications"
    /// The interface of `Notify`, `CloseNotification` and their signals.
    public static let interface = "org.freedesktop.Notifications"
}

/// One button of a notification: the key the server reports when it is chosen, and the label it shows.
public struct NotificationAction: Sendable, Hashable, Codable {
    /// The key `ActionInvoked` reports (`default` is the notification's own click).
    public var id: String
    /// The text the server shows.
    public var label: String

    /// An action.
    public init(id: String, label: String) { (self.id, self.label) = (id, label) }

    /// `ID=LABEL` as the command line gives it (`ID` alone: the label is the id); nil when the id is empty.
    public init?(parsing text: String) {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let id = parts.first, !id.isEmpty else { return nil }
        self.init(id: id, label: parts.count > 1 && !parts[1].isEmpty ? parts[1] : id)
    }
}

/// How urgent a notification is (the spec's `urgency` hint, a byte).
public enum NotificationUrgency: String, Sendable, CaseIterable, Codable {
    /// 0: may be shown quietly.
    case low
    /// 1: the default.
    case normal
    /// 2: stays until dismissed on most servers.
    case critical

    /// The hint's byte.
    var byte: UInt8 {
        switch self {
        case .low: return 0
        case .normal: return 1
        case .critical: return 2
        }
    }
}

/// What `Notify` is asked to show.
public struct NotificationRequest: Sendable, Hashable {
    /// The summary line.
    public var title: String
    /// The body (servers may render a little markup in it).
    public var body: String
    /// The buttons, in order.
    public var actions: [NotificationAction]
    /// The urgency hint; nil sends none (the server's default, normal).
    public var urgency: NotificationUrgency?
    /// Milliseconds before it expires: -1 the server's default, 0 never.
    public var expireMilliseconds: Int32
    /// An icon name or file URI; empty for none.
    public var icon: String
    /// The sending application's name.
    public var appName: String

    /// A request; only the title is needed.
    public init(
        title: String, body: String = "", actions: [NotificationAction] = [], urgency: NotificationUrgency? = nil,
        expireMilliseconds: Int32 = -1, icon: String = "", appName: String = "xclaw"
    ) {
        self.title = title
        self.body = body
        self.actions = actions
        self.urgency = urgency
        self.expireMilliseconds = expireMilliseconds
        self.icon = icon
        self.appName = appName
    }

    /// `Notify`'s arguments (`susssasa{sv}i`).
    var arguments: [BusValue] {
        [
            .string(appName), .uint32(0), .string(icon), .string(title), .string(body),
            .strings(actions.flatMap { [$0.id, $0.label] }),
            .vardict(urgency.map { [("urgency", .byte($0.byte))] } ?? []), .int32(expireMilliseconds),
        ]
    }
}

/// Why a notification closed (`NotificationClosed`'s reason).
public enum NotificationCloseReason: String, Sendable, Codable, Hashable {
    /// 1: its time ran out.
    case expired
    /// 2: the user dismissed it.
    case dismissed
    /// 3: `CloseNotification` closed it.
    case closedByCall = "closed by call"
    /// 4 (or anything else): the server did not say.
    case undefined

    /// The reason the spec numbers `code`.
    init(code: Int) {
        switch code {
        case 1: self = .expired
        case 2: self = .dismissed
        case 3: self = .closedByCall
        default: self = .undefined
        }
    }
}

/// How a notification ended, as its server reported it.
public enum NotificationOutcome: Sendable, Hashable {
    /// The user chose the action with this id.
    case action(String)
    /// It closed without an action.
    case closed(NotificationCloseReason)
}

/// Sends notifications and follows what becomes of them on one connection. The server signals `ActionInvoked` and
/// `NotificationClosed` to the connection that sent the notification (dunst addresses them to it), so the waiting is
/// done on the sending connection, subscribed before `Notify` is called: a quick answer is never missed.
public final class Notifier: Sendable {
    /// The connection notifications are sent and followed on.
    public let connection: BusConnection
    /// The unique name of the server that took the last notification: only its signals count, since any client on
    /// the bus may send an `ActionInvoked` with a guessed id (ids are small and sequential).
    private let server = Mutex<String?>(nil)

    /// Subscribes `connection` to the notification signals (servers that broadcast them as well as those that
    /// address them).
    public init(connection: BusConnection) throws {
        self.connection = connection
        try connection.subscribe(
            "type='signal',interface='\(NotificationService.interface)',path='\(NotificationService.path)'")
    }

    /// Shows `request`; the id the server gave it. An absent server is `BusError.absent` (exit 5).
    public func send(_ request: NotificationRequest, timeout: Duration? = nil) throws -> UInt32 {
        let reply = try connection.call(
            NotificationService.service, path: NotificationService.path, interface: NotificationService.interface,
            method: "Notify", request.arguments, timeout: timeout)
        guard let id = reply.first?.int, id >= 0 else {
            throw BusError.failed(
                call: "Notify", errorName: "xclaw.UnexpectedReply", message: "the server answered \(reply)")
        }
        // Asked after Notify, which may have started the server; the signals subscribed to before it wait in the
        // connection's queue meanwhile.
        let owner = try connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "GetNameOwner", [.string(NotificationService.service.name)], timeout: timeout
        ).first?.string
        server.withLock { $0 = owner }
        return UInt32(id)
    }

    /// The server's capabilities (`actions`, `body`, `persistence`…).
    public func capabilities(timeout: Duration? = nil) throws -> [String] {
        try connection.call(
            NotificationService.service, path: NotificationService.path, interface: NotificationService.interface,
            method: "GetCapabilities", timeout: timeout
        ).first?.array?.compactMap(\.string) ?? []
    }

    /// Waits for notification `id` to be acted on or closed, at most `timeout`; nil when neither happened in time or
    /// `cancelled` said to stop (checked every 100 ms).
    public func wait(for id: UInt32, timeout: Duration, cancelled: () -> Bool = { false }) throws
        -> NotificationOutcome?
    {
        let deadline = ContinuousClock.now + timeout
        let interface = NotificationService.interface
        let owner = server.withLock { $0 }
        while !cancelled() {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            // In slices, so that `cancelled` is heard.
            guard
                let message = try connection.next(
                    within: min(left, .milliseconds(100)),
                    where: {
                        $0.type == "signal" && $0.interface == interface && $0.body.first?.int == Int(id)
                            && (owner == nil || $0.sender == owner)
                    })
            else { continue }
            switch message.member {
            case "ActionInvoked":
                if let key = message.body.dropFirst().first?.string { return .action(key) }
            case "NotificationClosed":
                return .closed(NotificationCloseReason(code: message.body.dropFirst().first?.int ?? 4))
            default: continue
            }
        }
        return nil
    }

    /// Closes notification `id` (`CloseNotification`).
    public func close(_ id: UInt32, timeout: Duration? = nil) throws {
        _ = try connection.call(
            NotificationService.service, path: NotificationService.path, interface: NotificationService.interface,
            method: "CloseNotification", [.uint32(id)], timeout: timeout)
    }
}

/// A notification that was not answered in time (exit 1).
public struct NotificationUnanswered: ClassifiedError, Equatable {
    /// The notification's id.
    public var id: UInt32
    /// How long it was waited for.
    public var seconds: Double

    /// An unanswered notification.
    public init(id: UInt32, seconds: Double) { (self.id, self.seconds) = (id, seconds) }

    /// 1: nothing happened, as a watch that times out.
    public var exitStatus: ExitStatus { .notFound }

    /// The message, saying what was done about it.
    public var description: String {
        "nobody answered notification \(id) within \(String(format: "%g", seconds)) s (it was closed); "
            + "give --timeout more seconds to wait longer"
    }
}

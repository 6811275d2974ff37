import Foundation
import XclawBase
import XclawMessages

/// A notification some application sent, as seen on the bus: what it says is the sender's, never xclaw's, so it is
/// data to quote, not instructions.
public struct SeenNotification: Sendable, Hashable, Codable {
    /// The name the application gave (`app_name`).
    public var appName: String
    /// The summary line.
    public var summary: String
    /// The body.
    public var body: String
    /// Its buttons.
    public var actions: [NotificationAction]
    /// The sender's unique bus name.
    public var sender: String?
    /// When xclaw saw it.
    public var seenAt: Date

    /// A seen notification.
    public init(
        appName: String, summary: String, body: String, actions: [NotificationAction] = [], sender: String? = nil,
        seenAt: Date = Date()
    ) {
        self.appName = appName
        self.summary = summary
        self.body = body
        self.actions = actions
        self.sender = sender
        self.seenAt = seenAt
    }

    enum CodingKeys: String, CodingKey {
        case summary, body, actions, sender
        case appName = "app_name"
        case seenAt = "seen_at"
    }

    /// The `Notify` call `message` carries, or nil when it is something else.
    init?(_ message: BusMessage, seenAt: Date = Date()) {
        guard message.type == "method_call", message.interface == NotificationService.interface,
            message.member == "Notify", message.body.count >= 5
        else { return nil }
        let pairs = message.body.count > 5 ? message.body[5].array?.compactMap(\.string) ?? [] : []
        self.init(
            appName: message.body[0].string ?? "", summary: message.body[3].string ?? "",
            body: message.body[4].string ?? "",
            actions: stride(from: 0, to: pairs.count - 1, by: 2).map {
                NotificationAction(id: pairs[$0], label: pairs[$0 + 1])
            }, sender: message.sender, seenAt: seenAt)
    }

    /// Whether the summary or the body contains `text` (case-insensitive) and, with `app`, the application's name
    /// contains `app` (case-insensitive); an empty `text` matches any.
    public func matches(_ text: String, from app: String? = nil) -> Bool {
        if let app, !appName.localizedCaseInsensitiveContains(app) { return false }
        return text.isEmpty || summary.localizedCaseInsensitiveContains(text)
            || body.localizedCaseInsensitiveContains(text)
    }
}

/// Watches every `Notify` call on the session bus through a monitor connection, whichever server answers it (and
/// even when none does: the call is seen on its way), for "wait until the build says it finished".
public final class NotificationMonitor: Sendable {
    /// The rule the monitor is given: the `Notify` method calls, nothing else.
    public static let rule =
        "type='method_call',interface='\(NotificationService.interface)',member='Notify'"

    private let connection: BusConnection

    /// Becomes a monitor of the caller's session bus; a bus that refuses monitoring is `BusError.denied` (exit 5).
    public init(environment: [String: String] = Invocation.current.environment, timeout: Duration = .seconds(3))
        throws
    {
        connection = try BusConnection.monitor(rules: [Self.rule], environment: environment, timeout: timeout)
    }

    /// The next notification sent, waiting at most `timeout`; nil when none came in time.
    public func next(timeout: Duration) throws -> SeenNotification? {
        try connection.next(within: timeout) { SeenNotification($0) != nil }.flatMap { SeenNotification($0) }
    }

    /// Waits for a notification that `matches(text, from:)`, at most `timeout`; nil on timeout or when `cancelled`
    /// said to stop (checked every 100 ms). `counting` is called for each one seen that did not match.
    public func wait(
        for text: String, from app: String? = nil, timeout: Duration, cancelled: () -> Bool = { false },
        counting: () -> Void = {}
    ) throws -> SeenNotification? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !cancelled() {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            guard let seen = try next(timeout: min(left, .milliseconds(100))) else { continue }
            if seen.matches(text, from: app) { return seen }
            counting()
        }
        return nil
    }
}

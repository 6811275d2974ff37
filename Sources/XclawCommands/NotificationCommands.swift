import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawServices

extension NotificationUrgency: ExpressibleByArgument {}

/// `xclaw notify`: a desktop notification through the caller's notification server, and, with --wait, the answer.
struct Notify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "Show a desktop notification (org.freedesktop.Notifications); with --wait, print the action chosen.",
        discussion: """
            Sends the notification to the notification server of the caller's session bus (dunst, xfce4-notifyd, \
            GNOME Shell, Plasma…) and prints the id it got. With --wait it waits for the answer and prints the \
            action's id when one of the --action buttons was chosen, or `closed: expired`, `closed: dismissed` or \
            `closed: closed by call` when the notification closed without one. Not every server shows actions \
            (xclaw warns when the server says it does not).
            Exits 1 when --wait saw no answer within --timeout (the notification is then closed); 5 when no \
            notification server runs (start one, such as dunst or xfce4-notifyd, or use the screen) or there is no \
            session bus.
            Examples:
              xclaw notify 'Build finished' 'All 412 tests passed'
              xclaw notify 'Deploy to production?' --action yes=Deploy --action no=Cancel --wait --timeout 120
            """)
    @Argument(help: "The summary line.") var title: String
    @Argument(help: "The body text.") var body: String?
    @Option(
        name: .customLong("action"),
        help: ArgumentHelp(
            "A button: its id (printed when chosen) and label (repeatable; the id `default` is a click on the "
                + "notification itself).", valueName: "id=label"))
    var actions: [String] = []
    @Option(help: "How urgent it is (most servers keep critical ones until dismissed).")
    var urgency: NotificationUrgency?
    @Option(help: "Milliseconds before it expires (0: never; default: the server's).") var expire: Int?
    @Option(help: "An icon name (dialog-information) or a file's path.") var icon: String?
    @Option(name: .customLong("app-name"), help: "The application name the server shows.") var appName = "xclaw"
    @Flag(help: "Wait for an action to be chosen or the notification to close, and print which.") var wait = false
    @Option(help: "With --wait: give up after this many seconds (default 60).") var timeout: Double?
    @Flag(help: "Print JSON: the id and, with --wait, the action or how it closed.") var json = false

    func validate() throws {
        if title.isEmpty { throw ValidationError("the title is empty: give the notification's summary line") }
        let parsed = actions.map(NotificationAction.init(parsing:))
        if let bad = zip(actions, parsed).first(where: { $0.1 == nil }) {
            throw ValidationError("--action \(bad.0): give ID=LABEL with a non-empty ID")
        }
        let ids = parsed.compactMap { $0?.id }
        if Set(ids).count != ids.count {
            throw ValidationError("--action ids must differ: \(ids.joined(separator: ", "))")
        }
        try requireRange(expire, 0...86_400_000, "--expire", "ms")
        if timeout != nil && !wait { throw ValidationError("--timeout goes with --wait") }
        try requireRange(timeout, 0.001...86_400, "--timeout", "seconds")
    }

    /// What `--json` prints.
    struct Reply: Encodable {
        var id: UInt32
        var action: String?
        var closed: NotificationCloseReason?
    }

    /// The request the options make.
    var request: NotificationRequest {
        NotificationRequest(
            title: title, body: body ?? "", actions: actions.compactMap(NotificationAction.init(parsing:)),
            urgency: urgency, expireMilliseconds: expire.map { Int32($0) } ?? -1, icon: Self.icon(icon),
            appName: appName)
    }

    /// An icon given as a relative path made absolute (the server runs elsewhere); names and URIs as they are.
    static func icon(_ icon: String?) -> String {
        guard let icon, icon.contains("/"), !icon.hasPrefix("/"), !icon.contains("://") else { return icon ?? "" }
        return Invocation.current.directory + "/" + icon
    }

    func run() throws {
        let notifier = try Notifier(connection: try BusConnection.session(environment: Invocation.current.environment))
        if wait, !actions.isEmpty, !(try notifier.capabilities().contains("actions")) {
            printError("warning: the notification server shows no actions; only its closing can be waited for")
        }
        let id = try notifier.send(request)
        guard wait else { return try emit(Reply(id: id), json: json) { "\(id)" } }
        let seconds = timeout ?? 60
        let outcome = try ProgressLine.during("an answer to notification \(id)", timeout: seconds, json: json) {
            try notifier.wait(for: id, timeout: .milliseconds(Int(seconds * 1000)), cancelled: { Interrupt.requested })
        }
        if Interrupt.requested {
            // As on a timeout: left open, it would ask a question nobody waits for any more.
            try? notifier.close(id)
            throw CancellationError()
        }
        switch outcome {
        case .action(let key)?:
            try emit(Reply(id: id, action: key), json: json) { key }
        case .closed(let reason)?:
            try emit(Reply(id: id, closed: reason), json: json) { "closed: \(reason.rawValue)" }
        case nil:
            // Left open, it would ask a question nobody waits for any more.
            try? notifier.close(id)
            throw NotificationUnanswered(id: id, seconds: seconds)
        }
    }
}

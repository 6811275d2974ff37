import Synchronization

/// One input xclaw sent to a display, as a surface shows it (the web view's action log and overlay).
public struct InputEvent: Sendable, Hashable {
    /// The display's name, as the connection was opened.
    public var display: String
    /// "click", "drag", "scroll", "type", "key", "button-down", "button-up".
    public var action: String
    /// Where, in screen pixels, when it has a place.
    public var point: Point?
    /// What else: the button and count, the keys, the text typed.
    public var detail: String?
}

/// Where input events go: nowhere until a surface listens (the daemon, when its web view runs), so the input path
/// pays one load and nothing else when nobody does.
public enum InputObserver {
    private static let listener = Mutex<(@Sendable (InputEvent) -> Void)?>(nil)

    /// Hands every input sent from now on to `handler` (nil: to nobody). It runs on the thread that sent the input,
    /// after it was sent: it must return quickly.
    public static func listen(_ handler: (@Sendable (InputEvent) -> Void)?) {
        listener.withLock { $0 = handler }
    }

    /// Reports an input; `event` is built only when someone listens.
    static func report(_ event: () -> InputEvent) {
        guard let handler = listener.withLock({ $0 }) else { return }
        handler(event())
    }

    /// Whether someone listens (to skip work that only a report needs, such as asking where the pointer is).
    static var isListened: Bool { listener.withLock { $0 != nil } }
}

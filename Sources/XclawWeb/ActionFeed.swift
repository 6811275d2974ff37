import Foundation
import Synchronization

/// One action on a screen, as the web view's log and overlay show it.
public struct WebAction: Codable, Sendable, Hashable {
    /// Its place in the feed (increasing), so a page that reconnects asks for what it missed.
    public var seq: Int
    /// When it was done, milliseconds since 1970.
    public var time_ms: Int64
    /// The display it acted on (":1"), when known.
    public var display: String?
    /// Who did it: "cli", "mcp", "agent bot (run 12)".
    public var source: String
    /// What: "click", "type", "key", "scroll", "drag", "tap".
    public var action: String
    /// Where, in screen pixels, when it has a place.
    public var x: Int?
    /// Where, in screen pixels, when it has a place.
    public var y: Int?
    /// What else (the button, the keys, the text typed, shortened).
    public var detail: String?

    /// What the log shows of typed text: its length, never the text (it may be a password).
    public static func typed(_ text: String) -> String {
        "\(text.count) character\(text.count == 1 ? "" : "s")"
    }

    /// An action not yet in a feed (`seq` is given by `ActionFeed.publish`).
    public init(
        display: String?, source: String, action: String, x: Int? = nil, y: Int? = nil, detail: String? = nil,
        time: Date = Date()
    ) {
        (seq, self.display, self.source, self.action, self.x, self.y) = (0, display, source, action, x, y)
        self.detail = detail.map { $0.count > 120 ? String($0.prefix(119)) + "…" : $0 }
        time_ms = Int64((time.timeIntervalSince1970 * 1000).rounded())
    }
}

/// The actions done on the screens, newest last, for every page watching: a bounded ring (a page left open for
/// hours keeps the daemon's memory flat) and a stream per subscriber.
public final class ActionFeed: Sendable {
    /// How many recent actions are kept for a page that opens or reconnects.
    public static let capacity = 200

    private struct State {
        var next = 1
        var recent: [WebAction] = []
        var subscribers: [Int: AsyncStream<WebAction>.Continuation] = [:]
        var nextSubscriber = 0
    }
    private let state = Mutex(State())

    /// An empty feed.
    public init() {}

    /// Adds an action and hands it to every subscriber.
    public func publish(_ action: WebAction) {
        let (numbered, subscribers) = state.withLock { state -> (WebAction, [AsyncStream<WebAction>.Continuation]) in
            var numbered = action
            numbered.seq = state.next
            state.next += 1
            state.recent.append(numbered)
            if state.recent.count > Self.capacity { state.recent.removeFirst(state.recent.count - Self.capacity) }
            return (numbered, Array(state.subscribers.values))
        }
        for subscriber in subscribers { subscriber.yield(numbered) }
    }

    /// The kept actions after `seq`.
    public func recent(after seq: Int = 0) -> [WebAction] {
        state.withLock { $0.recent.filter { $0.seq > seq } }
    }

    /// A stream of the actions published from now on; it ends when `cancel` is called. A slow reader loses the
    /// oldest of what it has not read (at most `capacity` wait for it), never the daemon's memory.
    public func subscribe() -> (stream: AsyncStream<WebAction>, cancel: @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: WebAction.self, bufferingPolicy: .bufferingNewest(Self.capacity))
        let id = state.withLock { state in
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[id] = continuation
            return id
        }
        let cancel: @Sendable () -> Void = { [weak self] in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            continuation.finish()
        }
        continuation.onTermination = { _ in cancel() }
        return (stream, cancel)
    }

    /// How many pages watch now.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}

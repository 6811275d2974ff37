import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization
import XclawBase
import XclawScreen

/// `/ws/screen?display=:N`: a display's live screen and the actions done on it. Text messages are JSON:
/// `{"type": "hello", "display", "width", "height"}` first, `{"type": "frame", "width", "height", "time_ms", "seq"}`
/// before each frame, `{"type": "action", …WebAction}` for each action on this display (the recent ones first),
/// `{"type": "error", "error"}` when the display cannot be read. Binary messages are the frames, JPEG.
///
/// The screen is looked at every 40 ms on a thread of its own (X calls block); a frame is sent only when the
/// pixels changed, so an unchanged screen costs one compare and sends nothing; a slow page gets the newest frame,
/// not a queue of old ones.
struct ScreenSocket: Sendable {
    let feed: ActionFeed
    /// The widest frame sent; wider screens are scaled down (area average) to it.
    static let maximumWidth = 1920
    /// How often the screen is looked at.
    static let interval: Duration = .milliseconds(40)

    /// The most screens watched at once (each is a capture thread, an X connection and two frames).
    static let maximumWatchers = 8
    private let watching = WatcherCount()

    func add<Context: WebSocketRequestContext>(to router: Router<Context>) {
        let feed = feed
        let watching = watching
        router.ws("/ws/screen", shouldUpgrade: { request, _ in .upgrade(WebAccess.upgradeHeaders(request)) }) {
            inbound, outbound, context in
            let requested = context.request.uri.queryParameters.get("display").map { String($0) }
            let display: String
            do { display = try DisplayConnection.resolveName(requested) } catch {
                try await outbound.write(.text(WebResponses.text(["type": "error", "error": "\(error)"])))
                return
            }
            // A display of this machine only (":N" or ":N.S"): a name with a host would open a connection elsewhere.
            guard Self.isLocalDisplay(display) else {
                try await outbound.write(
                    .text(
                        WebResponses.text([
                            "type": "error", "error": "\(display) is not a display of this machine (:N)",
                        ])))
                return
            }
            guard watching.enter() else {
                try await outbound.write(
                    .text(
                        WebResponses.text([
                            "type": "error",
                            "error": "\(Self.maximumWatchers) screens are watched already: close a screen page",
                        ])))
                return
            }
            defer { watching.leave() }
            let watcher = ScreenWatcher(display: display)
            let (frames, stop) = watcher.start()
            let (actions, unsubscribe) = feed.subscribe()
            defer {
                stop()
                unsubscribe()
            }
            let writer = Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await event in frames {
                            switch event {
                            case .hello(let size):
                                try? await outbound.write(
                                    .text(
                                        WebResponses.text([
                                            "type": "hello", "display": display, "width": size.width,
                                            "height": size.height,
                                        ])))
                                for action in feed.recent() where Self.sameDisplay(action.display, display) {
                                    try? await outbound.write(.text(Self.action(action)))
                                }
                            case .frame(let jpeg, let width, let height, let time, let seq):
                                try? await outbound.write(
                                    .text(
                                        WebResponses.text([
                                            "type": "frame", "width": width, "height": height, "time_ms": time,
                                            "seq": seq,
                                        ])))
                                try? await outbound.writeBinaryMessage(ByteBuffer(bytes: jpeg))
                                watcher.delivered()
                            case .failed(let why):
                                try? await outbound.write(.text(WebResponses.text(["type": "error", "error": why])))
                            }
                        }
                    }
                    group.addTask {
                        for await action in actions where Self.sameDisplay(action.display, display) {
                            try? await outbound.write(.text(Self.action(action)))
                        }
                    }
                }
            }
            // Until the page goes: what it sends is ignored.
            for try await _ in inbound.messages(maxSize: 1 << 16) {}
            writer.cancel()
        }
    }

    /// Whether `name` is a display of this machine's X server (`:N`, `:N.S`, `unix:N`).
    static func isLocalDisplay(_ name: String) -> Bool { DisplayConnection.isLocal(name) }

    /// Whether an action's display is this one (":1" and ":1.0" are).
    static func sameDisplay(_ a: String?, _ b: String) -> Bool {
        guard let a else { return true }
        func bare(_ name: String) -> String {
            var name = name.hasPrefix("unix:") ? String(name.dropFirst(5)) : name
            if name.hasPrefix("localhost:") { name = String(name.dropFirst(9)) }
            if let dot = name.lastIndex(of: "."), let colon = name.lastIndex(of: ":"), dot > colon {
                name = String(name[..<dot])
            }
            return name
        }
        return bare(a) == bare(b)
    }

    static func action(_ action: WebAction) -> String {
        guard let data = try? JSONEncoder().encode(action),
            var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return "{}" }
        object["type"] = "action"
        return WebResponses.text(object)
    }

}

/// Looks at one display on a thread of its own and hands on each changed frame as JPEG.
final class ScreenWatcher: Sendable {
    enum Event: Sendable {
        case hello(Size)
        case frame(jpeg: [UInt8], width: Int, height: Int, time_ms: Int64, seq: Int)
        case failed(String)
    }

    private let display: String
    private let stopped = Atomic<Bool>(false)
    /// Frames handed on and not yet written to the page: a slow page gets fewer frames, never a queue of them.
    private let pending = Atomic<Int>(0)

    init(display: String) { self.display = display }

    /// Starts looking; the stream ends when the display is lost or `stop` is called.
    func start() -> (AsyncStream<Event>, @Sendable () -> Void) {
        // Unbounded, but the thread hands on a frame only while fewer than two wait (`pending`): the hello is never
        // dropped, and the stream holds at most two frames.
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let display = display
        Thread { [self] in
            defer { continuation.finish() }
            do {
                let connection = try DisplayConnection(name: display, localOnly: true)
                let capturer = try ScreenCapturer(connection: connection)
                continuation.yield(.hello(try connection.screenSize()))
                var last: Frame?
                var seq = 0
                while !self.stopped.load(ordering: .relaxed) {
                    let began = ContinuousClock.now
                    if self.pending.load(ordering: .relaxed) >= 2 {
                        Thread.sleep(forTimeInterval: ScreenSocket.interval / .seconds(1))
                        continue
                    }
                    let frame = try capturer.capture()
                    if last.map({ !$0.hasSameBytes(as: frame) || $0.size != frame.size }) ?? true {
                        last = frame
                        seq += 1
                        let time = Int64((Date().timeIntervalSince1970 * 1000).rounded())
                        var sent = frame
                        if frame.width > ScreenSocket.maximumWidth {
                            let height = frame.height * ScreenSocket.maximumWidth / frame.width
                            sent = try frame.downscaled(to: Size(width: ScreenSocket.maximumWidth, height: height))
                        }
                        let jpeg = try JPEG.encode(sent, quality: 75)
                        self.pending.add(1, ordering: .relaxed)
                        continuation.yield(
                            .frame(jpeg: jpeg, width: frame.width, height: frame.height, time_ms: time, seq: seq))
                    }
                    let spent = ContinuousClock.now - began
                    if spent < ScreenSocket.interval {
                        Thread.sleep(forTimeInterval: (ScreenSocket.interval - spent) / .seconds(1))
                    }
                }
            } catch {
                continuation.yield(.failed("cannot watch \(display): \(error)"))
            }
        }.start()
        return (stream, { self.stopped.store(true, ordering: .relaxed) })
    }

    /// A frame was written to the page.
    func delivered() { pending.subtract(1, ordering: .relaxed) }
}

/// How many screens are watched, against `ScreenSocket.maximumWatchers`.
final class WatcherCount: Sendable {
    private let count = Atomic<Int>(0)

    /// Takes a place; false when all are taken.
    func enter() -> Bool {
        if count.add(1, ordering: .relaxed).newValue > ScreenSocket.maximumWatchers {
            count.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Gives it back.
    func leave() { count.subtract(1, ordering: .relaxed) }
}

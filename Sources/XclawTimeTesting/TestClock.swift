import Synchronization

/// A clock for tests of timing logic: its time moves only when something sleeps on it (the sleeper's deadline is
/// reached at once) or the test advances it. Every sleep is recorded, so a test can check a backoff schedule or a
/// polling interval exactly, without waiting for real.
public final class TestClock: Clock, Sendable {
    /// A point on the test clock: the time since it started.
    public struct Instant: InstantProtocol, Sendable, Hashable {
        /// Time since the clock's start.
        public var offset: Duration

        /// This instant moved by `duration`.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }

        /// Earlier first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = Mutex((now: Instant(offset: .zero), sleeps: [Duration]()))

    /// A clock at its start.
    public init() {}

    /// The current test time.
    public var now: Instant { state.withLock { $0.now } }

    /// Sleeps are exact.
    public var minimumResolution: Duration { .zero }

    /// Every sleep asked for so far (from the time of the call to its deadline), in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Jumps to `deadline` (if it is later) without waiting; a cancelled task throws first, as a real sleep does.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        state.withLock {
            $0.sleeps.append($0.now.duration(to: deadline))
            if $0.now < deadline { $0.now = deadline }
        }
        await Task.yield()
    }

    /// Moves time forward, as if `duration` passed while nobody slept.
    public func advance(by duration: Duration) {
        state.withLock { $0.now = $0.now.advanced(by: duration) }
    }
}

import Foundation
import XclawPolling
import XclawScreen
import XclawTimeTesting

/// A test clock for code that waits for the screen to settle, against an animation: every pause lasts, in real time,
/// until `area` shows a frame other than the one at the last pause (10 s at most), then moves test time to the
/// pause's end. The animation then changes between any two looks however loaded the machine: a fixture that flips
/// every 40 ms once sat still for longer than a 100 ms quiet period, and the settler rightly called that settled.
public final class AnimationClock: Clock, @unchecked Sendable {
    /// Test time.
    public typealias Instant = TestClock.Instant
    private let base = TestClock()
    private let capturer: ScreenCapturer
    private let area: Rect
    // Safe: only the one waiter on this clock reads and writes it, one pause at a time.
    private var last: [UInt8]?

    /// A clock for a waiter on `area`, captured through `capturer`.
    public init(capturer: ScreenCapturer, area: Rect) {
        (self.capturer, self.area) = (capturer, area)
    }

    /// The test time.
    public var now: Instant { base.now }

    /// Pauses are exact in test time.
    public var minimumResolution: Duration { .zero }

    /// Waits for a new frame in `area`, then jumps test time to `deadline`.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let seen = last
        last = poll(within: .seconds(10), every: .milliseconds(5)) { () -> [UInt8]? in
            guard let frame = try? capturer.capture(area) else { return nil }
            let bytes = Array(frame.bgrx)
            return bytes != seen ? bytes : nil
        }
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}

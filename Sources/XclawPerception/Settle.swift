import CXclawShim
import Foundation
import XclawBase
import XclawScreen

/// How a settle ended. The last frame is kept so a screenshot taken right after settling costs no extra capture.
public struct SettleResult: Sendable {
    /// The last frame captured: of `area`, which is the whole screen unless a region was given.
    public var frame: Frame
    /// The area `frame` shows, in screen pixels.
    public var area: Rect
    /// Milliseconds from the first capture until the screen counted as settled (or the timeout).
    public var elapsedMs: Double
    /// Frames captured and compared.
    public var polls: Int
    /// True when the screen was still changing at the timeout; `frame` is then the latest state, not a stable one.
    public var timedOut: Bool
    /// True when any two consecutive frames differed: the action visibly did something while we watched.
    public var changed: Bool
}

/// Waits, after an action, until the screen stops changing, instead of sleeping a fixed time: it polls the screen
/// every `interval` and returns once the pixels hashed the same for `quiet`. On a static 1080p screen that is about
/// three polls (~30 ms) where the reference demo slept 2 s; a busy screen is bounded by `timeout`.
public struct Settler: Sendable {
    /// Time between polls: short, because each poll (capture + hash) is cheap and the budget is per action.
    public var interval: Duration
    /// How long the pixels must stay unchanged to count as settled.
    public var quiet: Duration
    /// Upper bound for screens that never settle (animations, a blinking cursor in the area).
    public var timeout: Duration
    /// What time is measured and waited on: the real clock, or a test clock for the timing logic.
    public var clock: any Clock<Duration>
    /// Where frames come from: the screen, or a fixed sequence.
    private let frames: @Sendable (Rect?) throws -> Frame

    /// Creates a settler; the defaults keep a static screen's overhead under 50 ms at 1080p.
    public init(
        capturer: ScreenCapturer, interval: Duration = .milliseconds(8), quiet: Duration = .milliseconds(24),
        timeout: Duration = .seconds(3), clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.interval = interval
        self.quiet = quiet
        self.timeout = timeout
        self.clock = clock
        frames = { try capturer.capture($0) }
    }

    /// A settler over any source of frames (a fixed sequence, in tests of the timing logic).
    public init(
        frames: @escaping @Sendable (Rect?) throws -> Frame, interval: Duration = .milliseconds(8),
        quiet: Duration = .milliseconds(24), timeout: Duration = .seconds(3),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.interval = interval
        self.quiet = quiet
        self.timeout = timeout
        self.clock = clock
        self.frames = frames
    }

    /// Polls `area` (nil: the whole screen) until its pixels are unchanged for `quiet` or `timeout` passes. A
    /// timeout is reported in the result, not thrown: the caller still wants the latest frame.
    public func settle(area: Rect? = nil) throws -> SettleResult {
        let clock = self.clock  // a local, so the existential opens for the generic call
        return try poll(area: area, on: clock)
    }

    private func poll<C: Clock<Duration>>(area: Rect?, on clock: C) throws -> SettleResult {
        let start = clock.now
        var frame = try frames(area)
        var last = Self.hash(frame)
        var lastChange = start
        var polls = 1
        var changed = false
        let region = area ?? Rect(size: frame.size)
        let deadline = start.advanced(by: timeout)
        while true {
            let now = clock.now
            if start.duration(to: now) >= timeout {
                return SettleResult(
                    frame: frame, area: region, elapsedMs: start.duration(to: now).milliseconds,
                    polls: polls, timedOut: true, changed: changed)
            }
            // Sleep one interval, but not past the moment the quiet period would be over, nor past the deadline.
            let wake = min(now.advanced(by: interval), lastChange.advanced(by: quiet), deadline)
            ClockSleep.until(wake, on: clock)
            let taken = clock.now
            frame = try frames(area)
            polls += 1
            let hash = Self.hash(frame)
            if hash != last {
                last = hash
                lastChange = taken
                changed = true
            } else if lastChange.duration(to: taken) >= quiet {
                // Unchanged from `lastChange` up to this capture: settled.
                return SettleResult(
                    frame: frame, area: region, elapsedMs: start.duration(to: clock.now).milliseconds,
                    polls: polls, timedOut: false, changed: changed)
            }
        }
    }

    /// A content hash of a frame's pixels, for cheap "did anything change" checks (not cryptographic).
    public static func hash(_ frame: Frame) -> UInt64 {
        frame.bgrx.withUnsafeBufferPointer {
            xclaw_hash_gray($0.baseAddress, Int32(frame.width * 4), 0, 0, Int32(frame.width * 4), Int32(frame.height))
        }
    }
}

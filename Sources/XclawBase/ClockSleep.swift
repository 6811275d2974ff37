import Dispatch
import Foundation

/// Waiting on an injected clock from synchronous code (the settler and the watcher run on dispatch threads and the
/// main thread, never on the concurrency pool). The real clock sleeps the thread directly; any other clock (a test
/// clock) is awaited through a task, so its sleeps take no real time.
public enum ClockSleep {
    /// Blocks the calling thread until `deadline` on `clock`. Must not be called from the concurrency pool when
    /// `clock` is not a `ContinuousClock` (the wait would hold a pool thread).
    public static func until<C: Clock<Duration>>(_ deadline: C.Instant, on clock: C) {
        let left = clock.now.duration(to: deadline)
        guard left > .zero else { return }
        if clock is ContinuousClock || clock is SuspendingClock {
            Thread.sleep(forTimeInterval: left.seconds)
            return
        }
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox(clock)
        Task {
            try? await box.value.sleep(until: deadline, tolerance: nil)
            done.signal()
        }
        done.wait()
    }
}

/// Carries a clock into the task that awaits it.
/// Safe because the clock is only read by that one task while the caller waits for it.
private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

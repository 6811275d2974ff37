import Foundation

// The one wait of the tests and of their support code (the fixture's start, the oracles, the daemon's socket), so
// none sleeps a fixed time for what it can observe. Test code calls it through `eventually` (XclawTimeTesting),
// which also fails the test; support code that throws its own error, or a clean-up that kills on time out, calls
// `poll` directly. Free of XCTest, so the fixture and the benchmarks link it.

/// Checks `condition` every `every` until it gives a value, or `within` has passed on the wall clock (it is checked
/// once more at the deadline); nil when it never did. Sync, for the tests' threads and the support code's callers.
public func poll<T>(
    within: Duration, every: Duration = .milliseconds(20), _ condition: () throws -> T?
) rethrows -> T? {
    let clock = ContinuousClock()
    let deadline = clock.now + within
    while true {
        if let value = try condition() { return value }
        let left = clock.now.duration(to: deadline)
        guard left > .zero else { return nil }
        Thread.sleep(forTimeInterval: seconds(min(every, left)))
    }
}

/// `poll` for a condition that holds or not: whether it held within `within`.
@discardableResult
public func poll(within: Duration, every: Duration = .milliseconds(20), _ condition: () throws -> Bool) rethrows
    -> Bool
{
    try poll(within: within, every: every) { try condition() ? true : nil } ?? false
}

/// The async `poll`, pausing and measuring on `clock`: on the clock the code under test is given (a test clock),
/// each pause moves that code's time on, so its timers fire without real time passing; on the wall clock
/// (`.continuous`) it holds no thread. A cancelled task stops waiting (nil).
public func poll<T, C: Clock<Duration>>(
    within: Duration, every: Duration = .milliseconds(20), on clock: C, _ condition: () async throws -> T?
) async rethrows -> T? {
    let deadline = clock.now.advanced(by: within)
    while true {
        if let value = try await condition() { return value }
        let left = clock.now.duration(to: deadline)
        guard left > .zero, !Task.isCancelled else { return nil }
        try? await clock.sleep(for: min(every, left))
    }
}

/// A duration in seconds, for `Thread.sleep` and messages.
private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

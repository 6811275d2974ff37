import XCTest
@_exported import XclawPolling

// `eventually`: how a test waits for what it can observe (a window mapped, a line printed, a file written, a process
// gone), never a fixed sleep and never a loop of its own. It polls (`poll`) and fails the test, naming what it
// waited for and how long, when the wait runs out; the Bool or the value it returns lets the caller stop there.

/// Fails the test unless `condition` holds within `within`, checked every `every`; whether it held.
@discardableResult
public func eventually(
    _ what: @autoclosure () -> String, within: Duration = .seconds(10), every: Duration = .milliseconds(20),
    file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> Bool
) rethrows -> Bool {
    try eventually(what(), within: within, every: every, file: file, line: line) { try condition() ? true : nil }
        ?? false
}

/// The value `condition` gives within `within`, for a test that goes on with it; nil after failing the test.
@discardableResult
public func eventually<T>(
    _ what: @autoclosure () -> String, within: Duration = .seconds(10), every: Duration = .milliseconds(20),
    file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> T?
) rethrows -> T? {
    let value = try poll(within: within, every: every, condition)
    if value == nil { XCTFail("\(what()): not within \(within)", file: file, line: line) }
    return value
}

/// The async `eventually`, for async tests and conditions, waiting on `clock`: the test clock the code under test
/// waits on moves by each pause (so that code's timers fire at once); on the wall clock (`.continuous`) it never
/// blocks a pool thread. The clock is always named: an async test's sync condition would pick the sync one.
@discardableResult
public func eventually<C: Clock<Duration>>(
    _ what: @autoclosure () -> String, within: Duration = .seconds(10), every: Duration = .milliseconds(20),
    on clock: C, file: StaticString = #filePath, line: UInt = #line,
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let held = try await poll(within: within, every: every, on: clock) { try await condition() ? true : nil }
    if held == nil {
        let time = C.self == ContinuousClock.self ? "" : " of \(C.self) time"
        XCTFail("\(what()): not within \(within)\(time)", file: file, line: line)
    }
    return held ?? false
}

import Foundation

extension BusConnection {
    /// The first message subscribed to for which `matches` holds (others are dropped), waiting at most `timeout` in
    /// all: how a caller waits for the signal that ends what it asked for (a job's `JobRemoved`, a request's
    /// `Response`). Nil when none came in time.
    public func next(within timeout: Duration, where matches: (BusMessage) -> Bool) throws -> BusMessage? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero, let message = try next(timeout: left) else { return nil }
            if matches(message) { return message }
        }
    }
}

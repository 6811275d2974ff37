import Dispatch
import Synchronization

/// Runs async work from synchronous commands, which run on the main thread, outside the concurrency pool.
public enum Blocking {
    /// Starts `body` and returns its task (to cancel it) and a function that waits for its value.
    public static func start<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> (Task<Void, Never>, () -> T) {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            box.value = await body()
            done.signal()
        }
        return (
            task,
            {
                done.wait()
                // The task stored the value before signalling.
                guard let value = box.value else { preconditionFailure("a finished task left no value") }
                return value
            }
        )
    }

    /// Runs throwing async work to completion.
    public static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let (_, wait) = start { () async -> Result<T, any Error> in
            do { return .success(try await body()) } catch { return .failure(error) }
        }
        return try wait().get()
    }
}

/// A value handed across threads under a lock.
public final class ResultBox<T: Sendable>: Sendable {
    private let stored = Mutex<T?>(nil)

    /// An empty box.
    public init() {}

    /// The value, read and written under the lock.
    public var value: T? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

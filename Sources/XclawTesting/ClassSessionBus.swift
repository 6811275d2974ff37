import Foundation

/// One `TestSessionBus` for a whole test class: started by the first test that asks for it and ended by the class's
/// `tearDown`, so services the bus starts on demand (evolution-data-server's factories) start once per class, not
/// once per test. Tests that share it must not share data (their own days, names and keys).
public final class ClassSessionBus: @unchecked Sendable {
    // Safe because `bus` is only read and written under `lock`.
    private let lock = NSLock()
    private var bus: TestSessionBus?
    private let activation: TestSessionBus.Activation

    /// A bus of `activation`, not yet started.
    public init(activation: TestSessionBus.Activation) { self.activation = activation }

    /// The bus, started on first use.
    public func get() throws -> TestSessionBus {
        try lock.withLock {
            if let bus { return bus }
            let started = try TestSessionBus(activation: activation)
            bus = started
            return started
        }
    }

    /// Ends the bus and what it started (a later `get` starts another).
    public func stop() {
        let ending = lock.withLock { () -> TestSessionBus? in
            defer { bus = nil }
            return bus
        }
        ending?.stop()
    }
}

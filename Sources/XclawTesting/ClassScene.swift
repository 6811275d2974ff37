import Foundation

/// What a test class's services scene can do: end everything it started.
public protocol StoppableScene: AnyObject {
    /// Ends what the scene started.
    func stop()
}

/// A scene (a bus, its daemons, a display) for a whole test class: started by the first test that asks for it and
/// ended by the class's `tearDown`, so the daemons start once per class. A scene that could not start fails each test
/// that asks for it with the reason.
public final class ClassScene<Scene: StoppableScene>: @unchecked Sendable {
    // Safe because `started` is only read and written under `lock`.
    private let lock = NSLock()
    private var started: Result<Scene, any Error>?
    private let make: @Sendable () throws -> Scene

    /// A scene `make` starts on first use.
    public init(_ make: @escaping @Sendable () throws -> Scene) { self.make = make }

    /// The scene, started on first use (or the reason it could not start).
    public func get() throws -> Scene {
        try lock.withLock {
            if let started { return try started.get() }
            let result = Result { try make() }
            started = result
            return try result.get()
        }
    }

    /// Ends the scene, if it started (a later `get` starts another).
    public func stop() {
        let ending = lock.withLock { () -> Scene? in
            defer { started = nil }
            return try? started?.get()
        }
        ending?.stop()
    }
}

import Synchronization

/// A cancellation flag any thread can read: tools run their blocking X work on dispatch threads, where
/// `Task.isCancelled` is always false, so the registry sets this when the run's task is cancelled.
public final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)
    /// A flag not yet set.
    public init() {}
    /// Marks it cancelled.
    public func set() { value.store(true, ordering: .releasing) }
    /// Whether it was set.
    public var isSet: Bool { value.load(ordering: .acquiring) }
}

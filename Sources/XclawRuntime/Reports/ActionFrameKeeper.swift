import Dispatch
import Foundation
import Synchronization
import XclawAgent
import XclawStore

/// Keeps the frame each tool call of a run acted on in the store (`action_frames`, the image once in `images`), so
/// the run's report draws every action on the screen it acted on, also when the model never took a screenshot. Frames
/// are encoded and written on a queue of their own, in order, while the model thinks: an action never waits for one.
final class ActionFrameKeeper: ActionFrameSink {
    private let store: any RunStore
    private let session: Int64
    /// The calls a frame was handed over for: one each.
    private let kept = Mutex<Set<String>>([])
    /// Encodes and writes the frames, one at a time.
    private let queue = DispatchQueue(label: "xclaw.action-frames", qos: .utility)

    /// A keeper for `session`.
    init(store: any RunStore, session: Int64) { (self.store, self.session) = (store, session) }

    /// True until a frame of call `id` was handed over.
    func wants(call id: String) -> Bool { !kept.withLock { $0.contains(id) } }

    /// Encodes and stores the frame on the keeper's queue; a frame that cannot be encoded or stored is lost, never
    /// the run (its report then says no frame was stored).
    func keep(call id: String, image: @escaping @Sendable () throws -> (mediaType: String, data: Data)) {
        guard kept.withLock({ $0.insert(id).inserted }) else { return }
        let (store, session) = (self.store, self.session)
        queue.async {
            guard let encoded = try? image() else { return }
            try? store.recordActionFrame(session: session, call: id, mediaType: encoded.mediaType, data: encoded.data)
        }
    }

    /// Returns once every frame handed over so far is stored: the run's report is written after it.
    func flush() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }
}

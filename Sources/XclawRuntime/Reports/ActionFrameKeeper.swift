import Foundation
import Synchronization
import XclawAgent
import XclawStore

/// Keeps the frame each tool call of a run acted on in the store (`action_frames`, the image once in `images`), so
/// the run's report draws every action on the screen it acted on, also when the model never took a screenshot.
final class ActionFrameKeeper: ActionFrameSink {
    private let store: any RunStore
    private let session: Int64
    /// The calls a frame was kept for: one each.
    private let kept = Mutex<Set<String>>([])

    /// A keeper for `session`.
    init(store: any RunStore, session: Int64) { (self.store, self.session) = (store, session) }

    /// True until a frame of call `id` was kept.
    func wants(call id: String) -> Bool { !kept.withLock { $0.contains(id) } }

    /// Stores the frame; a store that refuses loses the frame, never the run (its report then says so).
    func keep(_ frame: ActionFrame) {
        guard kept.withLock({ $0.insert(frame.callID).inserted }) else { return }
        try? store.recordActionFrame(
            session: session, call: frame.callID, mediaType: frame.mediaType, data: frame.data)
    }
}

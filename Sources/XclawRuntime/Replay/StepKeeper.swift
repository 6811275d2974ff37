import Foundation
import Synchronization
import XclawAgent
import XclawStore

/// Stores a run's input actions as replayable steps, in order; typed text found in the run's prompt becomes a named
/// parameter (`p1`, `p2`, …; one name per distinct text), so a replay can type another value.
final class StepKeeper: Sendable {
    private let store: any RunStore
    private let session: Int64
    private let prompt: String
    private let state = Mutex<(count: Int, parameters: [String: String])>((0, [:]))

    /// A keeper for `session`, whose input was `prompt`.
    init(store: any RunStore, session: Int64, prompt: String) {
        (self.store, self.session, self.prompt) = (store, session, prompt)
    }

    /// Names the step's parameter and stores it; a store that refuses loses the step, never the run.
    @Sendable func keep(_ step: RecordedStep) {
        var step = step
        let seq = state.withLock { state -> Int in
            if [.type, .typeSubmit].contains(step.action), let typed = step.text, typed.count >= 2,
                prompt.contains(typed)
            {
                let name = state.parameters[typed] ?? "p\(state.parameters.count + 1)"
                state.parameters[typed] = name
                step.parameter = name
            }
            // A label showing a parameter's recorded value is no postcondition: a replay given another value never
            // shows it (and the step that closes a dialog may catch its field still drawn, caret and all).
            let values = state.parameters.keys.map { $0.lowercased() }
            step.post.appeared.removeAll { label in values.contains { label.lowercased().contains($0) } }
            state.count += 1
            return state.count
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(step) else { return }
        try? store.recordActionStep(session: session, seq: seq, json: String(decoding: data, as: UTF8.self))
    }
}

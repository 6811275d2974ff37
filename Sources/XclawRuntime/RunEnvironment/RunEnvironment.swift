import Foundation
import XclawStore

/// What one run works in: its agent's config with the display it really uses (a private display's `:N`), and what
/// to end when the run is over, however it ends.
public struct RunEnvironment: Sendable {
    /// The config the run's tools and prompt are built from.
    public var config: AgentConfig
    /// Ends what was started for the run (its display, what its setup command left running); called once.
    public var tearDown: @Sendable () -> Void

    /// A run in `config` as it is; `tearDown` ends what was started for it.
    public init(config: AgentConfig, tearDown: @escaping @Sendable () -> Void = {}) {
        self.config = config
        self.tearDown = tearDown
    }
}

/// Prepares each run's environment from the agent's `display` and `setup`, or from the scheduled task the batch came
/// from (its own display and setup override the agent's): a private display per run (`new[:WxH]`) and the setup
/// command through `RunDisplay`. What `AgentService` calls before it builds a run's tools.
public struct RunEnvironments: Sendable {
    /// Where the tasks are looked up.
    public let store: any StoreBackend
    /// How long a setup command may run.
    public var setupTimeout: Duration

    /// Environments for the runs of agents in `store`.
    public init(store: any StoreBackend, setupTimeout: Duration = RunDisplay.defaultSetupTimeout) {
        self.store = store
        self.setupTimeout = setupTimeout
    }

    /// The task whose run this batch is: the sender `schedule:NAME` of its last scheduled message (`send --sender
    /// schedule:NAME`, as the daemon's scheduler and `schedule run-now` send it), NAME being the task's name or id.
    public static func taskLabel(of batch: ClaimedBatch) -> String? {
        let prefix = "schedule:"
        guard let sender = batch.pending.last(where: { $0.sender?.hasPrefix(prefix) == true })?.sender else {
            return nil
        }
        return String(sender.dropFirst(prefix.count))
    }

    /// The run's config with its task's overrides, its private display started and its setup command run; a run
    /// that needs neither is given `config` as it is. A task removed since it fired counts as no task.
    public func prepare(_ config: AgentConfig, batch: ClaimedBatch) async throws -> RunEnvironment {
        var config = config
        var setup = config.setup
        if let label = Self.taskLabel(of: batch), let task = try? store.task(label), task.agent == config.name {
            if let display = task.display { config.display = display }
            if let taskSetup = task.setup { setup = taskSetup }
        }
        guard try RunDisplay.isNeeded(display: config.display, setup: setup) else {
            return RunEnvironment(config: config)
        }
        let display = try await RunDisplay.prepare(display: config.display, setup: setup, setupTimeout: setupTimeout)
        config.display = display.name
        return RunEnvironment(config: config, tearDown: { display.tearDown() })
    }
}

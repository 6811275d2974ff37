import Foundation
import XclawMessages

/// A named agent's settings: what `xclaw agent create` writes and every run of that agent starts from.
public struct AgentConfig: Sendable, Hashable, Codable {
    /// The agent's unique name, 1–64 characters of `[A-Za-z0-9._-]`, so it is safe in paths and shell commands.
    public var name: String
    /// The model id (or alias) its runs ask for.
    public var model: String
    /// Extra system-prompt text, appended to xclaw's own.
    public var systemPrompt: String
    /// The tool names its runs enable, in order.
    public var tools: [String]
    /// The X display its runs drive (e.g. `:1`); nil means the caller's `$DISPLAY`.
    public var display: String?
    /// Free-form notes the agent keeps across runs (the `memory` table holds keyed facts).
    public var memoryNotes: String
    /// When it was created; kept to the millisecond, as stored. `updateAgent` never changes it.
    public var createdAt: Date
    /// Its runs plan and log only: input tools inject nothing (a call may override it).
    public var dryRun: Bool = false
    /// Its runs ask on the terminal before every input action (a call may override it).
    public var confirm: Bool = false
    /// The kinds of action its runs must have approved (`all`, `none`, or a list); nil: the config file's
    /// `approval`, else all. Written by `AgentStore.setApproval`, not by `updateAgent`.
    /// The message id its conversation starts after (`agent reset`); 0: from the start.
    public var contextFrom: Int64 = 0
    /// Its effort level (`output_config.effort`); nil: the model's default.
    public var effort: String? = nil
    /// Its thinking setting (`auto`, `on`, `off`); nil: the config file's, else auto.
    public var thinking: String? = nil
    public var approval: String? = nil
    /// What the agent is: a plain agent, an orchestrator (its pipelines delegate), or one of a pipeline's own.
    public var kind: AgentKind = .agent
    /// A shell command each run starts with (`/bin/sh -c`, `DISPLAY` set to the run's display), e.g. to open the
    /// app it works on; nil: none. What it leaves running is ended with the run.
    public var setup: String?
    /// Made for one `xclaw run` (`run-<time>-<pid>`): kept with its history, but left out of agent lists unless
    /// they are asked for all (`agents --all`, the web view's "all").
    public var oneShot: Bool = false
    /// The bus names its `dbus_call` tool may reach (comma-separated well-known names or `family.*`); nil: none, so
    /// the generic call stays off. Written by `AgentStore.setBusAllow`, not by `updateAgent`.
    public var dbusAllow: String? = nil

    /// snake_case, as every xclaw JSON output (`agents --json`, `agent create --json`).
    enum CodingKeys: String, CodingKey {
        case name, model, tools, display, confirm, effort, thinking, approval, kind, setup
        case oneShot = "one_shot"
        case dbusAllow = "dbus_allow"
        case systemPrompt = "system_prompt"
        case memoryNotes = "memory_notes"
        case createdAt = "created_at"
        case dryRun = "dry_run"
        case contextFrom = "context_from"
    }

    /// Creates a configuration; `createdAt` is rounded to the millisecond so it survives a round trip unchanged.
    public init(
        name: String, model: String, systemPrompt: String = "", tools: [String] = [],
        display: String? = nil, memoryNotes: String = "", createdAt: Date = Date(), dryRun: Bool = false,
        confirm: Bool = false
    ) {
        self.dryRun = dryRun
        self.confirm = confirm
        self.name = name
        self.model = model
        self.systemPrompt = systemPrompt
        self.tools = tools
        self.display = display
        self.memoryNotes = memoryNotes
        self.createdAt = StoreDate.normalized(createdAt)
    }

    /// True when `name` can name an agent, so callers can check input before touching the database.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count) else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
        }
    }
}

/// What an agent is; stored as its raw value.
public enum AgentKind: String, Sendable, Codable, CaseIterable {
    /// An agent a person talks to.
    case agent
    /// An agent whose pipelines (`xclaw pipeline`) split a task into delegated subtasks.
    case orchestrator
    /// One of a pipeline's own agents (its orchestrator's run, or a delegated subtask), kept out of `xclaw agents`.
    case pipeline
}

/// How far a stored message got, so a crash or cancel mid-stream is visible instead of looking complete.
public enum MessageStatus: String, Sendable, Codable, CaseIterable {
    /// Written whole.
    case complete
    /// Still streaming, or its process died while it streamed.
    case partial
    /// The request that produced it failed.
    case error
    /// The user cancelled it mid-stream.
    case cancelled
}

/// One row of an agent's conversation, with the row id that serves as its cursor position.
public struct StoredMessage: Sendable, Hashable {
    /// The monotonic row id: strictly increasing per database, never reused, the cursor's unit.
    public var id: Int64
    /// The agent whose conversation it belongs to.
    public var agent: String
    /// Who wrote it.
    public var role: MessageRole
    /// Who sent a user message (a person's name, `schedule`…), for the batch prompt's `sender=`; nil if unknown.
    public var sender: String?
    /// The API content blocks.
    public var content: [ContentBlock]
    /// How far it got.
    public var status: MessageStatus
    /// The session that wrote it, if any.
    public var sessionID: Int64?
    /// When it was appended.
    public var createdAt: Date
    /// When its content or status last changed.
    public var updatedAt: Date

    /// Creates a row value (the store creates these; tests and callers may too).
    public init(
        id: Int64, agent: String, role: MessageRole, sender: String?, content: [ContentBlock],
        status: MessageStatus, sessionID: Int64?, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.agent = agent
        self.role = role
        self.sender = sender
        self.content = content
        self.status = status
        self.sessionID = sessionID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The API message, to rebuild a conversation from stored rows.
    public var message: Message { Message(role: role, content: content) }
}

/// An agent's processing position, persisted so a restart neither loses nor repeats input.
public struct AgentState: Sendable, Hashable, Codable {
    /// The id of the last user message handed to a run; input is what comes after it.
    public var cursor: Int64
    /// Consecutive failed attempts at the pending input, for the retry backoff.
    public var retryCount: Int
    /// Why the last attempt failed, to tell the user; nil after a success.
    public var lastError: String?

    /// Creates a state.
    public init(cursor: Int64 = 0, retryCount: Int = 0, lastError: String? = nil) {
        self.cursor = cursor
        self.retryCount = retryCount
        self.lastError = lastError
    }
}

/// What started a session; stored as its raw value.
public enum SessionKind: String, Codable, Sendable, CaseIterable {
    /// A batch of queued messages.
    case message
    /// A scheduled task.
    case task
    /// `xclaw run`.
    case run
}

/// Where a session is; stored as its raw value. All but `running` are final.
public enum SessionStatus: String, Codable, Sendable, CaseIterable {
    /// Its process is running it.
    case running
    /// It ended normally.
    case completed
    /// It ended with an error.
    case failed
    /// The user stopped it.
    case cancelled
    /// Its process died while it ran (found at the next start).
    case interrupted
    /// An emergency stop ended it (`xclaw stop`, the stop hotkey, the corner failsafe).
    case stopped
    /// It waits for a person to approve or deny a gated action (`xclaw approve|deny`).
    case needsApproval = "needs-approval"

    /// True for every status a session ends in.
    public var isFinal: Bool { self != .running && self != .needsApproval }
}

/// One run of an agent (a message batch, a scheduled task or `xclaw run`), as recorded for `ps`-like listings and
/// crash recovery.
public struct SessionRecord: Sendable, Hashable, Codable {
    /// The monotonic session id.
    public var id: Int64
    /// The agent it ran.
    public var agent: String
    /// What started it.
    public var kind: SessionKind
    /// Where it is.
    public var status: SessionStatus
    /// Why it failed or was interrupted.
    public var error: String?
    /// Model turns taken.
    public var steps: Int
    /// Its cost in USD, as its runner reported when it ended.
    public var usd: Double
    /// The process that runs (or ran) it, so a dead process's session can be found.
    public var pid: Int32
    /// When it started.
    public var startedAt: Date
    /// When it ended; nil while running.
    public var endedAt: Date?
    /// Where its run report was written (`xclaw report`, or the daemon after a scheduled run); nil when none is kept.
    public var report: String?
    /// The model that answered its requests (recorded with its usage), for the report's header.
    public var model: String?
    /// What the replay did, when the run was a replay of a script; nil for an agent's run.
    public var replay: ReplaySummary? = nil
    /// The host whose process runs it (nil for sessions recorded before hosts were).
    public var host: String? = nil

    /// Creates a record value.
    public init(
        id: Int64, agent: String, kind: SessionKind, status: SessionStatus, error: String?, steps: Int, usd: Double,
        pid: Int32, startedAt: Date, endedAt: Date?, report: String? = nil, model: String? = nil
    ) {
        self.report = report
        self.model = model
        self.id = id
        self.agent = agent
        self.kind = kind
        self.status = status
        self.error = error
        self.steps = steps
        self.usd = usd
        self.pid = pid
        self.startedAt = startedAt
        self.endedAt = endedAt
    }
}

/// A replay's counts, kept with its session so `runs` and reports tell a replay from an agent's run.
public struct ReplaySummary: Sendable, Hashable, Codable {
    /// The script replayed: its file's path, or `run N` for a run's recorded steps.
    public var script: String
    /// The script's revision when it started (a healed script is saved as the next).
    public var revision: Int?
    /// Its steps.
    public var steps: Int
    /// Steps done without the model.
    public var replayed: Int
    /// Steps done after the model named their control's new label.
    public var healed: Int
    /// Steps that diverged (0 or 1: a replay stops at the first).
    public var failed: Int
    /// Steps whose input was sent, the failed one included when it failed after acting: a replay with none did
    /// nothing on the screen, so the agent may do the task instead.
    public var acted: Int = 0
    /// Model requests made while healing.
    public var requests: Int
    /// The 1-based step where it diverged, if it did.
    public var divergedStep: Int?
    /// Why it diverged.
    public var reason: String?

    /// snake_case, as every xclaw JSON output; named as `replay --json` names the same counts.
    enum CodingKeys: String, CodingKey {
        case script, revision, steps, replayed, healed, failed, acted, reason
        case requests = "model_requests"
        case divergedStep = "diverged_step"
    }

    /// Creates a summary.
    public init(
        script: String, revision: Int?, steps: Int, replayed: Int = 0, healed: Int = 0, failed: Int = 0,
        requests: Int = 0, divergedStep: Int? = nil, reason: String? = nil
    ) {
        (self.script, self.revision, self.steps, self.replayed, self.healed) = (
            script, revision, steps, replayed, healed
        )
        (self.failed, self.requests, self.divergedStep, self.reason) = (failed, requests, divergedStep, reason)
    }
}

/// An agent's token and cost totals, for `xclaw usage`.
public struct UsageSummary: Sendable, Hashable, Codable {
    /// The agent.
    public var agent: String
    /// Model requests recorded.
    public var requests: Int
    /// Summed token counts.
    public var usage: Usage
    /// Summed cost in USD.
    public var usd: Double
    /// Distinct sessions those requests belonged to.
    public var sessions: Int

    /// snake_case; a cost is `cost_usd` and runs are runs in every xclaw JSON output.
    enum CodingKeys: String, CodingKey {
        case agent, requests, usage
        case usd = "cost_usd"
        case sessions = "runs"
    }

    /// Creates a summary.
    public init(agent: String, requests: Int, usage: Usage, usd: Double, sessions: Int) {
        self.agent = agent
        self.requests = requests
        self.usage = usage
        self.usd = usd
        self.sessions = sessions
    }
}

/// One session with the tokens and cost its requests recorded, for a per-run cost breakdown.
public struct SessionUsage: Sendable, Hashable {
    /// The session.
    public var session: SessionRecord
    /// Model requests recorded for it.
    public var requests: Int
    /// Summed token counts.
    public var usage: Usage
    /// Summed cost in USD of its recorded requests.
    public var usd: Double

    /// Creates a row value.
    public init(session: SessionRecord, requests: Int, usage: Usage, usd: Double) {
        self.session = session
        self.requests = requests
        self.usage = usage
        self.usd = usd
    }
}

/// How a scheduled task repeats, as nanoclaw's `schedule_type`.
public enum TaskScheduleType: String, Sendable, Codable, CaseIterable {
    /// `schedule_value` is a cron expression, evaluated in the configured time zone.
    case cron
    /// `schedule_value` is an interval in milliseconds, anchored to the previous `next_run`.
    case interval
    /// `schedule_value` is one ISO-8601 time; the task completes after it ran.
    case once
}

/// Which conversation a task's run sees.
public enum TaskContextMode: String, Sendable, Codable, CaseIterable {
    /// A fresh conversation per run.
    case isolated
    /// The agent's own conversation, like a message from the user.
    case agent
}

/// What a scheduler does with slots that passed while no scheduler ran (the daemon was down).
public enum TaskCatchUp: String, Sendable, Codable, CaseIterable {
    /// Missed slots are dropped; the task fires at its next slot.
    case none
    /// One run for all the missed slots, then the schedule goes on.
    case once
}

/// Whether a task still fires.
public enum TaskStatus: String, Sendable, Codable, CaseIterable {
    /// Fires when due.
    case active
    /// Kept but does not fire.
    case paused
    /// A one-shot that already ran.
    case completed
}

/// A scheduled prompt for an agent (the scheduler's unit of work).
public struct TaskRecord: Sendable, Hashable, Codable {
    /// Its id (a UUID unless the caller chose one).
    public var id: String
    /// The agent it runs.
    public var agent: String
    /// The prompt each run sends.
    public var prompt: String
    /// How it repeats.
    public var scheduleType: TaskScheduleType
    /// The cron expression, interval in ms, or one-shot time.
    public var scheduleValue: String
    /// Which conversation a run sees.
    public var contextMode: TaskContextMode
    /// When it is next due; nil when it will not fire again.
    public var nextRun: Date?
    /// When it last ran.
    public var lastRun: Date?
    /// A short summary of the last run's outcome.
    public var lastResult: String?
    /// Whether it still fires.
    public var status: TaskStatus
    /// Which process claimed the current run, so a run never fires twice even across restarts.
    public var claimedBy: String?
    /// When that claim was taken.
    public var claimedAt: Date?
    /// When it was created.
    public var createdAt: Date
    /// A name people call it by, unique when given.
    public var name: String?
    /// The IANA time zone its cron expression and one-shot time are read in (nil: UTC).
    public var timeZone: String?
    /// What happens to slots missed while no scheduler ran.
    public var catchUp: TaskCatchUp
    /// The display its runs work on instead of the agent's (`new[:WxH]`: a private one per run); nil: the agent's.
    public var display: String?
    /// The setup command its runs start with instead of the agent's; nil: the agent's.
    public var setup: String?
    /// A script its runs replay first (an absolute path), the agent running only when it diverges; nil: none.
    public var replay: String? = nil

    /// Creates a record value.
    public init(
        id: String, agent: String, prompt: String, scheduleType: TaskScheduleType, scheduleValue: String,
        contextMode: TaskContextMode, nextRun: Date?, lastRun: Date? = nil, lastResult: String? = nil,
        status: TaskStatus = .active, claimedBy: String? = nil, claimedAt: Date? = nil,
        createdAt: Date = Date(), name: String? = nil, timeZone: String? = nil, catchUp: TaskCatchUp = .once
    ) {
        self.name = name
        self.timeZone = timeZone
        self.catchUp = catchUp
        self.id = id
        self.agent = agent
        self.prompt = prompt
        self.scheduleType = scheduleType
        self.scheduleValue = scheduleValue
        self.contextMode = contextMode
        self.nextRun = nextRun.map(StoreDate.normalized)
        self.lastRun = lastRun.map(StoreDate.normalized)
        self.lastResult = lastResult
        self.status = status
        self.claimedBy = claimedBy
        self.claimedAt = claimedAt.map(StoreDate.normalized)
        self.createdAt = StoreDate.normalized(createdAt)
    }
}

/// A slot a scheduler took from the store: the task as it was when claimed, when the slot was due, and whether it
/// fires (false: a missed slot of a task that does not catch up, dropped).
public struct ClaimedSlot: Sendable, Hashable {
    /// The task, before the claim moved its next run on.
    public var task: TaskRecord
    /// When the slot was due.
    public var slot: Date
    /// Whether to run it.
    public var fires: Bool
}

/// One execution of a task, for its history and failure reports.
public struct TaskRunLog: Sendable, Hashable, Codable {
    /// The monotonic log id.
    public var id: Int64
    /// The task that ran.
    public var taskID: String
    /// When it started.
    public var runAt: Date
    /// How long it took.
    public var durationMs: Int
    /// The outcome, e.g. `success` or `error`.
    public var status: String
    /// The run's answer, when it had one.
    public var result: String?
    /// Why it failed.
    public var error: String?

    /// snake_case, as every xclaw JSON output (`schedule show --json`).
    enum CodingKeys: String, CodingKey {
        case id, status, result, error
        case taskID = "task_id"
        case runAt = "run_at"
        case durationMs = "duration_ms"
    }

    /// Creates a log value.
    public init(
        id: Int64, taskID: String, runAt: Date, durationMs: Int, status: String, result: String?,
        error: String?
    ) {
        self.id = id
        self.taskID = taskID
        self.runAt = StoreDate.normalized(runAt)
        self.durationMs = durationMs
        self.status = status
        self.result = result
        self.error = error
    }
}

/// When a model request of a run happened and how long its parts took, stored with its usage.
public struct StepTiming: Sendable, Hashable, Codable {
    /// 1-based step number within the run.
    public var step: Int
    /// Milliseconds from sending the request until the reply was complete.
    public var modelMs: Double
    /// Milliseconds the step's tools ran.
    public var toolMs: Double
    /// Why the model stopped (`tool_use`, `end_turn`, ...).
    public var stopReason: String

    /// Creates a timing.
    public init(step: Int, modelMs: Double, toolMs: Double, stopReason: String) {
        (self.step, self.modelMs, self.toolMs, self.stopReason) = (step, modelMs, toolMs, stopReason)
    }
}

/// One stored model request of a session (a `usage` row), as the run report shows it.
public struct StepRecord: Sendable, Hashable, Codable {
    /// 1-based step number.
    public var step: Int
    /// The model that answered.
    public var model: String
    /// Its tokens.
    public var usage: Usage
    /// Its cost in USD.
    public var usd: Double
    /// Model time in ms (nil for rows older than the report).
    public var modelMs: Double?
    /// Tool time in ms (nil for rows older than the report).
    public var toolMs: Double?
    /// Why the model stopped.
    public var stopReason: String?
    /// When it was recorded (the step's end).
    public var at: Date
}

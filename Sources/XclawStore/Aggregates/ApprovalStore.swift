import Foundation
import XclawMessages

/// The approval gate's requests and decisions: a run waits on one until a person, or its timeout, decides.
/// One aggregate of the store: a backend (SQLite today, `AgentStore`) implements it; callers that need only
/// this part take it, so a second backend has one contract to meet. Defaults for optional arguments live on
/// the backend's methods: through the protocol every argument is given.
public protocol ApprovalStore: AnyObject, Sendable {
    /// Records that a run waits for a decision on a gated action: the approval row, and the session's status
    /// `needs-approval` so `runs` shows who is waiting. Returns the approval's id.
    func requestApproval(session: Int64, kind: String, tool: String, action: String, detail: String, expiresAt: Date)
        throws -> Int64

    /// Decides the pending approval of a run (`approved` or `denied`); the run, polling, carries on. Throws
    /// `unknownSession` for a run that does not exist and `notPending` when the run waits for nothing.
    @discardableResult
    func decideApproval(session: Int64, approve: Bool, by who: String) throws -> ApprovalRecord

    /// The approval's state; an expired pending one is marked `expired` (denied by the timeout) in the same
    /// transaction, so a late `approve` cannot race the run's own deadline. The session returns to `running` once
    /// the approval is settled.
    func settleApproval(_ id: Int64, now: Date) throws -> ApprovalRecord

    /// Withdraws a pending approval whose run stopped waiting (stopped or cancelled): it is denied by the run.
    func withdrawApproval(_ id: Int64, reason: String) throws

    /// The approval's status (`pending`, `approved`, `denied`, `expired`; nil when it is gone with its agent), read
    /// in one statement and writing nothing: what a waiting run polls often, calling `settleApproval` once it is not
    /// pending (or its deadline passed).
    func approvalStatus(_ id: Int64) throws -> String?

    /// A run's approvals, oldest first (every run's when `session` is nil, pending ones only with `pendingOnly`).
    func approvals(session: Int64?, pendingOnly: Bool) throws -> [ApprovalRecord]
}

/// A gated action waiting for, or given, a person's decision.
public struct ApprovalRecord: Sendable, Hashable, Codable {
    /// The approval's id.
    public var id: Int64
    /// The run (session) it holds.
    public var session: Int64
    /// The agent of that run.
    public var agent: String
    /// The kind of action the policy gates (`delete`, `send`, ...).
    public var kind: String
    /// The tool that would act.
    public var tool: String
    /// The tool's action (`left_click`, `tap_element`, ...).
    public var action: String
    /// What would be done, in words ("tap button "Delete"").
    public var detail: String
    /// `pending`, `approved`, `denied` or `expired`.
    public var status: String
    /// When the run asked.
    public var requestedAt: Date
    /// When it is denied without a decision.
    public var expiresAt: Date
    /// When it was decided.
    public var decidedAt: Date?
    /// Who decided (`xclaw approve`, `timeout`, ...).
    public var decidedBy: String?
}

/// Everything xclaw keeps, as one backend provides it: every aggregate over one database, so a run's messages,
/// session, usage and steps change together. `AgentStore` implements them over SQLite or PostgreSQL (for a fleet);
/// the runtime takes `any StoreBackend`, or one aggregate where it needs only that.
public protocol StoreBackend: AgentDirectory, ConversationStore, RunStore, ScheduleStore, ApprovalStore, ReplayStore,
    ScriptStore,
    PipelineStore, ImageStore
{
    /// Where the database is, for messages and `--json` output; never holds a password.
    var path: String { get }

    /// Takes the hold on one agent's runs across processes and hosts; nil while another holder has it.
    func tryHoldAgent(_ agent: String) throws -> AgentHold?
}

/// Everything xclaw keeps, as one backend provides it: every aggregate over one database, so a run's messages,
/// session, usage and steps change together. `AgentStore` is the SQLite backend; a second backend (PostgreSQL, for a
/// fleet) implements the same protocols, and the runtime takes `any StoreBackend`, or one aggregate where it needs
/// only that.
public protocol StoreBackend: AgentDirectory, ConversationStore, RunStore, ScheduleStore, ApprovalStore, ReplayStore,
    PipelineStore, ImageStore
{
    /// Where the database is, for messages and `--json` output; never holds a password.
    var path: String { get }
}

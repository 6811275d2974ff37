/// The environment variables that hold xclaw's secrets. Programs xclaw starts for the screen (a run's setup command,
/// launched apps) never get them: an agent could read them back off a terminal, into a screenshot, the store and a
/// report.
public enum SecretEnvironment {
    /// The variables removed.
    public static let names: Set<String> = [
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY", "XCLAW_WEB_TOKEN",
        "XCLAW_DATABASE_URL", "PGPASSWORD", "XCLAW_DB",
    ]

    /// The database's: xclaw's own commands reach the store with them (a fleet's PostgreSQL URL holds a password, and
    /// `XCLAW_DB` may hold one too), so a command run in-process for a client keeps them while it loses the keys;
    /// programs never get them.
    public static let database: Set<String> = ["XCLAW_DATABASE_URL", "PGPASSWORD", "XCLAW_DB"]

    /// `environment` without the secrets, but those in `keeping`.
    public static func stripped(_ environment: [String: String], keeping: Set<String> = []) -> [String: String] {
        environment.filter { !names.contains($0.key) || keeping.contains($0.key) }
    }
}

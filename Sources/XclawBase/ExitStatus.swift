/// The process exit codes every xclaw command uses, so scripts can branch on the kind of failure.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Success.
    case ok = 0
    /// Not found, condition not met, or timed out.
    case notFound = 1
    /// Usage error or bad input.
    case usage = 2
    /// The display is unavailable, or the X server reported an error.
    case display = 3
    /// The model or API failed.
    case api = 4
    /// An internal error: a bug, or the machine refused a resource.
    case `internal` = 5

    /// How a command ends that a person interrupted (Ctrl-C) or stopped (`xclaw stop`, the stop hotkey, the
    /// failsafe): the shell's 128 + SIGINT. Not a case: no error maps to it.
    public static let interrupted: Int32 = 130

    /// One line per code, for `--help` and docs/commands.md ("Exit codes").
    public static let legend = """
        Exit codes: 0 ok; 1 not found / condition not met / timed out; 2 usage or bad input; \
        3 display unavailable or X error; 4 model/API error; 5 internal error; 130 interrupted (Ctrl-C; 143 SIGTERM).
        """
}

/// An error that knows which exit status it maps to; every layer's error enum conforms.
public protocol ClassifiedError: Error, CustomStringConvertible {
    /// The exit status a command returns when this error ends it.
    var exitStatus: ExitStatus { get }
    /// True when nothing later in the same process can succeed either (the display is gone): an agent run stops
    /// instead of handing the error back to the model, which could only try again and fail again.
    var endsRun: Bool { get }
}

extension ClassifiedError {
    /// Most errors concern one action; the model may try another way.
    public var endsRun: Bool { false }
}

/// A tool failure that ends the whole run (see `ClassifiedError.endsRun`), with the exit status of its cause.
public struct RunStopped: ClassifiedError, Hashable {
    /// What happened, for the user and the stored history.
    public var message: String
    /// The status the command ends with (3 for a lost display).
    public var exitStatus: ExitStatus
    /// Creates the stop.
    public init(_ message: String, exitStatus: ExitStatus) { (self.message, self.exitStatus) = (message, exitStatus) }
    /// Always: that is what it is for.
    public var endsRun: Bool { true }
    /// The message.
    public var description: String { message }
}

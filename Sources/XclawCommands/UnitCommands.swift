import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawServices

/// `xclaw units`.
struct UnitsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "units",
        abstract: "List your systemd user services and timers, through the user manager on the session bus.",
        discussion: """
            Asks the systemd user manager (org.freedesktop.systemd1 on your session bus; no systemctl) for its \
            services and timers: those active, failed or changing, or with --all every loaded one and every \
            installed unit file (a file not loaded shows as not-loaded). Text: one a line, name, state (sub-state), \
            whether its file is enabled, and its description, tab-separated. Exit 5 when no session bus or no user \
            manager on it.
            Examples:
              xclaw units
              xclaw units --all --json
            """)
    @Flag(help: "Also inactive units, and installed unit files not loaded.") var all = false
    @Flag var json = false

    func run() throws {
        let units = try UserUnits(connection: BusConnection.session()).list(all: all)
        try emit(units, json: json) {
            units.map { unit in
                [unit.name, "\(unit.activeState) (\(unit.subState))", unit.unitFileState ?? "-", unit.description]
                    .map { UntrustedText.escaped($0) }.joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

/// `xclaw unit`.
struct UnitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unit",
        abstract: "Show, start, stop or restart one of your systemd user units (`xclaw units` lists them).",
        discussion: """
            Examples:
              xclaw unit status backup
              xclaw unit restart backup.service --wait
            """,
        subcommands: [UnitStatusCommand.self, UnitStartCommand.self, UnitStopCommand.self, UnitRestartCommand.self])
}

/// The unit a `unit` subcommand acts on.
struct UnitName: ParsableArguments {
    @Argument(help: "The unit (backup is backup.service).") var name: String

    func validate() throws {
        if name.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("name a unit") }
    }
}

/// `xclaw unit status`.
struct UnitStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a user unit's state: active or not, its main process, its last result.",
        discussion: """
            NAME without a suffix is a service (backup is backup.service). Text: "NAME: STATE (SUB-STATE)", then \
            the description, the main pid, the last exit status and result, and the file it was loaded from, one a \
            line when known. Exit 1 when the manager has no such unit (the closest names are given), 5 when no user \
            manager runs on the session bus.
            Examples:
              xclaw unit status backup
              xclaw unit status backup.timer --json
            """)
    @OptionGroup var unit: UnitName
    @Flag var json = false

    func run() throws {
        let status = try UserUnits(connection: BusConnection.session()).status(unit.name)
        try emit(status, json: json) { status.lines.joined(separator: "\n") }
    }
}

/// What start, stop and restart take: the unit, the wait and the output.
struct UnitChangeOptions: ParsableArguments {
    @Argument(help: "The unit (backup is backup.service).") var name: String
    @Flag(help: "Wait for the job to end.") var wait = false
    @Option(help: "Seconds --wait waits (0.1-3600).") var timeout: Double = 30
    @Flag var json = false

    func validate() throws {
        if name.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("name a unit") }
        try requireRange(timeout, 0.1...3600, "--timeout", "seconds")
    }
}

/// Start, stop and restart: one change each, the rest shared.
protocol UnitChangeCommand: ParsableCommand {
    /// The change.
    static var action: UnitAction { get }
    /// The unit and how to wait.
    var options: UnitChangeOptions { get }
}

extension UnitChangeCommand {
    /// The discussion of each: what it asks, and how waiting works.
    static func discussion(_ example: String) -> String {
        """
        Asks the systemd user manager to \(action.rawValue) the unit (mode replace, as systemctl does) and prints the \
        job's object path. With --wait, waits for the job to end (up to --timeout, default 30 s) and prints the unit's \
        state after it. Exit 1 when the manager has no such unit, when the job ends otherwise than done (its result \
        is given: failed, canceled, timeout, dependency) or does not end in time; 5 when no user manager runs on the \
        session bus.
        Examples:
          \(example)
        """
    }

    func run() throws {
        let units = try UserUnits(connection: BusConnection.session())
        let change = try units.change(
            Self.action, options.name,
            wait: options.wait ? .milliseconds(Int((options.timeout * 1000).rounded())) : nil,
            cancelled: { Interrupt.requested })
        try emit(change, json: options.json) {
            options.wait
                ? ([change.status.lines[0]] + change.status.lines.dropFirst().filter { $0.hasPrefix("main pid") })
                    .joined(separator: "\n") : "\(change.job) queued"
        }
    }
}

/// `xclaw unit start`.
struct UnitStartCommand: UnitChangeCommand {
    static let action = UnitAction.start
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Start a user unit.",
        discussion: discussion("xclaw unit start backup --wait  # prints its state once started"))
    @OptionGroup var options: UnitChangeOptions
}

/// `xclaw unit stop`.
struct UnitStopCommand: UnitChangeCommand {
    static let action = UnitAction.stop
    static let configuration = CommandConfiguration(
        commandName: "stop", abstract: "Stop a user unit.",
        discussion: discussion("xclaw unit stop backup --wait --json"))
    @OptionGroup var options: UnitChangeOptions
}

/// `xclaw unit restart`.
struct UnitRestartCommand: UnitChangeCommand {
    static let action = UnitAction.restart
    static let configuration = CommandConfiguration(
        commandName: "restart", abstract: "Restart a user unit (start it if it is not running).",
        discussion: discussion("xclaw unit restart backup.service --wait"))
    @OptionGroup var options: UnitChangeOptions
}

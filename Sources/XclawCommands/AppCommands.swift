import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen

/// `xclaw apps`.
struct Apps: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "List installed applications (freedesktop .desktop entries in XDG_DATA_DIRS).",
        discussion: """
            Examples:
              xclaw apps  # id, name, generic name and command, one a line
              xclaw apps --all --json
            """)
    @Flag(help: "Also those not meant for menus (NoDisplay, OnlyShowIn another desktop).") var all = false
    @Flag var json = false

    func run() throws {
        let environment = Invocation.current.environment
        let desktops = (environment["XDG_CURRENT_DESKTOP"] ?? "").split(separator: ":").map(String.init)
        let apps = DesktopEntries.all(environment: environment).filter { all || $0.isShown(on: desktops) }
        try emit(apps, json: json) {
            apps.map { app in
                [app.id, app.name, app.genericName ?? "-", app.exec ?? "-"].map { UntrustedText.escaped($0) }
                    .joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

/// `xclaw launch`.
struct Launch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        abstract: "Start an application by name, id or .desktop file, or a command after --; print its pid.",
        discussion: """
            An application is named by its Name, id (org.gnome.Calculator), GenericName or .desktop file; one word is \
            an application first, else a program on PATH. The application runs detached (a session of its own, \
            output to /dev/null) on --display; field codes (%f %u …) in Exec are dropped. --wait-window (alone: up \
            to 10 s) waits for its first window and prints the window's id after the pid. Exit 1 when no \
            application matches, the name is ambiguous or no window came in time; 2 when the entry or program \
            cannot be run.
            Examples:
              xclaw launch Calculator --wait-window  # prints "PID WINDOW" once its window maps
              xclaw launch --wait-window 30 -- xterm -geometry 80x24  # a command and its arguments after --
            """)
    @OptionGroup var target: DisplayOptions
    @Option(
        name: .customLong("wait-window"),
        help: ArgumentHelp(
            "Wait up to SECONDS (0.1-3600; --wait-window alone: 10) for a window of the process to map.",
            valueName: "SECONDS"))
    var waitWindow: Double?
    @Flag var json = false
    @Argument(help: "An application name or id, or a .desktop file; or, after --, a command and its arguments.")
    var words: [String] = []

    /// `--wait-window` with no number after it means 10 s (ArgumentParser's options always take a value).
    static func normalize(_ arguments: [String]) -> [String] {
        guard let index = arguments.firstIndex(of: "--wait-window"), !arguments[..<index].contains("--")
        else { return arguments }
        let next = arguments.index(after: index)
        if next < arguments.endIndex, Double(arguments[next]) != nil { return arguments }
        var out = arguments
        out.insert("10", at: next)
        return out
    }

    func validate() throws {
        try requireRange(waitWindow, 0.1...3600, "--wait-window", "seconds")
        if words.isEmpty {
            throw ValidationError("name an application (`xclaw apps` lists them), or a command after --")
        }
    }

    /// The result.
    struct Launched: Encodable {
        var pid: Int32
        var window: String?
        var app: String?
    }

    func run() throws {
        let environment = Invocation.current.environment
        let connection = try target.connect()
        let command: [String], app: String?
        if words.count > 1 {
            (command, app) = (words, nil)
        } else {
            // One word is an application first, else a program on PATH (`launch -- xterm` runs xterm's entry, which
            // runs xterm).
            do {
                // A .desktop path is the caller's (in the daemon too), relative to its working directory.
                let name =
                    words[0].hasSuffix(".desktop") && words[0].contains("/")
                    ? Invocation.current.resolve(words[0]) : words[0]
                let entry = try DesktopEntries.find(name, environment: environment)
                (command, app) = (try DesktopEntries.command(entry, environment: environment), entry.id)
            } catch AppError.notFound(let name, let suggestions) {
                guard (try? AppLauncher.resolve(words[0], path: environment["PATH"])) != nil else {
                    throw AppError.notFound(name, suggestions: suggestions)
                }
                (command, app) = (words, nil)
            }
        }
        let childEnvironment = AppLauncher.environment(environment, display: connection.name)
        let pid = try AppLauncher.launch(command, environment: childEnvironment)
        var result = Launched(pid: pid, window: nil, app: app)
        if let waitWindow {
            let window = try ProgressLine.during("a window of process \(pid)", timeout: waitWindow, json: json) {
                try AppLauncher.waitForWindow(
                    pid: pid, manager: WindowManager(connection: connection), timeout: waitWindow)
            }
            result.window = window.hexID
        }
        try emit(result, json: json) { "\(pid)" + (result.window.map { " \($0)" } ?? "") }
    }
}

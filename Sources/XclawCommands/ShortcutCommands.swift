import ArgumentParser
import Foundation
import Synchronization
import XclawBase
import XclawCommandLine
import XclawServices

/// `xclaw shortcuts`.
struct ShortcutsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shortcuts",
        abstract:
            "List named automations: installed applications' actions and your scripts in ~/.config/xclaw/shortcuts.",
        discussion: """
            Two kinds. The actions of installed applications (the [Desktop Action] groups of their .desktop files, \
            e.g. Firefox's "New Private Window"), named "App: Action", with the id DESKTOP-ID:ACTION-ID. And your own \
            scripts: each file in $XDG_CONFIG_HOME/xclaw/shortcuts/ (default ~/.config/xclaw/shortcuts/) is one, \
            named by its file name without the extension; its description is the first comment line after the \
            shebang (# Backs up the notes folder). A file without its executable bit is listed with a note and cannot \
            run; hidden files, names ending in ~ and directories are skipped. QUERY keeps the shortcuts whose name, \
            id or description hold each of its words. Text: one a line, name, kind, description and what it runs, \
            tab-separated (a fifth column says why one cannot run).
            Examples:
              xclaw shortcuts
              xclaw shortcuts backup --json
            """)
    @Argument(help: "Words to keep the shortcuts whose name, id or description hold them all.") var query: [String] = []
    @Flag var json = false

    func run() throws {
        let shortcuts = Shortcuts.matching(
            query.joined(separator: " "), in: Shortcuts.all(environment: Invocation.current.environment))
        try emit(shortcuts, json: json) {
            shortcuts.map { shortcut in
                ([shortcut.name, shortcut.kind.rawValue, shortcut.description ?? "-", shortcut.runs]
                    + (shortcut.note.map { [$0] } ?? [])).map { UntrustedText.escaped($0) }.joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

/// `xclaw shortcut`.
struct ShortcutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shortcut",
        abstract: "Run a named automation (`xclaw shortcuts` lists them).",
        discussion: """
            Examples:
              xclaw shortcut run backup-notes --timeout 120
              xclaw shortcut run "Firefox: New Private Window"
            """,
        subcommands: [ShortcutRunCommand.self])
}

/// `xclaw shortcut run`.
struct ShortcutRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a shortcut: a script to its end with its output streamed, or an application's action.",
        discussion: """
            NAME is a shortcut's name (case aside) or id, as `xclaw shortcuts` lists them. A script runs in the current \
            directory with your environment (xclaw's API keys and tokens removed), in a process group of its own: \
            --input TEXT is its stdin (without it, stdin is empty), and its stdout and stderr are printed line by line \
            as they come. Past --timeout (default 60 s) its whole process group is killed; what it printed stays \
            printed. Ctrl-C ends it the same way. An application's action is launched detached on --display, as \
            `launch` does, and its pid printed; --input fills its %u or %f (a URI or a file). With --json nothing is \
            streamed: the result, with the output (its middle left out past 1 MiB a stream), is printed at the end. \
            Exit 0 when the script exits 0 or the action was launched; 1 when no shortcut has the NAME (the closest \
            names are given), when the script exits with another status or a signal (the message says which) or it \
            was killed at its timeout; 2 when the shortcut cannot run (a script without its executable bit); 3 when an \
            action has no display; 130 on Ctrl-C.
            Examples:
              xclaw shortcut run backup-notes --timeout 120
              xclaw shortcut run shout --input "hello" --json  # "hello" on the script's stdin
            """)
    @OptionGroup var target: DisplayOptions
    @Option(help: "Text for the script's stdin, or the URI or file an application's action opens.") var input: String?
    @Option(help: "Seconds a script may run before its process group is killed (0.1-86400).") var timeout: Double = 60
    @Flag var json = false
    @Argument(help: "The shortcut's name or id.") var name: String

    func validate() throws {
        try requireRange(timeout, 0.1...86400, "--timeout", "seconds")
        if name.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("name a shortcut (`xclaw shortcuts` lists them)")
        }
    }

    func run() throws {
        let invocation = Invocation.current
        let shortcut = try Shortcuts.find(name, in: Shortcuts.all(environment: invocation.environment))
        let runner = ShortcutRunner(environment: invocation.environment, directory: invocation.directory)
        let display = shortcut.kind == .desktopAction ? try target.connect().name : nil
        // Ctrl-C and SIGTERM end the script's group, not just this process (it runs in a group of its own).
        let cancel = CancelFlag()
        let signal = Atomic<Int32>(0)
        let watch = Interrupt.watch([SIGINT, SIGTERM]) { raised in
            signal.store(raised, ordering: .relaxed)
            cancel.set()
        }
        defer { watch.stop() }
        let run = try runner.run(
            shortcut, input: input, timeout: .milliseconds(Int((timeout * 1000).rounded())), display: display,
            cancelled: { cancel.isSet }
        ) { stream, line in
            guard !json else { return }
            if stream == .stdout { writeOut(line) } else { Invocation.current.write(.stderr, line) }
        }
        if run.status == .cancelled { throw ExitCode(128 + max(1, signal.load(ordering: .relaxed))) }
        try emit(run, json: json) { run.status == .launched ? "\(run.pid)" : "" }
        if let failure = run.failure { throw failure }
    }
}

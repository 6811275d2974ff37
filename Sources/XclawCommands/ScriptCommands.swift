import ArgumentParser
import Foundation
import XclawAgent
import XclawBase
import XclawCommandLine
import XclawMessages
import XclawRuntime
import XclawSkills
import XclawStore

/// `xclaw script`: a run's recorded input actions as a script to keep, read and run again.
struct ScriptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "script",
        abstract:
            "Export a run's recorded steps as a replayable script, show a script's steps, or keep one in the database.",
        discussion: """
            Examples:
              xclaw script export 42 -o task.json  # then: xclaw replay task.json
              xclaw script save task.json --name order  # kept in the database for every host
            """,
        subcommands: [ScriptExport.self, ScriptShow.self, ScriptSave.self, ScriptList.self])
}

extension ReplayScript {
    /// One line per step, for `script show`.
    var lines: [String] {
        steps.enumerated().map { index, step in
            var line = "\(index + 1). \(step.tool) \(step.action)"
            if let t = step.target, !t.label.isEmpty {
                line += " \(t.role) \(UntrustedText.quoted(t.label, limit: 60))"
                if let title = t.windowTitle { line += " in \(UntrustedText.quoted(title, limit: 40))" }
            }
            if let x = step.x, let y = step.y { line += " @\(x),\(y)" }
            if let name = step.parameter {
                line += " text=$\(name.uppercased())"
            } else if let text = step.text {
                line += " \(UntrustedText.quoted(text, limit: 60))"
            }
            if !step.post.appeared.isEmpty {
                line += " → appeared: " + step.post.appeared.prefix(3).joined(separator: ", ")
            }
            return line
        }
    }

    /// The script as a shell script of xclaw commands, to read, edit and run on its own: each step finds its target
    /// by label (and window) where it has one, else clicks its recorded point; a parameter is an environment variable
    /// with the recorded value as default; `set -e` stops at the first step that fails.
    var shell: String {
        var out = [
            "#!/bin/sh", "# xclaw script from run \(run) (agent \(agent)).",
            "# Asked: " + prompt.split(whereSeparator: \.isNewline).joined(separator: " ").prefix(200),
            "# Runs on $DISPLAY; each tap finds its control by label again, and stops (set -e) if it is gone.",
            "set -e", "xclaw=${XCLAW:-xclaw}",
        ]
        for (name, value) in parameters.sorted(by: { $0.key < $1.key }) {
            out.append("\(name.uppercased())=${\(name.uppercased()):-\(ShellStep.quoted(value))}")
        }
        for step in steps {
            // What the step sends again is its tool's to say (`RecordingTools.playback`).
            out += RecordingTools.playback(for: step.action, tool: step.tool).shell(ShellStep(step))
            // The postcondition: what the step made appear, waited for before the next step.
            if let first = step.post.appeared.first, let space = first.firstIndex(of: " ") {
                out.append(
                    "$xclaw watch --text \(ShellStep.quoted(String(first[first.index(after: space)...]))) --timeout 10 >/dev/null"
                )
            }
        }
        return out.joined(separator: "\n") + "\n"
    }
}

/// `xclaw script export RUN [-o FILE] [--format json|sh]`.
struct ScriptExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a run's recorded steps as a replay script (JSON) or a shell script of xclaw commands.",
        discussion: """
            Every input action of a run is recorded with its target anchored several ways (the accessibility \
            tree's role and name, the label, role and window read by OCR, its place in the window, a 48x48 image \
            patch, the screen point), what held before it and what it changed. Typed text found in the run's \
            prompt becomes a parameter (P1, …). Exit: 0 written; 1 no such run, or it recorded no step; 2 bad usage.
            Examples:
              xclaw script export 42 -o task.json  # the replay format
              xclaw script export 42 --format sh -o task.sh  # a shell script of xclaw commands, to edit and run
            """)
    @Argument(help: "The run id (from `xclaw runs`).") var runID: Int64
    @Option(name: .shortAndLong, help: "Write here instead of stdout.") var output: String?
    @Option(help: "json (the replay format) or sh (a shell script of xclaw commands).") var format = "json"
    @OptionGroup var storeOptions: StoreOptions

    func validate() throws {
        guard ["json", "sh"].contains(format) else { throw ValidationError("--format is json or sh, not \(format)") }
    }

    func run() throws {
        let script = try ReplayScript.of(run: runID, in: try storeOptions.open())
        let text: String
        if format == "sh" {
            text = script.shell
        } else {
            text = String(decoding: try script.json(), as: UTF8.self) + "\n"
        }
        guard let output else { return writeOut(text) }
        // A shell script is made executable as it is created: a chmod after the write would change a device's mode.
        try OutputFile.write(Data(text.utf8), to: output, permissions: format == "sh" ? 0o777 : 0o666)
        printError("wrote \(script.steps.count) step(s) of run \(runID) to \(output)")
    }
}

/// `xclaw script show FILE|RUN`.
struct ScriptShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a script's steps (a file written by `script export`, a run id, or a stored script).",
        discussion: """
            Exit: 0 shown; 1 no such run or stored script, or the run recorded no step; 2 a file that is not a script.
            Examples:
              xclaw script show task.json  # one line a step, and the parameters
              xclaw script show --stored order --json
            """)
    @Argument(help: "A script file or a run id.") var script: String?
    @Option(help: "A script stored in the database (`xclaw script list`): its newest revision.") var stored: String?
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    func validate() throws {
        guard (script == nil) != (stored == nil) else {
            throw ValidationError("name one script: a file, a run id, or --stored NAME")
        }
    }

    func run() throws {
        let loaded = try ScriptSource.load(script, stored: stored, storeOptions)
        try emit(loaded.steps, json: json) {
            (["run \(loaded.run) (\(loaded.agent)): \(loaded.steps.count) step(s)"]
                + loaded.parameters.sorted { $0.key < $1.key }.map {
                    "parameter \($0.key.uppercased()) = \(UntrustedText.quoted($0.value))"
                }
                + loaded.lines).joined(separator: "\n")
        }
    }
}

/// Where a script comes from: a run id, a file, or a name in the database.
enum ScriptSource {
    /// The script `argument` (a run id or a file) or `stored` (a stored name) names.
    static func load(_ argument: String?, stored: String?, _ storeOptions: StoreOptions) throws -> ReplayScript {
        if let stored { return try ReplayScript.stored(stored, in: try storeOptions.open()) }
        let argument = argument ?? ""
        if let run = Int64(argument) { return try ReplayScript.of(run: run, in: try storeOptions.open()) }
        return try ReplayScript.read(argument, resolved: Invocation.current.resolve(argument))
    }
}

/// One stored script, as `script save --json` and `script list --json` print it.
struct StoredScriptRow: Encodable {
    var name: String
    var revision: Int
    var agent: String
    var run: Int64
    var steps: Int
    var stored_at: String
    var stored_by: String

    init(_ s: StoredScript) {
        (name, revision, agent, run, steps) = (s.name, s.revision, s.agent, s.run, s.steps)
        (stored_at, stored_by) = (StoreDate.format(s.storedAt), s.storedBy)
    }
}

/// `xclaw script save FILE|RUN --name NAME`.
struct ScriptSave: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save",
        abstract: "Keep a script (a file or a run's recorded steps) in the database, so any host can replay it.",
        discussion: """
            Stored under --name as a new revision, unless its newest revision is the same script. `xclaw replay \
            --stored NAME` replays the newest revision, and a replay that healed a step stores the fixed script as \
            the next. A fleet shares them: every worker and host reads the same database. \
            Exit: 0 stored (or already the newest); 1 no such run, or it recorded no step; 2 a file that is not a \
            script, a bad name.
            Examples:
              xclaw script save task.json --name order
              xclaw script save 42 --name order  # a run's recorded steps, straight from the database
            """)
    @Argument(help: "A script file or a run id.") var script: String
    @Option(help: "The name to keep it under (1 to 1024 characters).") var name: String
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        guard !name.isEmpty, name.count <= 1024, !name.contains(where: \.isNewline) else {
            throw ValidationError("--name takes 1 to 1024 characters on one line")
        }
    }

    func run() throws {
        let loaded = try ScriptSource.load(script, stored: nil, storeOptions)
        let (saved, created) = try loaded.store(as: name, in: try storeOptions.open(), by: FleetDispatch.who())
        try emit(StoredScriptRow(saved), json: json) {
            created
                ? "stored \(saved.steps) step(s) as script \(saved.name) revision \(saved.revision)"
                : "script \(saved.name) revision \(saved.revision) is already this script"
        }
    }
}

/// `xclaw script list`.
struct ScriptList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the scripts stored in the database (the newest revision of each).",
        discussion: """
            Each --json row: name, revision, agent, run, steps, stored_at, stored_by.
            Examples:
              xclaw script list
              xclaw script list --json
            """)
    @OptionGroup var storeOptions: StoreOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let rows = try storeOptions.open().scripts().map(StoredScriptRow.init)
        try emit(rows, json: json) {
            if rows.isEmpty { return "no stored scripts: keep one with `xclaw script save FILE|RUN --name NAME`" }
            return rows.map {
                "\(UntrustedText.quoted($0.name, limit: 80))\trevision \($0.revision)\t\($0.steps) step(s)\t"
                    + "run \($0.run) (\($0.agent))\t\($0.stored_at)\t\($0.stored_by)"
            }.joined(separator: "\n")
        }
    }
}

/// A script file replayed by a fleet: stored in the database under its host and path, and the revision a worker
/// healed written back into it.
enum FleetScripts {
    /// Stores the script file at `path` under its fleet name (`HOST:PATH`), and returns that name and the revision a
    /// worker will replay. A file that is an older revision of what is stored (a worker healed it since, and the file
    /// was not written back) is not stored again over the healed one: the newest revision is written into it first.
    static func store(_ script: ReplayScript, file path: String, in store: AgentStore) throws -> (
        name: String, revision: Int
    ) {
        let name = "\(ProcessInfo.processInfo.hostName):\(path)"
        let revision = script.revision ?? 1
        if let newest = try? store.script(named: name, revision: nil), newest.revision > revision,
            let same = try? store.script(named: name, revision: revision),
            String(decoding: try script.with(revision: revision).json(), as: UTF8.self) == same.body
        {
            if writeBack(newest, to: path, replacing: revision) != nil {
                printError(
                    "xclaw: \(path) was revision \(revision); revision \(newest.revision), healed since, was written into it"
                )
            }
            return (name, newest.revision)
        }
        return (name, try script.store(as: name, in: store, by: FleetDispatch.who()).script.revision)
    }

    /// Writes a stored revision into the script file, keeping the one it replaces beside it (`FILE.revN`, as a
    /// replay here does); returns that copy's path, nil (and says why) when it could not.
    static func writeBack(_ stored: StoredScript, to path: String, replacing revision: Int) -> String? {
        let previous = "\(path).rev\(revision)"
        do {
            try? FileManager.default.removeItem(atPath: previous)
            try FileManager.default.copyItem(atPath: path, toPath: previous)
            try OutputFile.write(Data(stored.body.utf8), to: path)
            return previous
        } catch {
            printError(
                "xclaw: the healed script (stored as \(stored.name) revision \(stored.revision)) could not be written "
                    + "to \(path): \(error)")
            return nil
        }
    }
}

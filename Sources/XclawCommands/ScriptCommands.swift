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
        abstract: "Export a run's recorded steps as a replayable script, or show a script's steps.",
        subcommands: [ScriptExport.self, ScriptShow.self])
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
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            text = String(decoding: try encoder.encode(script), as: UTF8.self) + "\n"
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
        commandName: "show", abstract: "Print a script's steps (a file written by `script export`, or a run id).",
        discussion: "Exit: 0 shown; 1 no such run, or it recorded no step; 2 a file that is not a script.")
    @Argument(help: "A script file or a run id.") var script: String
    @OptionGroup var storeOptions: StoreOptions
    @Flag var json = false

    func run() throws {
        let loaded =
            try Int64(script).map { try ReplayScript.of(run: $0, in: try storeOptions.open()) }
            ?? ReplayScript.read(script, resolved: Invocation.current.resolve(script))
        try emit(loaded.steps, json: json) {
            (["run \(loaded.run) (\(loaded.agent)): \(loaded.steps.count) step(s)"]
                + loaded.parameters.sorted { $0.key < $1.key }.map {
                    "parameter \($0.key.uppercased()) = \(UntrustedText.quoted($0.value))"
                }
                + loaded.lines).joined(separator: "\n")
        }
    }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawServices

/// `xclaw open`.
struct OpenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open URIs and files with your default applications (the desktop portal, else xdg-open).",
        discussion: """
            Each TARGET is a URI (https://…, mailto:…, file://…, any scheme with a handler) or a file path (relative \
            to the current directory). A URI goes to the XDG desktop portal (org.freedesktop.portal.OpenURI) when one \
            runs on your session bus; a file, or a URI with no portal, to xdg-open with your environment, in a session \
            of its own. xdg-open is waited for up to --timeout (default 5 s): with no desktop environment it runs the \
            handler itself and waits for it, so one still running then is left running and reported as \
            still_running. Text: "opened TARGET via portal|xdg-open", one a line. Exit 1 when a file does not exist \
            (nothing is opened), when nothing could open a target (xdg-open's message is given) or the portal refused \
            or did not answer; 2 for a target xdg-open calls bad usage; 5 when neither a portal nor xdg-open is \
            there.
            Examples:
              xclaw open https://example.org
              xclaw open report.pdf --json
            """)
    @Option(help: "The X display handlers open on (sets DISPLAY for xdg-open; default: $DISPLAY).") var display: String?
    @Option(help: "Seconds to wait for the portal's answer or xdg-open's end (0.1-300).") var timeout: Double = 5
    @Flag var json = false
    @Argument(help: "URIs or file paths.") var targets: [String] = []

    func validate() throws {
        try requireRange(timeout, 0.1...300, "--timeout", "seconds")
        if targets.isEmpty { throw ValidationError("name a URI or a file to open") }
    }

    func run() throws {
        let invocation = Invocation.current
        var environment = invocation.environment
        if let display { environment["DISPLAY"] = display }
        let opener = Opener(environment: environment, directory: invocation.directory)
        // Every file is checked before anything opens: a typo in the third path opens nothing.
        for target in targets { _ = try opener.resolve(target) }
        var results: [OpenResult] = []
        for target in targets {
            results.append(try opener.open(target, timeout: .milliseconds(Int((timeout * 1000).rounded()))))
        }
        try emit(results, json: json) {
            results.map { result in
                "opened \(UntrustedText.escaped(result.opened)) via \(result.via)"
                    + (result.stillRunning ? " (still running)" : "")
            }.joined(separator: "\n")
        }
    }
}

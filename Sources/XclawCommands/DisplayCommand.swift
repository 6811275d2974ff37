import ArgumentParser
import Foundation
import XclawCommandLine
import XclawScreen

/// `xclaw display start|stop|list|env`: private headless displays.
struct DisplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "display", abstract: "Start, stop and list private Xvfb displays.",
        discussion: """
            Examples:
              xclaw display start --size 1280x800  # prints its name, e.g. :1; then --display :1 or DISPLAY=:1
              xclaw display list
            """,
        subcommands: [Start.self, Stop.self, List.self, Env.self])

    /// `xclaw display start`.
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start",
            abstract: "Start a private Xvfb on a free display number (or :N) and print its name (e.g. :41).",
            discussion: """
                Exit: 0 started; 2 bad usage; 3 the display could not start (Xvfb missing, or :N in use).
                Examples:
                  xclaw display start --size 1280x800  # the first free number; in a script: D=$(xclaw display start)
                  xclaw display start :99 --accessibility  # :99, with the AT-SPI bus GTK and Qt apps need
                """)
        @Argument(help: "The display to take, :N (default: the first free number).") var display: String?
        @Option(help: "Screen size, WIDTHxHEIGHT.") var size = "1920x1080"
        @Option(help: "Colour depth: 16, 24 or 32.") var depth = 24
        @Flag(help: "Disable MIT-SHM (captures then use XGetImage, as on a remote display).") var noShm = false
        @Flag(
            help: ArgumentHelp(
                "Also start a D-Bus session bus and the AT-SPI accessibility bus for this display, so GTK/Qt apps "
                    + "launched on it expose their accessibility trees (launch them with `eval \"$(xclaw display env "
                    + "NAME)\"`). Only for displays xclaw starts.")) var accessibility = false
        @Flag(help: "Print the record as JSON.") var json = false

        func validate() throws {
            if let display, Self.number(display) == nil {
                throw ValidationError("the display is :N, with N from 0 to 65535 (e.g. :99), not \(display)")
            }
            try checkParses(size) { try Size(parsing: $0) }
            guard [16, 24, 32].contains(depth) else {
                throw ValidationError("--depth must be 16, 24 or 32, not \(depth)")
            }
        }

        func run() throws {
            let display = try VirtualDisplay.start(
                size: try Size(parsing: size), depth: depth, shm: !noShm, number: self.display.flatMap(Self.number),
                accessibility: accessibility)
            // The name alone on stdout: scripts run `D=$(xclaw display start)`.
            try emit(display, json: json) { display.name }
        }

        /// The number of `:N` (or `N`), if it is one.
        static func number(_ text: String) -> Int? {
            let digits = text.hasPrefix(":") ? String(text.dropFirst()) : text
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits),
                (0...65535).contains(n)
            else {
                return nil
            }
            return n
        }
    }

    /// `xclaw display stop`.
    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop", abstract: "Stop a display that `xclaw display start` started.",
            discussion: """
                Examples:
                  xclaw display stop :99
                """)
        @Argument(help: "The display, e.g. :41.") var name: String

        func run() throws { try VirtualDisplay.stop(name: name) }
    }

    /// `xclaw display list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the running displays xclaw started.",
            discussion: """
                Examples:
                  xclaw display list  # name, size and depth, the Xvfb's pid, a11y when it has the bus
                  xclaw display list --json
                """)
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try VirtualDisplay.checkedStateDirectory()
            let displays = VirtualDisplay.list()
            try emit(displays, json: json) {
                displays.map {
                    "\($0.name)\t\($0.size)x\($0.depth)\tpid \($0.pid)\($0.shm ? "" : "\tno-shm")"
                        + ($0.accessibility == nil ? "" : "\ta11y")
                }.joined(separator: "\n")
            }
        }
    }
}

extension DisplayCommand {
    /// `xclaw display env`: the variables an app needs to run on a display xclaw started, as shell commands.
    struct Env: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "env",
            abstract: "Print the environment for apps on a display xclaw started: eval \"$(xclaw display env :41)\".",
            discussion: """
                Prints `export DISPLAY=…`, plus `export DBUS_SESSION_BUS_ADDRESS=…` when the display was started \
                with --accessibility, and an `unset` line for inherited variables that would send apps elsewhere \
                (WAYLAND_DISPLAY, AT_SPI_BUS_ADDRESS).
                Examples:
                  xclaw display env :99  # the lines to eval: eval "$(xclaw display env :99)", then start apps there
                  xclaw display env :99 --json
                """)
        @Argument(help: "The display, e.g. :41.") var name: String
        @Flag(help: "Print the variables as a JSON object.") var json = false

        func run() throws {
            let display = try VirtualDisplay.find(name: name)
            try emit(display.environment, json: json) { Self.shellLines(display) }
        }

        /// `export` lines in a stable order (DISPLAY first), values quoted for POSIX shells, then one `unset` line.
        static func shellLines(_ display: VirtualDisplay) -> String {
            let env = display.environment
            let keys = env.keys.sorted { ($0 == "DISPLAY" ? "" : $0) < ($1 == "DISPLAY" ? "" : $1) }
            var lines = keys.map { "export \($0)=\(shellQuoted(env[$0] ?? ""))" }
            lines.append("unset " + display.environmentToRemove.joined(separator: " "))
            return lines.joined(separator: "\n")
        }

        /// `text` as one shell word: as it is when only safe characters, else in single quotes.
        static func shellQuoted(_ text: String) -> String {
            let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:./@%+-")
            if !text.isEmpty && text.allSatisfy(safe.contains) { return text }
            return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
    }
}

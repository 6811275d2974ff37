import ArgumentParser
import Foundation
import XclawScreen

/// `xclaw display start|stop|list`: private headless displays.
struct DisplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "display", abstract: "Start, stop and list private Xvfb displays.",
        subcommands: [Start.self, Stop.self, List.self])

    /// `xclaw display start`.
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a private Xvfb on a free display number and print its name (e.g. :41).")
        @Option(help: "Screen size, WIDTHxHEIGHT.") var size = "1920x1080"
        @Option(help: "Colour depth: 16, 24 or 32.") var depth = 24
        @Flag(help: "Disable MIT-SHM (captures then use XGetImage, as on a remote display).") var noShm = false
        @Flag(help: "Print the record as JSON.") var json = false

        func run() throws {
            let display = try VirtualDisplay.start(size: try Size(parsing: size), depth: depth, shm: !noShm)
            try emit(display, json: json) { display.name }
        }
    }

    /// `xclaw display stop`.
    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop a display that `xclaw display start` started.")
        @Argument(help: "The display, e.g. :41.") var name: String

        func run() throws { try VirtualDisplay.stop(name: name) }
    }

    /// `xclaw display list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the running displays xclaw started.")
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let displays = VirtualDisplay.list()
            try emit(displays, json: json) {
                displays.map { "\($0.name)\t\($0.size)x\($0.depth)\tpid \($0.pid)\(($0.shm ? "" : "\tno-shm"))" }
                    .joined(separator: "\n")
            }
        }
    }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen

/// `xclaw windows`.
struct Windows: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List top-level windows, top-most first.")
    @OptionGroup var target: DisplayOptions
    @Flag(help: "Include unmapped windows.") var all = false
    @Flag var json = false

    func run() throws {
        let windows = try WindowManager(connection: try target.connect()).list(includeHidden: all)
        try emit(windows, json: json) {
            windows.map { w in
                [
                    w.hexID, "\(w.frame.width)x\(w.frame.height)+\(w.frame.x)+\(w.frame.y)",
                    w.active ? "active" : (w.visible ? "visible" : (w.mapped ? "offscreen" : "hidden")),
                    // Titles and classes are the apps' words: escaped, the title quoted, never a second line.
                    w.className.isEmpty ? "-" : UntrustedText.escaped(w.className), w.pid.map(String.init) ?? "-",
                    UntrustedText.quoted(w.title),
                ]
                .joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

/// `xclaw activate`.
struct Activate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Raise and focus a window by id or title substring.")
    @OptionGroup var target: DisplayOptions
    @Argument(help: "Window id (0x…) or title substring.") var window: String

    func run() throws {
        let manager = WindowManager(connection: try target.connect())
        let info = try manager.find(window)
        try manager.activate(info)
        writeOut(info.hexID + "\n")
    }
}

/// `xclaw monitors`.
struct Monitors: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List monitors (RandR).")
    @OptionGroup var target: DisplayOptions
    @Flag var json = false

    func run() throws {
        let monitors = try target.connect().monitors()
        try emit(monitors, json: json) {
            monitors.map {
                "\($0.name)\t\($0.frame.width)x\($0.frame.height)+\($0.frame.x)+\($0.frame.y)\($0.primary ? "\tprimary" : "")"
            }
            .joined(separator: "\n")
        }
    }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawScreen

/// `xclaw capture`: a PNG of the screen, a region or a window.
struct Capture: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Capture the screen, a region or a window as PNG.",
        discussion: """
            Without -o the PNG is written to ./xclaw-capture-TIMESTAMP.png and its path printed.
            Examples:
              xclaw capture --window Editor -o editor.png
              xclaw capture --region 1700,40,32,32 -o save.png  # a template for find --image and tap --image
            """)
    @OptionGroup var target: DisplayOptions
    @Option(name: .shortAndLong, help: "Output file, or - for stdout.") var output: String?
    @Option(help: "Region X,Y,W,H in screen pixels.") var region: String?
    @Option(help: "Window id (0x…) or title substring.") var window: String?
    @OptionGroup var select: WindowSelection
    @Flag(help: "Downscale to the size Claude sees (long edge <= 1568, <= 1.15 MP).") var scaleForModel = false
    @Option(help: "auto, shm or getimage.") var method: CaptureMethod = .auto
    @Flag(help: "Print what was written as JSON.") var json = false

    /// What was captured, for --json.
    struct Result: Encodable {
        var path: String?
        var width: Int
        var height: Int
        var bytes: Int
        var source: Rect
        var method: String
        var geometry: ScreenGeometry?
    }

    func validate() throws {
        if region != nil && select.names(window) { throw ValidationError("give --region or --window, not both") }
    }

    func run() throws {
        let region = try self.region.map(Rect.init(parsing:))
        let connection = try target.connect()
        let capturer = try ScreenCapturer(connection: connection, method: method)
        let area =
            try
            (select.names(window)
            ? capturer.visibleArea(of: select.resolve(window, WindowManager(connection: connection))) : nil)
            ?? region ?? connection.screenRect()
        var frame = try capturer.capture(area)
        var geometry: ScreenGeometry?
        if scaleForModel {
            let g = ScreenGeometry(screen: frame.size)
            frame = try frame.downscaled(to: g.model)
            geometry = g
        }
        let png = try PNG.encode(frame)
        var path: String?
        if output == "-" {
            writeOut(Data(png))
        } else {
            let file = output ?? defaultPath()
            try OutputFile.write(Data(png), to: file)
            path = file
        }
        let result = Result(
            path: path, width: frame.width, height: frame.height, bytes: png.count, source: area,
            method: capturer.method.rawValue, geometry: geometry)
        if output == "-" || OutputFile.isStandardOutput(output ?? "") { return }  // stdout carries the PNG
        try emit(result, json: json) { path ?? "" }
    }

    private func defaultPath() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss-SSS"
        return "xclaw-capture-\(formatter.string(from: Date())).png"
    }
}

extension CaptureMethod: ExpressibleByArgument {}

/// `xclaw pixel X,Y`: one screen pixel's colour, as a script checks a state (AutoHotkey's PixelGetColor).
struct PixelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pixel", abstract: "Print the colour of one screen pixel as #rrggbb.",
        discussion: """
            Exit: 0 printed; 2 a malformed point or one off the screen; 3 no display.
            Examples:
              xclaw pixel 640,400  # e.g. #d93025
              xclaw pixel 640,400 --json
            """)
    @OptionGroup var target: DisplayOptions
    @Argument(help: "The pixel, X,Y in screen coordinates.") var point: String
    @Flag(help: "Print JSON: x, y, color.") var json = false

    func validate() throws { try checkParses(point) { try Point(parsing: $0) } }

    /// What `pixel --json` prints.
    struct Result: Encodable {
        var x, y: Int
        var color: String
    }

    func run() throws {
        let p = try Point(parsing: point)
        let connection = try target.connect()
        let screen = try connection.screenRect()
        guard screen.contains(p) else {
            throw ScreenError.invalidArgument("\(p) is off the \(screen.width)x\(screen.height) screen")
        }
        // One pixel through XGetImage: no shared-memory segment for the whole screen.
        let frame = try ScreenCapturer(connection: connection, method: .getImage)
            .capture(Rect(x: p.x, y: p.y, width: 1, height: 1))
        guard let rgb = frame.pixel(x: 0, y: 0) else { throw ScreenError.image("the server returned no pixel") }
        let result = Result(x: p.x, y: p.y, color: rgb.hex)
        try emit(result, json: json) { rgb.hex }
    }
}

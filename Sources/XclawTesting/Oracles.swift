import Foundation
import XclawBase
import XclawPolling
import XclawScreen

/// An openbox on a test display: the reparenting EWMH window manager the window-control tests run under.
/// Safe because `process` is set up in `init` and only stopped after.
public final class Openbox: @unchecked Sendable {
    /// The openbox process.
    public let process = Process()

    /// Starts openbox (with no config of the user's: a private `XDG_CONFIG_HOME`) and waits until it manages the
    /// display (`_NET_SUPPORTING_WM_CHECK` names a live window).
    public init(display: TestDisplay) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openbox")
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-openbox-\(getpid())")
        process.environment = display.environment.merging(
            ["XDG_CONFIG_HOME": config.path, "HOME": ProcessInfo.processInfo.environment["HOME"] ?? "/tmp"]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        // Its stderr is kept: an openbox that dies or stalls under a test says why in the test's output (`stop`).
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        logPath = config.appendingPathComponent("openbox-\(UUID().uuidString).log").path
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let stderr = FileHandle(forWritingAtPath: logPath)
        process.standardError = stderr ?? FileHandle.nullDevice
        displayName = display.name
        try process.run()
        try? stderr?.close()  // openbox has its own copy
        let manager = WindowManager(connection: try display.connect())
        let managing = try poll(within: .seconds(10)) {
            try manager.hasWindowManager() ? true : process.isRunning ? nil : false
        }
        guard managing == true else { throw ScreenError.virtualDisplay("openbox did not start on \(display.name)") }
        try Self.waitUntilServing(display.name)
    }

    /// Returns once the window manager on `display` answers requests from its event loop. openbox names itself in
    /// `_NET_SUPPORTING_WM_CHECK` early in its startup, and events that reach it before its main loop runs can sit in
    /// Xlib's queue while that loop sleeps on the socket, until some later event wakes it: a fixture mapped then
    /// stayed unmapped for 20 s (twice in one run; DisplayDiagnosis showed openbox alive, its loop in poll, the
    /// server answering). So the request is sent again until it is answered (each one is a new event on the socket,
    /// which wakes the loop): show the desktop (wmctrl -k; openbox sets `_NET_SHOWING_DESKTOP`), then no longer.
    private static func waitUntilServing(_ display: String) throws {
        for (state, value) in [("on", "= 1"), ("off", "= 0")] {
            let answered = try poll(within: .seconds(60), every: .milliseconds(100)) {
                try oracle(["wmctrl", "-k", state], display: display)
                return try oracle(["xprop", "-root", "_NET_SHOWING_DESKTOP"], display: display).contains(value)
            }
            guard answered else {
                throw ScreenError.virtualDisplay(
                    "the window manager on \(display) did not answer from its event loop within 60 s\n"
                        + DisplayDiagnosis.describe(display: display))
            }
        }
    }

    /// Where its stderr goes.
    public let logPath: String
    private let displayName: String

    /// Ends openbox. One that had already ended by itself says so, with its stderr, on the test's stderr: a window
    /// that never mapped under it (its map request lost with it) is then explained in the shard's log.
    public func stop() {
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        guard process.isRunning else {
            if !stopped {
                let said = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                let how = process.terminationReason == .uncaughtSignal ? "signal" : "status"
                let text = "openbox on \(displayName) had ended by itself (\(how) \(process.terminationStatus)); "
                FileHandle.standardError.write(Data((text + "its stderr:\n\(said)\n").utf8))
            }
            stopped = true
            return
        }
        stopped = true
        process.terminate()
        process.exits(within: .seconds(5))
    }

    private var stopped = false

    deinit { stop() }
}

/// Runs an oracle (xdotool, xwininfo, wmctrl, xclip, xprop) on `display` and returns its stdout; `stdin` is fed
/// from a file when given.
@discardableResult
public func oracle(_ arguments: [String], display: String, stdin path: String? = nil) throws -> String {
    String(decoding: try oracleData(arguments, display: display, stdin: path), as: UTF8.self)
}

/// `oracle`, as bytes. Through `Subprocess` (waitpid on the child alone): `xclip -i` forks a child that holds the
/// selection, and is done when its parent exits, which Foundation's `Process` did not always report.
public func oracleData(_ arguments: [String], display: String, stdin path: String? = nil) throws -> Data {
    let environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display]) { $1 }
    let input = path.map { open($0, O_RDONLY | O_CLOEXEC) } ?? -1
    defer { if input >= 0 { close(input) } }
    let forks = arguments.first == "xclip" && arguments.contains("-i")
    let child = try Subprocess.spawn(
        ["/usr/bin/" + arguments[0]] + arguments.dropFirst(), stdin: input >= 0 ? .descriptor(input) : .null,
        stdout: forks ? .null : .pipe, stderr: .null, environment: environment)
    let deadline = ContinuousClock.now + .seconds(30)
    let (out, _, _) = forks ? (Data(), Data(), true) : child.read(until: deadline)
    child.closePipes()
    _ = child.wait(deadline: deadline)
    if forks { try awaitSelection(set: arguments, stdin: path, display: display) }
    return out
}

/// Returns once the selection an `xclip -i` was given holds its bytes: xclip's parent exits as soon as it forked,
/// and the child's `XSetSelectionOwner`, still in Xlib's buffer, reaches the server later, so a reader right after
/// the parent's exit could meet the previous owner (ClipboardToolTests did in the side-by-side suite).
private func awaitSelection(set arguments: [String], stdin path: String?, display: String) throws {
    func value(after flag: String) -> String? {
        arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    }
    let options = Set(["-selection", "-t", "-display", "-loops"])
    var operands: [String] = []
    var index = 1
    while index < arguments.count {
        if options.contains(arguments[index]) { index += 2; continue }
        if !arguments[index].hasPrefix("-") { operands.append(arguments[index]) }
        index += 1
    }
    guard let source = operands.last ?? path, let expected = FileManager.default.contents(atPath: source) else {
        return
    }
    var reader = ["xclip", "-o", "-selection", value(after: "-selection") ?? "primary"]
    if let type = value(after: "-t") { reader += ["-t", type] }
    try poll(within: .seconds(10)) { try oracleData(reader, display: display) == expected }
}

/// xwininfo's geometry of a window: Absolute upper-left X/Y, Width and Height.
public func xwininfoGeometry(_ window: UInt, display: String) throws -> Rect {
    let text = try oracle(["xwininfo", "-id", "0x" + String(window, radix: 16)], display: display)
    func value(_ label: String) -> Int {
        text.split(separator: "\n").first { $0.contains(label) }
            .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? -1
    }
    return Rect(
        x: value("Absolute upper-left X"), y: value("Absolute upper-left Y"), width: value("Width"),
        height: value("Height"))
}

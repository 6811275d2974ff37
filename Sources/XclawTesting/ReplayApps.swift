import Foundation
import XclawBase
import XclawPolling
import XclawScreen

/// The replay suite's task on real Debian apps, shared by `ReplayAppsCLITests` and `xclaw bench replay`: xcalc adds
/// 12 and 34 (keys tapped by their screen points, as a model clicks), then a zenity entry dialog gets a name typed
/// and its OK pressed. The apps are the oracles: xcalc's display (read by xclaw's OCR) and what zenity prints on its
/// stdout. Every wait here has a deadline, and `stop` kills both apps.
/// Safe because a test or a bench drives it from one thread.
public final class ReplayApps: @unchecked Sendable {
    /// xcalc's window title.
    public static let calculator = "Calculator"
    /// The dialog's window title.
    public static let dialog = "Customer"
    /// The dialog's prompt (its entry is named by it, without the colon, in the accessibility tree).
    public static let question = "Customer name:"
    /// The keys tapped, in order: clear, 12 + 34 =.
    public static let keys = ["AC", "1", "2", "+", "3", "4", "="]
    /// What xcalc shows at the end.
    public static let sum = "46"
    /// The name typed into the dialog (found in the prompt, so it becomes parameter P1).
    public static let name = "Ada Lovelace"
    /// What the run is asked.
    public static let prompt =
        "Add 12 and 34 in the calculator, then type \(name) into the Customer dialog and press its OK button."

    private let display: String
    private let environment: [String: String]
    private var xcalc: Subprocess?
    private var zenity: Subprocess?
    private var answer: (status: Int32?, text: String)?

    /// Starts xcalc at `calculatorAt` (its top-left corner) with `xcalcArguments` (fonts, geometry) and the dialog
    /// (placed by GTK; moved to `dialogAt` when given) with `dialogEnvironment` (GDK_SCALE), on `display` whose
    /// `environment` (DISPLAY, the session bus) the apps get; waits until both windows are up.
    public init(
        display: String, environment: [String: String], calculatorAt: Point = Point(x: 100, y: 100),
        dialogAt: Point? = nil, xcalcArguments: [String] = [], dialogEnvironment: [String: String] = [:]
    ) throws {
        self.display = display
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        env["DISPLAY"] = display
        env["NO_AT_BRIDGE"] = nil
        self.environment = env
        xcalc = try Subprocess.spawn(
            ["/usr/bin/xcalc", "-geometry", "+\(calculatorAt.x)+\(calculatorAt.y)"] + xcalcArguments, stdout: .null,
            stderr: .null, environment: env)
        zenity = try Subprocess.spawn(
            ["/usr/bin/zenity", "--entry", "--title", Self.dialog, "--text", Self.question], stdout: .pipe,
            stderr: .null, environment: env.merging(dialogEnvironment) { $1 })
        do {
            try waitForWindow(Self.calculator)
            try waitForWindow(Self.dialog)
            if let dialogAt { try move(Self.dialog, to: dialogAt) }
            // Kept: neither app says when it has painted, nor zenity when its tree is on the bus; what the window
            // server shows (mapped, placed) is waited for above.
            Thread.sleep(forTimeInterval: 0.5)
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Kills both apps (SIGKILL) and reaps them; safe to call twice.
    public func stop() {
        if let xcalc { xcalc.kill() }
        if let zenity {
            if answer == nil { zenity.kill() }
            zenity.closePipes()
        }
        (xcalc, zenity) = (nil, nil)
    }

    /// Kills xcalc only (a replay then finds its window missing).
    public func stopCalculator() {
        xcalc?.kill()
        xcalc = nil
        poll(within: .seconds(5), every: .milliseconds(50)) { (try? frame(of: Self.calculator)) == nil }
    }

    /// Waits until a window titled `title` is on the display.
    private func waitForWindow(_ title: String, timeout: Double = 20) throws {
        guard poll(within: .seconds(timeout), every: .milliseconds(50), { (try? frame(of: title)) != nil }) else {
            throw ScreenError.virtualDisplay("no window titled \(title) came up within \(timeout) s")
        }
    }

    /// The frame of the top-level window titled `title`, from the X server.
    public func frame(of title: String) throws -> Rect {
        let out = try Self.tool(["/usr/bin/xwininfo", "-display", display, "-name", title], timeout: 5)
        func value(_ key: String) -> Int? {
            out.split(separator: "\n").first { $0.contains(key) }
                .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
        }
        guard out.contains("Map State: IsViewable"), let x = value("Absolute upper-left X"),
            let y = value("Absolute upper-left Y"), let w = value("Width"), let h = value("Height")
        else { throw ScreenError.virtualDisplay("no viewable window titled \(title)") }
        return Rect(x: x, y: y, width: w, height: h)
    }

    /// Moves the window titled `title` so its top-left corner is at `point` (xdotool; no window manager runs), and
    /// waits until the X server has it there.
    public func move(_ title: String, to point: Point) throws {
        _ = try Self.tool(
            ["/usr/bin/xdotool", "search", "--name", "^\(title)$", "windowmove", "\(point.x)", "\(point.y)"],
            timeout: 5, environment: environment)
        let moved = poll(within: .seconds(5), every: .milliseconds(50)) {
            (try? frame(of: title)).map { $0.x == point.x && $0.y == point.y } ?? false
        }
        guard moved else { throw ScreenError.virtualDisplay("\(title) did not move to \(point.x),\(point.y)") }
        Thread.sleep(forTimeInterval: 0.3)  // kept: the app's repaint where it landed, which it does not report
    }

    /// xcalc's keys and their frames on the screen (X windows of their own: the X server's answer).
    public func keyFrames() throws -> [String: Rect] {
        var frames: [String: Rect] = [:]
        for key in try GroundingApp.xcalcKeys(display: display) where frames[key.label] == nil {
            frames[key.label] = key.frame
        }
        return frames
    }

    /// The centre of the element labelled `label` in the window `window`, as `xclaw find` grounds it (the dialog's
    /// entry and OK button, for the model's coordinates).
    public func locate(_ label: String, role: String, in window: String, environment: [String: String]) throws
        -> Point
    {
        let found = try Self.xclaw(
            ["find", label, "--window", window, "--role", role, "--json", "--display", display],
            environment: environment, timeout: 30)
        guard found.status == 0,
            let list = try? JSONSerialization.jsonObject(with: Data(found.stdout.utf8)) as? [[String: Any]],
            let box = list.first?["box"] as? [String: Any], let x = box["x"] as? Int, let y = box["y"] as? Int,
            let w = box["width"] as? Int, let h = box["height"] as? Int
        else { throw ScreenError.virtualDisplay("xclaw found no \(role) \(label) in \(window): \(found.stderr)") }
        return Point(x: x + w / 2, y: y + h / 2)
    }

    /// The computer-tool inputs of the recorded run, in order, with points in the model's space of `geometry`:
    /// xcalc's keys, a click into the dialog's entry, the name typed, OK pressed.
    public func actions(geometry: ScreenGeometry, environment: [String: String]) throws -> [String] {
        let frames = try keyFrames()
        func click(_ p: Point) -> String {
            let m = geometry.toModel(p)
            return "{\"action\": \"left_click\", \"coordinate\": [\(m.x), \(m.y)]}"
        }
        var out: [String] = []
        for key in Self.keys {
            guard let frame = frames[key] else { throw ScreenError.virtualDisplay("xcalc has no key \(key)") }
            out.append(click(frame.center))
        }
        let entry = try locate("Customer name", role: "field", in: Self.dialog, environment: environment)
        out.append(click(entry))
        out.append("{\"action\": \"type\", \"text\": \"\(Self.name)\"}")
        out.append(click(try locate("OK", role: "button", in: Self.dialog, environment: environment)))
        return out
    }

    /// Whether xcalc's display reads `text`, by xclaw's OCR of the window (its display is the topmost text).
    public func calculatorShows(_ text: String, environment: [String: String]) -> Bool {
        guard
            let shot = try? Self.xclaw(
                ["snapshot", "--window", Self.calculator, "--json", "--display", display], environment: environment,
                timeout: 30),
            shot.status == 0,
            let json = try? JSONSerialization.jsonObject(with: Data(shot.stdout.utf8)) as? [String: Any],
            let elements = json["elements"] as? [[String: Any]]
        else { return false }
        return elements.contains { $0["role"] as? String == "text" && $0["label"] as? String == text }
    }

    /// What zenity printed and its exit status, once it exits (within `timeout`); nil status: still running.
    public func dialogAnswer(timeout: Double = 10) -> (status: Int32?, text: String) {
        if let answer { return answer }
        guard let zenity else { return (nil, "") }
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let (out, _, complete) = zenity.read(until: deadline)
        let text = String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard complete, case .exited(let status) = zenity.wait(deadline: deadline) else { return (nil, text) }
        answer = (status, text)
        return (status, text)
    }

    /// Whether the dialog is still up.
    public var dialogIsUp: Bool { zenity.map { answer == nil && $0.isRunning } ?? false }

    /// Runs `xclaw` (the product next to this binary) with `arguments` under `timeout` (killed at its end).
    public static func xclaw(_ arguments: [String], environment: [String: String], timeout: Double) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let outcome = try Subprocess.run(
            [productsDirectory.appendingPathComponent("xclaw").path] + arguments,
            timeout: .milliseconds(Int(timeout * 1000)), environment: env)
        let status: Int32
        switch outcome.ending {
        case .exited(let s): status = s
        case .timedOut: status = -1
        default: status = -2
        }
        return (
            status, String(decoding: outcome.stdout, as: UTF8.self),
            String(decoding: outcome.stderr, as: UTF8.self) + (status == -1 ? "\n(killed after \(timeout) s)" : "")
        )
    }

    /// Runs an oracle tool to its end (killed after `timeout`) and returns its stdout.
    static func tool(_ arguments: [String], timeout: Double, environment: [String: String]? = nil) throws -> String {
        let outcome = try Subprocess.run(
            arguments, timeout: .milliseconds(Int(timeout * 1000)), environment: environment, stderr: .null)
        return String(decoding: outcome.stdout, as: UTF8.self)
    }
}

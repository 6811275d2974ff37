import Foundation
import Glibc
import XclawBase
import XclawScreen

/// One node of an application's accessibility tree (AT-SPI2), as the `xclaw-atspi` helper reports it.
public struct AccessibleNode: Codable, Sendable, Hashable {
    /// The node's number in its dump (parents refer to it).
    public var id: Int
    /// The parent's number; -1 for an application's root.
    public var parent: Int
    /// The number of the application it belongs to.
    public var app: Int
    /// The application's name on the accessibility bus (`:1.23`).
    public var bus: String
    /// The object's path there.
    public var path: String
    /// The toolkit's role name ("push button", "check box", "label"…).
    public var role: String
    /// The accessible name (a button's label, a window's title).
    public var name: String
    /// The accessible description, when the toolkit gives one.
    public var description: String?
    /// AT-SPI state names ("showing", "focused", "checked"…).
    public var states: [String]
    /// Screen extents; absent for nodes without a Component interface.
    public var x: Int?, y: Int?, w: Int?, h: Int?
    /// A field's text or a slider's value (never a password field's).
    public var value: String?
    /// The toolkit's action names ("click", "Press", "Toggle"), when they were asked for.
    public var actions: [String]?
    /// Whether its text can be edited.
    public var editable: Bool?
    /// How many children the toolkit reports.
    public var children: Int

    /// The screen rectangle, when the node has one on screen (hidden GTK widgets report INT_MIN, hidden Qt ones 0x0).
    public var rect: Rect? {
        guard let x, let y, let w, let h, w > 0, h > 0, x > Int(Int32.min) / 2, y > Int(Int32.min) / 2 else {
            return nil
        }
        return Rect(x: x, y: y, width: w, height: h)
    }

    /// Whether the node has the state.
    public func has(_ state: String) -> Bool { states.contains(state) }

    /// Where to find the node again to act on it.
    public var handle: AccessibleHandle { AccessibleHandle(bus: bus, path: path) }
}

/// An application on the accessibility bus.
public struct AccessibleApp: Codable, Sendable, Hashable {
    /// Its number in the dump.
    public var id: Int
    /// The node number of its root.
    public var root: Int
    /// Its name on the bus.
    public var bus: String
    /// Its name ("zenity", "FeatherPad").
    public var name: String
    /// Its process id (0 when the bus would not say).
    public var pid: Int
    /// How its nodes were read: "cache" (GTK's bulk GetItems), "walk" (level by level), "none".
    public var route: String
    /// How many nodes it has (before hidden ones are dropped).
    public var nodes: Int
}

/// Every application's visible nodes, in tree order (each parent before its children).
public struct AccessibleTree: Codable, Sendable {
    /// The applications.
    public var apps: [AccessibleApp]
    /// Their nodes.
    public var nodes: [AccessibleNode]
    /// How long the helper took to read them, in milliseconds.
    public var ms: Double
}

/// Enough to find a node again on the accessibility bus (valid while its application runs).
public struct AccessibleHandle: Codable, Sendable, Hashable {
    /// The application's bus name.
    public var bus: String
    /// The object's path.
    public var path: String

    /// Creates a handle.
    public init(bus: String, path: String) { self.bus = bus; self.path = path }
}

/// Where a display's accessibility bus is, found without touching libatspi or starting anything.
public enum AccessibilityLocation: Sendable, Equatable, CustomStringConvertible {
    /// The accessibility bus's own address (from `AT_SPI_BUS_ADDRESS` or the root window's `AT_SPI_BUS`).
    case bus(String)
    /// A session bus that may advertise one (`org.a11y.Bus`); the helper asks it, without starting anything.
    case session(String)

    /// How it is passed to the helper.
    var arguments: [String] {
        switch self {
        case .bus(let address): return ["--bus", address]
        case .session(let address): return ["--session", address]
        }
    }

    /// Only a session bus is known: it may have no accessibility bus at all, which is not a failure.
    public var isSessionOnly: Bool {
        if case .session = self { return true }
        return false
    }

    /// Where it came from, for messages (addresses name socket paths, not secrets).
    public var description: String {
        switch self {
        case .bus(let address): return "accessibility bus \(address)"
        case .session(let address): return "session bus \(address)"
        }
    }
}

/// Why the accessibility tree could not be read; a snapshot then falls back to OCR with this as its warning.
public enum AccessibilityError: Error, CustomStringConvertible, Equatable, ClassifiedError {
    /// Nothing tells where the display's accessibility bus is.
    case noBus(display: String)
    /// xclaw started this display with an accessibility bus, and that bus is gone.
    case busGone(display: String)
    /// The `xclaw-atspi` helper is not installed beside xclaw.
    case helperMissing
    /// The helper did not finish in time (a hung application or bus); it was killed.
    case timedOut(milliseconds: Int)
    /// The bus could not be reached (a stale address, or a session bus without an accessibility bus).
    case unreachable(String)
    /// The application refused the call or the element is gone (no such action, a closed window).
    case refused(String)
    /// The helper crashed or printed something unreadable: a bug.
    case failed(String)

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .noBus(let display):
            return "no accessibility bus on display \(display); start the display with "
                + "`xclaw display start --accessibility`, or run the apps in a desktop session with AT-SPI"
        case .busGone(let display):
            return "the accessibility bus xclaw started for display \(display) is gone (killed?); restart the display "
                + "with `xclaw display stop \(display)` and `xclaw display start --accessibility`"
        case .helperMissing:
            return "xclaw-atspi is missing: install it beside the xclaw binary (swift build builds both), or set "
                + "XCLAW_ATSPI to its path"
        case .timedOut(let ms):
            return "the accessibility tree did not answer within \(ms) ms (a hung application or bus?); "
                + "XCLAW_ATSPI_TIMEOUT_MS gives it longer"
        case .unreachable(let message): return "the accessibility bus cannot be reached: \(message)"
        case .refused(let message): return message
        case .failed(let message): return "reading the accessibility tree failed: \(message)"
        }
    }

    /// Which exit status the error ends a command with.
    public var exitStatus: ExitStatus {
        switch self {
        case .noBus, .busGone, .timedOut, .unreachable, .refused: return .notFound
        case .helperMissing, .failed: return .internal
        }
    }
}

/// Reads AT-SPI2 through the `xclaw-atspi` helper process, under a deadline: an application that hangs the bus, or
/// a GLib abort, ends the helper, never xclaw.
public struct AccessibilityReader: Sendable {
    /// The helper's path, if it was found.
    public var helper: String?
    /// How long one helper run may take before it is killed.
    public var timeout: Duration
    /// How long one D-Bus call inside the helper may take.
    public var callTimeout: Duration

    /// A reader using the helper beside this executable (or `$XCLAW_ATSPI`), with a 2 s deadline by default
    /// (`$XCLAW_ATSPI_TIMEOUT_MS` overrides it).
    public init(
        helper: String? = AccessibilityReader.findHelper(), timeout: Duration? = nil,
        callTimeout: Duration = .milliseconds(800)
    ) {
        self.helper = helper
        let env = Invocation.current.environment["XCLAW_ATSPI_TIMEOUT_MS"].flatMap(Int.init)
        self.timeout = timeout ?? .milliseconds(min(600_000, max(100, env ?? 2000)))
        self.callTimeout = min(callTimeout, self.timeout)
    }

    /// The helper: `$XCLAW_ATSPI`, else `xclaw-atspi` beside the running executable, else on PATH.
    public static func findHelper() -> String? {
        let env = Invocation.current.environment
        if let path = env["XCLAW_ATSPI"], !path.isEmpty { return access(path, X_OK) == 0 ? path : nil }
        if let beside = XclawPaths.sibling("xclaw-atspi") { return beside }
        for dir in (env["PATH"] ?? "").split(separator: ":") where access("\(dir)/xclaw-atspi", X_OK) == 0 {
            return "\(dir)/xclaw-atspi"
        }
        return nil
    }

    /// Where the accessibility bus of `display` is: `AT_SPI_BUS_ADDRESS` (when it is the environment's display),
    /// then the root window's `AT_SPI_BUS` property, then the environment's session bus (when it is the
    /// environment's display). Nil when nothing says: then snapshots use OCR alone, without any delay.
    public static func locate(
        display: String, windows: WindowManager,
        environment: [String: String] = Invocation.current.environment
    )
        -> AccessibilityLocation?
    {
        let ours = environment["DISPLAY"].map { sameDisplay($0, display) } ?? false
        if ours, let address = environment["AT_SPI_BUS_ADDRESS"], !address.isEmpty { return .bus(address) }
        if let address = try? windows.rootText("AT_SPI_BUS"), !address.isEmpty { return .bus(address) }
        if ours, let session = environment["DBUS_SESSION_BUS_ADDRESS"], !session.isEmpty { return .session(session) }
        return nil
    }

    /// Why `display` has no bus: `busGone` when xclaw started it with one (its record says so), else `noBus`.
    public static func missingBus(display: String) -> AccessibilityError {
        if let record = try? VirtualDisplay.find(name: display), record.accessibility != nil {
            return .busGone(display: display)
        }
        return .noBus(display: display)
    }

    /// Whether two display names (`:1`, `:1.0`, `unix:1`) name the same display.
    static func sameDisplay(_ a: String, _ b: String) -> Bool {
        func number(_ name: String) -> String {
            let afterColon = name.split(separator: ":", omittingEmptySubsequences: false).last ?? Substring(name)
            return String(afterColon.split(separator: ".").first ?? afterColon)
        }
        return number(a) == number(b)
    }

    /// The visible nodes of every application (`all`: hidden ones too; `actions`: with action names; `pid`: only
    /// that process's applications; `walk`: never the bulk cache, for measuring).
    public func tree(
        at location: AccessibilityLocation, all: Bool = false, actions: Bool = false, pid: Int? = nil,
        walk: Bool = false
    ) throws -> AccessibleTree {
        var arguments = ["dump"] + location.arguments + ["--timeout", "\(Int(callTimeout.milliseconds))"]
        if all { arguments.append("--all") }
        if actions { arguments.append("--actions") }
        if walk { arguments.append("--walk") }
        if let pid { arguments += ["--pid", "\(pid)"] }
        let output = try run(arguments)
        do {
            return try JSONDecoder().decode(AccessibleTree.self, from: output)
        } catch {
            throw AccessibilityError.failed("unreadable output from xclaw-atspi: \(error)")
        }
    }

    /// Performs a toolkit action on a node (`name` nil: its first action, such as "click" or "Press"); returns the
    /// action's name.
    public func perform(_ name: String?, on handle: AccessibleHandle, at location: AccessibilityLocation) throws
        -> String
    {
        let output = try run(
            ["action"] + location.arguments + [
                "--timeout", "\(Int(callTimeout.milliseconds))",
                handle.bus, handle.path,
            ] + (name.map { [$0] } ?? []))
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Moves the keyboard focus to a node.
    public func focus(_ handle: AccessibleHandle, at location: AccessibilityLocation) throws {
        _ = try run(
            ["focus"] + location.arguments + [
                "--timeout", "\(Int(callTimeout.milliseconds))", handle.bus,
                handle.path,
            ])
    }

    /// Runs the helper and returns its stdout; kills it at the deadline.
    private func run(_ arguments: [String]) throws -> Data {
        guard let helper else { throw AccessibilityError.helperMissing }
        let result: Subprocess.Outcome
        do { result = try Subprocess.run([helper] + arguments, timeout: timeout) } catch let error as SubprocessError {
            throw AccessibilityError.failed(error.description)
        }
        switch result.ending {
        case .timedOut:
            throw AccessibilityError.timedOut(milliseconds: Int(timeout.milliseconds))
        case .signalled(let signal):
            throw AccessibilityError.failed(
                "xclaw-atspi was killed by signal \(signal)"
                    + Self.detail(result.stderr))
        case .exited(let status) where status != 0:
            let detail = Self.detail(result.stderr)
            let message = detail.isEmpty ? "xclaw-atspi exited with status \(status)" : String(detail.dropFirst(2))
            // The helper's documented statuses: 3 no bus or cannot connect, 4 the call failed.
            switch status {
            case 3: throw AccessibilityError.unreachable(message)
            case 4: throw AccessibilityError.refused(message)
            default: throw AccessibilityError.failed(message)
            }
        case .unknown:
            throw AccessibilityError.failed("could not learn how xclaw-atspi ended")
        case .exited:
            return result.stdout
        }
    }

    private static func detail(_ stderr: Data) -> String {
        let lines = String(decoding: stderr, as: UTF8.self).split(separator: "\n")
            .map { $0.replacingOccurrences(of: "xclaw-atspi: ", with: "") }
        // GLib's own warnings are noise here; the helper's last line says what failed.
        guard let last = lines.last(where: { !$0.hasPrefix("(process:") && !$0.isEmpty }) else { return "" }
        return ": " + last
    }
}

import Foundation
import Synchronization
import XclawBase
import XclawPolling
import XclawScreen

/// The directory holding the built products (`xclaw`, `xclaw-fixture`): the test bundle's own directory. Every test
/// that starts an `xclaw` reads it first, so it also makes sure no command a test starts starts a daemon of its own
/// (`XCLAW_DAEMON=off`, unless the environment says otherwise: `scripts/run-tests.py` sets it too), which would
/// outlive the test by its idle time; the tests of that start say `XCLAW_DAEMON=auto`.
public let productsDirectory: URL = {
    setenv("XCLAW_DAEMON", "off", 0)
    return XclawPaths.executableDirectory
}()

/// A private Xvfb for one test class. Started with `-terminate` and held open by a keeper connection, so the server
/// also ends if the test process dies without running its tear-down.
/// Safe because `keeper` is written only by `init` and `stop`, which a test calls from one thread.
public final class TestDisplay: @unchecked Sendable {
    /// The Xvfb.
    public let server: VirtualDisplay
    private var keeper: DisplayConnection?
    /// Its name, `:N`.
    public var name: String { server.name }

    /// `accessibility` also starts the session and accessibility buses (`VirtualDisplay.startAccessibility`, once the
    /// keeper holds the server); `stop` ends them.
    public convenience init(
        size: Size = Size(width: 1280, height: 800), depth: Int = 24, shm: Bool = true, number: Int? = nil,
        launcher: [String] = [], accessibility: Bool = false
    ) throws {
        try self.init(
            size: size, depth: depth, shm: shm, number: number, numbers: 30000..<59000, launcher: launcher,
            accessibility: accessibility)
    }

    /// As the public one; without `number`, a random one of `numbers` (`restartable` keeps its own range).
    private init(
        size: Size, depth: Int = 24, shm: Bool = true, number: Int? = nil, numbers: Range<Int>,
        launcher: [String] = [], accessibility: Bool = false
    ) throws {
        var server = try Self.startServer(
            size: size, depth: depth, shm: shm, number: number, numbers: numbers, launcher: launcher)
        // Connected before anything else comes and goes: `-terminate` ends the server when its last client leaves.
        // The buses are started after it, not by `VirtualDisplay.start`: their start-up's own connection closed
        // before this one opened once, and the server was gone ("cannot open display").
        do {
            keeper = try DisplayConnection(name: server.name)
        } catch {
            let diagnosis = Self.ending(of: server)
            try? server.stop()
            throw ScreenError.virtualDisplay("\(error) (\(diagnosis))")
        }
        if accessibility { try server.startAccessibility(detached: false, timeout: .seconds(10)) }
        self.server = server
    }

    /// The Xvfb, on `number` or else on a random one of `numbers` (30000–58999 unless restartable). Not
    /// `-displayfd`'s lowest free number: with six jobs side by side that hands a number out again the moment a test
    /// frees it, and a client still aiming at the old server (a killed display's leftovers, a stale name) then meets
    /// a newborn one; if it came and left before the keeper connected, `-terminate` ended the new server ("cannot
    /// open display :1" in a test's set-up). A number another server holds fails at once: another is tried.
    private static func startServer(
        size: Size, depth: Int, shm: Bool, number: Int?, numbers: Range<Int>, launcher: [String]
    ) throws -> VirtualDisplay {
        func start(_ number: Int) throws -> VirtualDisplay {
            try VirtualDisplay.start(
                size: size, depth: depth, shm: shm, number: number, detached: false,
                record: false, extraArguments: ["-terminate"], launcher: launcher)
        }
        if let number { return try start(number) }
        var lastError: (any Error)?
        for _ in 0..<20 {
            do {
                return try start(Int.random(in: numbers))
            } catch {
                lastError = error
            }
        }
        throw lastError ?? ScreenError.virtualDisplay("no free display number")
    }

    /// A display a test stops and starts again on the same number: it takes a number of 1000–29999, apart from the
    /// ones other test displays take (30000–58999), so a server another test process starts meanwhile never takes it
    /// while it is down.
    public static func restartable(size: Size) throws -> TestDisplay {
        try TestDisplay(size: size, numbers: 1000..<30000)
    }

    /// How a server that refused its keeper ended, and the end of its log. A server of this suite was once gone
    /// before its keeper connected ("cannot open display :1", its number just freed by a test that killed its own):
    /// an exit 0 with "terminated" in its log says a client came and left first (`-terminate`), a signal that
    /// something killed it.
    private static func ending(of server: VirtualDisplay) -> String {
        var status: Int32 = 0
        let ended: String
        switch waitpid(server.pid, &status, WNOHANG) {
        case server.pid:
            let signal = status & 0x7f
            ended = signal == 0 ? "Xvfb exited \((status >> 8) & 0xff)" : "Xvfb was killed by signal \(signal)"
        case 0: ended = "Xvfb still runs"
        default: ended = "Xvfb's ending is unknown"
        }
        let log = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
        let tail = log.split(separator: "\n").suffix(3).joined(separator: " | ")
        return "\(ended), pid \(server.pid)" + (tail.isEmpty ? "" : "; its log ends: \(tail)")
    }

    /// What an app launched on this display needs: `DISPLAY`, plus the session bus when it has one.
    public var environment: [String: String] { server.environment }

    /// Opens a fresh connection.
    public func connect() throws -> DisplayConnection { try DisplayConnection(name: name) }

    /// Stops the server; safe to call twice.
    public func stop() {
        keeper = nil
        try? server.stop()
    }

    deinit { stop() }
}

/// A display with one fixture window, shared by the tests of a class (started in `class setUp`).
/// Safe because both members are immutable references to classes that are themselves thread-safe.
public final class Scene: @unchecked Sendable {
    /// The display.
    public let display: TestDisplay
    /// The fixture window on it.
    public let fixture: Fixture

    /// Starts both; a test class records the error as a failure so every test of the class fails clearly.
    public init(title: String, frame: Rect, background: String = "#ffffff", rects: [(Rect, String)] = []) throws {
        display = try TestDisplay()
        fixture = try Fixture(display: display.name, title: title, frame: frame, background: background, rects: rects)
    }

    /// Ends the fixture, then the display.
    public func stop() {
        fixture.stop()
        display.stop()
    }
}

/// A running `xclaw-fixture`: a window that paints rectangles and reports every event as a JSON line.
/// Safe because the window id, the buffer and the events are guarded by `lock`; `process` is set up before it runs.
public final class Fixture: @unchecked Sendable {
    /// The fixture process.
    public let process = Process()
    /// Its window, once it reported ready.
    public private(set) var window: UInt = 0
    private let lock = NSLock()
    private var buffer = Data()
    private var events: [ProbeEvent] = []

    /// `extra` passes more fixture options (`--text`, `--button`, `--animate` …) as they are.
    public init(
        display: String, title: String = "xclaw fixture", frame: Rect, background: String = "#ffffff",
        rects: [(Rect, String)] = [], extra: [String] = []
    ) throws {
        process.executableURL = productsDirectory.appendingPathComponent("xclaw-fixture")
        var args = [
            "--display", display, "--title", title,
            "--geometry", "\(frame.width)x\(frame.height)+\(frame.x)+\(frame.y)", "--bg", background,
        ]
        for (rect, color) in rects { args += ["--rect", "\(rect),\(color)"] }
        process.arguments = args + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock {
                self.buffer.append(data)
                while let nl = self.buffer.firstIndex(of: 0x0a) {
                    let line = self.buffer[self.buffer.startIndex..<nl]
                    self.buffer.removeSubrange(self.buffer.startIndex...nl)
                    if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
                        object["kind"] as? String == ProbeEvent.Kind.ready.rawValue, let id = object["window"] as? Int
                    {
                        self.window = UInt(id)
                    } else if let event = try? JSONDecoder().decode(ProbeEvent.self, from: line) {
                        self.events.append(event)
                    }
                }
            }
        }
        try process.run()
        // The ready line comes once the window is painted and synced; 25 s is past the probe's own 20 s wait for
        // its window to map.
        poll(within: .seconds(25), every: .milliseconds(10)) { lock.withLock { window != 0 } || !process.isRunning }
        guard lock.withLock({ window != 0 }) else {
            // Which of the two it was tells a crash (its stderr is the test's) from a window that never mapped.
            let why =
                process.isRunning ? "no ready line within 25 s" : "it exited with status \(process.terminationStatus)"
            throw ScreenError.virtualDisplay("fixture did not start on \(display): \(why)")
        }
    }

    /// Every event received so far.
    public var received: [ProbeEvent] { lock.withLock { events } }

    /// Forgets the events received so far.
    public func clear() { lock.withLock { events.removeAll() } }

    /// Moves the pointer to `sentinel` (from a point beside it, so a motion event is sure) and forgets every event
    /// up to that motion: whatever an earlier test sent has arrived by then.
    public func settlePointer(at sentinel: Point, via input: InputController) throws {
        try input.move(to: Point(x: sentinel.x - 1, y: sentinel.y - 1))
        try input.move(to: sentinel)
        wait { $0.contains { $0.kind == .motion && $0.rootX == sentinel.x && $0.rootY == sentinel.y } }
        clear()
    }

    /// Middle-clicks `sentinel` and returns every other button press received up to it: anything sent before the
    /// sentinel has arrived by then.
    public func pressesUntilSentinel(at sentinel: Point, via input: InputController) throws -> [ProbeEvent] {
        try input.click(at: sentinel, button: .middle)
        wait { $0.contains { $0.kind == .buttonPress && $0.rootX == sentinel.x && $0.button == 2 } }
        return received.filter { $0.kind == .buttonPress && !($0.rootX == sentinel.x && $0.button == 2) }
    }

    /// Waits until `done` holds for the received events (at most `timeout` s), then returns them.
    @discardableResult
    public func wait(timeout: TimeInterval = 5, until done: ([ProbeEvent]) -> Bool) -> [ProbeEvent] {
        poll(within: .seconds(timeout), every: .milliseconds(5)) { done(received) }
        return received
    }

    /// Waits for `count` events of `kind`.
    public func wait(for kind: ProbeEvent.Kind, count: Int = 1, timeout: TimeInterval = 5) -> [ProbeEvent] {
        wait(timeout: timeout) { $0.filter { $0.kind == kind }.count >= count }.filter { $0.kind == kind }
    }

    /// Waits until the key presses received have typed `count` characters (Unicode scalars; Shift presses type
    /// none) and returns the text.
    public func typed(count: Int, timeout: TimeInterval = 5) -> String {
        EventProbe.typedText(wait(timeout: timeout) { EventProbe.typedText($0).unicodeScalars.count >= count })
    }

    /// Ends the fixture.
    public func stop() { process.end() }

    deinit { stop() }
}

/// The outcome of running the `xclaw` binary.
public struct CLIResult {
    /// The exit status.
    public var status: Int32
    /// What it printed on stdout.
    public var stdout: Data
    /// What it printed on stderr.
    public var stderr: String
    /// stdout as text.
    public var text: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs `xclaw` with arguments, an optional stdin and extra environment, in `directory` (default: the test's), and
/// waits for it.
@discardableResult
public func runCLI(
    _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
    removing: [String] = [], directory: URL? = nil
) throws -> CLIResult {
    let process = Process()
    process.executableURL = productsDirectory.appendingPathComponent("xclaw")
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    var env = ProcessInfo.processInfo.environment
    for key in removing { env.removeValue(forKey: key) }
    env.merge(environment) { $1 }
    process.environment = env
    try DaemonMode.prepare(arguments, environment: env)
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    // Read both pipes before waiting so a large output cannot block the child.
    let errBox = DataBox()
    let reader = Thread { errBox.set(err.fileHandleForReading.readDataToEndOfFile()) }
    reader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    errBox.wait(within: .seconds(30))  // stderr's end comes with stdout's, unless a child of xclaw holds it
    return CLIResult(
        status: process.terminationStatus, stdout: outData, stderr: String(decoding: errBox.data, as: UTF8.self))
}

/// Starts `xclaw` in the background with extra environment; stdin, stdout and stderr default to nothing, so a
/// test that kills or interrupts it can pass pipes only for what it reads.
public func launchCLI(
    _ arguments: [String], environment: [String: String], stdin: Pipe? = nil, stdout: Pipe? = nil,
    stderr: Pipe? = nil
) throws -> Process {
    let process = Process()
    process.executableURL = productsDirectory.appendingPathComponent("xclaw")
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    try DaemonMode.prepare(arguments, environment: process.environment ?? [:])
    if let stdin { process.standardInput = stdin }
    process.standardOutput = stdout ?? FileHandle.nullDevice
    process.standardError = stderr ?? FileHandle.nullDevice
    try process.run()
    return process
}

/// Data written by one thread and read by another.
public final class DataBox: Sendable {
    private let value = Mutex<Data?>(nil)
    /// An empty box.
    public init() {}
    /// Stores the data.
    public func set(_ data: Data) { value.withLock { $0 = data } }
    /// Whether data was stored.
    public var isSet: Bool { value.withLock { $0 != nil } }
    /// The data, empty until stored.
    public var data: Data { value.withLock { $0 ?? Data() } }
    /// Waits until data was stored, at most `within`; whether it was.
    @discardableResult
    public func wait(within: Duration) -> Bool { poll(within: within, every: .milliseconds(1)) { isSet } }
}

extension Process {
    /// Whether it exited within `within`. Polls: `waitUntilExit` never returns when called from an async test (it
    /// waits on the run loop of a thread that is not the one that started the process), nor takes a deadline.
    @discardableResult
    public func exits(within: Duration) -> Bool { poll(within: within, every: .milliseconds(5)) { !isRunning } }

    /// Ends it: SIGTERM, then SIGKILL when it did not exit within `within` (and as long again for that).
    public func end(within: Duration = .seconds(5)) {
        guard isRunning else { return }
        terminate()
        guard !exits(within: within) else { return }
        kill(processIdentifier, SIGKILL)
        exits(within: within)
    }
}

/// Every printable ASCII character.
public let printableASCII = String((0x20...0x7e).map { Character(Unicode.Scalar($0)!) })

/// A fixture that comes up after a delay, and goes again after `lifetime` when one is given: what tests of waiting
/// (`watch`, `--timeout`) wait for. Safe because the fixture and the stopped flag are touched only under `lock`.
public final class LateFixture: @unchecked Sendable {
    private let lock = NSLock()
    private var started: Fixture?
    private var stopped = false

    /// Starts `make` on a thread of its own after `delay` seconds.
    public init(
        after delay: TimeInterval, lifetime: TimeInterval? = nil, _ make: @escaping @Sendable () throws -> Fixture
    ) {
        Thread { [self] in
            Thread.sleep(forTimeInterval: delay)  // the scenario: a window that comes late, not a wait
            let fixture = try? make()
            let late = lock.withLock { () -> Bool in
                if !stopped { started = fixture }
                return stopped
            }
            if late { fixture?.stop() }
            guard let lifetime else { return }
            Thread.sleep(forTimeInterval: lifetime)  // the scenario: a window that goes again
            stop()
        }.start()
    }

    /// The fixture, once it is up.
    public var fixture: Fixture? { lock.withLock { started } }

    /// Ends it (now, or as soon as it comes up).
    public func stop() {
        let fixture = lock.withLock { () -> Fixture? in
            stopped = true
            defer { started = nil }
            return started
        }
        fixture?.stop()
    }
}

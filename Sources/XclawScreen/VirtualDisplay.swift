import CX11
import Foundation
import Glibc
import XclawBase

/// A private Xvfb server that xclaw started: the headless default for unattended runs, demos and tests.
///
/// Xvfb picks a free display number itself (`-displayfd`) and writes it once it accepts connections, so there is
/// no port race and no polling. Started displays are recorded in the state directory so later commands can list
/// and stop them.
public struct VirtualDisplay: Codable, Sendable, Hashable {
    /// The display name, `:N`.
    public var name: String
    /// The display number N.
    public var number: Int
    /// The Xvfb process id.
    public var pid: Int32
    /// The screen size.
    public var size: Size
    /// Bits per pixel of the root visual.
    public var depth: Int
    /// Whether MIT-SHM is enabled (disabled to exercise the XGetImage path).
    public var shm: Bool
    /// When it started.
    public var startedAt: Date
    /// Xvfb's own output, for when it fails.
    public var logPath: String
    /// The D-Bus session bus and AT-SPI accessibility bus started for this display (`--accessibility`), so apps
    /// launched on it expose their accessibility trees; nil when none was asked for (and in older records).
    public var accessibility: AccessibilityBus?

    /// snake_case, as every xclaw JSON output (records older xclaws wrote are read with `JSONDecoder.xclawRecords`).
    enum CodingKeys: String, CodingKey {
        case name, number, pid, size, depth, shm, accessibility
        case startedAt = "started_at"
        case logPath = "log_path"
    }

    /// What a process launched on this display needs: `DISPLAY`, plus the session bus address when it has an
    /// accessibility bus. Also drop `environmentToRemove` from an inherited environment.
    public var environment: [String: String] {
        ["DISPLAY": name].merging(accessibility?.environment ?? [:]) { current, _ in current }
    }

    /// Variables a child must not inherit to use this display: `WAYLAND_DISPLAY` makes GTK and Qt ignore `DISPLAY`,
    /// and an inherited `AT_SPI_BUS_ADDRESS` would send apps to another desktop's accessibility bus.
    public var environmentToRemove: [String] {
        accessibility == nil ? ["WAYLAND_DISPLAY"] : ["WAYLAND_DISPLAY", "AT_SPI_BUS_ADDRESS"]
    }

    /// Where records and logs live: `$XCLAW_STATE_DIR`, else `$XDG_RUNTIME_DIR/xclaw`, else `/tmp/xclaw-UID`.
    public static var stateDirectory: URL { XclawPaths.stateDirectory() }

    /// The state directory, created if missing and refused when planted (another owner, writable by others, a
    /// symlink): every command that keeps state there checks it first.
    public static func checkedStateDirectory() throws -> URL { try PrivateFiles.directory(stateDirectory) }

    private static var displaysDirectory: URL { stateDirectory.appendingPathComponent("displays") }

    /// Whether an X server accepts connections on display `number`'s socket (an Xvfb started with `-displayfd`
    /// writes no lock file, and a killed one leaves a socket nobody answers on).
    static func socketAnswers(display number: Int) -> Bool {
        guard let socket = try? UnixSocket.connect(path: "/tmp/.X11-unix/X\(number)") else { return false }
        socket.close()
        return true
    }

    /// Starts Xvfb and returns once it accepts connections.
    /// - Parameters:
    ///   - number: a display number to use (`nil`: the first free one).
    ///   - detached: run in its own session so it outlives this process (`xclaw display start`); tests keep it
    ///     attached and stop it themselves.
    ///   - record: remember it for `xclaw display list/stop`.
    ///   - extraArguments: more Xvfb flags (e.g. `-terminate`).
    ///   - launcher: a command that runs Xvfb (e.g. `["/usr/bin/unshare", "--ipc"]` to mimic a containerised server).
    ///   - accessibility: also start a D-Bus session bus and the AT-SPI accessibility bus for it (`AccessibilityBus`),
    ///     so GTK and Qt apps launched with `environment` expose their trees. Only for displays xclaw owns.
    ///   - timeout: how long Xvfb, and then the buses, may take to be ready.
    public static func start(
        size: Size = Size(width: 1920, height: 1080), depth: Int = 24, shm: Bool = true,
        number: Int? = nil, detached: Bool = true, record: Bool = true, unattended: Bool? = nil,
        extraArguments: [String] = [], launcher: [String] = [], accessibility: Bool = false,
        timeout: Duration = .seconds(10)
    ) throws -> VirtualDisplay {
        guard [16, 24, 32].contains(depth) else {
            throw ScreenError.invalidArgument("depth must be 16, 24 or 32, not \(depth)")
        }
        guard (1...16384).contains(size.width), (1...16384).contains(size.height) else {
            throw ScreenError.invalidArgument("size \(size) is out of range (1..16384 per side)")
        }
        if let number {
            guard (0...65535).contains(number) else {
                throw ScreenError.invalidArgument("a display number is from 0 to 65535, not \(number)")
            }
            // Xvfb would fail on its own, with "server already running" in its log: say it plainly first. A socket
            // nothing answers on (a server killed) is stale, and Xvfb takes the number over.
            if socketAnswers(display: number) {
                throw ScreenError.virtualDisplay(
                    "display :\(number) is in use (an X server answers on it): choose another number, or leave it out "
                        + "to take a free one")
            }
        }
        guard let xvfb = findExecutable("Xvfb") else {
            throw ScreenError.virtualDisplay(
                "Xvfb is not installed: run scripts/install-deps.sh (or `apt-get install xvfb`)")
        }
        // The /tmp fallback is shared: refuse a directory someone else made for us.
        try checkedStateDirectory()
        try PrivateFiles.directory(displaysDirectory)
        let fm = FileManager.default
        let logPath = displaysDirectory.appendingPathComponent(
            "starting-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
        ).path

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ScreenError.virtualDisplay("pipe() failed: \(Errno.current)") }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }

        var arguments = launcher + [xvfb]
        if let number { arguments.append(":\(number)") }
        arguments += ["-displayfd", "3", "-screen", "0", "\(size.width)x\(size.height)x\(depth)", "-nolisten", "tcp"]
        if !shm { arguments += ["-extension", "MIT-SHM"] }
        // By default Xvfb resets (rebuilding its keymap, ~10 ms) whenever its last client leaves, so every short-lived
        // command would wait for it; a reset would also wipe the root property `AT_SPI_BUS` that apps find the
        // accessibility bus by. `-terminate` (tests) ends the server at that reset instead, so it keeps resets.
        if !extraArguments.contains("-terminate") { arguments.append("-noreset") }
        arguments += extraArguments

        let server: Subprocess
        do {
            server = try spawn(
                arguments, stdout: .appending(toFile: logPath), descriptors: [3: writeEnd],
                group: detached ? .newSession : .inherited)
        } catch {
            close(writeEnd)
            throw error
        }
        close(writeEnd)
        let pid = server.pid
        guard let displayNumber = readDisplayNumber(from: readEnd, timeout: timeout) else {
            server.kill()
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            try? fm.removeItem(atPath: logPath)
            let tail = log.split(separator: "\n").suffix(5).joined(separator: "\n  ")
            throw ScreenError.virtualDisplay(
                "Xvfb did not start within \(timeout)" + (tail.isEmpty ? "" : ":\n  \(tail)"))
        }
        let finalLog = displaysDirectory.appendingPathComponent("\(displayNumber).log").path
        try? fm.removeItem(atPath: finalLog)
        try? fm.moveItem(atPath: logPath, toPath: finalLog)
        var display = VirtualDisplay(
            name: ":\(displayNumber)", number: displayNumber, pid: pid, size: size,
            depth: depth, shm: shm, startedAt: Date(), logPath: finalLog)
        if unattended ?? record {
            do { try markUnattended(display.name) } catch {
                server.kill()
                throw error
            }
        }
        if accessibility { try display.startAccessibility(detached: detached, timeout: timeout) }
        if record {
            do {
                try display.save()
            } catch {
                try? display.stop()  // an unrecorded server could never be stopped with `display stop`
                throw ScreenError.virtualDisplay("could not record the display in \(displaysDirectory.path): \(error)")
            }
        }
        return display
    }

    /// The root-window property that marks a display xclaw started for its own use (`display start`, a run's
    /// `new` display): no person's keyboard or mouse is on it, so every key press there is a program's (an agent's
    /// own XTest input), and the stop hotkey and the corner failsafe are not armed there. It dies with the server.
    static let unattendedProperty = "_XCLAW_UNATTENDED_DISPLAY"

    /// Marks display `name` as one no person uses (`unattendedProperty`).
    public static func markUnattended(_ name: String) throws {
        let connection = try DisplayConnection(name: name)
        let atom = connection.atom(unattendedProperty)
        try connection.trapped { display in
            var value: CLong = 1
            withUnsafeBytes(of: &value) { raw in
                _ = XChangeProperty(
                    display, connection.root, atom, Atom(XA_CARDINAL), 32, PropModeReplace,
                    raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
            }
        }
        try connection.sync()
    }

    /// Whether display `name` is one xclaw started for its own use (`markUnattended`); false when it cannot be read.
    public static func isUnattended(_ name: String) -> Bool {
        guard let connection = try? DisplayConnection(name: name),
            let values = try? WindowManager(connection: connection).cardinals(
                connection.root, unattendedProperty, type: Atom(XA_CARDINAL))
        else { return false }
        return values.first == 1
    }

    /// The recorded displays whose Xvfb still runs; records of dead ones are removed.
    public static func list() -> [VirtualDisplay] {
        let fm = FileManager.default
        guard let files = try? fm.contentsOfDirectory(atPath: displaysDirectory.path) else { return [] }
        var result: [VirtualDisplay] = []
        for file in files where file.hasSuffix(".json") {
            let url = displaysDirectory.appendingPathComponent(file)
            guard let data = try? Data(contentsOf: url),
                let display = try? JSONDecoder.xclawRecords.decode(VirtualDisplay.self, from: data)
            else { continue }
            if display.isRunning {
                result.append(display)
            } else {
                // Its server died on its own: its buses must not outlive the record that could stop them.
                display.accessibility?.stop()
                try? fm.removeItem(at: url)
            }
        }
        return result.sorted { $0.number < $1.number }
    }

    /// Stops a recorded display by name (`:41` or `41`).
    public static func stop(name: String, timeout: Duration = .seconds(3)) throws {
        try find(name: name).stop(timeout: timeout)
    }

    /// The running recorded display called `name` (`:41`, `41` or `host:41.0`), for commands that act on one.
    public static func find(name: String) throws -> VirtualDisplay {
        try checkedStateDirectory()
        let number =
            Int(name.hasPrefix(":") ? String(name.dropFirst()) : name)
            ?? Int(name.split(separator: ":").last?.split(separator: ".").first ?? "")
        guard let number, let display = list().first(where: { $0.number == number }) else {
            throw ScreenError.virtualDisplay(
                "no display \(name) started by xclaw is running; see `xclaw display list`")
        }
        return display
    }

    /// True while the recorded process is alive and is an Xvfb (guards against pid reuse).
    public var isRunning: Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { return false }  // our own child that has exited
        guard let cmdline = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")) else { return false }
        return String(decoding: cmdline, as: UTF8.self).contains("Xvfb")
    }

    /// Terminates the server (SIGTERM, then SIGKILL after `timeout`) and forgets it; its buses go first, while the
    /// server still runs, even when the server itself has already died.
    public func stop(timeout: Duration = .seconds(3)) throws {
        defer {
            try? FileManager.default.removeItem(at: Self.displaysDirectory.appendingPathComponent("\(number).json"))
        }
        accessibility?.stop(timeout: timeout)
        guard isRunning else { return }
        Subprocess.terminate([pid], grace: timeout) { _ in isRunning }
    }

    private func save() throws {
        let url = Self.displaysDirectory.appendingPathComponent("\(number).json")
        try JSONEncoder.xclaw.encode(self).write(to: url, options: .atomic)
    }

    /// Starts a child through `Subprocess` (stdin from /dev/null, no descriptor of ours but those given), its
    /// failures worded as display errors; shared by the bus helpers. Its stderr goes where its stdout goes unless
    /// `stderr` says otherwise.
    static func spawn(
        _ arguments: [String], stdout: Subprocess.Stream, stderr: Subprocess.Stream = .sameAsStdout,
        environment: [String: String]? = nil, descriptors: [Int32: Int32] = [:],
        group: Subprocess.Group = .inherited
    ) throws -> Subprocess {
        do {
            return try Subprocess.spawn(
                arguments, stdout: stdout, stderr: stderr, environment: environment,
                descriptors: descriptors, group: group)
        } catch let error as SubprocessError {
            throw ScreenError.virtualDisplay(error.description)
        }
    }

    private static func readDisplayNumber(from fd: Int32, timeout: Duration) -> Int? {
        let deadline = ContinuousClock.now + timeout
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 64)
        while !text.contains("\n") {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, left.seconds * 1000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return nil }  // Xvfb exited before it was ready
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The first `name` on `$PATH` (then /usr/bin) that may be executed.
    static func findExecutable(_ name: String) -> String? {
        let path = Invocation.current.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        // Strings, not `split`'s slices: mixed with the literal below, the slices were printed as arrays of characters.
        for dir in path.split(separator: ":").map(String.init) + ["/usr/bin"] {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}

extension VirtualDisplay {
    /// Starts the session and accessibility buses for this display (what `start(accessibility: true)` does), for a
    /// caller that must hold a connection first: a `-terminate` server ends when its last client leaves, and the
    /// buses' start-up connects and disconnects. On failure the display is stopped: asked for with accessibility, it
    /// is useless without it.
    public mutating func startAccessibility(detached: Bool, timeout: Duration) throws {
        // Buses of displays that died without their clean-up would otherwise pile up.
        AccessibilityBus.reapOrphans()
        do {
            let busLog = Self.displaysDirectory.appendingPathComponent("\(number)-a11y.log").path
            accessibility = try AccessibilityBus.start(
                display: name, detached: detached, logPath: busLog, timeout: timeout)
        } catch {
            try? stop()
            throw error
        }
    }
}

import Foundation
import Glibc
import XclawBase
import XclawScreen

/// Which of a script's streams a line of output came from.
public enum ShortcutStream: Sendable, Equatable {
    /// Its stdout.
    case stdout
    /// Its stderr.
    case stderr
}

/// How one shortcut run ended, with what it printed (bounded: the head and tail are kept).
public struct ShortcutRun: Encodable, Sendable, Equatable {
    /// The run's ending.
    public enum Status: String, Encodable, Sendable {
        /// The script exited with status 0.
        case ok
        /// The script exited with another status (`exit_code`).
        case failed
        /// A signal not sent by xclaw ended the script (`signal`).
        case killed
        /// It ran past its timeout; its process group was killed.
        case timedOut = "timed_out"
        /// The caller cancelled it (Ctrl-C, a cancelled run); its process group was killed.
        case cancelled
        /// A desktop action was launched (detached; `pid`).
        case launched
    }

    /// The shortcut's name.
    public var name: String
    /// Its id.
    public var id: String
    /// Its kind.
    public var kind: Shortcut.Kind
    /// How it ended.
    public var status: Status
    /// The script's exit status, when it exited.
    public var exitCode: Int32?
    /// The signal that ended it, when one did.
    public var signal: Int32?
    /// The launched process (a desktop action) or the script's.
    public var pid: Int32
    /// How long it ran (for a launch: how long starting it took).
    public var seconds: Double
    /// What it printed on stdout (its middle cut when over the limit).
    public var stdout: String
    /// What it printed on stderr (the same).
    public var stderr: String
    /// Bytes of output left out of `stdout` and `stderr` (0: all of it is there).
    public var cutBytes: Int

    enum CodingKeys: String, CodingKey {
        case name, id, kind, status, signal, pid, seconds, stdout, stderr
        case exitCode = "exit_code"
        case cutBytes = "cut_bytes"
    }

    /// The error a run that did not succeed ends with (nil when it did).
    public var failure: ShortcutError? {
        switch status {
        case .ok, .launched, .cancelled: return nil
        case .failed: return .failed(name, status: exitCode ?? -1)
        case .killed: return .killedBySignal(name, signal: signal ?? 0)
        case .timedOut: return .timedOut(name, seconds: seconds)
        }
    }
}

/// Runs shortcuts for a caller: a script as a child in a process group of its own, from the caller's directory, with
/// the caller's environment (xclaw's secrets removed), its input on stdin (nothing without one), its output handed
/// over line by line as it comes, and at the timeout or on cancellation its whole group ended; a desktop action
/// launched detached on the display, its input filling `%u %f %U %F`.
public struct ShortcutRunner: Sendable {
    /// The caller's environment: where shortcuts are found and what scripts run with.
    public var environment: [String: String]
    /// The directory scripts run in (nil: this process's).
    public var directory: String?

    /// A runner for a caller.
    public init(environment: [String: String], directory: String? = nil) {
        (self.environment, self.directory) = (environment, directory)
    }

    /// Runs `shortcut`. A script's lines go to `line` as they come (the last one without its newline when it had
    /// none), and `keep` bytes of each stream are kept in the result (head and tail). `cancelled` is asked every
    /// 50 ms; a desktop action needs `display` (else `DISPLAY`).
    public func run(
        _ shortcut: Shortcut, input: String?, timeout: Duration, display: String? = nil, keep: Int = 1 << 20,
        cancelled: () -> Bool = { false }, line: (ShortcutStream, Data) -> Void = { _, _ in }
    ) throws -> ShortcutRun {
        guard shortcut.runnable else { throw ShortcutError.notRunnable(shortcut.name, why: shortcut.note ?? "") }
        switch shortcut.kind {
        case .desktopAction: return try launch(shortcut, input: input, display: display)
        case .script:
            return try script(
                shortcut, input: input, timeout: timeout, keep: keep, cancelled: cancelled, line: line)
        }
    }

    /// Launches a desktop action like `launch` does: detached, on the display, output to /dev/null.
    private func launch(_ shortcut: Shortcut, input: String?, display: String?) throws -> ShortcutRun {
        guard let entry = shortcut.application, let action = shortcut.action else {
            throw ShortcutError.notRunnable(shortcut.name, why: "it names no application action")
        }
        guard let display = display ?? environment["DISPLAY"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw ShortcutError.notRunnable(
                shortcut.name, why: "it opens a window and no display is named (set DISPLAY or pass --display)")
        }
        let started = ContinuousClock.now
        let childEnvironment = AppLauncher.environment(environment, display: display)
        let command = try DesktopEntries.command(
            entry, action: action, targets: input.map { [$0] } ?? [], environment: childEnvironment)
        let pid = try AppLauncher.launch(command, environment: childEnvironment)
        return ShortcutRun(
            name: shortcut.name, id: shortcut.id, kind: shortcut.kind, status: .launched, pid: pid,
            seconds: (ContinuousClock.now - started) / .seconds(1), stdout: "", stderr: "", cutBytes: 0)
    }

    /// Runs a script to its end, its timeout or its cancellation.
    private func script(
        _ shortcut: Shortcut, input: String?, timeout: Duration, keep: Int, cancelled: () -> Bool,
        line: (ShortcutStream, Data) -> Void
    ) throws -> ShortcutRun {
        let stdin = try input.map(Self.inputFile) ?? -1
        defer { if stdin >= 0 { close(stdin) } }
        let out = try Subprocess.pipe()
        let err: (read: Int32, write: Int32)
        do { err = try Subprocess.pipe() } catch {
            (close(out.read), close(out.write))
            throw error
        }
        var readEnds = [out.read, err.read]
        defer { readEnds.forEach { close($0) } }
        // `cd` first: served by the daemon or an agent, the caller's directory is not this process's. A script
        // without a shebang is run by the shell, as a shell runs it.
        let child: Subprocess
        do {
            child = try Subprocess.spawn(
                [
                    "/bin/sh", "-c", "cd -- \"$1\" 2>/dev/null; shift; exec \"$@\"", "xclaw-shortcut",
                    directory ?? FileManager.default.currentDirectoryPath, shortcut.path,
                ],
                stdin: stdin >= 0 ? .descriptor(stdin) : .null, stdout: .descriptor(out.write),
                stderr: .descriptor(err.write), environment: SecretEnvironment.stripped(environment), group: .own)
        } catch {
            (close(out.write), close(err.write))
            throw error
        }
        (close(out.write), close(err.write))
        let pid = child.pid
        // Should this process die (SIGKILL), the guard ends the script's group.
        let guardian = try? ProcessGuard()
        guardian?.watch(group: pid)
        defer { guardian?.dismiss() }

        let started = ContinuousClock.now
        let deadline = started + timeout
        var captured = [ShortcutStream.stdout: OutputKeeper(limit: keep), .stderr: OutputKeeper(limit: keep)]
        var pending = [ShortcutStream.stdout: Data(), .stderr: Data()]
        var ending: Subprocess.Termination?
        var stopped: ShortcutRun.Status?
        // After the script exits, what it left running may hold the pipes open: read what is there, briefly.
        var drainUntil: ContinuousClock.Instant?
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !readEnds.isEmpty {
            if ending == nil, let end = Subprocess.endingUnreaped(pid) {
                ending = end
                drainUntil = .now + .milliseconds(100)
            }
            if let drainUntil, ContinuousClock.now >= drainUntil { break }
            if ending == nil {
                if cancelled() {
                    stopped = .cancelled
                    break
                }
                if ContinuousClock.now >= deadline {
                    stopped = .timedOut
                    break
                }
            }
            var fds = readEnds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), 50)
            guard ready > 0 else { continue }
            for fd in fds where fd.revents != 0 {
                let stream: ShortcutStream = fd.fd == out.read ? .stdout : .stderr
                let n = Glibc.read(fd.fd, &buffer, buffer.count)
                if n > 0 {
                    let data = Data(buffer[0..<n])
                    captured[stream]?.append(data)
                    pending[stream, default: Data()].append(data)
                    while let newline = pending[stream]?.firstIndex(of: UInt8(ascii: "\n")) {
                        let whole = pending[stream]![...newline]
                        pending[stream]!.removeSubrange(...newline)
                        line(stream, Data(whole))
                    }
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    readEnds.removeAll { $0 == fd.fd }
                    close(fd.fd)
                }
            }
        }
        // A last line without its newline, and what a killed script printed last, are output too.
        for stream in [ShortcutStream.stdout, .stderr] where !(pending[stream] ?? Data()).isEmpty {
            line(stream, pending[stream]!)
        }
        if stopped != nil {
            // The whole group: a shell script's children (`sleep`) get the signal with it.
            Subprocess.terminate([pid], groups: [pid], grace: .seconds(1)) { Subprocess.endingUnreaped($0) == nil }
        } else if ending == nil {
            // The pipes closed (EOF) before the exit was seen: wait for it.
            while Subprocess.endingUnreaped(pid) == nil, ContinuousClock.now < deadline, !cancelled() {
                usleep(2000)
            }
            if Subprocess.endingUnreaped(pid) == nil {
                stopped = ContinuousClock.now >= deadline ? .timedOut : .cancelled
                Subprocess.terminate([pid], groups: [pid], grace: .seconds(1)) {
                    Subprocess.endingUnreaped($0) == nil
                }
            }
        }
        let reaped = child.wait(deadline: .now + .seconds(2))
        let seconds = stopped == .timedOut ? timeout / .seconds(1) : (ContinuousClock.now - started) / .seconds(1)
        var run = ShortcutRun(
            name: shortcut.name, id: shortcut.id, kind: shortcut.kind, status: stopped ?? .ok, pid: pid,
            seconds: seconds, stdout: captured[.stdout]!.text, stderr: captured[.stderr]!.text,
            cutBytes: captured[.stdout]!.cut + captured[.stderr]!.cut)
        if stopped == nil {
            switch ending ?? reaped {
            case .exited(let code):
                run.status = code == 0 ? .ok : .failed
                run.exitCode = code
            case .signalled(let signal):
                run.status = .killed
                run.signal = signal
            // Its status was lost (SIGCHLD ignored by whoever started us): nothing says it failed.
            case .timedOut, .unknown: run.status = .ok
            }
        }
        return run
    }

    /// The input as a file already unlinked, read from its start: any size, and no pipe the script may leave unread
    /// (a write to it would block, or end this process with SIGPIPE).
    static func inputFile(_ input: String) throws -> Int32 {
        var template = Array((NSTemporaryDirectory() + "/xclaw-input-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw SubprocessError.pipe(.current) }
        // Only the script gets it (as its stdin), not other children started meanwhile.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        unlink(String(cString: template))
        guard writeAll(fd, Data(input.utf8)) else {
            let error = Errno.current
            close(fd)
            throw SubprocessError.pipe(error)
        }
        lseek(fd, 0, SEEK_SET)
        return fd
    }
}

/// One stream's output as kept for a result: all of it up to `limit` bytes, else the first and last halves, with
/// what was left out counted.
struct OutputKeeper {
    let limit: Int
    private var head = Data()
    private var tail = Data()
    /// Bytes left out.
    private(set) var cut = 0

    init(limit: Int) { self.limit = max(2, limit) }

    mutating func append(_ data: Data) {
        let room = limit / 2 - head.count
        if room > 0 {
            head.append(data.prefix(room))
            guard data.count > room else { return }
            tail.append(data.dropFirst(room))
        } else {
            tail.append(data)
        }
        let over = tail.count - (limit - limit / 2)
        if over > 0 {
            tail.removeFirst(over)
            cut += over
        }
    }

    /// The text kept, a marker where bytes were left out.
    var text: String {
        let first = String(decoding: head, as: UTF8.self), last = String(decoding: tail, as: UTF8.self)
        return cut == 0 ? first + last : first + "\n[… \(cut) bytes left out …]\n" + last
    }
}

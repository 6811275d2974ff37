import Foundation
import Glibc
import Synchronization

/// The input turn of one display, shared by the agents of every xclaw process of this user (each input action, in
/// the skills' `runInput`) and the MCP server's input tools (stdio or the daemon's HTTP). Plain CLI input commands
/// (`xclaw click`) do not take it: a script's own clicks are its author's to order. An advisory `flock` on a
/// file per display in the state directory: the kernel releases it when its holder dies, so a killed process never
/// leaves a display locked, and each turn opens its own descriptor, so threads of one process exclude each other too
/// (flock locks belong to the open file, not the process).
/// Safe because its only state is the descriptor, released once under `released`.
public final class DisplayInputLock: @unchecked Sendable {
    private let fd: Int32
    private let released = Mutex(false)

    private init(fd: Int32) { self.fd = fd }

    /// One lock per X display, whatever spelling names it: `:1`, `:01`, `:1.0` and `unix:1` are one display (Xlib
    /// reads the number as a number).
    public static func key(_ display: String) -> String {
        guard let colon = display.lastIndex(of: ":") else { return display }
        var host = String(display[..<colon])
        if host == "unix" || host == "localhost" { host = "" }
        let number = display[display.index(after: colon)...].split(separator: ".", maxSplits: 1).first ?? ""
        return host + ":" + (Int(number).map(String.init) ?? String(number))
    }

    /// The lock file of `display`: `locks/display-KEY.lock` in the state directory (created private when missing).
    public static func file(_ display: String, environment: [String: String] = XclawPaths.environment) throws
        -> String
    {
        let directory = try PrivateFiles.directory(
            XclawPaths.stateDirectory(environment).appendingPathComponent("locks"))
        // Only characters a file name keeps: a display name comes from a caller (an MCP argument).
        let safe = key(display).unicodeScalars.map {
            CharacterSet.alphanumerics.contains($0) || $0 == ":" || $0 == "." || $0 == "-" ? String($0) : "_"
        }
        return directory.appendingPathComponent("display-\(safe.joined().prefix(100)).lock").path
    }

    /// Waits for the turn of `display` (polling, so `cancelled` is noticed within a few milliseconds) and takes it;
    /// for threads that block on X anyway (the MCP runner, the CLI).
    public static func acquire(
        _ display: String, environment: [String: String] = XclawPaths.environment, cancelled: () -> Bool
    ) throws -> DisplayInputLock {
        let fd = try open(display, environment: environment)
        var pause: useconds_t = 500
        while try !taken(fd, display) {
            if cancelled() {
                close(fd)
                throw CancellationError()
            }
            usleep(pause)
            pause = min(pause * 2, 10_000)
        }
        return DisplayInputLock(fd: fd)
    }

    /// The same for a task: a cancelled task stops waiting with `CancellationError`.
    public static func acquire(_ display: String, environment: [String: String] = XclawPaths.environment)
        async throws -> DisplayInputLock
    {
        let fd = try open(display, environment: environment)
        var pause = 1
        while try !taken(fd, display) {
            do { try await Task.sleep(for: .milliseconds(pause)) } catch {
                close(fd)
                throw error
            }
            pause = min(pause * 2, 10)
        }
        return DisplayInputLock(fd: fd)
    }

    /// One try for the lock on `fd`: true when taken, false when another holds it; any other failure closes `fd`.
    private static func taken(_ fd: Int32, _ display: String) throws -> Bool {
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
        guard errno == EWOULDBLOCK || errno == EINTR else {
            let error = Errno.current
            close(fd)
            throw DisplayInputLockError(display: display, reason: "\(error)")
        }
        return false
    }

    private static func open(_ display: String, environment: [String: String]) throws -> Int32 {
        let path: String
        do { path = try file(display, environment: environment) } catch let error as PrivateFileError {
            throw DisplayInputLockError(display: display, reason: error.description)
        }
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DisplayInputLockError(display: display, reason: "\(path): \(Errno.current)") }
        return fd
    }

    /// Gives the turn back (once; the deinit does it otherwise).
    public func release() {
        let first = released.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        flock(fd, LOCK_UN)
        close(fd)
    }

    deinit { release() }
}

/// The input lock of a display could not be taken (its file cannot be made); exit 2: the state directory is the
/// user's to fix.
public struct DisplayInputLockError: ClassifiedError, Hashable {
    /// The display.
    public var display: String
    /// Why.
    public var reason: String
    /// The environment's state directory is the user's to fix.
    public var exitStatus: ExitStatus { .usage }
    /// The message, with what to do.
    public var description: String {
        "cannot take the input lock of display \(display): \(reason). Set XCLAW_STATE_DIR to a directory only you "
            + "can write"
    }
}

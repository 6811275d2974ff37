import Foundation
import XclawBase
import XclawPerception
import XclawScreen

/// Where a command gets its display, input, perception and refs. In-process: fresh ones for each command, the OCR
/// cache and refs read from the state directory and saved after. In the daemon: the ones it keeps per display, warm.
public protocol DisplayHost: Sendable {
    /// The connection to `name` (nil: `$DISPLAY` of the command's environment).
    func connection(_ name: String?) throws -> DisplayConnection
    /// The input controller on that display; it keeps the keyboard's spare-keycode bindings between commands.
    func input(_ name: String?) throws -> InputController
    /// Perception on that display, with its OCR cache.
    func perceiver(_ name: String?) throws -> Perceiver
    /// The refs of `perceiver`'s display, carried over from its previous snapshot.
    func refs(_ perceiver: Perceiver) throws -> RefStore
    /// Unbinds the spare keycodes `keyboard` bound once clients have read them: in the daemon, later, on a timer,
    /// so the command returns as soon as its keys are sent.
    func restoreMapping(_ keyboard: Keyboard) throws
    /// Takes `selection` on display `name` with `data` and keeps serving it after the command returns, until another
    /// client takes it: the daemon serves it from a thread of its own, a one-shot command leaves a detached owner.
    func serveSelection(_ selection: ClipboardSelection, type: ClipboardType, data: Data, display name: String?) throws
}

extension DisplayHost {
    /// The one-shot way: a detached `xclaw-core clipboard-serve`, as xclip forks a child to hold the selection.
    /// The contents go through its stdin; it says `ready` once it owns the selection, so the command returns only
    /// when a paste would see the new contents.
    public func serveSelection(_ selection: ClipboardSelection, type: ClipboardType, data: Data, display name: String?)
        throws
    {
        let display = try DisplayConnection.resolveName(name)
        guard let core = XclawPaths.sibling("xclaw-core") else {
            throw ScreenError.invalidArgument("xclaw-core is missing beside xclaw; reinstall xclaw")
        }
        let (read, write) = try Subprocess.pipe()
        let child: Subprocess
        do {
            defer { close(read) }
            child = try Subprocess.spawn(
                [
                    core, "clipboard-serve", "--display", display, "--selection", selection.rawValue, "--type",
                    type.rawValue,
                ], stdin: .descriptor(read), stdout: .pipe, stderr: .pipe,
                environment: Invocation.current.environment, group: .newSession)
        } catch {
            close(write)
            throw error
        }
        // The child reads everything before it answers, so writing it all first cannot deadlock.
        let sent = writeAll(write, data)
        close(write)
        let (out, err, _) = child.read(until: .now + .seconds(10)) { $0.starts(with: Data("ready\n".utf8)) }
        child.closePipes()
        guard sent, out.starts(with: Data("ready\n".utf8)) else {
            let why = String(decoding: err, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw ScreenError.selectionTimeout(why.isEmpty ? selection.rawValue : why)
        }
    }
}

/// The host of the running command.
public enum Hosting {
    /// The daemon's host for the request it serves; nil in-process.
    @TaskLocal public static var served: (any DisplayHost)?

    /// The running command's host.
    public static var current: any DisplayHost { served ?? InProcessHost() }
}

/// Fresh resources for each command: what a one-shot `xclaw` process uses.
public struct InProcessHost: DisplayHost {
    /// A host.
    public init() {}

    /// Opens a connection.
    public func connection(_ name: String?) throws -> DisplayConnection { try DisplayConnection(name: name) }

    /// A controller on a new connection.
    public func input(_ name: String?) throws -> InputController {
        try InputController(connection: connection(name))
    }

    /// Perception with the OCR cache of the state directory (saved by `savePerception`).
    public func perceiver(_ name: String?) throws -> Perceiver {
        try VirtualDisplay.checkedStateDirectory()
        return try Perceiver(connection: connection(name), cache: OCRCache.load(from: Perceiver.cacheFile))
    }

    /// The refs saved for this display and server.
    public func refs(_ perceiver: Perceiver) throws -> RefStore {
        try RefStore.load(display: perceiver.connection.name, server: try perceiver.windows.serverToken())
    }

    /// Hands the bound keycodes to a detached `xclaw-core keymap-restore`, which unbinds them when clients have had
    /// their settle delay: the command exits as soon as its keys are sent. Without that helper, waits and restores.
    public func restoreMapping(_ keyboard: Keyboard) throws {
        guard let core = XclawPaths.sibling("xclaw-core"), let (due, bindings) = keyboard.handOverBindings() else {
            return try keyboard.restoreMapping()
        }
        let wait = max(0, Int((due - .now).milliseconds.rounded(.up)))
        let token = Keyboard.restoreToken()
        try keyboard.announcePendingRestore(token: token, bindings)
        let arguments =
            [
                core, "keymap-restore", "--display", keyboard.connection.name, "--after-ms", "\(wait)",
                "--token", "\(token)",
            ] + bindings.map(\.argument)
        do {
            _ = try Subprocess.spawn(
                arguments, stdout: .null, stderr: .null, environment: Invocation.current.environment,
                group: .newSession)
        } catch {
            Thread.sleep(forTimeInterval: Double(wait) / 1000)
            try keyboard.unbind(bindings, token: token)
        }
    }
}

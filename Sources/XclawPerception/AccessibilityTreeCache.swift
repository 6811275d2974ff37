import Foundation
import Synchronization
import XclawBase
import XclawScreen

/// Keeps a display's accessibility tree between snapshots for a long-lived process (the daemon): an `xclaw-atspi
/// watch` helper counts the tree's events (children, states, properties, text, bounds, windows), and the tree is
/// read again only when that count moved or the X windows on screen did (an application that starts or exits). Each question to the
/// helper is a round trip through the bus, so every event the bus delivered before it is counted.
/// Safe because its state is behind `state`'s lock, and one snapshot at a time uses it (the perceiver's owner).
public final class AccessibilityTreeCache: Sendable {
    private struct Kept {
        var location: AccessibilityLocation
        var watcher: TreeWatcher?
        var tree: AccessibleTree?
        var events: UInt64 = 0
        var windows: [WindowKey] = []
    }
    private let state = Mutex<Kept?>(nil)
    private let readCount = Atomic<Int>(0)

    /// What identifies the windows a tree was merged against: a window that moved or changed size invalidates it.
    public struct WindowKey: Hashable, Sendable {
        let id: UInt
        let frame: Rect
    }

    /// Nothing kept yet.
    public init() {}

    /// How many times the tree was read in full (the rest were answered from the cache).
    public var reads: Int { readCount.load(ordering: .relaxed) }

    /// The tree at `location`: the kept one while no event arrived and `windows` did not change, else a fresh read.
    /// Without a working watcher every call reads the tree, as a one-shot command does.
    public func tree(at location: AccessibilityLocation, windows: [WindowInfo], reader: AccessibilityReader) throws
        -> AccessibleTree
    {
        let key = windows.map { WindowKey(id: $0.id, frame: $0.frame) }
        var kept = state.withLock { kept -> Kept in
            if let current = kept, current.location == location { return current }
            kept?.watcher?.stop()
            return Kept(location: location)
        }
        if kept.watcher == nil, let helper = reader.helper {
            kept.watcher = TreeWatcher.start(helper: helper, location: location, timeout: reader.callTimeout)
        }
        let count = kept.watcher?.count()
        if count == nil {
            kept.watcher?.stop()
            kept.watcher = nil
        }
        if let tree = kept.tree, let count, count == kept.events, key == kept.windows {
            state.withLock { $0 = kept }
            return tree
        }
        readCount.add(1, ordering: .relaxed)
        do {
            let tree = try reader.tree(at: location)
            // Events during the read moved the count past `count`: the next call reads again. A tree with an app
            // that did not answer is not kept: that app may answer next time.
            let keep = count != nil && !tree.apps.contains { $0.route == "unresponsive" }
            (kept.tree, kept.events, kept.windows) = (keep ? tree : nil, count ?? 0, key)
            state.withLock { $0 = kept }
            return tree
        } catch {
            kept.tree = nil
            state.withLock { $0 = kept }
            throw error
        }
    }

    /// Ends the watcher.
    public func stop() {
        state.withLock { kept in
            kept?.watcher?.stop()
            kept = nil
        }
    }

    deinit { stop() }
}

/// One `xclaw-atspi watch` process: a line to its stdin asks for the event count, which it answers on stdout.
/// Safe because one caller at a time talks to it and stops it (the cache's user: one snapshot at a time).
final class TreeWatcher: @unchecked Sendable {
    private let process: Subprocess
    private let questions: Int32
    private let timeout: Duration
    private var stopped = false

    private init(process: Subprocess, questions: Int32, timeout: Duration) {
        (self.process, self.questions, self.timeout) = (process, questions, timeout)
    }

    /// Starts the helper; nil when it cannot be started (the tree is then read every time).
    static func start(helper: String, location: AccessibilityLocation, timeout: Duration) -> TreeWatcher? {
        guard let ends = try? Subprocess.pipe() else { return nil }
        defer { close(ends.read) }
        let arguments = [helper, "watch"] + location.arguments + ["--timeout", "\(Int(timeout.milliseconds))"]
        guard let process = try? Subprocess.spawn(arguments, stdin: .descriptor(ends.read), stderr: .null) else {
            close(ends.write)
            return nil
        }
        return TreeWatcher(process: process, questions: ends.write, timeout: timeout)
    }

    /// The events counted so far; nil when the helper is gone, did not answer in time, or answered nonsense.
    func count() -> UInt64? {
        var newline: UInt8 = 0x0a
        guard Glibc.write(questions, &newline, 1) == 1 else { return nil }
        let answer = process.read(until: .now + timeout * 2) { $0.last == 0x0a }
        guard answer.complete, answer.stdout.last == 0x0a else { return nil }
        return UInt64(String(decoding: answer.stdout.dropLast(), as: UTF8.self))
    }

    /// Ends the helper: its stdin closes, and it is killed if it lingers.
    func stop() {
        guard !stopped else { return }
        stopped = true
        close(questions)
        process.closePipes()
        _ = process.wait(deadline: .now + .milliseconds(200))
    }
}

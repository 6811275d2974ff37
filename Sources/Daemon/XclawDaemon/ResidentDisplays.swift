import Foundation
import Logging
import Synchronization
import XclawBase
import XclawCommandLine
import XclawPerception
import XclawScreen

/// What the daemon keeps for each display it serves: the connection (opened again when the server comes back),
/// the input controller with its keyboard bindings, the perceiver with its OCR engines and cache, and the refs.
/// Requests share them; a request that finds the perceiver busy (a `watch` holding it) gets one of its own on the
/// same connection rather than waiting.
public final class ResidentDisplays: Sendable {
    private let held = Mutex<[String: HeldDisplay]>([:])
    private let logger = Logger(label: "xclaw.daemon")

    /// None held yet.
    public init() {}

    /// The names of the displays held, sorted.
    public var names: [String] { held.withLock { $0.keys.sorted() } }

    /// Full reads of accessibility trees so far, over every display (warm snapshots answered from the kept tree do
    /// not count).
    public var treeReads: Int { held.withLock { Array($0.values) }.map(\.treeReads).reduce(0, +) }

    /// Text blocks in the kept OCR caches, over every display.
    public var ocrBlocks: Int { held.withLock { Array($0.values) }.map(\.ocrBlocks).reduce(0, +) }

    /// Times a kept display was opened again after its server went away (an earlier image's included).
    public var reconnects: Int { reconnected.load(ordering: .relaxed) }
    private let reconnected = Atomic<Int>(0)
    /// The selections served for requests (`RequestHost.serveSelection`), each until another client takes it. Not
    /// kept alive by this list: an owner's thread keeps it while it serves, and its connection closes after.
    private let owners = Mutex<[Served]>([])
    private struct Served { weak var owner: SelectionOwner? }

    /// The display `name` names (nil: the request's `$DISPLAY`), connected: a lost connection is opened again. One
    /// that cannot be opened is not kept: nothing a caller names stays unless it is a display that answers.
    func display(_ name: String?) throws -> HeldDisplay {
        let resolved = try DisplayConnection.resolveName(name)
        let display = held.withLock { all in
            if let known = all[resolved] { return known }
            let made = HeldDisplay(name: resolved)
            all[resolved] = made
            return made
        }
        do {
            if try display.ensureConnected(logger) { reconnected.add(1, ordering: .relaxed) }
        } catch {
            held.withLock { all in
                if all[resolved] === display, !display.isConnected { all[resolved] = nil }
            }
            throw error
        }
        return display
    }

    /// Whether keys or buttons that `keydown`/`mousedown` left down are held on a display it keeps: they go with the
    /// daemon, so one that would leave when idle stays while they are held.
    public var holdInput: Bool {
        let all = held.withLock { Array($0.values) }
        return all.contains { $0.holdsInput }
    }

    /// Restores every keymap and saves the OCR caches: the daemon is stopping.
    public func close() {
        let all = held.withLock { Array($0.values) }
        for display in all { display.close() }
    }

    /// Readies the displays for a new image of the daemon: restores the keymaps (spare keycodes bound for
    /// typing), saves the OCR caches, ends the tree watchers; returns the selections still served, for the next
    /// image to take again. Keys and buttons held across commands (`keydown`) stay held: their record is on the
    /// display, and the next image releases them as this one would.
    func prepareForRecycle() -> [HeldSelection] {
        let all = held.withLock { Array($0.values) }
        for display in all { display.close(releasingHeld: false) }
        return owners.withLock { list in
            list.compactMap(\.owner).filter(\.isServing).map {
                HeldSelection(display: $0.display, selection: $0.selection, type: $0.type, data: $0.contents)
            }
        }
    }

    /// Takes again the selections the previous image served (before any request is accepted, so none of them
    /// overrides a newer one; a display gone meanwhile loses its selection as it would have anyway), and opens
    /// again the displays it kept, on a thread of its own (a display that no longer answers is not kept).
    func resume(_ selections: [HeldSelection], displays names: [String], reconnects: Int) {
        reconnected.add(reconnects, ordering: .relaxed)
        if !names.isEmpty {
            Thread {
                for name in names { _ = try? self.display(name) }
            }.start()
        }
        for held in selections {
            do {
                keep(
                    try SelectionOwner.start(
                        display: held.display, selection: held.selection, type: held.type, data: held.data))
            } catch {
                logger.warning(
                    "a selection could not be taken again after the recycle",
                    metadata: [
                        "display": "\(held.display)", "selection": "\(held.selection.rawValue)",
                        "error": "\(error)",
                    ])
            }
        }
    }

    /// Serves `selection` on `display` from a thread of its own, and remembers it for a recycle.
    func serve(_ selection: ClipboardSelection, type: ClipboardType, data: Data, display: String) throws {
        keep(try SelectionOwner.start(display: display, selection: selection, type: type, data: data))
    }

    /// Remembers `owner`, forgetting those that ended and the one it replaces.
    private func keep(_ owner: SelectionOwner) {
        owners.withLock { list in
            list.removeAll { served in
                guard let other = served.owner else { return true }
                return !other.isServing || (other.display == owner.display && other.selection == owner.selection)
            }
            list.append(Served(owner: owner))
        }
    }

    /// A host for one request.
    public func host() -> RequestHost { RequestHost(self) }
}

/// One display's kept state. Safe because every member is behind `state`'s lock, and the objects handed out are
/// themselves safe to share (the perceiver only through `perceiverBusy`).
final class HeldDisplay: Sendable {
    let name: String
    private struct State {
        var connection: DisplayConnection?
        var input: InputController?
        var perceiver: Perceiver?
        var refs: (server: String, store: RefStore)?
        var restoreScheduled = false
    }
    private let state = Mutex(State())
    private let perceiverBusy = Atomic<Bool>(false)
    private let saving = Atomic<Bool>(false)

    init(name: String) { self.name = name }

    /// Opens the connection, or opens it again when the server went away (true then): everything built on the old
    /// one goes, and the old connection is closed once the last request using it let go. A display of this machine
    /// is opened through its Unix socket only, never by Xlib's fallback to TCP on localhost.
    func ensureConnected(_ logger: Logger) throws -> Bool {
        let (old, reconnecting, failure): (State, Bool, (any Error)?) = state.withLock { state in
            // Asks the socket too: a server that died while nothing was sent has not been noticed by Xlib yet.
            if let connection = state.connection, (try? connection.poll()) != nil { return (State(), false, nil) }
            let reconnecting = state.connection != nil
            if reconnecting { logger.info("display lost; reconnecting", metadata: ["display": "\(name)"]) }
            let old = state
            state = State()
            do {
                state.connection = try DisplayConnection(name: name, localOnly: DisplayConnection.isLocal(name))
            } catch {
                return (old, false, error)  // `state` holds no connection: the caller lets the display go
            }
            return (old, reconnecting, nil)
        }
        // The old perceiver's tree watcher ends with it, outside the lock.
        old.perceiver?.treeCache?.stop()
        if let failure { throw failure }
        return reconnecting
    }

    /// Whether a connection is held (none after a failed open).
    var isConnected: Bool { state.withLock { $0.connection != nil } }

    var connection: DisplayConnection {
        get throws {
            guard let connection = state.withLock({ $0.connection }) else { throw ScreenError.cannotOpen(name) }
            return connection
        }
    }

    func input() throws -> InputController {
        let connection = try self.connection
        return try state.withLock { state in
            if let input = state.input, input.connection === connection { return input }
            let input = try InputController(connection: connection)
            state.input = input
            return input
        }
    }

    /// The kept perceiver, marked busy until `release`; nil when another request still holds it after 50 ms (a
    /// `watch`): the one before may be finishing right after its reply, and a fresh perceiver starts cold.
    func takePerceiver() throws -> Perceiver? {
        let patience = ContinuousClock.now + .milliseconds(50)
        while perceiverBusy.exchange(true, ordering: .acquiring) {
            guard ContinuousClock.now < patience else { return nil }
            Thread.sleep(forTimeInterval: 0.001)
        }
        do {
            let connection = try self.connection
            return try state.withLock { state in
                if let perceiver = state.perceiver, perceiver.connection === connection { return perceiver }
                // The daemon's own setting, not the asking command's: the cache outlives the request.
                let capacity = OCRCache.defaultCapacity(Invocation.process.environment)
                let cache =
                    (try? OCRCache.load(from: Perceiver.cacheFile, capacity: capacity)) ?? OCRCache(capacity: capacity)
                let perceiver = try Perceiver(connection: connection, cache: cache, treeCache: AccessibilityTreeCache())
                state.perceiver = perceiver
                return perceiver
            }
        } catch {
            perceiverBusy.store(false, ordering: .releasing)
            throw error
        }
    }

    func releasePerceiver() { perceiverBusy.store(false, ordering: .releasing) }

    /// Saves `perceiver`'s OCR cache to the state directory when it holds unsaved text; skipped while another
    /// request's save runs (that one, or the next, writes it).
    func saveCache(of perceiver: Perceiver) {
        let cache = perceiver.recognizer.cache
        guard cache.hasUnsavedEntries, !saving.exchange(true, ordering: .acquiring) else { return }
        defer { saving.store(false, ordering: .releasing) }
        try? cache.save(to: Perceiver.cacheFile)
    }

    /// The kept refs when they belong to `server` and the refs file is still the one they wrote (a command run in
    /// process meanwhile saved its own), else those saved for it: refs agree in and out of the daemon.
    func refs(server: String) throws -> RefStore {
        if let kept = state.withLock({ $0.refs }), kept.server == server, kept.store.isCurrent(display: name) {
            return kept.store
        }
        let store = try RefStore.load(display: name, server: server)
        state.withLock { $0.refs = (server, store) }
        return store
    }

    /// Restores `keyboard`'s spare keycodes when it is due, on a timer, once per burst of typing.
    func scheduleRestore(_ keyboard: Keyboard) {
        guard keyboard.restoreDue != nil else { return }
        let first = state.withLock { state in
            defer { state.restoreScheduled = true }
            return !state.restoreScheduled
        }
        if first { restoreWhenDue(keyboard) }
    }

    private func restoreWhenDue(_ keyboard: Keyboard) {
        guard let due = keyboard.restoreDue else {
            state.withLock { $0.restoreScheduled = false }
            return
        }
        let wait = max(.zero, due - .now) + .milliseconds(1)
        DispatchQueue.global().asyncAfter(deadline: .now() + wait.seconds) { [self] in
            if let again = keyboard.restoreDue, again > .now {
                restoreWhenDue(keyboard)
                return
            }
            try? keyboard.restoreMapping()
            state.withLock { $0.restoreScheduled = false }
            if keyboard.restoreDue != nil { scheduleRestore(keyboard) }
        }
    }

    /// Text blocks in the kept perceiver's OCR cache; 0 while the display is being opened (an open may take long,
    /// and `daemon status` must answer at once).
    var ocrBlocks: Int { state.withLockIfAvailable { $0.perceiver?.recognizer.cache.count ?? 0 } ?? 0 }

    /// How many times the kept perceiver read the accessibility tree in full; 0 while the display is being opened.
    var treeReads: Int { state.withLockIfAvailable { $0.perceiver?.treeCache?.reads ?? 0 } ?? 0 }

    /// Whether `keydown` or `mousedown` left anything down on this display (its record there).
    var holdsInput: Bool {
        guard let input = state.withLockIfAvailable({ $0.input }) ?? nil, let held = try? input.held() else {
            return false
        }
        return !held.keys.isEmpty || !held.buttons.isEmpty
    }

    /// Puts back what the daemon changed on the display and saves what it learnt; `releasingHeld`: also releases
    /// what `keydown` and `mousedown` left down (they go with the daemon that served them, not with an image of it).
    func close(releasingHeld: Bool = true) {
        let (input, perceiver) = state.withLock { ($0.input, $0.perceiver) }
        if releasingHeld { _ = try? input?.releaseHeld() }  // keys `keydown` left down go with the daemon
        try? input?.keyboard.restoreMapping()
        try? perceiver?.recognizer.cache.save(to: Perceiver.cacheFile)
        perceiver?.treeCache?.stop()
    }
}

/// The resources of one request: the daemon's kept ones, and the perceiver it took until the request ends.
public final class RequestHost: DisplayHost {
    private let displays: ResidentDisplays
    private let taken = Mutex<[(HeldDisplay, Perceiver)]>([])
    private let handedOut = Mutex<[(String, RefStore)]>([])

    init(_ displays: ResidentDisplays) { self.displays = displays }

    /// The kept connection.
    public func connection(_ name: String?) throws -> DisplayConnection { try displays.display(name).connection }

    /// The kept input controller.
    public func input(_ name: String?) throws -> InputController { try displays.display(name).input() }

    /// The kept perceiver, or a new one on the kept connection while another request has it.
    public func perceiver(_ name: String?) throws -> Perceiver {
        let display = try displays.display(name)
        if let mine = taken.withLock({ $0.first { $0.0 === display }?.1 }) { return mine }
        if let kept = try display.takePerceiver() {
            taken.withLock { $0.append((display, kept)) }
            return kept
        }
        return try Perceiver(connection: display.connection, cache: OCRCache())
    }

    /// The kept refs for a kept perceiver; the saved ones for another. Either is saved before the reply.
    public func refs(_ perceiver: Perceiver) throws -> RefStore {
        let server = try perceiver.windows.serverToken()
        let store: RefStore
        if let display = taken.withLock({ $0.first { $0.1 === perceiver }?.0 }) {
            store = try display.refs(server: server)
        } else {
            store = try RefStore.load(display: perceiver.connection.name, server: server)
        }
        handedOut.withLock { $0.append((perceiver.connection.name, store)) }
        return store
    }

    /// The daemon holds the selection itself: the owner's thread serves it until another client takes it.
    public func serveSelection(_ selection: ClipboardSelection, type: ClipboardType, data: Data, display name: String?)
        throws
    {
        let display = try displays.display(name).connection.name
        try displays.serve(selection, type: type, data: data, display: display)
    }

    /// On the display's timer: the command returns now.
    public func restoreMapping(_ keyboard: Keyboard) throws {
        try displays.display(keyboard.connection.name).scheduleRestore(keyboard)
    }

    /// Saves the refs the request was handed, while the perceiver they belong to is still its own: for the next
    /// command, served or in-process, so refs stay stable across both.
    public func saveRefs() {
        for (name, store) in handedOut.withLock({ list in
            defer { list = [] }; return list
        }) {
            try? store.save(display: name)
        }
    }

    /// Gives back what the request took, and saves the OCR cache when the request added to it (after the reply, so
    /// the asker does not wait; one save at a time per display), so a daemon killed later loses nothing read.
    public func end() {
        saveRefs()
        for (display, perceiver) in taken.withLock({ list in
            defer { list = [] }; return list
        }) {
            display.releasePerceiver()
            display.saveCache(of: perceiver)
        }
    }
}

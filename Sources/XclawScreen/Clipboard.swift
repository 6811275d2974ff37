import CX11
import Foundation
import Synchronization
import XclawBase

/// An X selection: CLIPBOARD (ctrl+c / ctrl+v) or PRIMARY (select / middle click).
public enum ClipboardSelection: String, Sendable, CaseIterable, Codable {
    case clipboard, primary

    /// The selection's atom name.
    var atomName: String { self == .clipboard ? "CLIPBOARD" : "PRIMARY" }
}

/// What a selection holds, as a MIME type.
public enum ClipboardType: String, Sendable, CaseIterable, Codable {
    case text = "text/plain"
    case html = "text/html"
    case png = "image/png"

    /// The targets an owner offers for it; the first is also the property type of the reply. Text answers every
    /// name toolkits ask by (GTK asks UTF8_STRING, Qt and browsers text/plain;charset=utf-8, old Xt clients STRING).
    var offered: [String] {
        switch self {
        case .text: ["UTF8_STRING", "text/plain;charset=utf-8", "text/plain", "STRING", "TEXT"]
        case .html: ["text/html"]
        case .png: ["image/png"]
        }
    }

    /// The targets a reader asks for, best first (STRING last: it is Latin-1).
    var requested: [String] {
        switch self {
        case .text: ["UTF8_STRING", "text/plain;charset=utf-8", "STRING"]
        default: offered
        }
    }
}

/// Reads X selections (ICCCM conversion, INCR for large transfers) on a connection of its own: the reply comes as
/// events to a window of ours, which a shared connection would hand to whoever reads events there.
public enum SelectionReader {
    /// How long the owner may take to answer each step of a transfer.
    public static let deadline: Duration = .seconds(5)

    /// The selection's contents of `type`: bytes as the owner gave them (text as UTF-8).
    public static func read(_ selection: ClipboardSelection, type: ClipboardType, display: String) throws -> Data {
        let connection = try DisplayConnection(name: display)
        let transfer = try Transfer(connection: connection, selection: selection)
        defer { transfer.close() }
        guard transfer.hasOwner else {
            throw ScreenError.selectionEmpty(selection: selection.atomName, type: type.rawValue, offered: [])
        }
        for target in type.requested {
            guard let (kind, bytes) = try transfer.convert(to: target) else { continue }
            if kind == connection.atom("STRING") {
                // Latin-1 on the wire: re-encode so text comes out as UTF-8 whatever the owner sent.
                return Data(String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) })).utf8)
            }
            return Data(bytes)
        }
        let offered = (try? transfer.targets()) ?? []
        throw ScreenError.selectionEmpty(selection: selection.atomName, type: type.rawValue, offered: offered)
    }

    /// The targets the selection's owner offers; empty when it has none.
    public static func targets(_ selection: ClipboardSelection, display: String) throws -> [String] {
        let connection = try DisplayConnection(name: display)
        let transfer = try Transfer(connection: connection, selection: selection)
        defer { transfer.close() }
        return transfer.hasOwner ? try transfer.targets() : []
    }

    /// One reader's window and its conversions.
    private struct Transfer {
        let connection: DisplayConnection
        let selection: Atom
        let window: Window
        let property: Atom
        let hasOwner: Bool
        let name: String

        init(connection: DisplayConnection, selection: ClipboardSelection) throws {
            self.connection = connection
            name = selection.atomName
            self.selection = connection.atom(selection.atomName)
            property = connection.atom("_XCLAW_SELECTION")
            let atom = self.selection
            (window, hasOwner) = try connection.trapped { display in
                let window = XCreateSimpleWindow(display, connection.root, 0, 0, 1, 1, 0, 0, 0)
                XSelectInput(display, window, PropertyChangeMask)
                return (window, XGetSelectionOwner(display, atom) != 0)
            }
        }

        func close() { connection.request { _ = XDestroyWindow($0, window) } }

        /// The target names the owner offers (`TARGETS`).
        func targets() throws -> [String] {
            guard let (_, bytes) = try convert(to: "TARGETS") else { return [] }
            let atoms = bytes.withUnsafeBytes { Array($0.bindMemory(to: Atom.self)) }
            return try connection.trapped { display in
                atoms.compactMap { atom in
                    guard atom != 0, let name = XGetAtomName(display, atom) else { return nil }
                    defer { XFree(name) }
                    return String(cString: name)
                }
            }
        }

        /// Asks the owner to convert the selection to `target`; nil when it refuses. INCR transfers are followed to
        /// their end. Returns the reply's type and bytes (format-32 items as C longs).
        func convert(to target: String) throws -> (type: Atom, bytes: [UInt8])? {
            let targetAtom = connection.atom(target)
            try connection.trapped { display in
                XDeleteProperty(display, window, property)
                XConvertSelection(display, selection, targetAtom, property, window, 0 /* CurrentTime */)
            }
            let notify = try nextEvent { $0.type == SelectionNotify && $0.xselection.requestor == window }
            guard notify.xselection.property != 0 else { return nil }
            let (type, first) = try take()
            guard type == connection.atom("INCR") else { return (type, first) }
            // INCR: deleting the property (done by `take`) asks for each next chunk; an empty one ends it.
            var bytes: [UInt8] = []
            var chunkType = type
            while true {
                _ = try nextEvent {
                    $0.type == PropertyNotify && $0.xproperty.window == window && $0.xproperty.atom == property
                        && $0.xproperty.state == PropertyNewValue
                }
                let (kind, chunk) = try take()
                if chunk.isEmpty { return (chunkType, bytes) }
                chunkType = kind
                bytes += chunk
            }
        }

        /// Reads the whole property (in pieces, however large) and deletes it.
        private func take() throws -> (type: Atom, bytes: [UInt8]) {
            try connection.trapped { display in
                var bytes: [UInt8] = []
                var offset = 0
                var kind: Atom = 0
                while true {
                    var format: Int32 = 0
                    var items: UInt = 0, after: UInt = 0
                    var data: UnsafeMutablePointer<UInt8>?
                    let rc = XGetWindowProperty(
                        display, window, property, offset, 1 << 20, 0, Atom(AnyPropertyType), &kind, &format, &items,
                        &after, &data)
                    defer { if let data { XFree(data) } }
                    guard rc == Success, let data else { break }
                    let unit = format == 32 ? MemoryLayout<CLong>.size : Int(format) / 8
                    bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: Int(items) * unit))
                    // The offset counts 32-bit units of the property as stored on the server.
                    offset += Int(items) * Int(format) / 32
                    if after == 0 || items == 0 { break }
                }
                XDeleteProperty(display, window, property)
                return (kind, bytes)
            }
        }

        private func nextEvent(_ wanted: (XEvent) -> Bool) throws -> XEvent {
            guard let event = try SelectionEvents.next(connection, until: .now + SelectionReader.deadline, wanted)
            else { throw ScreenError.selectionTimeout(name) }
            return event
        }
    }
}

/// Waiting for events on a connection one thread owns (a reader's or an owner's).
enum SelectionEvents {
    /// The next event `wanted` keeps (others are dropped), or nil at the deadline. Throws when the server is gone.
    static func next(
        _ connection: DisplayConnection, until deadline: ContinuousClock.Instant, _ wanted: (XEvent) -> Bool
    ) throws -> XEvent? {
        while true {
            while let event = try pending(connection) {
                if wanted(event) { return event }
            }
            let left = deadline - .now
            if left <= .zero { return nil }
            try wait(connection, milliseconds: min(200, max(1, Int(left.milliseconds.rounded(.up)))))
        }
    }

    /// An event already queued or readable without blocking, else nil.
    static func pending(_ connection: DisplayConnection) throws -> XEvent? {
        try connection.checkAlive()
        var event: XEvent?
        connection.request { display in
            guard XPending(display) > 0 else { return }
            var next = XEvent()
            XNextEvent(display, &next)
            event = next
        }
        try connection.checkAlive()
        return event
    }

    /// Blocks until the connection's socket has data (or `milliseconds` pass).
    static func wait(_ connection: DisplayConnection, milliseconds: Int) throws {
        var fd = pollfd(fd: XConnectionNumber(connection.handle), events: Int16(POLLIN), revents: 0)
        _ = poll(&fd, 1, Int32(milliseconds))
        try connection.poll()
    }
}

/// Owns a selection and serves it from a thread of its own until another client takes it (or `stop`): TARGETS,
/// TIMESTAMP, the type's target names, and INCR for contents larger than one request may carry. The thread keeps
/// the owner alive while it serves, so a caller may drop it.
/// Safe because the connection is used only by the serving thread after `start` returns, and the shared state is
/// atomic.
public final class SelectionOwner: @unchecked Sendable {
    /// Contents at most this large go in one property; larger ones by INCR, in chunks of this size.
    public static let chunkLimit = 256 * 1024

    /// The selection served.
    public let selection: ClipboardSelection
    /// The type served.
    public let type: ClipboardType
    private let connection: DisplayConnection
    private let window: Window
    private let data: [UInt8]
    private let time: Time
    private let stopRequested = Atomic<Bool>(false)
    private let servedCount = Atomic<Int>(0)
    private let serving = Atomic<Bool>(true)
    private let ended = DispatchSemaphore(value: 0)

    /// Takes `selection` on `display` with `data` of `type` and starts serving it; throws when another client took
    /// it at the same moment.
    public static func start(display: String, selection: ClipboardSelection, type: ClipboardType, data: Data) throws
        -> SelectionOwner
    {
        let owner = try SelectionOwner(display: display, selection: selection, type: type, data: data)
        let thread = Thread { owner.serve() }
        thread.name = "xclaw selection owner"
        thread.start()
        return owner
    }

    private init(display: String, selection: ClipboardSelection, type: ClipboardType, data: Data) throws {
        connection = try DisplayConnection(name: display)
        (self.selection, self.type, self.data) = (selection, type, Array(data))
        let atom = connection.atom(selection.atomName)
        let stamp = connection.atom("_XCLAW_TIMESTAMP")
        let connection = self.connection
        let window = try connection.trapped { display in
            let window = XCreateSimpleWindow(display, connection.root, 0, 0, 1, 1, 0, 0, 0)
            XSelectInput(display, window, PropertyChangeMask)
            // ICCCM: own with a real server time, learnt from the PropertyNotify of an empty append.
            XChangeProperty(display, window, stamp, Atom(XA_STRING), 8, PropModeAppend, nil, 0)
            return window
        }
        let notify = try SelectionEvents.next(connection, until: .now + .seconds(2)) {
            $0.type == PropertyNotify && $0.xproperty.window == window
        }
        let time = notify?.xproperty.time ?? 0
        (self.window, self.time) = (window, time)
        let owned = try connection.trapped { display in
            XSetSelectionOwner(display, atom, window, time)
            return XGetSelectionOwner(display, atom) == window
        }
        guard owned else {
            throw ScreenError.invalidArgument(
                "another client took the \(selection.atomName) selection meanwhile; try again")
        }
    }

    /// How many conversions of the contents were served to the end (TARGETS and TIMESTAMP not counted).
    public var served: Int { servedCount.load(ordering: .acquiring) }

    /// The display it owns the selection on: a daemon that re-executes itself takes it again there.
    public var display: String { connection.name }

    /// What it serves, for the same reason.
    public var contents: Data { Data(data) }

    /// False once it stopped serving (another client took the selection, `stop`, or the server went away).
    public var isServing: Bool { serving.load(ordering: .acquiring) }

    /// Gives the selection up (if still held) and ends the serving thread.
    public func stop() { stopRequested.store(true, ordering: .releasing) }

    /// Blocks until the owner stops serving: the selection went to another client, `stop` was called, or the
    /// server went away.
    public func waitUntilDone() {
        ended.wait()
        ended.signal()
    }

    /// Waits (at most `timeout`) until `count` conversions were served; false when the time ran out.
    public func waitForRequests(_ count: Int = 1, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while served < count {
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return true
    }

    /// A transfer in progress by INCR: the requestor's window and property, and how far it got.
    private struct Incremental: Hashable {
        var requestor: Window
        var property: Atom
        var target: Atom
        var offset: Int
    }

    private func serve() {
        var transfers: [Incremental] = []
        let atom = connection.atom(selection.atomName)
        defer {
            connection.request { display in
                if XGetSelectionOwner(display, atom) == window { XSetSelectionOwner(display, atom, 0, time) }
                XDestroyWindow(display, window)
                XSync(display, 0)
            }
            serving.store(false, ordering: .releasing)
            ended.signal()
        }
        while !stopRequested.load(ordering: .acquiring) {
            guard
                let event = try? SelectionEvents.next(connection, until: .now + .milliseconds(200), { _ in true })
            else {
                if !connection.isAlive { return }
                continue
            }
            switch event.type {
            case SelectionClear where event.xselectionclear.selection == atom:
                return
            case SelectionRequest:
                if let transfer = answer(event.xselectionrequest) { transfers.append(transfer) }
            case PropertyNotify where event.xproperty.state == PropertyDelete:
                guard
                    let index = transfers.firstIndex(where: {
                        $0.requestor == event.xproperty.window && $0.property == event.xproperty.atom
                    })
                else { continue }
                if let next = sendChunk(transfers[index]) {
                    transfers[index] = next
                } else {
                    transfers.remove(at: index)
                }
            default:
                continue
            }
        }
    }

    /// Answers one request; returns an INCR transfer to continue when the contents go in chunks.
    private func answer(_ request: XSelectionRequestEvent) -> Incremental? {
        // Obsolete clients name no property: the target is then the property (ICCCM 2.2).
        let property = request.property != 0 ? request.property : request.target
        let targetName = name(of: request.target)
        var reply = XEvent()
        reply.xselection.type = SelectionNotify
        reply.xselection.requestor = request.requestor
        reply.xselection.selection = request.selection
        reply.xselection.target = request.target
        reply.xselection.time = request.time
        reply.xselection.property = property
        var incremental: Incremental?
        var complete = false
        let offered = type.offered.map { connection.atom($0) }
        let ok = try? connection.trapped { display -> Bool in
            if request.time != 0 && request.time < time { return false }  // asks about an older owner
            switch targetName {
            case "TARGETS":
                let atoms = [connection.atom("TARGETS"), connection.atom("TIMESTAMP")] + offered
                let longs = atoms.map { CLong(bitPattern: $0) }
                longs.withUnsafeBytes { raw in
                    _ = XChangeProperty(
                        display, request.requestor, property, Atom(XA_ATOM), 32, PropModeReplace,
                        raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(longs.count))
                }
            case "TIMESTAMP":
                var stamp = CLong(bitPattern: time)
                withUnsafeBytes(of: &stamp) { raw in
                    _ = XChangeProperty(
                        display, request.requestor, property, Atom(XA_INTEGER), 32, PropModeReplace,
                        raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
                }
            default:
                guard offered.contains(request.target) else { return false }
                let kind = replyType(for: targetName)
                if data.count > Self.chunkLimit {
                    XSelectInput(display, request.requestor, PropertyChangeMask)
                    var size = CLong(data.count)
                    withUnsafeBytes(of: &size) { raw in
                        _ = XChangeProperty(
                            display, request.requestor, property, connection.atom("INCR"), 32, PropModeReplace,
                            raw.baseAddress?.assumingMemoryBound(to: UInt8.self), 1)
                    }
                    incremental = Incremental(
                        requestor: request.requestor, property: property, target: kind, offset: 0)
                } else {
                    let bytes = targetName == "STRING" ? latin1(data) : data
                    _ = XChangeProperty(
                        display, request.requestor, property, kind, 8, PropModeReplace, bytes, Int32(bytes.count))
                    complete = true
                }
            }
            return true
        }
        if ok != true { reply.xselection.property = 0 }
        _ = try? connection.trapped { display in XSendEvent(display, request.requestor, 0, 0, &reply) }
        if complete && ok == true { servedCount.add(1, ordering: .releasing) }
        return ok == true ? incremental : nil
    }

    /// Writes the next INCR chunk (an empty one ends the transfer); nil once the transfer is over.
    private func sendChunk(_ transfer: Incremental) -> Incremental? {
        let end = min(data.count, transfer.offset + Self.chunkLimit)
        let chunk = Array(data[transfer.offset..<end])
        let written: Void? = try? connection.trapped { display in
            _ = XChangeProperty(
                display, transfer.requestor, transfer.property, transfer.target, 8, PropModeReplace, chunk,
                Int32(chunk.count))
        }
        guard written != nil else { return nil }  // the requestor went away mid-transfer
        if chunk.isEmpty {
            _ = try? connection.trapped { display in XSelectInput(display, transfer.requestor, NoEventMask) }
            servedCount.add(1, ordering: .releasing)
            return nil
        }
        var next = transfer
        next.offset = end
        return next
    }

    /// The property type of a reply: text targets answer in UTF8_STRING (STRING in STRING), the MIME ones in themselves.
    private func replyType(for target: String) -> Atom {
        switch target {
        case "STRING": connection.atom("STRING")
        case "TEXT", "UTF8_STRING": connection.atom("UTF8_STRING")
        default: connection.atom(target)
        }
    }

    /// UTF-8 text as Latin-1 for STRING requests; characters Latin-1 lacks become `?`.
    private func latin1(_ utf8: [UInt8]) -> [UInt8] {
        String(decoding: utf8, as: UTF8.self).unicodeScalars.map { $0.value < 256 ? UInt8($0.value) : 0x3f }
    }

    private func name(of atom: Atom) -> String {
        var text = ""
        connection.request { display in
            guard let name = XGetAtomName(display, atom) else { return }
            defer { XFree(name) }
            text = String(cString: name)
        }
        return text
    }
}

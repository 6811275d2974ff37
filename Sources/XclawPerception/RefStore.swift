import Foundation
import XclawBase
import XclawScreen

/// Keeps refs stable across snapshots: an element keeps its ref while its window holds an element of the same role
/// and label (read the same once case, spaces and end punctuation are set aside) where it was, or where its window
/// moved it, whatever else appears, moves or vanishes; refs are keyed on identity and position, never on list order.
/// An element that is not seen for a while (covered by a menu, a caret blinking over an empty field, outside a
/// snapshot's area) keeps its ref for `patience` snapshots while its window lives. A ref passes only to an element
/// of the same window, role and label in the same place: never to an element of another kind, label or window.
/// Saved per display so successive CLI calls, served or not, agree.
/// Safe because one thread uses it at a time: a session's refs under the ScreenSession lock, the CLI's on its main
/// thread.
public final class RefStore: Codable, @unchecked Sendable {
    /// What is remembered of an element.
    struct Known: Codable, Equatable {
        var ref: String
        var role: Role
        var label: String
        var windowID: UInt?
        var box: Rect
        /// Snapshots in a row that looked where it was and did not see it; nil when the last one saw it.
        var missed: Int?
    }
    private var known: [Known] = []
    private var windows: [UInt: String] = [:]
    private var nextElement = 1
    private var nextWindow = 1
    /// The X server run the refs belong to (`WindowManager.serverToken`).
    private var server: String?
    /// What was last saved (or loaded) and where: a long-lived owner saves only when something changed.
    private var lastSaved: (display: String, known: [Known], windows: [UInt: String], next: Int, nextWindow: Int)?
    /// The refs file as this store last wrote or read it: a daemon that keeps the store in memory reloads it when
    /// an in-process command has written the file since.
    private var lastStamp: FileStamp?

    /// How many snapshots an element may go unseen, its window still there, before its ref is forgotten: a menu
    /// opened and closed, a dialog shown a while, a caret blinking over an empty field.
    static let patience = 40
    /// The most elements remembered; beyond it the longest unseen are forgotten first.
    static let capacity = 4000

    /// An empty store: every element gets a fresh ref.
    public init() {}

    /// The ref of a window, the same for as long as the window exists.
    func windowRef(_ id: UInt) -> String {
        if let ref = windows[id] { return ref }
        let ref = "w\(nextWindow)"
        nextWindow += 1
        windows[id] = ref
        return ref
    }

    /// Gives each element its ref: the ref of the nearest remembered element with the same window, role and label
    /// within reach of where its window took it; else the ref of a control read with a look-alike in the very same
    /// box; else a new one (marked changed). Matched elements that moved are marked changed too. `area` is what the
    /// snapshot looked at (an element remembered outside it was not missed); `live` every window that exists (a
    /// window outside the area is not gone), nil to take the windows among `elements`.
    func assign(_ elements: [Element], area: Rect? = nil, live: Set<UInt>? = nil) -> [Element] {
        var result = elements
        var previous: [String: [Int]] = [:]
        for (index, k) in known.enumerated() {
            previous[Self.identity(k.role, k.label, k.windowID), default: []].append(index)
        }
        var taken = Set<Int>()  // indices into `known`
        var placed = Set<Int>()  // indices into `result`
        func take(_ element: Int, _ index: Int) {
            let k = known[index]
            result[element].ref = k.ref
            result[element].changed = k.box != result[element].box
            taken.insert(index)
            placed.insert(element)
        }
        // A window that moved carries its elements along: each is looked for where its window took it.
        var shift: [UInt: (dx: Int, dy: Int)] = [:]
        for e in result where e.role == .window {
            guard let id = e.windowID, let before = known.first(where: { $0.role == .window && $0.windowID == id })
            else { continue }
            shift[id] = (e.box.x - before.box.x, e.box.y - before.box.y)
        }
        // Pass 1: the nearest pairs within reach, closest first over the whole screen (not in list order, so a row
        // that shifted by one does not hand each ref to its neighbour).
        var pairs: [(element: Int, known: Int, distance: Int)] = []
        for (i, e) in result.enumerated() where e.role != .window {
            let identity = Self.identity(e.role, e.label, e.windowID)
            let reach = max(24, max(e.box.width, e.box.height) / 2)
            for index in previous[identity] ?? [] {
                let was = known[index].box.center
                let moved = e.windowID.flatMap { shift[$0] } ?? (0, 0)
                let d = Self.distance(Point(x: was.x + moved.dx, y: was.y + moved.dy), e.box.center)
                if d <= reach { pairs.append((i, index, d)) }
            }
        }
        pairs.sort { ($0.distance, $0.element, $0.known) < ($1.distance, $1.element, $1.known) }
        for pair in pairs where !placed.contains(pair.element) && !taken.contains(pair.known) {
            take(pair.element, pair.known)
        }
        // Pass 2: OCR read a label with a look-alike this time ("Cance1" for "Cancel") in the very box of a control
        // it read in the previous snapshot: the box is that control. Only look-alikes (a fuzzy "Track 13" is another
        // row than "Track 3"), and a field whose caption came and went; a button whose label changed ("Start" to
        // "Stop") is another control to a script that named it.
        for i in result.indices where result[i].role != .window && !placed.contains(i) {
            let e = result[i]
            let moved = e.windowID.flatMap { shift[$0] } ?? (0, 0)
            let same = known.indices.filter { index in
                let k = known[index]
                guard !taken.contains(index), k.missed == nil, k.role == e.role, k.role != .window,
                    k.windowID == e.windowID, abs(k.box.x + moved.dx - e.box.x) <= 3,
                    abs(k.box.y + moved.dy - e.box.y) <= 3, abs(k.box.width - e.box.width) <= 3,
                    abs(k.box.height - e.box.height) <= 3
                else { return false }
                if k.label.isEmpty || e.label.isEmpty { return e.role == .field }
                return Finder.score(k.label, e.label) >= 0.93
            }
            if same.count == 1 { take(i, same[0]) }
        }
        for i in result.indices where result[i].role != .window && !placed.contains(i) {
            result[i].ref = "e\(nextElement)"
            nextElement += 1
            result[i].changed = true
        }
        let liveWindows = live ?? Set(elements.compactMap { $0.role == .window ? $0.windowID : nil })
        var remembered: [Known] = []
        for i in result.indices {
            let e = result[i]
            // Window refs come from windowRef; a window is new when it was not seen before.
            if e.role == .window { result[i].changed = !known.contains { $0.ref == e.ref && $0.box == e.box } }
            remembered.append(Known(ref: e.ref, role: e.role, label: e.label, windowID: e.windowID, box: e.box))
        }
        // The unseen: kept while their window lives and patience lasts; not missed where the snapshot did not look.
        for (index, k) in known.enumerated() where !taken.contains(index) && k.role != .window {
            if let id = k.windowID, !liveWindows.contains(id) { continue }
            var kept = k
            // Carried along with its window, so it is looked for where the window took it.
            if let id = k.windowID, let moved = shift[id] { kept.box = k.box.offset(dx: moved.dx, dy: moved.dy) }
            if area.map({ !$0.intersection(kept.box).isEmpty }) ?? true { kept.missed = (k.missed ?? 0) + 1 }
            if (kept.missed ?? 0) <= Self.patience { remembered.append(kept) }
        }
        if remembered.count > Self.capacity {
            let order = remembered.indices.sorted {
                (remembered[$0].missed ?? 0, $0) < (remembered[$1].missed ?? 0, $1)
            }
            let keep = Set(order.prefix(Self.capacity))
            remembered = remembered.indices.filter(keep.contains).map { remembered[$0] }
        }
        known = remembered
        // Forget windows that are gone so their refs are not handed to newcomers by mistake.
        windows = windows.filter { liveWindows.contains($0.key) }
        return result
    }

    /// What makes two readings one element: its window, its role, and its label as OCR may vary it (case, lost
    /// spaces, end punctuation: "File name" and "Filename:").
    private static func identity(_ role: Role, _ label: String, _ window: UInt?) -> String {
        "\(window ?? 0)|\(role.rawValue)|\(Finder.fold(Finder.trimPunctuation(label).lowercased()))"
    }

    private static func distance(_ a: Point, _ b: Point) -> Int { max(abs(a.x - b.x), abs(a.y - b.y)) }

    /// The store saved for `display` if it was recorded on the same server run (`server`), else an empty one.
    public static func load(display: String, server: String) throws -> RefStore {
        let path = try file(display).path
        // Stamped before it is read: a write in between makes the stamp old, never the contents.
        let stamp = PrivateFiles.stamp(path)
        guard let data = try PrivateFiles.read(path),
            let store = try? JSONDecoder.xclaw.decode(RefStore.self, from: data), store.server == server
        else {
            let fresh = RefStore()
            fresh.server = server
            fresh.lastStamp = stamp
            return fresh
        }
        store.lastSaved = (display, store.known, store.windows, store.nextElement, store.nextWindow)
        store.lastStamp = stamp
        return store
    }

    /// Saves the store for `display` atomically, unless it is what was last saved there (a warm snapshot of an
    /// unchanged screen assigns the same refs again: nothing to write).
    public func save(display: String) throws {
        if let last = lastSaved, last.display == display, last.known == known, last.windows == windows,
            last.next == nextElement, last.nextWindow == nextWindow
        {
            return
        }
        let path = try Self.file(display).path
        try PrivateFiles.write(JSONEncoder.xclaw.encode(self), to: path)
        lastSaved = (display, known, windows, nextElement, nextWindow)
        lastStamp = PrivateFiles.stamp(path)
    }

    /// Whether the refs file of `display` is still the one this store last wrote or read: false once another
    /// process (an in-process command beside the daemon) saved its own refs there, so a kept store must be reloaded.
    public func isCurrent(display: String) -> Bool {
        guard let lastStamp, let path = try? Self.file(display).path else { return false }
        return PrivateFiles.stamp(path) == lastStamp
    }

    /// The refs file of `display`, in the checked state directory.
    private static func file(_ display: String) throws -> URL {
        let safe = display.map { $0.isLetter || $0.isNumber || $0 == "." ? $0 : "_" }
        let directory = try PrivateFiles.directory(
            VirtualDisplay.checkedStateDirectory().appendingPathComponent("refs"))
        return directory.appendingPathComponent(String(safe) + ".json")
    }

    enum CodingKeys: String, CodingKey { case known, windows, nextElement, nextWindow, server }
}

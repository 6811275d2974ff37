import Foundation
import XclawBase
import XclawScreen

/// Keeps refs stable across snapshots: an element keeps its ref while the same window holds an element of the same
/// role and label near the same place, whatever else appears, moves or vanishes (refs are keyed on identity and
/// position, never on list order). Saved per display so successive CLI calls agree.
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
    }
    private var known: [Known] = []
    private var windows: [UInt: String] = [:]
    private var nextElement = 1
    private var nextWindow = 1
    /// The X server run the refs belong to (`WindowManager.serverToken`).
    private var server: String?
    /// What was last saved (or loaded) and where: a long-lived owner saves only when something changed.
    private var lastSaved: (display: String, known: [Known], windows: [UInt: String], next: Int, nextWindow: Int)?

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
    /// within reach, else a new one (marked changed). Matched elements that moved are marked changed too.
    func assign(_ elements: [Element]) -> [Element] {
        var used = Set<String>()
        var result = elements
        var previous: [String: [Known]] = [:]
        for k in known { previous[Self.identity(k.role, k.label, k.windowID), default: []].append(k) }
        var remembered: [Known] = []
        for i in result.indices {
            let e = result[i]
            if e.role == .window {
                // Window refs come from windowRef; a window is new when it was not seen before.
                result[i].changed = !known.contains { $0.ref == e.ref && $0.box == e.box }
                remembered.append(Known(ref: e.ref, role: e.role, label: e.label, windowID: e.windowID, box: e.box))
                continue
            }
            let reach = max(24, max(e.box.width, e.box.height) / 2)
            let candidates = previous[Self.identity(e.role, e.label, e.windowID)] ?? []
            let best = candidates.filter { !used.contains($0.ref) }
                .map { ($0, Self.distance($0.box.center, e.box.center)) }
                .filter { $0.1 <= reach }
                .min { $0.1 < $1.1 }
            if let (match, _) = best {
                result[i].ref = match.ref
                result[i].changed = match.box != e.box
            } else {
                result[i].ref = "e\(nextElement)"
                nextElement += 1
                result[i].changed = true
            }
            used.insert(result[i].ref)
            remembered.append(Known(ref: result[i].ref, role: e.role, label: e.label, windowID: e.windowID, box: e.box))
        }
        known = remembered
        // Forget windows that are gone so their refs are not handed to newcomers by mistake.
        let live = Set(elements.compactMap { $0.role == .window ? $0.windowID : nil })
        windows = windows.filter { live.contains($0.key) }
        return result
    }

    private static func identity(_ role: Role, _ label: String, _ window: UInt?) -> String {
        "\(window ?? 0)|\(role.rawValue)|\(label.lowercased())"
    }

    private static func distance(_ a: Point, _ b: Point) -> Int { max(abs(a.x - b.x), abs(a.y - b.y)) }

    /// The store saved for `display` if it was recorded on the same server run (`server`), else an empty one.
    public static func load(display: String, server: String) throws -> RefStore {
        guard let data = try PrivateFiles.read(file(display).path),
            let store = try? JSONDecoder.xclaw.decode(RefStore.self, from: data), store.server == server
        else {
            let fresh = RefStore()
            fresh.server = server
            return fresh
        }
        store.lastSaved = (display, store.known, store.windows, store.nextElement, store.nextWindow)
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
        try PrivateFiles.write(JSONEncoder.xclaw.encode(self), to: Self.file(display).path)
        lastSaved = (display, known, windows, nextElement, nextWindow)
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

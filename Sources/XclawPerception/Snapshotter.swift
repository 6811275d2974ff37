import Foundation
import XclawBase
import XclawScreen

/// Which sources a snapshot may use.
public enum SnapshotSource: String, Codable, Sendable, CaseIterable {
    /// The accessibility tree for windows whose app exposes one, OCR for the rest.
    case auto
    /// OCR only, even where a tree exists.
    case ocr
    /// The accessibility tree only; windows without one contribute no elements.
    case atspi
}

/// Builds snapshots: windows from the window tree, text from OCR, controls from OCR plus pixel evidence (a box
/// around a short label, a square beside one), refs kept stable across snapshots through a per-display record.
public struct Snapshotter {
    /// The perception objects of the display.
    public let perceiver: Perceiver

    /// Whether boxes the pixels show to be controls have their labels read on their own (`readControls`); off only
    /// to measure what that reading costs.
    public var readsControls = true

    /// Whether per-control reading is on: always, unless `XCLAW_CONTROL_READING=0` switches it off to measure what it
    /// costs (`xclaw bench grounding` compares whole processes that way).
    public static func readsControlsByDefault(_ environment: [String: String] = Invocation.current.environment) -> Bool
    {
        environment["XCLAW_CONTROL_READING"] != "0"
    }

    /// Creates a snapshotter over `perceiver`.
    public init(perceiver: Perceiver, readsControls: Bool = Snapshotter.readsControlsByDefault()) {
        self.perceiver = perceiver
        self.readsControls = readsControls
    }

    /// Takes a snapshot of `area` (default: the screen). `refs` carries refs over from the previous snapshot and
    /// is updated; pass nil for throwaway refs. `source` picks the accessibility tree, OCR, or each where it serves
    /// (`auto`): windows whose app exposes a tree take their elements from it, the rest are read by OCR.
    /// The work is done in stages (`SnapshotStages`): capture → tree → tree elements → OCR partitions → OCR →
    /// naming → elements → refs.
    public func snapshot(area: Rect? = nil, refs: RefStore?, source: SnapshotSource = .auto) throws -> Snapshot {
        try framedSnapshot(area: area, refs: refs, source: source).snapshot
    }

    /// `snapshot`, with the frame it was read from: what an input action acted on, which a run's report shows,
    /// without a second capture.
    public func framedSnapshot(area: Rect? = nil, refs: RefStore?, source: SnapshotSource = .auto) throws -> (
        snapshot: Snapshot, frame: Frame
    ) {
        let scene = try capture(area)
        let store = refs ?? RefStore()
        let tree = try readTree(source: source, windows: scene.windows)
        var fromTree = SnapshotStages.treeElements(scene, tree: tree.tree, refs: store)
        let plan = SnapshotStages.partitions(scene, fromTree, source: source)
        var reading = TextReading(
            region: scene.area, lines: [],
            stats: .init(
                blocks: 0, recognized: 0, cached: 0,
                unchanged: false, milliseconds: 0))
        if !plan.parts.isEmpty {
            reading = try perceiver.recognizer.read(
                scene.frame, origin: Point(x: scene.area.x, y: scene.area.y),
                partitions: plan.parts)
        }
        var controls: [ControlReading] = []
        if readsControls && !plan.parts.isEmpty {
            controls = try perceiver.recognizer.readControls(
                scene.frame, origin: Point(x: scene.area.x, y: scene.area.y), partitions: plan.parts,
                pageLines: reading.lines)
        }
        let lines = SnapshotStages.nameUnnamed(&fromTree.elements, plan.unnamed, lines: reading.lines)
        let elements = store.assign(
            SnapshotStages.elements(
                scene, fromTree, lines: lines, controls: controls, source: source,
                refs: store), area: scene.area, live: scene.liveWindows)
        return (
            SnapshotStages.assemble(scene, elements: elements, ocr: reading.stats, tree: tree, fromTree: fromTree),
            scene.frame
        )
    }

    /// Stage 1: the frame of `area` (default: the screen), with the visible windows over it and the monitors.
    public func capture(_ area: Rect? = nil) throws -> SnapshotScene {
        let connection = perceiver.connection
        let screen = try connection.screenSize()
        let area = try area ?? connection.screenRect()
        let frame = try perceiver.capturer.capture(area)
        let all = try perceiver.windows.list()
        let windows = all.filter { !$0.frame.intersection(area).isEmpty && $0.visible }
        var scene = SnapshotScene(
            screen: screen, area: area, frame: frame, windows: windows,
            monitors: (try? connection.monitors()) ?? [])
        scene.liveWindows = Set(all.map(\.id))
        return scene
    }

    /// Stage 2: the accessibility tree, where the display has one; any failure falls back to OCR with a warning
    /// (`source == .atspi` throws instead). A perceiver with a tree cache reads it again only when an event or a
    /// change of `windows` says it changed.
    public func readTree(source: SnapshotSource, windows: [WindowInfo] = []) throws -> TreeReading {
        var result = TreeReading()
        guard source != .ocr else { return result }
        let connection = perceiver.connection
        guard let location = AccessibilityReader.locate(display: connection.name, windows: perceiver.windows) else {
            // Silent when the display never had a bus; a bus xclaw started and lost is worth a warning.
            let missing = AccessibilityReader.missingBus(display: connection.name)
            if source == .atspi { throw missing }
            if case .busGone = missing { result.warnings.append("\(missing); using OCR instead") }
            return result
        }
        let start = ContinuousClock.now
        do {
            if let cache = perceiver.treeCache {
                result.tree = try cache.tree(at: location, windows: windows, reader: perceiver.accessibility)
            } else {
                result.tree = try perceiver.accessibility.tree(at: location)
            }
            for app in result.tree?.apps ?? [] where app.route == "unresponsive" {
                result.warnings.append(
                    "pid \(app.pid) did not answer on the accessibility bus; its windows are "
                        + "read by OCR")
            }
        } catch AccessibilityError.unreachable(_) where location.isSessionOnly && source != .atspi {
            // The session bus has no accessibility bus: the same as having none, so no warning, unless xclaw
            // started this display with one.
            let missing = AccessibilityReader.missingBus(display: connection.name)
            if case .busGone = missing { result.warnings.append("\(missing); using OCR instead") }
        } catch {
            if source == .atspi { throw error }
            result.warnings.append("\(error); using OCR instead")
        }
        result.milliseconds = (ContinuousClock.now - start).milliseconds
        return result
    }
}

/// What a snapshot is taken of: one captured frame and the window tree at that moment.
public struct SnapshotScene: Sendable {
    /// The whole screen's size.
    public var screen: Size
    /// The area captured, in screen coordinates.
    public var area: Rect
    /// Its pixels.
    public var frame: Frame
    /// The visible windows over the area, top-most first.
    public var windows: [WindowInfo]
    /// The monitors.
    public var monitors: [Monitor]
    /// Every window that exists, over the area or not (refs of a window outside it are kept); nil when unknown.
    public var liveWindows: Set<UInt>?

    /// A scene from parts, for stages run on a fixed frame.
    public init(screen: Size, area: Rect, frame: Frame, windows: [WindowInfo], monitors: [Monitor] = []) {
        (self.screen, self.area, self.frame) = (screen, area, frame)
        (self.windows, self.monitors) = (windows, monitors)
    }
}

/// Stage 2's result: the tree (nil when there is none or it failed), how long it took, and what to tell the user.
public struct TreeReading: Sendable {
    /// The tree.
    public var tree: AccessibleTree?
    /// How long reading it took.
    public var milliseconds = 0.0
    /// Why some or all windows are read by OCR instead.
    public var warnings: [String] = []

    /// No tree.
    public init(tree: AccessibleTree? = nil) { self.tree = tree }
}

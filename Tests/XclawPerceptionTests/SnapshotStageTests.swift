import Foundation
import XCTest
import XclawTesting

@testable import XclawPerception
@testable import XclawScreen

/// The snapshot's stages, each run on a fixed frame: a hand-built tree over a plain frame for the tree and partition
/// stages, and one capture of the widget fixture (real Xvfb, real OCR) for OCR, naming, elements and refs.
final class SnapshotStageTests: XCTestCase {
    private let screen = Rect(x: 0, y: 0, width: 640, height: 480)

    private func plainScene(_ windows: [WindowInfo]) -> SnapshotScene {
        SnapshotScene(
            screen: screen.size, area: screen, frame: Frame(size: screen.size, color: RGB(r: 255, g: 255, b: 255)),
            windows: windows)
    }

    func testTreeElementsServeTheTiedWindowsOnly() {
        let (tree, windows) = scene()
        let refs = RefStore()
        let none = SnapshotStages.treeElements(plainScene(windows), tree: nil, refs: refs)
        XCTAssertTrue(none.elements.isEmpty && none.served.isEmpty && none.windows.isEmpty)
        let fromTree = SnapshotStages.treeElements(plainScene(windows), tree: tree, refs: refs)
        XCTAssertEqual(Set(fromTree.served.keys), [10, 20])
        XCTAssertEqual(fromTree.windows, [10, 20])
        XCTAssertTrue(fromTree.elements.contains { $0.role == .button && $0.label == "Yes" && $0.windowID == 10 })
        XCTAssertTrue(fromTree.elements.allSatisfy { $0.source == .atspi })
        // A window of another process is not served, even with the same extents.
        let stranger = [window(30, Rect(x: 100, y: 100, width: 200, height: 120), pid: 999)]
        XCTAssertTrue(SnapshotStages.treeElements(plainScene(stranger), tree: tree, refs: refs).served.isEmpty)
    }

    func testPartitionsCoverExactlyWhatNoTreeServes() {
        let (tree, windows) = scene()
        let other = window(40, Rect(x: 0, y: 300, width: 200, height: 100), pid: 300)  // no tree: OCR
        let scene = plainScene(windows + [other])
        let fromTree = SnapshotStages.treeElements(scene, tree: tree, refs: RefStore())
        let plan = SnapshotStages.partitions(scene, fromTree, source: .auto)
        // The window without a tree and the desktop around all three, the tree's windows only where the tree has
        // no element (rows it leaves out), then the tree's documents and unnamed controls.
        let area = { (rects: [Rect]) in rects.reduce(0) { $0 + $1.width * $1.height } }
        let extra = fromTree.documents + plan.unnamed.map { fromTree.elements[$0].box }
        let visible = Array(plan.parts.dropLast(extra.count))
        XCTAssertEqual(Array(plan.parts.suffix(extra.count)), extra)
        let outside = visible.filter { part in windows.allSatisfy { part.intersection($0.frame).isEmpty } }
        // 640x480, less the editor's visible 390x300 and the dialog's 200x120 less the 50x120 under the editor.
        XCTAssertEqual(area(outside), 640 * 480 - 390 * 300 - (200 * 120 - 50 * 120))
        XCTAssertTrue(visible.contains(other.frame))
        let inside = visible.filter { !outside.contains($0) }
        XCTAssertFalse(inside.isEmpty, "the tree's windows have room no element covers")
        for part in inside {
            let owner = windows.first { $0.frame.contains(part) }
            XCTAssertNotNil(owner, "\(part) lies within one served window")
            for element in fromTree.elements where element.windowID == owner?.id {
                XCTAssertTrue(part.intersection(element.box).isEmpty, "\(part) overlaps \(element.line())")
            }
        }
        // --source ocr reads every window; --source atspi reads nothing.
        let ocr = SnapshotStages.partitions(
            scene, SnapshotStages.treeElements(scene, tree: nil, refs: RefStore()),
            source: .ocr)
        XCTAssertEqual(area(ocr.parts), screen.width * screen.height)
        XCTAssertEqual(SnapshotStages.partitions(scene, fromTree, source: .atspi), OCRPlan(parts: [], unnamed: []))
    }

    func testKeysOfAGridGetTheirRowAndColumn() {
        // A keypad of 2 rows of 3 like keys, one unread, and a wider button that is no key of it.
        var keys: [Element] = []
        for row in 0..<2 {
            for column in 0..<3 {
                keys.append(
                    Element(
                        ref: "", role: .button, label: row == 1 && column == 1 ? "" : "\(row * 3 + column)",
                        box: Rect(x: 10 + column * 44, y: 50 + row * 30, width: 42, height: 28), window: "w1",
                        windowID: 1, changed: false, active: nil, className: nil, confidence: 90, words: [],
                        source: .ocr))
            }
        }
        var wide = keys[0]
        wide.box = Rect(x: 200, y: 50, width: 120, height: 28)
        let placed = SnapshotStages.placeInGrids(keys + [wide], from: 7)
        XCTAssertEqual(placed[4].cell, GridCell(row: 2, column: 2))
        XCTAssertEqual(placed[2].cell, GridCell(row: 1, column: 3))
        XCTAssertNil(placed[6].cell, "not one of the like boxes")
        XCTAssertTrue(placed[4].line().contains("button \"\" @"), placed[4].line())
        XCTAssertTrue(placed[4].line().contains("cell 2,2"), placed[4].line())
        XCTAssertFalse(placed[0].line().contains("cell"), "read keys are named by their labels")
    }

    func testUnnamedControlsAreNamedOnlyByConfidentWordsInside() {
        let button = Element(
            ref: "", role: .button, label: "", box: Rect(x: 10, y: 10, width: 80, height: 30),
            window: nil, windowID: 1, changed: false, active: nil, className: nil, confidence: nil,
            words: nil, source: .atspi)
        var elements = [button, button]
        elements[1].box = Rect(x: 200, y: 10, width: 80, height: 30)
        let word = { (text: String, x: Int, confidence: Double) in
            TextLine(words: [
                TextWord(text: text, box: Rect(x: x, y: 18, width: 40, height: 14), confidence: confidence)
            ])
        }
        let lines = [word("Open", 20, 91), word("Xq", 210, 40), word("Elsewhere", 400, 95)]
        let left = SnapshotStages.nameUnnamed(&elements, [0, 1], lines: lines)
        XCTAssertEqual(elements[0].label, "Open")
        XCTAssertEqual(elements[0].confidence, 91)
        XCTAssertEqual(elements[1].label, "", "a low-confidence read names nothing")
        // The lines inside the controls are theirs; the rest stay lines of their own.
        XCTAssertEqual(left.map(\.text), ["Elsewhere"])
    }

    func testElementsAndRefsFromOneCapturedFrame() throws {
        let display = try TestDisplay(size: Size(width: 1024, height: 600))
        defer { display.stop() }
        let origin = Point(x: 100, y: 80)
        let fixture = try Fixture(
            display: display.name, title: "widgets",
            frame: Rect(x: origin.x, y: origin.y, width: 640, height: 300), extra: perceptionWidgets)
        defer { fixture.stop() }
        let perceiver = try Perceiver(connection: display.connect())
        let scene = try Snapshotter(perceiver: perceiver).capture()
        XCTAssertEqual(scene.area, Rect(x: 0, y: 0, width: 1024, height: 600))
        XCTAssertEqual(scene.windows.map(\.title), ["widgets"])

        // From here on every stage runs on this one frame.
        let fromTree = SnapshotStages.treeElements(scene, tree: nil, refs: RefStore())
        let plan = SnapshotStages.partitions(scene, fromTree, source: .auto)
        let reading = try perceiver.recognizer.read(scene.frame, partitions: plan.parts)
        var named = fromTree.elements
        let lines = SnapshotStages.nameUnnamed(&named, plan.unnamed, lines: reading.lines)
        let refs = RefStore()
        let first = refs.assign(SnapshotStages.elements(scene, fromTree, lines: lines, source: .auto, refs: refs))
        func element(_ label: String, _ role: Role, in elements: [Element]) throws -> Element {
            try XCTUnwrap(elements.first { $0.label == label && $0.role == role }, "\(label) \(role) in \(elements)")
        }
        XCTAssertEqual(first.first?.role, .window)
        XCTAssertEqual(first.first?.source, .ocr)
        let save = try element("Save", .button, in: first)
        XCTAssertTrue(save.box.contains(Point(x: origin.x + 350, y: origin.y + 35)))
        XCTAssertEqual(
            try element("Name", .field, in: first).box,
            Rect(x: origin.x + 360, y: origin.y + 74, width: 200, height: 28))
        XCTAssertEqual(try element("Remember me", .checkbox, in: first).window, first.first?.ref)
        XCTAssertTrue(first.allSatisfy(\.changed), "everything is new to a fresh ref store")

        // The same frame again: the same elements, the same refs, nothing marked.
        let again = refs.assign(SnapshotStages.elements(scene, fromTree, lines: lines, source: .auto, refs: refs))
        XCTAssertEqual(again.map(\.ref), first.map(\.ref))
        XCTAssertEqual(again.map(\.label), first.map(\.label))
        XCTAssertFalse(again.contains(where: \.changed))

        // The same elements with Save moved 40 px: it keeps its ref and is marked; nothing else is.
        var moved = SnapshotStages.elements(scene, fromTree, lines: lines, source: .auto, refs: refs)
        let index = try XCTUnwrap(moved.firstIndex { $0.label == "Save" && $0.role == .button })
        moved[index].box = moved[index].box.offset(dx: 40, dy: 0)
        let third = refs.assign(moved)
        XCTAssertEqual(third[index].ref, save.ref)
        XCTAssertTrue(third[index].changed)
        XCTAssertEqual(third.filter(\.changed).map(\.label), ["Save"])

        // The last stage puts the figures together.
        let snapshot = SnapshotStages.assemble(
            scene, elements: third, ocr: reading.stats, tree: TreeReading(),
            fromTree: fromTree)
        XCTAssertNil(snapshot.accessibility)
        XCTAssertNil(snapshot.warnings)
        XCTAssertEqual(snapshot.elements.count, third.count)
        XCTAssertEqual(snapshot.area, scene.area)
    }
}

import XCTest
import XclawScreen

@testable import XclawPerception

/// The rule refs keep (docs/perception.md, "Refs that hold"): a control keeps its ref while it stays on screen in the
/// same window with the same role and label, moved or not, across menus opening and other windows changing; a ref is
/// never handed to another element. These run `RefStore.assign` on snapshots written out as the apps gave them (the
/// CLI tests run the same through real snapshots, in and out of the daemon).
final class RefStoreTests: XCTestCase {
    private func window(_ id: UInt, _ frame: Rect, _ title: String = "app") -> Element {
        Element(
            ref: "", role: .window, label: title, box: frame, window: nil, windowID: id, changed: false, active: nil,
            className: nil, confidence: nil, words: nil, source: .ocr)
    }

    private func element(_ role: Role, _ label: String, _ box: Rect, in window: UInt) -> Element {
        Element(
            ref: "", role: role, label: label, box: box, window: "w\(window)", windowID: window, changed: false,
            active: nil, className: nil, confidence: 90, words: nil, source: .ocr)
    }

    /// A main window: a menu bar, a field with its caption, two buttons of one label.
    private func mainWindow(at origin: Point = Point(x: 0, y: 0), field: Bool = true, menuBar: Bool = true)
        -> [Element]
    {
        let o = { (x: Int, y: Int, w: Int, h: Int) in Rect(x: origin.x + x, y: origin.y + y, width: w, height: h) }
        var elements = [window(1, o(0, 0, 600, 400))]
        if menuBar {
            for (i, name) in ["File", "Edit", "View", "Help"].enumerated() {
                elements.append(element(.menuitem, name, o(10 + 50 * i, 5, 40, 20), in: 1))
            }
        }
        elements.append(element(.text, "File name:", o(10, 60, 80, 20), in: 1))
        if field { elements.append(element(.field, "File name:", o(100, 56, 200, 28), in: 1)) }
        elements.append(element(.button, "Delete", o(10, 120, 80, 28), in: 1))
        elements.append(element(.button, "Delete", o(10, 160, 80, 28), in: 1))
        elements.append(element(.button, "Save", o(400, 350, 80, 28), in: 1))
        return elements
    }

    /// The refs of the elements that are not windows, by role and label (duplicates in order).
    private func refs(_ elements: [Element]) -> [String: String] {
        var out: [String: String] = [:]
        for e in elements where e.role != .window {
            var key = "\(e.role.rawValue) \(e.label)"
            while out[key] != nil { key += "'" }
            out[key] = e.ref
        }
        return out
    }

    func testTenCyclesWithAMenuOpeningInBetweenKeepEveryRef() {
        let store = RefStore()
        let first = refs(store.assign(mainWindow()))
        for cycle in 0..<10 {
            // The File menu opens over the field (OCR no longer reads it, nor the caption), as a window of its own.
            let menuID = UInt(100 + cycle)
            var open = mainWindow(field: false)
            open.removeAll { $0.label == "File name:" }
            open.insert(window(menuID, Rect(x: 10, y: 25, width: 120, height: 100), ""), at: 0)
            for (i, item) in ["New", "Open…", "Quit"].enumerated() {
                open.append(element(.menuitem, item, Rect(x: 12, y: 30 + 30 * i, width: 110, height: 26), in: menuID))
            }
            let withMenu = store.assign(open)
            for (key, ref) in refs(withMenu) where first[key] != nil {
                XCTAssertEqual(ref, first[key], "cycle \(cycle), menu open: \(key)")
            }
            // Closed again: everything the main window shows has the refs it had at first.
            XCTAssertEqual(refs(store.assign(mainWindow())), first, "cycle \(cycle)")
        }
    }

    func testAFieldTheCaretHidesSometimesKeepsItsRef() {
        let store = RefStore()
        let field = refs(store.assign(mainWindow()))["field File name:"]
        XCTAssertNotNil(field)
        for read in 0..<20 {
            let seen = read % 3 != 1
            let now = refs(store.assign(mainWindow(field: seen)))
            if seen { XCTAssertEqual(now["field File name:"], field, "read \(read)") }
        }
    }

    func testAMovedWindowCarriesItsElementsRefsAndDuplicatesStayApart() {
        let store = RefStore()
        let before = store.assign(mainWindow())
        let after = store.assign(mainWindow(at: Point(x: 500, y: 300)))
        XCTAssertEqual(refs(after), refs(before), "the window moved 500 px: its elements are the same ones")
        let deletes = before.filter { $0.label == "Delete" }.map(\.ref)
        XCTAssertEqual(after.filter { $0.label == "Delete" }.map(\.ref), deletes, "top stays top")
        XCTAssertTrue(after.filter { $0.role != .window }.allSatisfy(\.changed), "moved is marked changed")
    }

    func testAControlMovedFarInItsWindowIsAnotherControl() {
        // A "Delete" that vanished and one that appeared elsewhere in the same window (a confirmation) may be two
        // controls: a retried `tap e5` must not confirm. Only a window's move carries refs that far.
        let store = RefStore()
        let before = store.assign(mainWindow())
        var moved = mainWindow()
        for i in moved.indices where moved[i].label == "Save" { moved[i].box.x = 20; moved[i].box.y = 300 }
        let after = store.assign(moved)
        let ref = { (list: [Element], label: String) in list.filter { $0.label == label }.map(\.ref) }
        XCTAssertNotEqual(ref(after, "Save"), ref(before, "Save"))
    }

    func testElementsUnseenWhileTheirWindowMovedAreLookedForWhereItTookThem() {
        let store = RefStore()
        let first = refs(store.assign(mainWindow()))
        _ = store.assign(mainWindow(field: false))
        _ = store.assign(mainWindow(at: Point(x: 300, y: 200), field: false))
        XCTAssertEqual(refs(store.assign(mainWindow(at: Point(x: 300, y: 200)))), first)
    }

    func testOCRsVariantsOfALabelAreOneElement() {
        let store = RefStore()
        let before = store.assign(mainWindow())
        var variant = mainWindow()
        for i in variant.indices where variant[i].label == "File name:" { variant[i].label = "Filename" }
        let after = store.assign(variant)
        XCTAssertEqual(
            after.filter { $0.label == "Filename" }.map(\.ref), before.filter { $0.label == "File name:" }.map(\.ref))
    }

    func testAControlReadALittleDifferentlyInItsOwnBoxKeepsItsRef() {
        let store = RefStore()
        let before = store.assign(mainWindow())
        let save = before.first { $0.label == "Save" }?.ref
        for read in ["5ave", "Save"] {
            var again = mainWindow()
            for i in again.indices where again[i].label == "Save" { again[i].label = read }
            XCTAssertEqual(store.assign(again).first { $0.box.x == 400 && $0.role == .button }?.ref, save, read)
        }
        // Another label in the same box is another control to whoever named the first one, a near one too (a list
        // scrolled a page: "Track 13" where "Track 3" was).
        for other in ["Stop", "Saved"] {
            var changed = mainWindow()
            for i in changed.indices where changed[i].box.x == 400 && changed[i].role == .button {
                changed[i].label = other
            }
            XCTAssertNotEqual(store.assign(changed).first { $0.label == other }?.ref, save, other)
            _ = store.assign(mainWindow())
        }
    }

    func testASnapshotOfAnAreaForgetsNothingOutsideIt() {
        let store = RefStore()
        let first = refs(store.assign(mainWindow()))
        // Only the bottom right corner, where Save is: the window still exists but is not over the area alone.
        let corner = Rect(x: 380, y: 330, width: 220, height: 70)
        let part = mainWindow().filter { $0.role == .window || corner.contains($0.box.center) }
        for _ in 0...RefStore.patience { _ = store.assign(part, area: corner, live: [1]) }
        XCTAssertEqual(refs(store.assign(mainWindow())), first)
    }

    func testARefIsNeverHandedToAnotherElement() {
        let store = RefStore()
        let first = store.assign(mainWindow())
        let given = Set(first.map(\.ref))
        // The window goes; another with the same kinds of controls comes in its place.
        var other = mainWindow()
        for i in other.indices {
            other[i].windowID = 2
            other[i].window = other[i].role == .window ? nil : "w2"
        }
        let second = store.assign(other)
        XCTAssertTrue(
            Set(second.filter { $0.role != .window }.map(\.ref)).isDisjoint(with: given),
            "another window's controls are other controls")
        // An element unseen past patience is forgotten, and what comes in its place is new.
        let store2 = RefStore()
        let save = store2.assign(mainWindow()).first { $0.label == "Save" }?.ref
        for _ in 0...RefStore.patience { _ = store2.assign(mainWindow().filter { $0.label != "Save" }) }
        let back = store2.assign(mainWindow()).first { $0.label == "Save" }?.ref
        XCTAssertNotNil(back)
        XCTAssertNotEqual(back, save)
    }
}

import Foundation
import XCTest
import XclawBase
import XclawTesting

@testable import XclawPerception
@testable import XclawScreen

/// The merge of an accessibility tree into snapshot elements (its rules on a tree built by hand, as the helper
/// reports them), the helper's process guard, and bus detection on a real Xvfb.
final class AccessibilityMergeTests: XCTestCase {
    func testWindowsAreTiedByProcessAndExtents() {
        let (tree, windows) = scene()
        let merge = AccessibleMerge(
            tree: tree, windows: windows, screen: Rect(x: 0, y: 0, width: 640, height: 480),
            area: Rect(x: 0, y: 0, width: 640, height: 480))
        XCTAssertEqual(merge.matched[10].map { tree.nodes[$0].name }, "Question")
        XCTAssertEqual(merge.matched[20].map { tree.nodes[$0].name }, "Editor")
        // Same extents but another process: not tied.
        let stranger = [window(30, Rect(x: 100, y: 100, width: 200, height: 120), pid: 999)]
        XCTAssertTrue(
            AccessibleMerge(tree: tree, windows: stranger, screen: merge.screen, area: merge.area)
                .matched.isEmpty)
    }

    func testElementsTakeRolesNamesStatesAndCoverFromTheTree() throws {
        let (tree, windows) = scene()
        let screen = Rect(x: 0, y: 0, width: 640, height: 480)
        let merge = AccessibleMerge(tree: tree, windows: windows, screen: screen, area: screen)
        let dialog = try XCTUnwrap(merge.matched[10])
        let elements = merge.elements(of: windows[1], top: dialog, windowRef: { "w\($0)" })
        let summary = elements.map { "\($0.role.rawValue) \($0.label)" }
        // Containers are skipped, the hidden button dropped, the label inside "No" names it instead of being listed.
        XCTAssertEqual(summary, ["text Save changes?", "text Name:", "field Name", "button No", "button Yes"])
        let yes = try XCTUnwrap(elements.first { $0.label == "Yes" })
        XCTAssertEqual(yes.source, .atspi)
        XCTAssertEqual(yes.toolkitRole, "push button")
        XCTAssertEqual(yes.states, ["focused"])
        XCTAssertEqual(yes.node, AccessibleHandle(bus: ":1.0", path: "/n/7"))
        // Yes's centre (250,195) is under the editor window, which is higher: covered. No's is not.
        XCTAssertEqual(yes.covered, true)
        XCTAssertNil(elements.first { $0.label == "No" }?.covered)
        XCTAssertEqual(elements.first { $0.role == .field }?.value, "draft")

        // The editor's check box runs past the screen's right edge: clipped to it.
        let editor = try XCTUnwrap(merge.matched[20])
        let wrap = try XCTUnwrap(merge.elements(of: windows[0], top: editor, windowRef: { "w\($0)" }).first)
        XCTAssertEqual(wrap.role, .checkbox)
        XCTAssertEqual(wrap.states, ["checked", "disabled"])
        XCTAssertEqual(wrap.box, Rect(x: 600, y: 280, width: 40, height: 20))
    }

    func testToolkitRolesMapToSnapshotRoles() {
        let cases: [(String, [String], Role?)] = [
            ("push button", [], .button), ("toggle button", [], .button), ("check box", [], .checkbox),
            ("radio button", [], .radio), ("combo box", [], .combobox), ("spin button", [], .spinbutton),
            ("slider", [], .slider), ("page tab", [], .tab), ("menu", [], .menuitem), ("menu item", [], .menuitem),
            ("entry", [], .field), ("password text", [], .field), ("text", ["editable"], .field),
            ("text", [], .text), ("label", [], .text), ("icon", [], .image), ("list item", [], .item),
            ("filler", [], nil), ("panel", [], nil), ("frame", [], nil), ("menu bar", [], nil),
        ]
        for (role, states, expected) in cases {
            XCTAssertEqual(
                AccessibleMerge.role(
                    of: node(1, parent: 0, role: role, states: states, rect: nil),
                    parent: node(0, parent: -1, role: "menu bar", rect: nil)), expected,
                role)
        }
    }

    func testPopupEntriesBelongToTheirPopupAndElementsComeInReadingOrder() throws {
        // A combo box whose open list GTK draws in a popup window of the same process, above the main window; the
        // toolkit keeps a column of check boxes bottom-up.
        let nodes = [
            node(0, parent: -1, role: "application", name: "factory", states: [], rect: nil),
            node(1, parent: 0, role: "frame", name: "Factory", rect: Rect(x: 0, y: 0, width: 400, height: 300)),
            node(2, parent: 1, role: "check box", name: "Bottom", rect: Rect(x: 10, y: 200, width: 80, height: 20)),
            node(3, parent: 1, role: "check box", name: "Right", rect: Rect(x: 100, y: 100, width: 80, height: 20)),
            node(4, parent: 1, role: "check box", name: "Left", rect: Rect(x: 10, y: 102, width: 80, height: 20)),
            node(5, parent: 1, role: "combo box", name: "Left", rect: Rect(x: 200, y: 20, width: 100, height: 30)),
            node(6, parent: 5, role: "menu", rect: Rect(x: 200, y: 50, width: 100, height: 90)),
            node(7, parent: 6, role: "menu item", name: "Middle", rect: Rect(x: 200, y: 80, width: 100, height: 30)),
        ]
        let tree = AccessibleTree(
            apps: [
                AccessibleApp(
                    id: 0, root: 0, bus: ":1.0", name: "factory", pid: 7,
                    route: "cache", nodes: 7)
            ], nodes: nodes, ms: 1)
        let popup = WindowInfo(
            id: 2, title: "", className: "", instance: "", pid: 7,
            frame: Rect(x: 200, y: 50, width: 100, height: 90), mapped: true, visible: true,
            active: false, popup: true)
        let main = window(1, Rect(x: 0, y: 0, width: 400, height: 300), pid: 7)
        let screen = Rect(x: 0, y: 0, width: 640, height: 480)
        let merge = AccessibleMerge(tree: tree, windows: [popup, main], screen: screen, area: screen)
        let top = try XCTUnwrap(merge.matched[1])
        let elements = merge.elements(of: main, top: top, windowRef: { "w\($0)" })
        XCTAssertEqual(elements.map(\.label), ["Left", "Middle", "Left", "Right", "Bottom"])
        // The list's container is not an entry; its entry belongs to the popup and is not covered by it.
        let middle = try XCTUnwrap(elements.first { $0.label == "Middle" })
        XCTAssertEqual(middle.role, .menuitem)
        XCTAssertEqual(middle.window, "w2")
        XCTAssertNil(middle.covered)
        XCTAssertFalse(elements.contains { $0.role == .menuitem && $0.label.isEmpty })

        // A window of the same process that is not that popup (a second dialog over the check boxes) covers them.
        let dialog = WindowInfo(
            id: 3, title: "", className: "", instance: "", pid: 7,
            frame: Rect(x: 0, y: 90, width: 200, height: 50), mapped: true, visible: true,
            active: false)
        let covering = AccessibleMerge(tree: tree, windows: [dialog, popup, main], screen: screen, area: screen)
        let under = covering.elements(of: main, top: try XCTUnwrap(covering.matched[1]), windowRef: { "w\($0)" })
        let left = try XCTUnwrap(under.first { $0.label == "Left" && $0.role == .checkbox })
        XCTAssertEqual(left.window, "w1")
        XCTAssertEqual(left.covered, true)
    }

    /// gtk3-widget-factory's Edit menu: GTK gives the open menu no node of its own (its items are children of the
    /// bar's "Edit"), so no node had the popup's extents and the items were listed in the main window, "covered" by
    /// their own menu (and a second time by OCR in the popup). A menu popup without _NET_WM_PID is taken too. A Qt modal dialog of the
    /// same process as large as the main window's content is no popup: what it hides is covered, not its own.
    func testAMenuWithoutAPidIsItsItemsWindowAndADialogCoversWhatIsBehindIt() throws {
        let nodes = [
            node(0, parent: -1, role: "application", name: "factory", states: [], rect: nil),
            node(1, parent: 0, role: "frame", name: "Factory", rect: Rect(x: 0, y: 0, width: 400, height: 300)),
            node(2, parent: 1, role: "menu bar", rect: Rect(x: 0, y: 0, width: 400, height: 25)),
            // As GTK gives it: the bar's entry is a "menu" whose children are the open menu's items, with no node
            // for the menu itself.
            node(3, parent: 2, role: "menu", name: "Edit", rect: Rect(x: 40, y: 0, width: 40, height: 25)),
            node(4, parent: 3, role: "menu item", name: "Cut", rect: Rect(x: 40, y: 30, width: 120, height: 25)),
            node(5, parent: 1, role: "panel", rect: Rect(x: 0, y: 25, width: 400, height: 275)),
            node(6, parent: 5, role: "push button", name: "Open", rect: Rect(x: 10, y: 40, width: 60, height: 25)),
            node(7, parent: 0, role: "dialog", name: "Open file", rect: Rect(x: 0, y: 25, width: 400, height: 275)),
        ]
        let tree = AccessibleTree(
            apps: [AccessibleApp(id: 0, root: 0, bus: ":1.0", name: "factory", pid: 7, route: "cache", nodes: 8)],
            nodes: nodes, ms: 1)
        let main = window(1, Rect(x: 0, y: 0, width: 400, height: 300), pid: 7)
        let screen = Rect(x: 0, y: 0, width: 640, height: 480)
        /// The element labelled `label` when `above` is stacked over the main window.
        func element(_ label: String, under above: WindowInfo) throws -> Element {
            let merge = AccessibleMerge(tree: tree, windows: [above, main], screen: screen, area: screen)
            return try XCTUnwrap(
                merge.elements(of: main, top: try XCTUnwrap(merge.matched[1]), windowRef: { "w\($0)" })
                    .first { $0.label == label })
        }
        func popup(_ id: UInt, _ frame: Rect, pid: Int?) -> WindowInfo {
            WindowInfo(
                id: id, title: "", className: "", instance: "", pid: pid, frame: frame, mapped: true, visible: true,
                active: false, popup: true)
        }
        let menu = popup(2, Rect(x: 40, y: 25, width: 120, height: 60), pid: nil)
        let cut = try element("Cut", under: menu)
        XCTAssertEqual(cut.window, "w2", "the item is its menu's")
        XCTAssertNil(cut.covered, "its own menu does not cover it")
        // A popup of another process is not the app's, whatever its extents.
        let hidden = try element("Cut", under: popup(2, menu.frame, pid: 99))
        XCTAssertEqual(hidden.window, "w1")
        XCTAssertEqual(hidden.covered, true)
        // An overlay that names no process (a screen locker's) over the whole window takes none of its elements:
        // only a menu's items go to a popup without a pid, and only when they lie inside it.
        let openUnder = try element("Open", under: popup(4, main.frame, pid: nil))
        XCTAssertEqual(openUnder.window, "w1")
        XCTAssertEqual(openUnder.covered, true)
        // A dialog of the same process over the content (a managed window, not a popup) covers the toolbar's Open.
        let dialog = WindowInfo(
            id: 3, title: "Open file", className: "", instance: "", pid: 7,
            frame: Rect(x: 0, y: 25, width: 400, height: 275), mapped: true, visible: true, active: true)
        let behind = try element("Open", under: dialog)
        XCTAssertEqual(behind.window, "w1", "the main window's Open is not the dialog's")
        XCTAssertEqual(behind.covered, true)
    }

    func testTreeMatchesWinOverOcrAndControlsOverTheirCaptions() {
        func match(_ ref: String, _ role: Role, _ source: ElementSource?, covered: Bool? = nil) -> Match {
            Match(
                text: "Save", box: Rect(x: 0, y: 0, width: 10, height: 10), score: 1, role: role, ref: ref,
                window: nil, source: source, covered: covered)
        }
        XCTAssertEqual(
            Selection.preferred([match("e1", .text, .ocr), match("e2", .button, .atspi)]).map(\.ref), ["e2"])
        XCTAssertEqual(
            Selection.preferred([match("e1", .text, .atspi), match("e2", .button, .atspi)]).map(\.ref),
            ["e2"])
        XCTAssertEqual(
            Selection.preferred([match("e1", .button, .atspi, covered: true), match("e2", .button, .atspi)])
                .map(\.ref), ["e2"])
        // OCR alone: a control over text too (xcalc's display "9" and its 9 key); two controls stay tied.
        XCTAssertEqual(Selection.preferred([match("e1", .text, .ocr), match("e2", .button, .ocr)]).map(\.ref), ["e2"])
        XCTAssertEqual(Selection.preferred([match("e1", .button, .ocr), match("e2", .button, .ocr)]).count, 2)
    }

    func testTheHelperRunsUnderADeadlineAndItsCrashesAreReported() throws {
        let start = ContinuousClock.now
        let hung = try Subprocess.run(["/bin/sh", "-c", "sleep 10"], timeout: .milliseconds(200))
        XCTAssertEqual(hung.ending, .timedOut)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
        let aborted = try Subprocess.run(["/bin/sh", "-c", "echo partial; kill -ABRT $$"], timeout: .seconds(5))
        XCTAssertEqual(aborted.ending, .signalled(SIGABRT))
        let failed = try Subprocess.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout: .seconds(5))
        XCTAssertEqual(failed.ending, .exited(3))
        XCTAssertEqual(String(decoding: failed.stdout, as: UTF8.self), "out\n")
        XCTAssertEqual(String(decoding: failed.stderr, as: UTF8.self), "err\n")

        let missing = AccessibilityReader(helper: nil)
        XCTAssertThrowsError(try missing.tree(at: .bus("unix:path=/nonexistent"))) {
            XCTAssertEqual($0 as? AccessibilityError, .helperMissing)
        }
    }

}

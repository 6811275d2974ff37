import CX11
import Foundation
import XCTest
import XclawBase
import XclawPerception
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Snapshots, trees, find and tap through the accessibility tree (AT-SPI2), end to end: a real Xvfb (1280x800, no
/// window manager) with a real D-Bus session bus and accessibility bus (`TestDisplay(accessibility: true)`), real
/// GTK and Qt apps, the real `xclaw` and `xclaw-atspi` binaries and real OCR. Nothing is mocked. Every test starts
/// its own display and ends everything it started in `tearDown`, whether it passed or not; every wait is bounded.
final class AccessibilityTests: XCTestCase {
    private var display: TestDisplay?
    private var apps: [Process] = []
    /// Processes a test stopped (SIGSTOP): continued before anything is ended.
    private var stoppedPIDs: [Int32] = []
    /// A private directory: the CLI's state directory, XDG directories, scripts.
    private var scratch: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-axt-\(getpid())-\(UUID())")
        for sub in ["", "state", "xdg-runtime", "xdg-config"] {
            try FileManager.default.createDirectory(
                at: scratch.appendingPathComponent(sub),
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
    }

    override func tearDown() {
        for pid in stoppedPIDs { kill(pid, SIGCONT) }
        stoppedPIDs = []
        for app in apps.reversed() { app.end() }
        apps = []
        display?.stop()
        display = nil
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
        super.tearDown()
    }

    // MARK: - 1. GTK: zenity from the tree, geometry exact, pixels where the boxes say

    func testRefsStayTheSameAcrossSources() throws {
        let d = try startDisplay(accessibility: true)
        let zenity = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        let window = try waitForWindow(of: zenity, on: d)
        let fromTree = try waitForZenity(window, on: d)
        let byOCR = try takeSnapshot(on: d, ["--source", "ocr"])
        let again = try takeSnapshot(on: d)
        for label in ["Yes", "No"] {
            let tree = try XCTUnwrap(Self.element(fromTree, .button, label, in: window.id), fromTree.render())
            let ocr = try XCTUnwrap(Self.element(byOCR, .button, label, in: window.id), byOCR.render())
            let back = try XCTUnwrap(Self.element(again, .button, label, in: window.id), again.render())
            XCTAssertEqual(tree.source, .atspi)
            XCTAssertEqual(ocr.source, .ocr)
            // The same button keeps its ref whichever source saw it, so a ref from one snapshot taps in the next.
            XCTAssertEqual(ocr.ref, tree.ref, "\(ocr.line()) vs \(tree.line())")
            XCTAssertEqual(back.ref, tree.ref)
        }
        XCTAssertEqual(byOCR.elements.first { $0.windowID == window.id && $0.role == .window }?.source, .ocr)
    }

    func testRowsTheTreeLeavesOutAreReadByOCRAndTapped() throws {
        // A list's rows are no elements of GTK's tree here: a window served by its tree still needs OCR for them.
        let d = try startDisplay(accessibility: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/zenity")
        process.arguments = [
            "--list", "--title", "Fruit pick", "--column", "Fruit", "Apple", "Lemon", "Cherry", "Plum",
        ]
        process.environment = Self.cleanEnvironment().merging(d.environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        apps.append(process)
        let window = try waitForWindow(of: process, on: d)
        let snapshot = try waitForSnapshot(on: d, timeout: 20, what: "the list's rows in the tree-served window") {
            $0.elements.contains { $0.windowID == window.id && $0.source == .atspi }
                && $0.elements.contains { $0.windowID == window.id && $0.label == "Lemon" }
        }
        XCTAssertEqual(
            snapshot.elements.first { $0.windowID == window.id && $0.role == .window }?.source, .atspi,
            snapshot.render())
        XCTAssertEqual(snapshot.elements.first { $0.label == "Lemon" }?.source, .ocr)
        // Tapping the row selects it; the dialog itself says which one was chosen.
        let tapped = try xclaw(["tap", "Lemon", "--window", "Fruit pick"], on: d)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        let ok = try xclaw(["tap", "OK", "--window", "Fruit pick", "--role", "button"], on: d)
        XCTAssertEqual(ok.status, 0, ok.stderr)
        eventually("the dialog exits on OK") { !process.isRunning }
        let chosen = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(chosen.trimmingCharacters(in: .whitespacesAndNewlines), "Lemon")
    }

    func testZenityDialogComesFromTheTreeWithExactGeometry() throws {
        let d = try startDisplay(accessibility: true)
        let zenity = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        let window = try waitForWindow(of: zenity, on: d)
        let snapshot = try waitForZenity(window, on: d)

        let windowElement = try XCTUnwrap(snapshot.elements.first { $0.role == .window && $0.windowID == window.id })
        XCTAssertEqual(windowElement.source, .atspi)
        XCTAssertEqual(windowElement.box, window.frame)
        var buttons: [Element] = []
        for label in ["Yes", "No"] {
            let button = try XCTUnwrap(
                Self.element(snapshot, .button, label, in: window.id),
                "button \(label): \(snapshot.render())")
            XCTAssertEqual(button.source, .atspi)
            XCTAssertEqual(button.toolkitRole, "push button")
            XCTAssertNotNil(button.node, "an accessibility element carries its node handle")
            XCTAssertNotEqual(button.covered, true)
            XCTAssertTrue(window.frame.contains(button.box), "\(label) \(button.box) lies inside \(window.frame)")
            buttons.append(button)
        }
        let text = try XCTUnwrap(Self.element(snapshot, .text, "Save changes?", in: window.id), snapshot.render())
        XCTAssertEqual(text.source, .atspi)
        XCTAssertTrue(window.frame.contains(text.box))
        XCTAssertEqual(snapshot.accessibility?.windows, 1)
        XCTAssertNil(snapshot.warnings)

        // The dialog's top-level node has exactly the X window's geometry, through the library…
        let bus = try XCTUnwrap(d.server.accessibility)
        let reader = AccessibilityReader(helper: productsDirectory.appendingPathComponent("xclaw-atspi").path)
        let tree = try reader.tree(at: .bus(bus.a11yAddress))
        let app = try XCTUnwrap(tree.apps.first { $0.pid == Int(zenity.processIdentifier) }, "\(tree.apps)")
        XCTAssertEqual(app.name, "zenity")
        let tops = tree.nodes.filter { $0.parent == app.root && $0.rect != nil }
        XCTAssertEqual(tops.count, 1, "\(tops)")
        XCTAssertEqual(tops.first?.role, "dialog")
        XCTAssertEqual(tops.first?.name, "Question")
        XCTAssertEqual(tops.first?.rect, window.frame)
        XCTAssertEqual(tree.topLevel(of: window)?.rect, window.frame)
        // … and through `xclaw tree --window --json`, whose first node is that top-level.
        let cliTree = try xclaw(["tree", "--window", "Question", "--json"], on: d)
        XCTAssertEqual(cliTree.status, 0, cliTree.stderr)
        let subtree = try JSONDecoder().decode(AccessibleTree.self, from: cliTree.stdout)
        XCTAssertEqual(subtree.nodes.first?.role, "dialog")
        XCTAssertEqual(subtree.nodes.first?.rect, window.frame)
        XCTAssertEqual(Set(subtree.nodes.filter { $0.role == "push button" }.map(\.name)), ["Yes", "No"])
        XCTAssertTrue(
            subtree.nodes.filter { $0.role == "push button" }.allSatisfy { $0.actions?.isEmpty == false },
            "tree asks for action names")

        // Pixels: each button's box edges are where its drawn border is (it differs from the dialog background
        // just outside), and the box holds drawn pixels (border, fill, label).
        // (Polled briefly: the tree can be ready a moment before the first paint.)
        let capturer = try ScreenCapturer(connection: d.connect())
        var problems: [String] = []
        try eventually("the buttons painted", within: .seconds(3), every: .milliseconds(50)) {
            let frame = try capturer.capture()
            let background = try XCTUnwrap(frame.pixel(x: window.frame.x + 2, y: window.frame.y + 2))
            problems = buttons.flatMap { Self.drawnEdgeProblems(of: $0, in: frame, background: background) }
            return problems.isEmpty
        }
        XCTAssertEqual(problems, [], "the buttons' boxes are where they are drawn")
    }

    // MARK: - 2. Tap by name: toolkit action, then a real click

    func testTapByActionAndByClickAnswerZenity() throws {
        let d = try startDisplay(accessibility: true)

        let first = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        _ = try waitForZenity(try waitForWindow(of: first, on: d), on: d)
        let found = try xclaw(["find", "Yes"], on: d)
        XCTAssertEqual(found.status, 0, found.stderr)
        XCTAssertTrue(found.text.contains("button \"Yes\""), found.text)
        XCTAssertTrue(found.text.contains("[atspi]"), found.text)
        let pressed = try xclaw(["tap", "Yes", "--action"], on: d)
        XCTAssertEqual(pressed.status, 0, pressed.stderr)
        XCTAssertTrue(pressed.text.hasPrefix("pressed ("), pressed.text)
        XCTAssertEqual(try waitForExit(first, timeout: 5), 0, "the toolkit's action on Yes answers yes (exit 0)")

        let second = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        _ = try waitForZenity(try waitForWindow(of: second, on: d), on: d)
        let clicked = try xclaw(["tap", "No"], on: d)
        XCTAssertEqual(clicked.status, 0, clicked.stderr)
        XCTAssertTrue(clicked.text.hasPrefix("tapped "), clicked.text)
        XCTAssertTrue(clicked.text.contains("[atspi]"), clicked.text)
        XCTAssertEqual(try waitForExit(second, timeout: 5), 1, "a click on No answers no (exit 1)")
    }

    // MARK: - 3. A big GTK app: gtk3-widget-factory

    func testGtkWidgetFactoryRolesTreeAndCheckBoxAction() throws {
        let d = try startDisplay(accessibility: true)
        let (factory, window) = try startWidgetFactory(on: d)

        // Timed: one snapshot from the tree alone.
        let timed = try xclaw(["snapshot", "--json", "--source", "atspi"], on: d)
        XCTAssertEqual(timed.status, 0, timed.stderr)
        let snapshot = try JSONDecoder.xclaw.decode(Snapshot.self, from: timed.stdout)
        let stats = try XCTUnwrap(snapshot.accessibility)
        let mine = snapshot.elements.filter { $0.windowID == window.id && $0.role != .window }
        XCTAssertTrue(mine.allSatisfy { $0.source == .atspi })
        XCTAssertGreaterThanOrEqual(mine.count, 50, snapshot.render())
        let roles = Set(mine.map(\.role))
        for role in [Role.button, .field, .tab] { XCTAssertTrue(roles.contains(role), "\(role) in \(roles)") }
        XCTAssertTrue(roles.contains(.checkbox) || roles.contains(.radio), "\(roles)")
        XCTAssertTrue(roles.contains(.slider) || roles.contains(.spinbutton), "\(roles)")
        XCTAssertEqual(snapshot.elements.first { $0.windowID == window.id && $0.role == .window }?.source, .atspi)
        let bus = try XCTUnwrap(d.server.accessibility)
        let full = try AccessibilityReader(helper: productsDirectory.appendingPathComponent("xclaw-atspi").path)
            .tree(at: .bus(bus.a11yAddress), all: true)
        let total = full.apps.first { $0.pid == Int(factory.processIdentifier) }
        print(
            "AccessibilityTests: gtk3-widget-factory: \(stats.nodes) nodes reported (\(total?.nodes ?? -1) in the "
                + "app, hidden included; route \(total?.route ?? "?")), \(stats.elements) elements, tree read in "
                + "\(String(format: "%.1f", stats.milliseconds)) ms, whole `xclaw snapshot --source atspi` "
                + "\(String(format: "%.0f", timed.seconds * 1000)) ms")

        // `xclaw tree --window TITLE`: the subtree of that window, its frame first, at the window's geometry. (The
        // frame's accessible name is empty: the factory sets no window title, its header bar shows a stack
        // switcher, and GDK gives X the program name as WM_NAME; so the name is not checked here.)
        // The factory widens its window once its pages are laid out, which can come after the tree is ready: the
        // tree's frame is compared with the window's geometry read with it, until the two agree.
        let manager = WindowManager(connection: try d.connect())
        var printed = try xclaw(["tree", "--window", window.title], on: d)
        var firstLine = "", frame = window.frame
        eventually("the tree's frame at the window's geometry", every: .milliseconds(200)) {
            printed = (try? xclaw(["tree", "--window", window.title], on: d)) ?? printed
            firstLine = printed.text.split(separator: "\n").first.map(String.init) ?? ""
            frame = (try? manager.list().first { $0.id == window.id }?.frame) ?? frame
            return firstLine.contains("@\(frame.x),\(frame.y) \(frame.width)x\(frame.height)")
        }
        XCTAssertEqual(printed.status, 0, printed.stderr)
        XCTAssertTrue(firstLine.hasPrefix("frame \""), firstLine)
        XCTAssertTrue(
            firstLine.contains("@\(frame.x),\(frame.y) \(frame.width)x\(frame.height)"), "\(firstLine) vs \(frame)")
        XCTAssertGreaterThan(printed.text.split(separator: "\n").count, 50)
        XCTAssertFalse(printed.text.contains("application \""), "only the window's subtree: \(firstLine)")

        // A named, enabled check box, tapped by name through its toolkit action, flips its checked state.
        let boxes = mine.filter {
            $0.role == .checkbox && !$0.label.isEmpty && $0.covered != true
                && !($0.states ?? []).contains("disabled")
        }
        let target = try XCTUnwrap(
            boxes.first { !($0.states ?? []).contains("checked") } ?? boxes.first,
            snapshot.render())
        let wasChecked = (target.states ?? []).contains("checked")
        // The CLI numbers equal matches the way Finder lists them; --nth picks ours when the name repeats.
        let equals = Finder.find(target.label, in: snapshot, role: .checkbox).filter { $0.score == 1 }
        let nth = try XCTUnwrap(equals.firstIndex { $0.ref == target.ref }) + 1
        var tap = ["tap", target.label, "--action", "--role", "checkbox", "--source", "atspi", "--json"]
        if equals.count > 1 { tap += ["--nth", "\(nth)"] }
        let tapped = try xclaw(tap, on: d)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        let match = try JSONDecoder.xclaw.decode(Match.self, from: tapped.stdout)
        XCTAssertEqual(match.box, target.box, "the tap acted on the chosen check box")
        XCTAssertEqual(match.source, .atspi)
        let after = try waitForSnapshot(
            on: d, arguments: ["--source", "atspi"], timeout: 5,
            what: "check box \"\(target.label)\" at \(target.box) flips"
        ) { s in
            guard let now = s.elements.first(where: { $0.role == .checkbox && $0.box == target.box }) else {
                return false
            }
            return (now.states ?? []).contains("checked") != wasChecked
        }
        let flipped = try XCTUnwrap(after.elements.first { $0.role == .checkbox && $0.box == target.box })
        XCTAssertEqual((flipped.states ?? []).contains("checked"), !wasChecked)

        // Menu items: a combo box's popup menu, opened through its toolkit action.
        try openComboPopup(on: d)
        let menu = try waitForSnapshot(
            on: d, arguments: ["--source", "atspi"], timeout: 5,
            what: "the combo box's menu items"
        ) { s in
            Set(s.elements.filter { $0.role == .menuitem && $0.source == .atspi }.map(\.label))
                .isSuperset(of: ["Left", "Middle", "Right"])
        }
        let items = menu.elements.filter { $0.role == .menuitem && ["Left", "Middle", "Right"].contains($0.label) }
        XCTAssertEqual(items.count, 3, "\(items.map { $0.line() })")
        XCTAssertTrue(
            items.allSatisfy { $0.source == .atspi && $0.toolkitRole == "menu item" && $0.node != nil },
            "\(items.map { $0.line() })")
        XCTAssertTrue(factory.isRunning)
    }

    /// The items of an open GTK combo-box popup are descendants of the combo box in the main window's tree, but are
    /// drawn in the popup's own override-redirect X window, higher in the stacking order: they belong to that popup,
    /// are not covered by it, and clicking one works.
    func testComboPopupItemsAreNotCoveredByTheirOwnPopup() throws {
        let d = try startDisplay(accessibility: true)
        let (_, window) = try startWidgetFactory(on: d)
        let before = try takeSnapshot(on: d, ["--source", "atspi"])
        let combo = try XCTUnwrap(
            before.elements.first {
                $0.role == .combobox && $0.label == "Left"
                    && $0.windowID == window.id
            }, before.render())
        try openComboPopup(on: d)
        let open = try waitForSnapshot(
            on: d, arguments: ["--source", "atspi"], timeout: 5,
            what: "the combo box's menu items"
        ) { s in
            s.elements.contains { $0.role == .menuitem && $0.label == "Middle" }
        }
        let popup = try XCTUnwrap(
            try WindowManager(connection: d.connect()).list()
                .first { $0.popup && $0.pid == window.pid }, "the popup menu's X window")
        let middle = try XCTUnwrap(open.elements.first { $0.role == .menuitem && $0.label == "Middle" })
        XCTAssertTrue(popup.frame.contains(middle.box), "\(middle.box) is drawn in the popup \(popup.frame)")
        XCTAssertNotEqual(
            middle.covered, true,
            "a menu item in its own popup is not covered by it: \(middle.line()) (popup \(popup.summary))")
        let clicked = try xclaw(["tap", "Middle", "--role", "menuitem"], on: d)
        XCTAssertEqual(clicked.status, 0, "clicking a visible menu item: \(clicked.stderr)")
        if clicked.status == 0 {
            _ = try waitForSnapshot(
                on: d, arguments: ["--source", "atspi"], timeout: 5,
                what: "the combo box shows Middle"
            ) { s in
                s.elements.contains { $0.role == .combobox && $0.box == combo.box && $0.label == "Middle" }
            }
        }
    }

    /// gtk3-widget-factory's Edit menu (page 2's menu bar): GTK gives the open menu no node of its own, its items
    /// being children of the bar's "Edit", so they were listed in the main window, every one "covered by a higher
    /// window" (their own menu) with advice to raise it (which closes the menu), and listed again by OCR in the
    /// popup. They are the popup's now, listed once, from the tree, and `tap Copy` presses Copy.
    func testAnOpenGtkMenusItemsAreItsOwnListedOnceAndTapped() throws {
        let d = try startDisplay(accessibility: true)
        let (_, window) = try startWidgetFactory(on: d)
        let page = try xclaw(["tap", "Page 2", "--role", "radio"], on: d)
        XCTAssertEqual(page.status, 0, page.stderr)
        _ = try waitForSnapshot(on: d, arguments: ["--source", "atspi"], timeout: 5, what: "page 2's menu bar") {
            Self.element($0, .menuitem, "Edit", in: window.id) != nil
        }
        let edit = try xclaw(["tap", "Edit", "--role", "menuitem"], on: d)
        XCTAssertEqual(edit.status, 0, edit.stderr)
        let open = try waitForSnapshot(on: d, timeout: 5, what: "the Edit menu's items") { s in
            s.elements.contains { $0.label == "Copy" && $0.source == .atspi && $0.windowID != window.id }
        }
        let popup = try XCTUnwrap(
            try WindowManager(connection: d.connect()).list().first { $0.popup && $0.pid == window.pid },
            "the menu's X window")
        for label in ["Cut", "Copy", "Paste"] {
            let items = open.elements.filter { $0.label == label }
            XCTAssertEqual(items.count, 1, "\(label) is listed once: \(items.map { $0.line() })")
            let item = try XCTUnwrap(items.first)
            XCTAssertEqual(item.windowID, popup.id, "\(label) is its menu's: \(item.line())")
            XCTAssertNotEqual(item.covered, true, "\(label) is not covered by its own menu")
        }
        let copy = try xclaw(["tap", "Copy"], on: d)
        XCTAssertEqual(copy.status, 0, copy.stderr)
        // The press activated the item, which closes its menu (a click outside it would too, but the tap's line
        // says where it went: inside the popup, on Copy).
        XCTAssertTrue(copy.text.contains("menuitem \"Copy\""), copy.text)
        let manager = WindowManager(connection: try d.connect())
        XCTAssertTrue(try poll(within: .seconds(5)) { try !manager.list().contains { $0.id == popup.id } })
    }

    /// `--nth` counts equal matches in reading order, and `find` lists ties that way, also for accessibility
    /// elements, although GTK keeps the widget factory's column of check buttons bottom-up in its tree.
    func testEqualMatchesAreCountedInReadingOrder() throws {
        let d = try startDisplay(accessibility: true)
        _ = try startWidgetFactory(on: d)
        let found = try xclaw(["find", "checkbutton", "--role", "checkbox", "--json"], on: d)
        XCTAssertEqual(found.status, 0, found.stderr)
        let matches = try JSONDecoder.xclaw.decode([Match].self, from: found.stdout)
        XCTAssertGreaterThanOrEqual(matches.count, 2)
        let points = matches.map(\.point)
        let reading = points.sorted { ($0.y, $0.x) < ($1.y, $1.x) }
        XCTAssertEqual(points.map(\.description), reading.map(\.description), "ties listed in reading order")
        let first = try xclaw(["find", "checkbutton", "--role", "checkbox", "--nth", "1", "--json"], on: d)
        XCTAssertEqual(first.status, 0, first.stderr)
        let picked = try JSONDecoder.xclaw.decode([Match].self, from: first.stdout)
        XCTAssertEqual(picked.first?.point, reading.first, "--nth 1 is the top-most check button")
    }

    // MARK: - 4. Qt: FeatherPad

    func testQtFeatherPadMenusFromTheTree() throws {
        let d = try startDisplay(accessibility: true)
        let pad = try launchApp(
            "/usr/bin/featherpad", [],
            environment: [
                "XDG_RUNTIME_DIR": scratch.appendingPathComponent("xdg-runtime").path,
                "XDG_CONFIG_HOME": scratch.appendingPathComponent("xdg-config").path,
                "QT_QPA_PLATFORM": "xcb",
            ])
        let window = try waitForWindow(of: pad, on: d, timeout: 15)
        var tree: AccessibleTree?
        try eventually("FeatherPad in the tree", within: .seconds(15), every: .milliseconds(200)) {
            let listed = try xclaw(["tree", "--json"], on: d)
            if listed.status == 0 { tree = try JSONDecoder().decode(AccessibleTree.self, from: listed.stdout) }
            return tree?.apps.contains { $0.name == "FeatherPad" && $0.pid == Int(pad.processIdentifier) } == true
        }
        let app = try XCTUnwrap(tree?.apps.first { $0.name == "FeatherPad" }, "apps: \(tree?.apps ?? [])")
        XCTAssertEqual(app.pid, Int(pad.processIdentifier))
        XCTAssertEqual(app.route, "walk", "Qt answers GetItems with nothing: it is walked")

        let snapshot = try waitForSnapshot(on: d, timeout: 10, what: "FeatherPad's menus from the tree") { s in
            ["File", "Edit"].allSatisfy { Self.element(s, .menuitem, $0, in: window.id)?.source == .atspi }
        }
        XCTAssertEqual(snapshot.elements.first { $0.role == .window && $0.windowID == window.id }?.source, .atspi)
        for label in ["File", "Edit"] {
            let item = try XCTUnwrap(Self.element(snapshot, .menuitem, label, in: window.id))
            XCTAssertEqual(item.toolkitRole, "menu item")
            XCTAssertTrue(window.frame.contains(item.box), "\(label) \(item.box) inside \(window.frame)")
        }
        let text = try xclaw(["snapshot"], on: d)
        XCTAssertTrue(text.text.contains("menuitem \"File\""), text.text)
        XCTAssertTrue(text.text.contains("menuitem \"Edit\""), text.text)

        // The modal Open dialog: the main window's toolbar and menus were listed inside it (a window of the same
        // process above them was taken for a popup of theirs) and not covered, so `tap Open --window "Open file"`
        // tied the dialog's Open with the toolbar's. They are the main window's, covered, and the dialog's wins.
        let toolbar = try xclaw(["tap", "Open", "--role", "button"], on: d)
        XCTAssertEqual(toolbar.status, 0, toolbar.stderr)
        let manager = WindowManager(connection: try d.connect())
        let dialog = try XCTUnwrap(
            try poll(within: .seconds(10)) { try manager.list().first { $0.title.hasPrefix("Open file") } },
            "FeatherPad's Open dialog")
        let modal = try waitForSnapshot(on: d, timeout: 10, what: "the Open dialog from the tree") { s in
            Self.element(s, .button, "Cancel", in: dialog.id)?.source == .atspi
        }
        let behind = try XCTUnwrap(Self.element(modal, .button, "Open", in: window.id), modal.render())
        XCTAssertEqual(behind.covered, true, "the toolbar's Open is behind the dialog: \(behind.line())")
        XCTAssertNil(Self.element(modal, .menuitem, "File", in: dialog.id), "the main menu is not the dialog's")
        let own = try XCTUnwrap(Self.element(modal, .button, "Open", in: dialog.id), modal.render())
        let found = try xclaw(["find", "Open", "--window", "Open file", "--json"], on: d)
        XCTAssertEqual(found.status, 0, found.stderr)
        let matches = try JSONDecoder.xclaw.decode([Match].self, from: found.stdout)
        XCTAssertEqual(matches.first?.windowID, dialog.id, "the dialog's Open ranks first")
        let tapped = try xclaw(["tap", "Open", "--window", "Open file", "--json"], on: d)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        XCTAssertEqual(try JSONDecoder.xclaw.decode(Match.self, from: tapped.stdout).ref, own.ref)
        let cancel = try xclaw(["tap", "Cancel", "--window", "Open file"], on: d)
        XCTAssertEqual(cancel.status, 0, cancel.stderr)
        XCTAssertTrue(try poll(within: .seconds(5)) { try !manager.list().contains { $0.id == dialog.id } })
    }

    // MARK: - 5. Mixed: an Xt app read by OCR beside a GTK dialog read from the tree

    func testMixedXtermByOcrAndZenityByTree() throws {
        let d = try startDisplay(accessibility: true)
        // The blank line keeps xterm's cursor block off the marker's line: see testXtermLineAboveTheCursorIsRead.
        let xterm = try launchApp(
            "/usr/bin/xterm",
            [
                "-geometry", "80x20+0+0", "-e", "sh", "-c",
                "echo MIXEDMARKER ready; echo; sleep 600",
            ],
            environment: ["LC_ALL": "C.UTF-8"])
        let term = try waitForWindow(of: xterm, on: d)
        let zenity = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        var dialog = try waitForWindow(of: zenity, on: d)
        // Over the lower right of the terminal, clear of its first line (no window manager: move it ourselves).
        let target = Point(x: 300, y: 150)
        try Self.moveWindow(dialog.id, to: target, on: d.name)
        let manager = WindowManager(connection: try d.connect())
        let moved = try eventually("the dialog moved", within: .seconds(5)) {
            try manager.list().first { $0.id == dialog.id && $0.frame.x == target.x && $0.frame.y == target.y }
        }
        if let moved { dialog = moved }
        XCTAssertEqual(Point(x: dialog.frame.x, y: dialog.frame.y), target)
        XCTAssertFalse(dialog.frame.intersection(term.frame).isEmpty, "the dialog covers part of the terminal")
        XCTAssertEqual(try manager.list().first?.id, dialog.id, "the dialog is on top")

        let snapshot = try waitForSnapshot(on: d, timeout: 15, what: "the terminal by OCR and the dialog by tree") {
            s in
            s.elements.contains {
                $0.role == .window && $0.windowID == dialog.id && $0.source == .atspi
                    && $0.box == dialog.frame
            }
                && Self.element(s, .button, "Yes", in: dialog.id)?.source == .atspi
                && s.elements.contains {
                    $0.windowID == term.id && $0.source == .ocr && $0.label.contains("MIXEDMARKER")
                }
        }
        XCTAssertEqual(snapshot.elements.first { $0.role == .window && $0.windowID == term.id }?.source, .ocr)
        let termElements = snapshot.elements.filter { $0.windowID == term.id && $0.role != .window }
        XCTAssertFalse(termElements.isEmpty)
        XCTAssertTrue(termElements.allSatisfy { $0.source == .ocr }, "\(termElements.map { $0.line() })")
        XCTAssertTrue(termElements.contains { $0.label.contains("MIXEDMARKER") })
        XCTAssertFalse(termElements.contains { $0.label.contains("Save changes") }, "the dialog is not OCR'd")
        for label in ["Yes", "No"] {
            let button = try XCTUnwrap(Self.element(snapshot, .button, label, in: dialog.id), snapshot.render())
            XCTAssertEqual(button.source, .atspi)
            XCTAssertEqual(button.toolkitRole, "push button")
            XCTAssertTrue(dialog.frame.contains(button.box))
            XCTAssertNotEqual(button.covered, true)
        }
        XCTAssertEqual(snapshot.accessibility?.windows, 1)

        let text = try xclaw(["snapshot"], on: d)
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.text.split(separator: "\n").map(String.init)
        let dialogLine = try XCTUnwrap(lines.first { $0.contains(" window \"Question\"") }, text.text)
        let termLine = try XCTUnwrap(lines.first { $0.contains(" window ") && $0.contains("(\"XTerm\")") }, text.text)
        XCTAssertTrue(dialogLine.hasSuffix("[atspi]"), dialogLine)
        XCTAssertTrue(termLine.hasSuffix("[ocr]"), termLine)
        XCTAssertTrue(zenity.isRunning && xterm.isRunning)
    }

    // MARK: - 6. Failure modes: no bus, a dead bus, a hung bus, a crashing helper

    func testWithoutAccessibilityBusSnapshotIsSilentAndAtspiSourceExplains() throws {
        let d = try startDisplay(accessibility: false)
        _ = try launchApp(
            "/usr/bin/xterm",
            [
                "-geometry", "60x10+20+20", "-e", "sh", "-c",
                "echo PLAINMARKER ready; echo; sleep 600",
            ],
            environment: ["LC_ALL": "C.UTF-8"])
        // A helper that would leave a mark and stall: it must never be started when the display has no bus.
        let mark = scratch.appendingPathComponent("helper-ran")
        let helper = try writeScript("stalling-helper", "touch '\(mark.path)'\nsleep 5\n")
        let env = ["XCLAW_ATSPI": helper.path]
        _ = try waitForSnapshot(on: d, environment: env, timeout: 10, what: "the xterm's text") { s in
            s.elements.contains { $0.source == .ocr && $0.label.contains("PLAINMARKER") }
        }
        let plain = try xclaw(["snapshot", "--json"], on: d, environment: env)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertFalse(plain.stderr.contains("warning:"), plain.stderr)
        let snapshot = try JSONDecoder.xclaw.decode(Snapshot.self, from: plain.stdout)
        XCTAssertNil(snapshot.accessibility)
        XCTAssertNil(snapshot.warnings)
        XCTAssertTrue(snapshot.elements.contains { $0.source == .ocr && $0.label.contains("PLAINMARKER") })
        // No wait for a bus that is not there: no helper is started to wait on one (the mark), which a wall-clock
        // bound (5 s, once) said less surely on a loaded machine.
        XCTAssertFalse(FileManager.default.fileExists(atPath: mark.path), "no helper is started without a bus")

        let atspi = try xclaw(["snapshot", "--source", "atspi"], on: d, environment: env)
        XCTAssertEqual(atspi.status, 1, atspi.stderr)
        XCTAssertTrue(atspi.stderr.contains("--accessibility"), atspi.stderr)
        XCTAssertTrue(atspi.text.isEmpty, atspi.text)
        let tree = try xclaw(["tree"], on: d, environment: env)
        XCTAssertEqual(tree.status, 1, tree.stderr)
        XCTAssertTrue(tree.stderr.contains("--accessibility"), tree.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: mark.path))
    }

    func testKilledBusFallsBackToOcrWithAWarning() throws {
        let d = try startDisplay(accessibility: true)
        let zenity = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        let window = try waitForWindow(of: zenity, on: d)
        _ = try waitForZenity(window, on: d)

        // The bus dies without cleaning up (the launcher first, so it cannot remove the root property): the address
        // is still published, but nothing answers there.
        let bus = try XCTUnwrap(d.server.accessibility)
        let daemon = try accessibilityDaemon(of: d)
        XCTAssertEqual(kill(bus.launcherPID, SIGKILL), 0)
        XCTAssertEqual(kill(daemon, SIGKILL), 0)
        XCTAssertTrue(Self.waitGone(daemon, timeout: 5), "the accessibility bus daemon \(daemon) ended")

        // As an agent started in the display's environment (`xclaw display env`) runs it.
        let result = try xclaw(["snapshot", "--json"], on: d, environment: d.environment)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("warning:"), "stderr: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("using OCR instead"), result.stderr)
        let snapshot = try JSONDecoder.xclaw.decode(Snapshot.self, from: result.stdout)
        Self.assertZenityReadByOCR(snapshot, window: window)
        XCTAssertNotNil(snapshot.warnings)

        // With only --display: the same.
        let bare = try xclaw(["snapshot", "--json"], on: d)
        XCTAssertEqual(bare.status, 0, bare.stderr)
        XCTAssertTrue(bare.stderr.contains("warning:"), "stderr: \(bare.stderr)")
        Self.assertZenityReadByOCR(try JSONDecoder.xclaw.decode(Snapshot.self, from: bare.stdout), window: window)
    }

    func testHungBusTimesOutAndFallsBackToOcr() throws {
        let d = try startDisplay(accessibility: true)
        let zenity = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        let window = try waitForWindow(of: zenity, on: d)
        _ = try waitForZenity(window, on: d)

        let daemon = try accessibilityDaemon(of: d)
        stoppedPIDs.append(daemon)
        XCTAssertEqual(kill(daemon, SIGSTOP), 0)
        let result = try xclaw(
            ["snapshot", "--json"], on: d, environment: ["XCLAW_ATSPI_TIMEOUT_MS": "1500"],
            timeout: 30)
        // Bounded: the stopped bus never answers, so only the timeout ends the wait (the 30 s guard would catch a
        // wait without one), and the warning names the 1500 ms it was given. No upper bound in seconds: one of 5 s
        // failed at 5.99 on a loaded machine, and a wall-clock bound is a benchmark's to measure.
        XCTAssertFalse(result.timedOut, "bounded by XCLAW_ATSPI_TIMEOUT_MS")
        XCTAssertGreaterThanOrEqual(result.seconds, 1.4, "it waited for the tree first")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("warning:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("did not answer within 1500 ms"), result.stderr)
        Self.assertZenityReadByOCR(try JSONDecoder.xclaw.decode(Snapshot.self, from: result.stdout), window: window)

        // Once the bus runs again, the tree is back.
        XCTAssertEqual(kill(daemon, SIGCONT), 0)
        stoppedPIDs.removeAll { $0 == daemon }
        _ = try waitForZenity(window, on: d)
    }

    func testCrashingHelperFallsBackToOcrWithAWarning() throws {
        let d = try startDisplay(accessibility: true)
        let zenity = try launchApp("/usr/bin/zenity", ["--question", "--text", "Save changes?"])
        let window = try waitForWindow(of: zenity, on: d)
        _ = try waitForZenity(window, on: d)

        let crashing = try writeScript("crashing-helper", "ulimit -c 0\nkill -ABRT $$\n")
        let result = try xclaw(["snapshot", "--json"], on: d, environment: ["XCLAW_ATSPI": crashing.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("warning:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("signal \(SIGABRT)"), result.stderr)
        Self.assertZenityReadByOCR(try JSONDecoder.xclaw.decode(Snapshot.self, from: result.stdout), window: window)
    }

    // MARK: - Helpers: display, apps, CLI

    /// A 1280x800 display without a window manager, with the session and accessibility buses when asked.
    private func startDisplay(accessibility: Bool) throws -> TestDisplay {
        let d = try TestDisplay(size: Size(width: 1280, height: 800), accessibility: accessibility)
        display = d
        return d
    }

    /// The inherited environment without anything that would send a child to another desktop or bus.
    private static func cleanEnvironment() -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in [
            "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS",
            "DBUS_STARTER_BUS_TYPE", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE", "GTK_A11Y", "QT_ACCESSIBILITY",
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "XCLAW_ATSPI", "XCLAW_ATSPI_TIMEOUT_MS", "XCLAW_STATE_DIR",
        ] {
            env.removeValue(forKey: key)
        }
        return env
    }

    /// Starts an app on the test display with the display's environment (DISPLAY and, with accessibility, the
    /// session bus); its output is discarded. Ended in tearDown.
    private func launchApp(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> Process
    {
        let d = try XCTUnwrap(display)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = Self.cleanEnvironment().merging(d.environment) { $1 }.merging(environment) { $1 }
        process.currentDirectoryURL = scratch
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        apps.append(process)
        return process
    }

    /// What a bounded CLI run gave.
    private struct Ran {
        var status: Int32
        var stdout: Data
        var stderr: String
        var seconds: Double
        var timedOut: Bool
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `xclaw ARGS --display D` with a private state directory, killed after `timeout` seconds.
    private func xclaw(
        _ arguments: [String], on d: TestDisplay, environment: [String: String] = [:],
        timeout: TimeInterval = 60
    ) throws -> Ran {
        var env = Self.cleanEnvironment()
        env["XCLAW_STATE_DIR"] = scratch.appendingPathComponent("state").path
        env.merge(environment) { $1 }
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("xclaw")
        process.arguments = arguments + ["--display", d.name]
        process.environment = env
        process.currentDirectoryURL = scratch
        let out = Pipe(), err = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let outBox = DataBox(), errBox = DataBox()
        let start = Date()
        try process.run()
        Thread { outBox.set(out.fileHandleForReading.readDataToEndOfFile()) }.start()
        Thread { errBox.set(err.fileHandleForReading.readDataToEndOfFile()) }.start()
        let timedOut = !process.exits(within: .seconds(timeout))
        if timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.exits(within: .seconds(5))
        }
        let seconds = Date().timeIntervalSince(start)
        outBox.wait(within: .seconds(5))
        errBox.wait(within: .seconds(5))
        XCTAssertFalse(timedOut, "xclaw \(arguments.joined(separator: " ")) did not finish in \(timeout) s")
        return Ran(
            status: process.isRunning ? -1 : process.terminationStatus, stdout: outBox.data,
            stderr: String(decoding: errBox.data, as: UTF8.self), seconds: seconds, timedOut: timedOut)
    }

    /// One `xclaw snapshot --json`, decoded.
    private func takeSnapshot(on d: TestDisplay, _ arguments: [String] = [], environment: [String: String] = [:]) throws
        -> Snapshot
    {
        let result = try xclaw(["snapshot", "--json"] + arguments, on: d, environment: environment)
        guard result.status == 0 else {
            throw Failure("xclaw snapshot exited \(result.status): \(result.stderr)")
        }
        return try JSONDecoder.xclaw.decode(Snapshot.self, from: result.stdout)
    }

    /// Takes snapshots until `done` holds (at most `timeout` s); throws with the last one when it never does.
    private func waitForSnapshot(
        on d: TestDisplay, arguments: [String] = [], environment: [String: String] = [:],
        timeout: TimeInterval, what: String, until done: (Snapshot) -> Bool
    ) throws
        -> Snapshot
    {
        var last: Snapshot?
        var lastError: Error?
        let found = poll(within: .seconds(timeout), every: .milliseconds(100)) { () -> Snapshot? in
            do {
                last = try takeSnapshot(on: d, arguments, environment: environment)
            } catch {
                lastError = error
            }
            return last.flatMap { done($0) ? $0 : nil }
        }
        if let found { return found }
        throw Failure(
            "waited \(timeout) s for \(what); last snapshot:\n\(last?.render() ?? "none")"
                + (lastError.map { "\nlast error: \($0)" } ?? ""))
    }

    /// Waits until zenity's dialog shows in a snapshot from the tree, with both buttons.
    private func waitForZenity(_ window: WindowInfo, on d: TestDisplay) throws -> Snapshot {
        try waitForSnapshot(on: d, timeout: 10, what: "zenity's dialog from the accessibility tree") { s in
            s.elements.contains { $0.role == .window && $0.windowID == window.id && $0.source == .atspi }
                && ["Yes", "No"].allSatisfy { Self.element(s, .button, $0, in: window.id)?.source == .atspi }
        }
    }

    /// The visible top-level X window of a process (by `_NET_WM_PID`), waited for.
    private func waitForWindow(of process: Process, on d: TestDisplay, timeout: TimeInterval = 10) throws
        -> WindowInfo
    {
        let manager = WindowManager(connection: try d.connect())
        let window = try poll(within: .seconds(timeout)) { () -> WindowInfo? in
            if let window = try manager.list().first(where: {
                $0.pid == Int(process.processIdentifier) && $0.visible && !$0.popup
            }) {
                return window
            }
            guard process.isRunning else { throw Failure("\(process.executableURL?.path ?? "app") exited early") }
            return nil
        }
        guard let window else {
            throw Failure("no window of \(process.executableURL?.path ?? "app") within \(timeout) s")
        }
        return window
    }

    /// Starts gtk3-widget-factory and waits (up to 15 s) until its window's elements come from the tree.
    private func startWidgetFactory(on d: TestDisplay) throws -> (Process, WindowInfo) {
        let factory = try launchApp("/usr/bin/gtk3-widget-factory", [])
        let window = try waitForWindow(of: factory, on: d, timeout: 15)
        _ = try waitForSnapshot(
            on: d, arguments: ["--source", "atspi"], timeout: 15,
            what: "gtk3-widget-factory's tree"
        ) { s in
            s.elements.contains { $0.role == .window && $0.windowID == window.id && $0.source == .atspi }
                && s.elements.filter { $0.windowID == window.id && $0.source == .atspi && $0.role != .window }.count
                    >= 50
                && s.elements.contains { $0.windowID == window.id && $0.role == .checkbox }
        }
        return (factory, window)
    }

    /// Opens the widget factory's "Left" combo box through its toolkit action and waits for the popup X window.
    private func openComboPopup(on d: TestDisplay) throws {
        let opened = try xclaw(["tap", "Left", "--role", "combobox", "--action"], on: d)
        XCTAssertEqual(opened.status, 0, opened.stderr)
        let manager = WindowManager(connection: try d.connect())
        guard try poll(within: .seconds(5), { try manager.list().contains(where: \.popup) }) else {
            throw Failure("the combo box's popup did not open: \(opened.text)")
        }
    }

    /// Waits (bounded) for a process to exit and returns its exit status; nil when it is still running.
    private func waitForExit(_ process: Process, timeout: TimeInterval) throws -> Int32? {
        process.exits(within: .seconds(timeout)) ? process.terminationStatus : nil
    }

    /// An executable shell script in the scratch directory.
    private func writeScript(_ name: String, _ body: String) throws -> URL {
        let url = scratch.appendingPathComponent(name)
        try ("#!/bin/sh\n" + body).write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    /// The accessibility bus's `dbus-daemon` of this test's display: the launcher's child that serves the socket
    /// the root property `AT_SPI_BUS` names. Only ever one of our own processes.
    private func accessibilityDaemon(of d: TestDisplay) throws -> Int32 {
        let bus = try XCTUnwrap(d.server.accessibility)
        let socket = bus.a11yAddress.split(separator: ",").first.map { String($0) } ?? bus.a11yAddress
        let path = socket.replacingOccurrences(of: "unix:path=", with: "")
        XCTAssertEqual(try WindowManager(connection: d.connect()).rootText("AT_SPI_BUS"), bus.a11yAddress)
        let pids = (try FileManager.default.contentsOfDirectory(atPath: "/proc")).compactMap(Int32.init)
        let found = pids.filter { pid in
            let command = Self.commandLine(pid)
            return Self.parentPID(pid) == bus.launcherPID && command.contains("accessibility.conf")
                && command.contains(path)
        }
        guard found.count == 1, let pid = found.first else {
            throw Failure(
                "expected one accessibility dbus-daemon under launcher \(bus.launcherPID) for \(path), "
                    + "found \(found)")
        }
        return pid
    }

    // MARK: - Helpers: checks

    /// The first element of a role whose label is exactly `label`, in window `id`.
    private static func element(_ s: Snapshot, _ role: Role, _ label: String, in id: UInt) -> Element? {
        s.elements.first { $0.role == role && $0.label == label && $0.windowID == id }
    }

    /// With the tree unreadable, zenity is read by OCR: its window says so, its "Yes" is found by OCR, and no
    /// element claims to come from the tree.
    private static func assertZenityReadByOCR(
        _ s: Snapshot, window: WindowInfo,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(
            s.elements.first { $0.role == .window && $0.windowID == window.id }?.source, .ocr,
            file: file, line: line)
        XCTAssertTrue(
            s.elements.contains {
                $0.source == .ocr && $0.windowID == window.id
                    && $0.label.split(separator: " ").contains("Yes")
            }, "OCR found Yes: \(s.render())", file: file, line: line)
        XCTAssertFalse(s.elements.contains { $0.source == .atspi }, file: file, line: line)
        XCTAssertNil(s.accessibility, file: file, line: line)
    }

    /// What contradicts "the button's box edges sit on its drawn outline": on each side, the edge pixel row or
    /// column (or the one just inside) must differ clearly from the pixel 3 px outside, which must be (close to) the
    /// dialog background; and the box must hold drawn pixels. Empty when all holds.
    private static func drawnEdgeProblems(of button: Element, in frame: Frame, background: RGB) -> [String] {
        func diff(_ a: RGB?, _ b: RGB?) -> Int {
            guard let a, let b else { return 999 }
            return abs(Int(a.r) - Int(b.r)) + abs(Int(a.g) - Int(b.g)) + abs(Int(a.b) - Int(b.b))
        }
        let b = button.box
        let cx = b.x + b.width / 2, cy = b.y + b.height / 2
        let right = b.x + b.width - 1, bottom = b.y + b.height - 1
        let sides: [(String, [(Int, Int)], (Int, Int))] = [
            ("left", [(b.x, cy), (b.x + 1, cy)], (b.x - 3, cy)),
            ("right", [(right, cy), (right - 1, cy)], (right + 3, cy)),
            ("top", [(cx, b.y), (cx, b.y + 1)], (cx, b.y - 3)),
            ("bottom", [(cx, bottom), (cx, bottom - 1)], (cx, bottom + 3)),
        ]
        var problems: [String] = []
        for (side, edges, outside) in sides {
            let out = frame.pixel(x: outside.0, y: outside.1)
            if diff(out, background) > 30 {
                problems.append(
                    "\(button.label): 3 px outside the \(side) edge of \(b) is \(out?.hex ?? "off screen"), "
                        + "not the background \(background.hex)")
            }
            let contrast = edges.map { out == nil ? 0 : diff(frame.pixel(x: $0.0, y: $0.1), out) }.max() ?? 0
            if contrast < 40 {
                problems.append("\(button.label): nothing drawn on the \(side) edge of \(b) (contrast \(contrast))")
            }
        }
        var drawn = 0
        for y in b.y..<(b.y + b.height) {
            for x in b.x..<(b.x + b.width) where diff(frame.pixel(x: x, y: y), background) > 30 { drawn += 1 }
        }
        if drawn <= b.width * 2 { problems.append("\(button.label): \(b) holds only \(drawn) drawn pixels") }
        return problems
    }

    // MARK: - Helpers: processes and X

    /// Moves a top-level window (there is no window manager to ask).
    private static func moveWindow(_ id: UInt, to point: Point, on name: String) throws {
        guard let dpy = XOpenDisplay(name) else { throw Failure("cannot open \(name)") }
        defer { XCloseDisplay(dpy) }
        XMoveWindow(dpy, Window(id), Int32(point.x), Int32(point.y))
        XSync(dpy, 0)
    }

    /// Waits until `pid` is gone or a zombie.
    private static func waitGone(_ pid: Int32, timeout: TimeInterval) -> Bool {
        poll(within: .seconds(timeout), every: .milliseconds(10)) { kill(pid, 0) != 0 || procState(pid) == "Z" }
    }

    private static func procStat(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    private static func procState(_ pid: Int32) -> Character? { procStat(pid)?.first?.first }

    private static func parentPID(_ pid: Int32) -> Int32? {
        guard let fields = procStat(pid), fields.count >= 2 else { return nil }
        return Int32(fields[1])
    }

    private static func commandLine(_ pid: Int32) -> String {
        let data = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    /// A test failure with the evidence, thrown to stop the test.
    private struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

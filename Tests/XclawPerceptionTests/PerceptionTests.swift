import Foundation
import XCTest
import XclawScreen
import XclawTesting
import XclawTimeTesting

@testable import XclawPerception

/// Words of `text`, for recall counts.
private func words(_ text: String) -> [String] { text.split(whereSeparator: \.isWhitespace).map(String.init) }

/// The share of `truth` words found in `read` (multiset intersection).
private func recall(truth: [String], read: [String]) -> Double {
    var pool = Dictionary(read.map { ($0, 1) }, uniquingKeysWith: +)
    var hits = 0
    for word in truth where (pool[word] ?? 0) > 0 {
        hits += 1
        pool[word, default: 0] -= 1
    }
    return Double(hits) / Double(max(1, truth.count))
}

/// OCR, snapshots, find/tap and watch on a real Xvfb with the fixture and real Debian apps.
final class PerceptionTests: XCTestCase {
    private var display: TestDisplay!
    private var fixture: Fixture!
    private var perceiver: Perceiver!
    private let origin = WidgetScene.origin

    override func setUpWithError() throws {
        let scene = try WidgetScene()
        (display, fixture) = (scene.display, scene.fixture)
        perceiver = try Perceiver(connection: display.connect())
    }

    override func tearDown() {
        perceiver = nil
        fixture?.stop()
        display?.stop()
    }

    func testOCRReadsEveryFontSizeAndThemeWithScreenBoxes() throws {
        let reading = try perceiver.read()
        let expected = [
            "Plain label nine", "small six thirteen", "Large twelve", "Dark Mode Label", "Bold blue words",
            "Save", "Cancel", "Remember me",
        ]
        let lines = reading.lines.map(\.text)
        for text in expected { XCTAssertTrue(lines.contains(text), "\(text) not read; lines: \(lines)") }
        // Boxes are in screen coordinates: "Large twelve" was drawn at window (20,100) in 12x24.
        let large = try XCTUnwrap(reading.lines.first { $0.text == "Large twelve" })
        XCTAssertEqual(Double(large.box.x), Double(origin.x + 20), accuracy: 3)
        XCTAssertEqual(Double(large.box.y + large.box.height), Double(origin.y + 100 + 24), accuracy: 6)
        XCTAssertEqual(Double(large.box.width), 12 * 12, accuracy: 8)
        XCTAssertTrue(large.words.allSatisfy { $0.confidence > 50 })
        // Reading order: top to bottom, and left to right within a row.
        let saveIndex = try XCTUnwrap(lines.firstIndex(of: "Save")),
            cancelIndex = try XCTUnwrap(lines.firstIndex(of: "Cancel"))
        let smallIndex = try XCTUnwrap(lines.firstIndex(of: "small six thirteen"))
        XCTAssertLessThan(saveIndex, cancelIndex)
        XCTAssertLessThan(cancelIndex, smallIndex)
        // A region reads only what is inside it.
        let region = try perceiver.read(Rect(x: origin.x + 290, y: origin.y + 10, width: 240, height: 50))
        XCTAssertEqual(region.lines.map(\.text), ["Save", "Cancel"])
    }

    func testTextOfTouchingWindowsIsNotMerged() throws {
        // Two windows side by side; each line ends or starts a few pixels from the shared edge, closer than the
        // layout's column gap, so a whole-screen layout would join them into one line.
        let left = try Fixture(
            display: display.name, title: "left", frame: Rect(x: 100, y: 450, width: 300, height: 60),
            extra: ["--text", "210,20,9x15,#000000:alpha beta"])
        let right = try Fixture(
            display: display.name, title: "right", frame: Rect(x: 400, y: 450, width: 300, height: 60),
            extra: ["--text", "6,20,9x15,#000000:gamma delta"])
        defer { left.stop(); right.stop() }
        let lines = try perceiver.read(Rect(x: 100, y: 450, width: 600, height: 60)).lines.map(\.text)
        XCTAssertTrue(lines.contains("alpha beta"), "\(lines)")
        XCTAssertTrue(lines.contains("gamma delta"), "\(lines)")
    }

    func testShortLinesOfAPopupAreMenuItems() throws {
        let menu = try Fixture(
            display: display.name, title: "menu", frame: Rect(x: 900, y: 100, width: 160, height: 96),
            background: "#eeeeee",
            extra: [
                "--popup", "--text", "12,8,9x15,#000000:Open",
                "--text", "12,38,9x15,#000000:Save As", "--text", "12,68,9x15,#000000:Quit",
            ])
        defer { menu.stop() }
        let snapshot = try Snapshotter(perceiver: perceiver).snapshot(refs: nil)
        for label in ["Open", "Save As", "Quit"] {
            XCTAssertEqual(snapshot.elements.first { $0.label == label }?.role, .menuitem, snapshot.render())
        }
        // The main window's lines stay what they were.
        XCTAssertEqual(snapshot.elements.first { $0.label == "Large twelve" }?.role, .text)
        XCTAssertTrue(snapshot.render(interactiveOnly: true).contains("menuitem \"Save As\""))
        menu.clear()
        let match = try Selection(role: .menuitem).resolve("save as", in: snapshot)
        try InputController(connection: perceiver.connection).click(at: match.point)
        let press = try XCTUnwrap(menu.wait(for: .buttonPress).first)
        XCTAssertTrue((38..<53).contains(press.y ?? -1), "pressed at \(String(describing: press.y))")
    }

    func testUnchangedScreenComesFromTheCacheAndOnlyChangedBlocksAreRead() throws {
        let first = try perceiver.read()
        XCTAssertGreaterThan(first.stats.recognized, 5)
        let again = try perceiver.read()
        XCTAssertTrue(again.stats.unchanged)
        XCTAssertEqual(again.lines, first.lines)
        // Another window appears: the fixture's blocks come from the cache, only the new ones are recognised.
        let other = try Fixture(
            display: display.name, title: "other", frame: Rect(x: 800, y: 500, width: 300, height: 100),
            extra: ["--text", "20,30,10x20,#000000:Fresh words here"])
        defer { other.stop() }
        let third = try perceiver.read()
        XCTAssertFalse(third.stats.unchanged)
        XCTAssertTrue(third.lines.map(\.text).contains("Fresh words here"))
        XCTAssertLessThanOrEqual(third.stats.recognized, 2, "\(third.stats)")
        XCTAssertGreaterThanOrEqual(third.stats.cached, first.stats.blocks)
        // The cache survives a save and a load (what separate CLI calls share).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-cache-\(getpid()).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        try perceiver.recognizer.cache.save(to: file)
        let loaded = try OCRCache.load(from: file)
        XCTAssertEqual(loaded.count, perceiver.recognizer.cache.count)
        let fromDisk = try Perceiver(connection: perceiver.connection, cache: loaded).read()
        XCTAssertTrue(fromDisk.stats.unchanged)
        XCTAssertEqual(fromDisk.lines, third.lines)
        // A damaged file is an empty cache, not a crash.
        try Data("xclaw-ocr-cache 5\n\u{1}\u{0}\u{0}\u{0}garbage".utf8).write(to: file)
        XCTAssertEqual(try OCRCache.load(from: file).count, 0)
    }

    func testSnapshotRolesAndRefsStayStableWhenOtherThingsChange() throws {
        let refs = RefStore()
        let snapshotter = Snapshotter(perceiver: perceiver)
        let first = try snapshotter.snapshot(refs: refs)
        func element(_ label: String, in snapshot: Snapshot) throws -> Element {
            try XCTUnwrap(snapshot.elements.first { $0.label == label }, "\(label) missing: \(snapshot.render())")
        }
        XCTAssertEqual(try element("Save", in: first).role, .button)
        XCTAssertEqual(try element("Cancel", in: first).role, .button)
        XCTAssertEqual(try element("Remember me", in: first).role, .checkbox)
        XCTAssertEqual(try element("Keep me posted", in: first).role, .checkbox)
        XCTAssertEqual(try element("Large twelve", in: first).role, .text)
        // An empty field has no text: it is named by its label, its box is its outline.
        let name = try XCTUnwrap(first.elements.first { $0.role == .field }, first.render())
        XCTAssertEqual(name.label, "Name")
        XCTAssertEqual(name.box, Rect(x: origin.x + 360, y: origin.y + 74, width: 200, height: 28))
        let save = try element("Save", in: first)
        // The button's box is its outline (100x30 at window 300,20), not just the word.
        XCTAssertEqual(Double(save.box.width), 100, accuracy: 4)
        XCTAssertEqual(Double(save.box.height), 30, accuracy: 4)
        XCTAssertTrue(save.box.contains(Point(x: origin.x + 350, y: origin.y + 35)))
        let window = try XCTUnwrap(first.elements.first { $0.role == .window && $0.label == "widgets" })
        XCTAssertEqual(save.window, window.ref)
        XCTAssertTrue(first.elements.allSatisfy(\.changed), "everything is new in a first snapshot")
        XCTAssertTrue(first.render().contains("\(save.ref) button \"Save\" @\(save.box.center.x),\(save.box.center.y)"))
        XCTAssertFalse(first.render(interactiveOnly: true).contains("Large twelve"))
        // Over budget, text lines are counted instead of listed; controls are always listed.
        let tight = first.render(budget: 450)
        XCTAssertTrue(tight.contains("more text lines in \(window.ref)"), tight)
        XCTAssertTrue(tight.contains("button \"Save\""), tight)

        // Unrelated change: a new window elsewhere. Every old element keeps its ref and is not marked.
        let other = try Fixture(
            display: display.name, title: "other", frame: Rect(x: 800, y: 500, width: 300, height: 100),
            extra: ["--button", "20,20,120,30:Apply"])
        defer { other.stop() }
        let second = try snapshotter.snapshot(refs: refs)
        for old in first.elements where old.role != .window {
            let now = try element(old.label, in: second.elements.contains { $0.ref == old.ref } ? second : first)
            XCTAssertEqual(second.elements.first { $0.ref == old.ref }?.label, old.label, "ref \(old.ref) moved")
            XCTAssertFalse(second.elements.first { $0.ref == old.ref }?.changed ?? true, "\(now.label) marked")
        }
        let apply = try element("Apply", in: second)
        XCTAssertTrue(apply.changed)
        XCTAssertEqual(apply.role, .button)
        XCTAssertFalse(first.elements.map(\.ref).contains(apply.ref), "a new element gets a new ref")
        // The two "Repeat" labels keep distinct refs.
        XCTAssertEqual(Set(second.elements.filter { $0.label == "Repeat" }.map(\.ref)).count, 2)
    }

    func testRefsAreForgottenWhenTheServerRestarts() throws {
        let token = try perceiver.windows.serverToken()
        XCTAssertEqual(try perceiver.windows.serverToken(), token, "the token lives as long as the server")
        let other = try TestDisplay(size: Size(width: 320, height: 240))
        defer { other.stop() }
        XCTAssertNotEqual(try WindowManager(connection: other.connect()).serverToken(), token)
        let name = "refs_test_\(getpid())"
        let store = try RefStore.load(display: name, server: token)
        let first = try Snapshotter(perceiver: perceiver).snapshot(refs: store)
        try store.save(display: name)
        let sameServer = try Snapshotter(perceiver: perceiver).snapshot(
            refs: RefStore.load(display: name, server: token))
        XCTAssertEqual(sameServer.elements.map(\.ref), first.elements.map(\.ref))
        XCTAssertFalse(sameServer.elements.contains { $0.changed })
        // Another server run on the same display name starts afresh: everything is new.
        let restarted = try Snapshotter(perceiver: perceiver).snapshot(
            refs: RefStore.load(display: name, server: "other"))
        XCTAssertTrue(restarted.elements.allSatisfy(\.changed))
        try? FileManager.default.removeItem(
            at: VirtualDisplay.stateDirectory.appendingPathComponent("refs/\(name).json"))
    }

    func testFindRanksExactCaseAndLookalikeMatches() throws {
        XCTAssertEqual(Finder.score("Save", "Save"), 1)
        XCTAssertEqual(Finder.score("save", "Save"), 0.97)
        XCTAssertEqual(Finder.score("Delete", "De1ete"), 0.93)
        XCTAssertEqual(Finder.score("modern", "rnodern"), 0.93)
        XCTAssertEqual(Finder.score("OK", "0K"), 0.93)
        XCTAssertEqual(Finder.score("Save", "\"Save:\""), 0.995, "equal once trimmed: just below exact")
        XCTAssertGreaterThan(Finder.score("Cancel", "Cancell"), Finder.threshold)
        XCTAssertLessThan(Finder.score("Save", "Cancel"), Finder.threshold)
        let snapshot = try Snapshotter(perceiver: perceiver).snapshot(refs: nil)
        // A phrase spanning words of one line, and part of a line.
        XCTAssertEqual(Finder.find("label nine", in: snapshot).first?.text, "label nine")
        XCTAssertEqual(Finder.find("dark mode", in: snapshot).first?.score, 0.97)
        XCTAssertEqual(Finder.find("Save", in: snapshot, role: .text), [])
    }

    func testTapClicksTheRightElementAndRefusesToGuess() throws {
        let snapshot = try Snapshotter(perceiver: perceiver).snapshot(refs: nil)
        let input = try InputController(connection: perceiver.connection)
        func tap(_ label: String, _ selection: Selection = Selection()) throws -> ProbeEvent? {
            fixture.clear()
            let match = try selection.resolve(label, in: snapshot)
            try input.click(at: match.point)
            return fixture.wait(for: .buttonPress).first
        }
        XCTAssertEqual(try tap("Save")?.target, "Save")
        XCTAssertEqual(try tap("cancel")?.target, "Cancel")
        XCTAssertEqual(try tap("Remember me")?.target, "Remember me")
        XCTAssertEqual(try tap("Keep me posted")?.target, "Keep me posted")
        XCTAssertEqual(try tap("Name", Selection(role: .field))?.target, "field@360,74")
        // Two equal "Repeat" labels: refused, with both listed; --nth and --near pick one.
        XCTAssertThrowsError(try Selection().resolve("Repeat", in: snapshot)) { error in
            guard case .ambiguous(_, let candidates) = error as? PerceptionError else { return XCTFail("\(error)") }
            XCTAssertEqual(candidates.count, 2)
        }
        let second = try Selection(nth: 2).resolve("Repeat", in: snapshot)
        XCTAssertEqual(Double(second.point.x), Double(origin.x + 300 + 27), accuracy: 6)
        let nearBold = try Selection(near: "Bold blue words").resolve("Repeat", in: snapshot)
        XCTAssertEqual(Double(nearBold.point.x), Double(origin.x + 20 + 27), accuracy: 6)
        // Nothing matches: the closest labels are offered.
        XCTAssertThrowsError(try Selection().resolve("Savxyz", in: snapshot)) { error in
            guard case .notFound(_, let closest) = error as? PerceptionError else { return XCTFail("\(error)") }
            XCTAssertTrue(closest.first?.contains("Save") ?? false, "\(closest)")
        }
        // A ref works; a ref that is not on screen is refused.
        let ref = try XCTUnwrap(snapshot.elements.first { $0.label == "Cancel" }?.ref)
        XCTAssertEqual(try tap(ref)?.target, "Cancel")
        XCTAssertThrowsError(try Selection().resolve("e9999", in: snapshot)) {
            XCTAssertEqual($0 as? PerceptionError, .staleRef("e9999"))
        }
    }

    func testWatchForTextAppearingVanishingAndTimingOut() throws {
        let timed = try Fixture(
            display: display.name, title: "timed", frame: Rect(x: 800, y: 100, width: 400, height: 200),
            extra: ["--text", "20,20,10x20,#000000,show=700:Build finished"])
        defer { timed.stop() }
        // "Please wait" goes when the test says, not on a timer: a timed hide once came before a loaded machine's
        // first wait had ended, and there was nothing left to see vanish.
        let waiting = try Fixture(
            display: display.name, title: "waiting", frame: Rect(x: 800, y: 320, width: 400, height: 100),
            extra: ["--text", "20,20,10x20,#000000:Please wait"])
        defer { waiting.stop() }
        let watcher = Watcher(perceiver: perceiver, interval: .milliseconds(30))
        let appeared = try watcher.wait(for: .textAppears("finished"), timeout: .seconds(10))
        XCTAssertEqual(appeared.match?.text, "finished")
        XCTAssertGreaterThan(appeared.polls, 1, "it was not there at the first look")
        // The screen shows two frames by then ("Please wait" alone, then "Build finished" too; one more if a poll
        // caught a paint half done): one OCR pass each however many polls saw them, where ~20 polls run (a count of
        // polls depended on how busy the machine was).
        XCTAssertLessThanOrEqual(appeared.ocrPasses, 3, "unchanged frames are not OCR'd (\(appeared.polls) polls)")
        // The window goes at the watcher's first pause, so its first look saw the text.
        var vanishing = watcher
        vanishing.clock = FirstPauseClock { waiting.stop() }
        let vanished = try vanishing.wait(for: .textGone("Please wait"), timeout: .seconds(10))
        XCTAssertEqual(vanished.match?.text, "Please wait")
        XCTAssertGreaterThan(vanished.polls, 1, "it was there at the first look")
        XCTAssertThrowsError(try watcher.wait(for: .textAppears("Never shown"), timeout: .milliseconds(400))) { error in
            guard case .timedOut(_, let last) = error as? PerceptionError else { return XCTFail("\(error)") }
            XCTAssertTrue(last.contains("Build finished"), "the report shows what was on screen: \(last)")
        }
    }

    func testStableChangeAndPixelConditions() throws {
        let watcher = Watcher(perceiver: perceiver, interval: .milliseconds(10))
        let stable = try watcher.waitUntilStable(quiet: .milliseconds(150), timeout: .seconds(3))
        XCTAssertGreaterThanOrEqual(stable.elapsedMs, 150)
        // Something animating is never stable, but a region away from it is.
        let animated = try Fixture(
            display: display.name, title: "anim", frame: Rect(x: 900, y: 600, width: 200, height: 100),
            extra: ["--animate", "10,10,50,50"])
        defer { animated.stop() }
        // On a clock whose pauses last until the animation drew a new frame: a loaded machine can hold a 40 ms
        // animation back for longer than a quiet period, and that would rightly count as stable.
        var busy = watcher
        busy.interval = .milliseconds(50)  // each pause waits for a real frame: fewer pauses, the same logic
        busy.clock = AnimationClock(
            capturer: perceiver.capturer, area: Rect(x: 900, y: 600, width: 200, height: 100))
        XCTAssertThrowsError(try busy.waitUntilStable(quiet: .milliseconds(200), timeout: .milliseconds(800))) {
            guard case .timedOut = $0 as? PerceptionError else { return XCTFail("\($0)") }
        }
        XCTAssertNoThrow(
            try watcher.waitUntilStable(
                area: Rect(x: 0, y: 0, width: 800, height: 500),
                quiet: .milliseconds(150), timeout: .seconds(3)))
        XCTAssertNoThrow(
            try watcher.wait(
                for: .change, area: Rect(x: 900, y: 600, width: 200, height: 100),
                timeout: .seconds(2)))
        // The animated square alternates red and blue; the fixture background is white.
        let point = Point(x: 900 + 30, y: 600 + 30)
        let red = try watcher.wait(for: .pixel(point, RGB(r: 255, g: 0, b: 0)), timeout: .seconds(2))
        XCTAssertEqual(red.colour, "#ff0000")
        XCTAssertThrowsError(try watcher.wait(for: .pixel(point, RGB(r: 0, g: 255, b: 0)), timeout: .milliseconds(300)))
    }
}

/// Real Debian apps: an xterm page of known text, zenity's buttons, xcalc's keys.
final class RealAppPerceptionTests: XCTestCase {
    func testXtermPageRecallAndZenityButtonsByLabel() throws {
        let display = try TestDisplay(size: Size(width: 1280, height: 800))
        defer { display.stop() }
        // A page of known words, shown by cat in an xterm that fits the screen.
        let vocabulary = [
            "window", "button", "screen", "capture", "display", "keyboard", "pointer", "terminal",
            "license", "program", "source", "version", "public", "general", "software", "freedom",
            "copy", "modify", "distribute", "under", "terms", "conditions", "warranty", "network",
        ]
        var seed: UInt64 = 42
        func next() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return Int(seed >> 33)
        }
        let lines = (0..<30).map { _ in
            (0..<(6 + next() % 8)).map { _ in vocabulary[next() % vocabulary.count] }.joined(separator: " ")
        }
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-page-\(getpid()).txt")
        try (lines.joined(separator: "\n") + "\n").write(to: page, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: page) }
        let xterm = Process()
        xterm.executableURL = URL(fileURLWithPath: "/usr/bin/xterm")
        xterm.arguments = [
            "-display", display.name, "-geometry", "120x40+0+0", "-e", "sh", "-c", "cat \(page.path); sleep 60",
        ]
        try xterm.run()
        defer { xterm.terminate() }
        let perceiver = try Perceiver(connection: display.connect())
        let watcher = Watcher(perceiver: perceiver, interval: .milliseconds(50))
        _ = try watcher.wait(
            for: .textAppears(lines[lines.count - 1].split(separator: " ").last.map(String.init) ?? ""),
            timeout: .seconds(10))
        _ = try watcher.waitUntilStable(quiet: .milliseconds(200), timeout: .seconds(5))
        let reading = try perceiver.read()
        let score = recall(truth: words(lines.joined(separator: " ")), read: words(reading.text))
        XCTAssertGreaterThanOrEqual(score, 0.95, reading.text)

        // zenity: its exit status tells which button was pressed.
        for (label, expected) in [("Keep", Int32(1)), ("Delete", Int32(0))] {
            let zenity = Process()
            zenity.executableURL = URL(fileURLWithPath: "/usr/bin/zenity")
            zenity.arguments = [
                "--display", display.name, "--question", "--text", "Delete the selected files?",
                "--ok-label", "Delete", "--cancel-label", "Keep",
            ]
            zenity.standardError = FileHandle.nullDevice
            try zenity.run()
            let shown = try watcher.wait(for: .textAppears("selected files"), timeout: .seconds(15))
            XCTAssertNotNil(shown.match)
            _ = try watcher.waitUntilStable(quiet: .milliseconds(200), timeout: .seconds(5))
            let snapshot = try Snapshotter(perceiver: perceiver).snapshot(refs: nil)
            let match = try Selection(role: .button).resolve(label, in: snapshot)
            try InputController(connection: perceiver.connection).click(at: match.point)
            eventually("tapping \(label) closes the dialog", within: .seconds(5)) { !zenity.isRunning }
            XCTAssertFalse(zenity.isRunning, "tapping \(label) closed the dialog")
            if zenity.isRunning { zenity.terminate() }
            zenity.waitUntilExit()
            XCTAssertEqual(zenity.terminationStatus, expected, "tapping \(label)")
            _ = try watcher.wait(for: .textGone("selected files"), timeout: .seconds(5))
        }
    }
}

/// The real clock, which runs an action once, at the first pause of whoever waits on it: a watcher's pause after its
/// first look, where a test makes the screen change knowing that look has happened.
private final class FirstPauseClock: Clock, @unchecked Sendable {
    typealias Duration = Swift.Duration
    typealias Instant = ContinuousClock.Instant
    private let base = ContinuousClock()
    // Safe: read and cleared under the lock.
    private var action: (() -> Void)?
    private let lock = NSLock()

    init(_ action: @escaping () -> Void) { self.action = action }

    var now: Instant { base.now }
    var minimumResolution: Swift.Duration { base.minimumResolution }

    func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
        let first: (() -> Void)? = lock.withLock {
            defer { action = nil }
            return action
        }
        first?()
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}

import Foundation
import XCTest
import XclawPerception
import XclawScreen
import XclawTesting
import XclawTimeTesting

/// Find, tap, watch and wait-stable through the `xclaw` binary, on the widget fixture (real Xvfb, real OCR).
final class PerceptionCLITests: XCTestCase {
    private var display: TestDisplay!
    private var fixture: Fixture!

    override func setUpWithError() throws {
        let scene = try WidgetScene()
        (display, fixture) = (scene.display, scene.fixture)
    }

    override func tearDown() {
        fixture?.stop()
        display?.stop()
    }

    func testStateFilesArePrivateAndAPlantedStateDirectoryIsRefused() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-plant-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let d = ["--display", display.name]
        let state = base.appendingPathComponent("own")
        XCTAssertEqual(try runCLI(["snapshot"] + d, environment: ["XCLAW_STATE_DIR": state.path]).status, 0)
        let refs = try FileManager.default.contentsOfDirectory(atPath: state.appendingPathComponent("refs").path)
        XCTAssertEqual(refs.count, 1)
        // A daemon writes the OCR cache just after it replies.
        let cache = state.appendingPathComponent("ocr-cache.bin").path
        eventually("the OCR cache is written", within: .seconds(5)) { FileManager.default.fileExists(atPath: cache) }
        for file in ["ocr-cache.bin", "refs/" + refs[0]] {
            let attributes = try FileManager.default.attributesOfItem(atPath: state.appendingPathComponent(file).path)
            XCTAssertEqual(attributes[.posixPermissions] as? Int, 0o600, file)
        }
        // Someone else made the directory first, open to all; or planted a symlink to their own.
        let planted = base.appendingPathComponent("planted")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
        chmod(planted.path, 0o777)
        let link = base.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: planted.path)
        for (dir, words) in [(planted, "others can write into it"), (link, "symlink")] {
            for command in [
                ["ocr"] + d, ["snapshot"] + d, ["find", "Save"] + d, ["tap", "Save"] + d, ["display", "list"],
            ] {
                let result = try runCLI(command, environment: ["XCLAW_STATE_DIR": dir.path])
                XCTAssertEqual(result.status, 2, "\(command): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains("refusing \(dir.path)"), result.stderr)
                XCTAssertTrue(result.stderr.contains(words), result.stderr)
            }
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: planted.path), [], "nothing written there")
        XCTAssertTrue(fixture.received.filter { $0.kind == .buttonPress }.isEmpty, "nothing clicked")
    }

    func testCLIFindTapAndExitCodes() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: state) }
        let env = ["XCLAW_STATE_DIR": state.path]
        let d = ["--display", display.name]
        let snapshot = try runCLI(["snapshot"] + d, environment: env)
        XCTAssertEqual(snapshot.status, 0, snapshot.stderr)
        let saveLine = try XCTUnwrap(snapshot.text.split(separator: "\n").first { $0.contains("button \"Save\"") })
        let ref = String(saveLine.split(separator: " ")[0].drop { $0 == "+" })
        // The next snapshot keeps the ref and no longer marks it new.
        let again = try runCLI(["snapshot", "--interactive"] + d, environment: env)
        XCTAssertTrue(again.text.contains("\n\(ref) button \"Save\""), again.text)
        fixture.clear()
        let tapped = try runCLI(["tap", ref] + d, environment: env)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        XCTAssertEqual(fixture.wait(for: .buttonPress).first?.target, "Save")
        fixture.clear()
        XCTAssertEqual(try runCLI(["tap", "Cancel", "--window", "widgets"] + d, environment: env).status, 0)
        XCTAssertEqual(fixture.wait(for: .buttonPress).first?.target, "Cancel")
        fixture.clear()
        // --offset clicks beside the match's centre (a negative one too), and never off the screen.
        let save = try XCTUnwrap(
            try JSONDecoder().decode(
                [Match].self, from: try runCLI(["find", "Save", "--json"] + d, environment: env).stdout
            )
            .first)
        for (dx, dy) in [(3, 2), (-4, -1)] {
            let beside = try runCLI(["tap", "Save", "--offset", "\(dx),\(dy)"] + d, environment: env)
            XCTAssertEqual(beside.status, 0, beside.stderr)
            XCTAssertTrue(beside.text.contains("(clicked at \(save.point.x + dx),\(save.point.y + dy))"), beside.text)
            let press = fixture.wait(for: .buttonPress).first
            XCTAssertEqual(press?.rootX, save.point.x + dx)
            XCTAssertEqual(press?.rootY, save.point.y + dy)
            XCTAssertEqual(press?.target, "Save")
            fixture.clear()
        }
        let off = try runCLI(["tap", "Save", "--offset", "-5000,0"] + d, environment: env)
        XCTAssertEqual(off.status, 2, off.stderr)
        XCTAssertTrue(off.stderr.contains("off the"), off.stderr)
        XCTAssertEqual(try runCLI(["tap", "Save", "--action", "--offset", "1,1"] + d, environment: env).status, 2)
        XCTAssertEqual(try runCLI(["tap", "Save", "--offset", "1"] + d, environment: env).status, 2)

        let ambiguous = try runCLI(["tap", "Repeat"] + d, environment: env)
        XCTAssertEqual(ambiguous.status, 1)
        XCTAssertTrue(ambiguous.stderr.contains("matches 2 elements"), ambiguous.stderr)
        XCTAssertTrue(ambiguous.stderr.contains("pick one with --nth N, --near LABEL"), "the CLI's own options")
        let missing = try runCLI(["find", "Nonexistent words"] + d, environment: env)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("nothing on screen matches"), missing.stderr)
        let json = try runCLI(["find", "Save", "--json"] + d, environment: env)
        let matches = try JSONDecoder().decode([Match].self, from: json.stdout)
        XCTAssertEqual(matches.first?.role, .button)
        XCTAssertEqual(try runCLI(["tap", "Save", "--nth", "0"] + d, environment: env).status, 2)
        XCTAssertEqual(try runCLI(["watch"] + d, environment: env).status, 2)
        XCTAssertEqual(try runCLI(["ocr", "--region", "0,0,-5,5"] + d, environment: env).status, 2)
        let stale = try runCLI(["tap", "e9999"] + d, environment: env)
        XCTAssertEqual(stale.status, 1)
        XCTAssertTrue(stale.stderr.contains("run `xclaw snapshot` again"), stale.stderr)
        XCTAssertEqual(fixture.received.filter { $0.kind == .buttonPress }.count, 0, "refused taps click nothing")
        let ocr = try runCLI(["ocr", "--window", "widgets"] + d, environment: env)
        XCTAssertTrue(ocr.text.contains("Large twelve"), ocr.text)
        // A window can be named by its application's class too.
        let byClass = try runCLI(["ocr", "--window", "xclawfixture"] + d, environment: env)
        XCTAssertTrue(byClass.text.contains("Large twelve"), byClass.stderr)
        // watch --window waits for a window that does not exist yet.
        let name = display.name
        let late = LateFixture(after: 0.6, lifetime: 3) {
            try Fixture(
                display: name, title: "late window", frame: Rect(x: 900, y: 500, width: 300, height: 80),
                extra: ["--text", "20,20,10x20,#000000:Arrived"])
        }
        defer { late.stop() }
        let waited = try runCLI(
            ["watch", "--text", "Arrived", "--window", "late window", "--timeout", "10"] + d,
            environment: env)
        XCTAssertEqual(waited.status, 0, waited.stderr)
    }

    func testWatchFollowsAWindowThatTakesItsPlaceAfterItWasFound() throws {
        // Found while it is 1×1 at 0,0 (where xterm's window is until it maps), then grown and moved to where its text
        // shows: a watch that kept the first rectangle looked at one pixel until its timeout.
        let fixture = try Fixture(
            display: display.name, title: "moving window", frame: Rect(x: 0, y: 0, width: 1, height: 1),
            extra: ["--text", "20,20,10x20,#000000:Arrived"])
        defer { fixture.stop() }
        let stderr = Pipe()
        let watch = try launchCLI(
            ["watch", "--text", "Arrived", "--window", "moving window", "--timeout", "20", "--display", display.name],
            environment: [:], stderr: stderr)
        defer { watch.end() }
        Thread.sleep(forTimeInterval: 1)  // the scenario: the window takes its place after the watch began
        let id = String(fixture.window)
        _ = try oracle(
            ["xdotool", "windowsize", id, "300", "80", "windowmove", id, "900", "500"], display: display.name)
        XCTAssertTrue(watch.exits(within: .seconds(30)))
        let said = String(decoding: stderr.fileHandleForReading.availableData, as: UTF8.self)
        XCTAssertEqual(watch.terminationStatus, 0, said)
    }

    func testTapAndFindWaitForTheirTargetAndWatchWaitsForWindows() throws {
        let d = ["--display", display.name]
        let env = ["XCLAW_STATE_DIR": FileManager.default.temporaryDirectory.path + "/xclaw-wait-\(getpid())"]
        let name = display.name
        let late = LateFixture(after: 0.8) {
            try Fixture(
                display: name, title: "late buttons", frame: Rect(x: 800, y: 450, width: 300, height: 100),
                extra: ["--button", "20,20,120,34:Proceed"])
        }
        defer { late.stop() }
        // Neither the window nor the button exists yet: tap waits for both, then clicks once.
        let tapped = try runCLI(
            ["tap", "Proceed", "--window", "late buttons", "--timeout", "15"] + d, environment: env)
        XCTAssertEqual(tapped.status, 0, tapped.stderr)
        let fixture = try XCTUnwrap(late.fixture)
        XCTAssertEqual(fixture.wait(for: .buttonPress).map(\.target), ["Proceed"])
        let found = try runCLI(["find", "Proceed", "--timeout", "5"] + d, environment: env)
        XCTAssertEqual(found.status, 0, found.stderr)
        // A target that never comes: exit 1 after the timeout, saying what was last seen.
        let never = try runCLI(["find", "Nowhere", "--timeout", "0.5"] + d, environment: env)
        XCTAssertEqual(never.status, 1)
        XCTAssertTrue(never.stderr.contains("timed out waiting for \"Nowhere\" to appear"), never.stderr)
        XCTAssertTrue(never.stderr.contains("nothing on screen matches"), never.stderr)
        XCTAssertEqual(try runCLI(["tap", "Proceed", "--timeout", "0"] + d, environment: env).status, 2)
        // xdotool search --sync: a window appearing, becoming active, vanishing.
        let appeared = try runCLI(["watch", "--window", "late buttons", "--timeout", "5", "--json"] + d)
        XCTAssertEqual(appeared.status, 0, appeared.stderr)
        XCTAssertEqual(try JSONDecoder().decode(WatchResult.self, from: appeared.stdout).window?.id, fixture.window)
        XCTAssertEqual(try runCLI(["activate", "late buttons"] + d).status, 0)
        let active = try runCLI(["watch", "--window", "late buttons", "--active", "--timeout", "5"] + d)
        XCTAssertEqual(active.status, 0, active.stderr)
        let stopper = Thread {
            Thread.sleep(forTimeInterval: 0.5)  // kept: the scenario, the window goes while watch waits
            late.stop()
        }
        stopper.start()
        let gone = try runCLI(["watch", "--window", "late buttons", "--gone", "--timeout", "10"] + d)
        XCTAssertEqual(gone.status, 0, gone.stderr)
        let missing = try runCLI(["watch", "--window", "no such window", "--timeout", "0.3"] + d)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("window \"no such window\" to appear"), missing.stderr)
        XCTAssertEqual(try runCLI(["watch", "--active"] + d).status, 2)
        XCTAssertEqual(try runCLI(["watch", "--window", "x", "--active", "--gone"] + d).status, 2)
    }

    func testCLIWatchExitsZeroOnAMatchAndOneOnTimeout() throws {
        // The CLI: exit 0 with the match, exit 1 on timeout.
        let ok = try runCLI(
            ["watch", "--text", "Large twelve", "--timeout", "5", "--display", display.name, "--json"],
            environment: ["XCLAW_STATE_DIR": FileManager.default.temporaryDirectory.path + "/xclaw-w-\(getpid())"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        let late = try runCLI(["watch", "--text", "Nowhere", "--timeout", "0.3", "--display", display.name])
        XCTAssertEqual(late.status, 1)
        XCTAssertTrue(late.stderr.contains("timed out waiting for text \"Nowhere\""), late.stderr)
    }

    func testCLIWaitStableWithAnAnimationOnScreen() throws {
        let animated = try Fixture(
            display: display.name, title: "anim", frame: Rect(x: 900, y: 600, width: 200, height: 100),
            extra: ["--animate", "10,10,50,50"])
        defer { animated.stop() }
        // The fixture repaints every 5 ms, but a process of a loaded 2-core machine can wait 200 ms for a core: a
        // 200 ms window once came out stable (exit 0). Half a second of stillness is not a scheduling gap.
        let cli = try runCLI(["wait-stable", "--ms", "500", "--timeout", "2", "--display", display.name])
        XCTAssertEqual(cli.status, 1, "the animation keeps the screen busy")
        let region = try runCLI(["wait-stable", "--ms", "100", "--region", "0,0,800,500", "--display", display.name])
        XCTAssertEqual(region.status, 0, region.stderr)
    }
}

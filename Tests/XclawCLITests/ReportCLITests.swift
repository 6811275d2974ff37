import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawStore
import XclawTesting
import XclawTimeTesting

/// `xclaw report` end to end: a scripted run on a real Xvfb clicks, types, scrolls, drags and taps an element; its
/// report is loaded in real headless chromium, offline: no console message (CSP violations included), every image
/// a PNG, and the overlay's magenta where the calls pointed on the rendered page. Then kept reports, retention
/// through the CLI, and bad input.
final class ReportCLITests: XCTestCase {
    private var display: TestDisplay!
    private var fixture: Fixture!
    private var workDir: URL!
    private let frame = Rect(x: 200, y: 150, width: 800, height: 400)
    /// The runs use Sonnet 4.6 (the reference rule: 1456x819), so the report's screenshots fit its 1500 px page.
    private let geometry = ScreenGeometry(screen: Size(width: 1920, height: 1080))

    override func setUpWithError() throws {
        display = try TestDisplay(size: Size(width: 1920, height: 1080))
        fixture = try Fixture(
            display: display.name, title: "form", frame: frame,
            extra: ["--text", "20,40,10x20,#000000:Order form", "--button", "300,40,120,36:Submit"])
        workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-report-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        fixture?.stop()
        display?.stop()
        if let workDir { try? FileManager.default.removeItem(at: workDir) }
    }

    private func environment(_ server: MockMessagesServer) -> [String: String] {
        // The run presses "Submit" unattended; the approval gate has tests of its own (StopAndApprovalTests).
        let config = workDir.appendingPathComponent("config/xclaw")
        try? FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try? "approval = none\n".write(to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        return [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-report-SECRET",
            "HOME": workDir.path, "XCLAW_DB": workDir.appendingPathComponent("db.sqlite").path,
            "XDG_STATE_HOME": workDir.appendingPathComponent("state").path,
            "XDG_CONFIG_HOME": workDir.appendingPathComponent("config").path,
        ]
    }

    private static func calls(_ uses: [(String, String, String)], text: String = "") -> MockReply {
        .stream(
            .turn(
                blocks: (text.isEmpty ? [] : [.text(text)]) + uses.map { .toolUse(id: $0.0, name: $0.1, input: $0.2) },
                stopReason: "tool_use", usage: MockUsage(input: 1500, output: 60, cacheRead: 800, cacheWrite: 300)))
    }

    /// Runs headless chromium on `arguments` + the file, offline, with a profile of its own; returns stderr.
    private func chromium(_ arguments: [String], _ file: URL) throws -> String {
        let binary = try XCTUnwrap(
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            },
            "chromium is missing: scripts/install-deps.sh installs it")
        let result = try Subprocess.run(
            [
                binary, "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + workDir.appendingPathComponent("chromium").path,
                "--enable-logging=stderr", "--v=0",
            ] + arguments + [file.absoluteString], timeout: .seconds(60))
        let stderr = String(decoding: result.stderr, as: UTF8.self)
        XCTAssertEqual(result.ending, .exited(0), stderr)
        return stderr
    }

    func testAReportShowsEachStepsScreenshotWithItsActionsDrawnAndLoadsOfflineWithoutErrors() throws {
        let button = Rect(x: frame.x + 300, y: frame.y + 40, width: 120, height: 36)
        let click = geometry.toModel(button.center)
        let scrollAt = Point(x: 900, y: 600), dragFrom = Point(x: 1000, y: 500), dragTo = Point(x: 1300, y: 700)
        let server = try MockMessagesServer(replies: [
            Self.calls([("t1", "computer", #"{"action": "screenshot"}"#)], text: "Let me look."),
            Self.calls([
                ("t2", "computer", "{\"action\": \"left_click\", \"coordinate\": [\(click.x), \(click.y)]}"),
                ("t3", "computer", #"{"action": "type", "text": "héllo <script>alert(1)</script>"}"#),
            ]),
            Self.calls([
                (
                    "t4", "computer",
                    "{\"action\": \"scroll\", \"coordinate\": [\(scrollAt.x), \(scrollAt.y)], "
                        + "\"scroll_direction\": \"down\", \"scroll_amount\": 3}"
                ),
                (
                    "t5", "computer",
                    "{\"action\": \"left_click_drag\", \"start_coordinate\": [\(dragFrom.x), \(dragFrom.y)], "
                        + "\"coordinate\": [\(dragTo.x), \(dragTo.y)]}"
                ),
            ]),
            Self.calls([("t6", "tap_element", #"{"label": "Submit"}"#)]),
            .stream(
                .turn(blocks: [.text("Done <img src=\"http://127.0.0.1:9/x.png\"> </div><script>alert(2)</script>")])),
            // Two notes for the retention runs below.
            .stream(.turn(blocks: [.text("Noted.")])), .stream(.turn(blocks: [.text("Noted again.")])),
        ])
        defer { server.stop() }
        let env = environment(server)
        let run = try runCLI(
            [
                "run", "Submit the <b>order</b> form", "--display", display.name, "--tools", "computer,tap_element",
                "--model", "claude-sonnet-4-6",
            ],
            environment: env)
        XCTAssertEqual(run.status, 0, run.stderr)
        let rows = try XCTUnwrap(try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array)
        let id = try XCTUnwrap(rows.last?["id"]?.int)
        XCTAssertEqual(rows.last?["report"], .null)

        let file = workDir.appendingPathComponent("f.html")
        let written = try runCLI(["report", "\(id)", "-o", file.path], environment: env)
        XCTAssertEqual(written.status, 0, written.stderr)
        XCTAssertEqual(written.text, file.path + "\n")
        let html = try String(contentsOf: file, encoding: .utf8)
        let piped = try runCLI(["report", "\(id)", "-o", "/dev/stdout"], environment: env)
        XCTAssertEqual(piped.status, 0, piped.stderr)
        // The page alone on stdout (its footer's time aside).
        XCTAssertEqual(
            piped.text.components(separatedBy: "<footer>").first, html.components(separatedBy: "<footer>").first)
        XCTAssertTrue(piped.text.hasSuffix("</html>\n") == html.hasSuffix("</html>\n"))
        XCTAssertEqual(try runCLI(["report", "\(id)", "-o", "/dev/null"], environment: env).status, 0)
        XCTAssertNil(SpecialFiles.nullDeviceProblem())
        XCTAssertTrue(html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "))
        XCTAssertFalse(html.contains("<script"), "the model's and the screen's text is escaped")
        XCTAssertFalse(html.contains("SECRET"))
        for step in 1...5 { XCTAssertTrue(html.contains("id=\"step-\(step)\""), "step \(step)") }
        XCTAssertTrue(html.contains("type “héllo &lt;script&gt;alert(1)&lt;/script&gt;”"))
        // Every image is a PNG data URI that decodes, at the model's size.
        let sources = html.components(separatedBy: "<img src=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        // Steps 2–4: the frames their calls acted on (calls on an unchanged screen share one); step 5, which only
        // answered, the screenshot the model saw; step 1 took the first screenshot and says so.
        XCTAssertGreaterThanOrEqual(sources.count, 4)
        XCTAssertEqual(Set(Self.figures(html).map(\.step)), [2, 3, 4, 5])
        XCTAssertTrue(
            html.contains(
                "No screen for this step: the model only read the screen in this step (computer), and no screenshot "
                    + "was taken before it"))
        for source in sources {
            let prefix = "data:image/png;base64,"
            XCTAssertTrue(source.hasPrefix(prefix))
            let frame = try PNG.decode(
                [UInt8](try XCTUnwrap(Data(base64Encoded: String(source.dropFirst(prefix.count))))))
            XCTAssertEqual(frame.size, geometry.model)
        }
        // tap_element's result names the element's box, which the overlay draws.
        XCTAssertTrue(html.contains("; box 500,190 120x36 of 1920x1080)"), "the button's box")

        // Offline in chromium: the page loads with no console message at all (a CSP violation would be one).
        let logged = try chromium(["--dump-dom"], file)
        XCTAssertFalse(logged.contains(":CONSOLE"), logged)
        // The check sees violations: the same page with a script and a remote image added logs both.
        let bad = workDir.appendingPathComponent("bad.html")
        try html.replacingOccurrences(
            of: "</body>", with: "<img src=\"http://127.0.0.1:9/x.png\"><script>console.log(1)</script></body>"
        ).write(to: bad, atomically: true, encoding: .utf8)
        let badLog = try chromium(["--dump-dom"], bad)
        XCTAssertTrue(badLog.contains(":CONSOLE"), badLog)

        // Rendered: the screenshots at their natural size (the window is wider than they are), found as the blocks
        // of rows mostly covered by the dark desktop; the overlay's magenta is where each call pointed.
        let shotFile = workDir.appendingPathComponent("page.png")
        _ = try chromium(["--hide-scrollbars", "--window-size=1600,4800", "--screenshot=" + shotFile.path], file)
        let page = try PNG.decode([UInt8](try Data(contentsOf: shotFile)))
        let found = Self.imageBlocks(page, width: geometry.model.width)
        // The blocks in the page's order are its figures'; step 2's click, step 3's scroll and drag.
        let figures = Self.figures(html)
        func block(_ step: Int, _ call: Int) -> Point? {
            figures.firstIndex { $0.step == step && $0.calls.contains(call) }.flatMap {
                $0 < found.count ? found[$0] : nil
            }
        }
        guard let click2 = block(2, 1), let scroll3 = block(3, 1), let drag3 = block(3, 2) else {
            return XCTFail("steps 2 and 3 are on the page: \(found), \(figures)")
        }
        let blocks = [click2, scroll3]
        func magenta(near p: Point, in block: Point, radius: Int = 14) -> Int {
            var n = 0
            for y in (block.y + p.y - radius)...(block.y + p.y + radius) {
                for x in (block.x + p.x - radius)...(block.x + p.x + radius) {
                    if let c = page.pixel(x: x, y: y), c.r > 200, c.g < 80, c.b > 200 { n += 1 }
                }
            }
            return n
        }
        // Step 2: the click ring around the button's centre; nothing at the drag's end (that is step 3's).
        XCTAssertGreaterThan(magenta(near: click, in: blocks[0]), 20, "the click at \(click) in \(blocks[0])")
        XCTAssertEqual(magenta(near: dragTo, in: blocks[0]), 0)
        // Step 3: the scroll arrow below its point, the drag's start ring and its arrowhead.
        XCTAssertGreaterThan(magenta(near: Point(x: scrollAt.x, y: scrollAt.y + 30), in: blocks[1], radius: 6), 5)
        XCTAssertGreaterThan(magenta(near: dragFrom, in: drag3, radius: 10), 10)
        XCTAssertGreaterThan(magenta(near: dragTo, in: drag3, radius: 10), 10)
        XCTAssertEqual(magenta(near: click, in: drag3, radius: 10), 0)

        // Kept: without -o the report goes to the reports folder, and `runs` shows it.
        let kept = try runCLI(["report", "\(id)", "--json"], environment: env)
        XCTAssertEqual(kept.status, 0, kept.stderr)
        let keptPath = try XCTUnwrap(try JSONValue.parse(kept.stdout)["path"]?.string)
        XCTAssertEqual(keptPath, workDir.appendingPathComponent("state/xclaw/reports/run-\(id).html").path)
        XCTAssertTrue(FileManager.default.fileExists(atPath: keptPath))
        let listed = try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout)
        XCTAssertEqual(listed.array?.last?["report"]?.string, keptPath)
        XCTAssertTrue(try runCLI(["runs"], environment: env).text.contains(keptPath))

        // Retention: two more runs kept with --keep-runs 2 delete the first run's report and its screenshots.
        XCTAssertEqual(try runCLI(["agent", "create", "notes", "--tools", "memory"], environment: env).status, 0)
        let store = try AgentStore(path: try XCTUnwrap(env["XCLAW_DB"]))
        for n in 1...2 {
            XCTAssertEqual(try runCLI(["send", "notes", "note \(n)"], environment: env).status, 0)
            let latest = try XCTUnwrap(try store.sessions(agent: "notes").last?.id)
            let again = try runCLI(["report", "\(latest)", "--keep-runs", "2"], environment: env)
            XCTAssertEqual(again.status, 0, again.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: keptPath), "the oldest run's report is deleted")
        XCTAssertNil(try store.session(Int64(id)).report)
        let stored = try store.runTranscript(session: Int64(id)).messages
        XCTAssertFalse(stored.contains { $0.content.description.contains("image(mediaType") })
        XCTAssertTrue(stored.contains { $0.message.json.jsonText.contains("older screenshot removed") })
        XCTAssertTrue(FileManager.default.fileExists(atPath: file.path), "a report written with -o is the user's")
        // The pruned run still has a report, with placeholders where its screenshots were.
        let pruned = try runCLI(["report", "\(id)", "-o", file.path], environment: env)
        XCTAssertEqual(pruned.status, 0, pruned.stderr)
        XCTAssertTrue(try String(contentsOf: file, encoding: .utf8).contains("removed to keep the database small"))
    }

    /// The issue's run: a model that only taps elements (no screenshot ever taken) still gets a report whose every
    /// acting step shows the frame its tap acted on, the element's box and the tap drawn on it in chromium; the steps
    /// that did not act say why they show no screen.
    func testARunThatOnlyTapsShowsEachTapOnTheFrameItActedOn() throws {
        let button = Rect(x: frame.x + 300, y: frame.y + 40, width: 120, height: 36)
        let server = try MockMessagesServer(replies: [
            Self.calls([("t1", "tap_element", #"{"label": "Submit"}"#)]),
            Self.calls([
                ("t2", "screen_snapshot", "{}"), ("t3", "tap_element", #"{"label": "Submit", "double": true}"#),
            ]),
            Self.calls([("t4", "read_screen_text", "{}")]),
            .stream(.turn(blocks: [.text("Submitted twice.")])),
        ])
        defer { server.stop() }
        let env = environment(server)
        let run = try runCLI(
            [
                "run", "Submit the order form", "--display", display.name, "--model", "claude-sonnet-4-6",
                "--tools", "tap_element,screen_snapshot,read_screen_text",
            ],
            environment: env)
        XCTAssertEqual(run.status, 0, run.stderr)
        let presses = { (events: [ProbeEvent]) in
            events.filter { $0.kind == .buttonPress && $0.target == "Submit" }.count
        }
        XCTAssertEqual(presses(fixture.wait(timeout: 5) { presses($0) >= 3 }), 3, "one tap and a double tap on Submit")
        XCTAssertFalse(
            server.requests.contains { String(decoding: $0.body, as: UTF8.self).contains("\"media_type\":\"image/") },
            "the model was never sent a screenshot")
        let id = try XCTUnwrap(
            try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array?.last?["id"]?.int)
        let file = workDir.appendingPathComponent("taps.html")
        let written = try runCLI(["report", "\(id)", "-o", file.path], environment: env)
        XCTAssertEqual(written.status, 0, written.stderr)
        let html = try String(contentsOf: file, encoding: .utf8)

        // Steps 1 and 2 each show the frame their tap acted on (step 2's snapshot is captioned on it too), at the
        // model's size; steps 3 and 4 say why they show none.
        let figures = Self.figures(html)
        XCTAssertEqual(figures.map(\.step), [1, 2], "\(figures)")
        XCTAssertEqual(figures.map(\.calls), [[1], [2]])
        XCTAssertTrue(html.contains("double tap “Submit”"))
        for source in html.components(separatedBy: "<img src=\"").dropFirst().map({ String($0.prefix { $0 != "\"" }) })
        {
            let prefix = "data:image/png;base64,"
            XCTAssertTrue(source.hasPrefix(prefix))
            let image = try PNG.decode(
                [UInt8](try XCTUnwrap(Data(base64Encoded: String(source.dropFirst(prefix.count))))))
            XCTAssertEqual(image.size, geometry.model)
        }
        XCTAssertTrue(
            html.contains(
                "No screen for this step: the model only read the screen in this step (read_screen_text), and no "
                    + "screenshot was taken before it"), html)
        XCTAssertTrue(
            html.contains("No screen for this step: the model acted on nothing in this step: it only answered"))
        XCTAssertFalse(html.contains("No screen for this step: no frame was stored"))
        XCTAssertTrue(html.contains("; box 500,190 120x36 of 1920x1080)"), "the button's box")

        // Rendered offline in chromium: each frame shows the dark desktop and the form, the magenta ring at the
        // button's centre and its dashed box.
        XCTAssertFalse(try chromium(["--dump-dom"], file).contains(":CONSOLE"))
        let shotFile = workDir.appendingPathComponent("taps.png")
        _ = try chromium(["--hide-scrollbars", "--window-size=1600,2600", "--screenshot=" + shotFile.path], file)
        let page = try PNG.decode([UInt8](try Data(contentsOf: shotFile)))
        let blocks = Self.imageBlocks(page, width: geometry.model.width)
        XCTAssertEqual(blocks.count, 2, "the two frames: \(blocks)")
        let centre = geometry.toModel(button.center)
        let corner = geometry.toModel(Point(x: button.x, y: button.y + button.height / 2))
        for (n, block) in blocks.enumerated() {
            var ring = 0, edge = 0
            for y in (block.y + centre.y - 14)...(block.y + centre.y + 14) {
                for x in (block.x + centre.x - 14)...(block.x + centre.x + 14) {
                    if let c = page.pixel(x: x, y: y), c.r > 200, c.g < 80, c.b > 200 { ring += 1 }
                }
            }
            for y in (block.y + corner.y - 6)...(block.y + corner.y + 6) {
                for x in (block.x + corner.x - 3)...(block.x + corner.x + 3) {
                    if let c = page.pixel(x: x, y: y), c.r > 200, c.g < 80, c.b > 200 { edge += 1 }
                }
            }
            XCTAssertGreaterThan(ring, 20, "frame \(n + 1): the tap's ring at \(centre)")
            XCTAssertGreaterThan(edge, 3, "frame \(n + 1): the box's left edge at \(corner)")
        }
    }

    /// A step whose display died while the model thought shows no screen and says why (its tap found the display
    /// gone); the tap before it shows the frame it acted on.
    func testAStepWhoseDisplayWasGoneSaysSo() throws {
        let killed = DispatchSemaphore(value: 0)
        let server = try MockMessagesServer { _, index in
            // The second reply waits until the test has killed the display.
            if index == 1 { _ = killed.wait(timeout: .now() + 60) }
            return index < 2
                ? Self.calls([("t\(index + 1)", "tap_element", #"{"label": "Submit"}"#)])
                : .stream(.turn(blocks: [.text("never asked")]))
        }
        defer {
            killed.signal()
            server.stop()
        }
        let env = environment(server)
        let run = try launchCLI(
            ["run", "Submit it", "--display", display.name, "--model", "claude-sonnet-4-6", "--tools", "tap_element"],
            environment: env)
        XCTAssertTrue(server.waitForRequests(2, timeout: .seconds(30)), "the first tap was done")
        kill(display.server.pid, SIGKILL)
        try eventually("the display is gone") { (try? DisplayConnection(name: display.name)) == nil }
        killed.signal()
        run.waitUntilExit()
        XCTAssertEqual(run.terminationStatus, 3, "a lost display ends the run")
        let id = try XCTUnwrap(
            try JSONValue.parse(try runCLI(["runs", "--json"], environment: env).stdout).array?.last?["id"]?.int)
        let file = workDir.appendingPathComponent("gone.html")
        let written = try runCLI(["report", "\(id)", "-o", file.path], environment: env)
        XCTAssertEqual(written.status, 0, written.stderr)
        let html = try String(contentsOf: file, encoding: .utf8)
        XCTAssertEqual(Self.figures(html).map(\.step), [1], "step 1's tap, on the frame it acted on")
        XCTAssertTrue(
            html.contains("No screen for this step: the display was gone, so nothing was captured or done."), html)
    }

    func testBadInputIsRefusedWithWhatToDo() throws {
        let server = try MockMessagesServer(replies: [])
        defer { server.stop() }
        let env = environment(server)
        XCTAssertEqual(try runCLI(["agent", "create", "bot", "--tools", "memory"], environment: env).status, 0)
        let unknown = try runCLI(["report", "999"], environment: env)
        XCTAssertEqual(unknown.status, 1, "no such run: not found, as for unknown agents and tasks")
        XCTAssertTrue(unknown.stderr.contains("no session with id 999"), unknown.stderr)
        for (arguments, says) in [
            (["report", "abc"], "RUN must be a run's id"),
            (["report", "0"], "RUN must be a run's id"),
            (["report", "1", "--keep-runs", "0"], "--keep-runs must be from 1"),
            (["report", "1", "-o", "x.html", "--keep-runs", "3"], "apply to kept reports only"),
        ] {
            let refused = try runCLI(arguments, environment: env)
            XCTAssertEqual(refused.status, 2, "\(arguments): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains(says), "\(arguments): \(refused.stderr)")
        }
    }

    /// The report's figures in page order: each one's step and the calls drawn on it (every call of the step for the
    /// screenshot the model saw, listed as `[0]`).
    private static func figures(_ html: String) -> [(step: Int, calls: [Int])] {
        let pattern = #"<figure class="shot" id="shot-(\d+)(?:-\d+)?".*?<figcaption>([^<]*)</figcaption>"#
        guard let regex = try? NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators]) else {
            return []
        }
        return regex.matches(in: html, range: NSRange(html.startIndex..., in: html)).compactMap { match in
            guard let stepRange = Range(match.range(at: 1), in: html), let step = Int(html[stepRange]),
                let captionRange = Range(match.range(at: 2), in: html)
            else { return nil }
            let caption = html[captionRange]
            let calls =
                caption.hasPrefix("The screen call")
                ? caption.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) } : [0]
            return (step, calls)
        }
    }

    /// The top-left corners of the page's screenshots: runs of rows where more than half of `width` pixels are
    /// dark (the desktop), each at least 300 rows tall; the left edge is the first dark pixel of its middle row.
    private static func imageBlocks(_ page: Frame, width: Int) -> [Point] {
        let bytes = page.bgrx
        func dark(_ x: Int, _ y: Int) -> Bool {
            let i = (y * page.width + x) * 4
            return Int(bytes[i]) + Int(bytes[i + 1]) + Int(bytes[i + 2]) < 150
        }
        var blocks: [Point] = []
        var start: Int?
        for y in 0...page.height {
            var count = 0
            if y < page.height { for x in 0..<page.width where dark(x, y) { count += 1 } }
            let isImage = count > width / 2
            if isImage, start == nil { start = y }
            if !isImage, let top = start {
                start = nil
                guard y - top >= 300 else { continue }
                let middle = (top + y) / 2
                if let left = (0..<page.width).first(where: { dark($0, middle) }) {
                    blocks.append(Point(x: left, y: top))
                }
            }
        }
        return blocks
    }
}

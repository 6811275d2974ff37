import Foundation
import XCTest
import XclawAgent
import XclawMessages
import XclawRuntime
import XclawScreen
import XclawSkills
import XclawStore

/// The run report from a real SQLite store: which screenshot each step shows, the overlay in the image's pixels for
/// every tool's coordinate space, escaping of untrusted text, and retention of reports and stored screenshots.
final class ReportTests: XCTestCase {
    private var temporary: TemporaryStore!
    private var store: AgentStore { temporary.store }

    override func setUpWithError() throws {
        temporary = try TemporaryStore("report")
        try store.createAgent(AgentConfig(name: "bot", model: "claude-sonnet-4-5"))
    }

    override func tearDown() { temporary?.remove() }

    /// A solid PNG of `width`×`height`, base64.
    private func png(_ width: Int, _ height: Int, _ color: RGB = RGB(r: 40, g: 90, b: 160)) throws -> String {
        Data(try PNG.encode(Frame(size: Size(width: width, height: height), color: color))).base64EncodedString()
    }

    /// One stored run: the user's prompt, a batch, then each (reply, results) pair, with a usage row per reply.
    @discardableResult
    private func storeRun(prompt: String, sender: String = "user", turns: [([ContentBlock], [ContentBlock])]) throws
        -> Int64
    {
        try store.appendMessage(agent: "bot", role: .user, content: [.text(prompt)], sender: sender)
        let batch = try XCTUnwrap(
            try store.claimBatch(
                agent: "bot", kind: .message, batchSender: Conversation.batchSender, isInput: Conversation.isChat,
                prompt: { Conversation.batch($0) }))
        for (i, turn) in turns.enumerated() {
            try store.appendMessage(agent: "bot", role: .assistant, content: turn.0, sessionID: batch.session)
            try store.recordUsage(
                agent: "bot", sessionID: batch.session, model: "claude-sonnet-4-5",
                usage: Usage(
                    inputTokens: 1000, outputTokens: 50, cacheCreationInputTokens: 10, cacheReadInputTokens: 20),
                usd: 0.01,
                timing: StepTiming(
                    step: i + 1, modelMs: 1234, toolMs: 56, stopReason: turn.1.isEmpty ? "end_turn" : "tool_use"))
            if !turn.1.isEmpty {
                try store.appendMessage(
                    agent: "bot", role: .user, content: turn.1, sender: "tool", sessionID: batch.session)
            }
        }
        try store.finishSession(batch.session, status: .completed, steps: turns.count, usd: 0.01 * Double(turns.count))
        return batch.session
    }

    private func result(_ id: String, _ text: String, image: String? = nil) -> ContentBlock {
        .toolResult(
            ToolResultBlock(
                toolUseID: id,
                content: [.text(text)] + (image.map { [.image(mediaType: "image/png", base64: $0)] } ?? [])))
    }

    func testStepsShowTheScreenshotBeforeEachRequestWithTheCallsDrawnInItsPixels() throws {
        let shot1 = try png(1429, 804), shot2 = try png(1429, 804, RGB(r: 200, g: 200, b: 200))
        let id = try storeRun(
            prompt: "Fill in <the> form & \"submit\"",
            turns: [
                (
                    [.text("Looking."), .toolUse(id: "t1", name: "computer", input: ["action": "screenshot"])],
                    [result("t1", "", image: shot1)]
                ),
                (
                    [
                        .text("<script>alert(1)</script> clicking"),
                        .toolUse(
                            id: "t2", name: "computer", input: ["action": "left_click", "coordinate": [100, 200]]),
                        .toolUse(
                            id: "t3", name: "computer",
                            input: [
                                "action": "left_click_drag", "start_coordinate": [10, 20], "coordinate": [300, 400],
                            ]),
                        .toolUse(
                            id: "t4", name: "computer",
                            input: ["action": "scroll", "scroll_direction": "down", "scroll_amount": 3]),
                        .toolUse(id: "t5", name: "computer", input: ["action": "type", "text": "héllo <b>"]),
                    ],
                    [
                        result("t2", "left_click at (100, 200)"), result("t3", "dragged"),
                        result("t4", "scrolled"), result("t5", "typed 9 characters </div><img src=x>", image: shot2),
                    ]
                ),
                (
                    [
                        .toolUse(id: "t6", name: "tap_xy", input: ["x": 0.5, "y": 0.25]),
                        .toolUse(id: "t7", name: "swipe", input: ["from_x": 0, "from_y": 0, "to_x": 1, "to_y": 1]),
                        .toolUse(id: "t8", name: "tap_element", input: ["label": "Save"]),
                        .toolUse(id: "t9", name: "press_button", input: ["name": "ctrl+s"]),
                    ],
                    [
                        result("t6", "tapped"), result("t7", "dragged"),
                        result(
                            "t8",
                            "tapped e3 button \"Save (screen 1,1 of 1x1)\" at x=0.500 y=0.500 "
                                + "(screen 960,540; box 900,520 120x40 of 1920x1080)"),
                        result("t9", "pressed ctrl+s"),
                    ]
                ),
                ([.text("Done.")], []),
            ])
        let report = RunReport(try store.runTranscript(session: id))
        XCTAssertEqual(report.title, "Fill in <the> form & \"submit\"")
        XCTAssertNil(report.task)
        XCTAssertEqual(report.steps.count, 4)
        XCTAssertEqual(report.steps[0].shot, .none, "nothing seen before the first request")
        guard case .image(let first) = report.steps[1].shot, case .image(let second) = report.steps[2].shot,
            case .image(let last) = report.steps[3].shot
        else { return XCTFail("steps 2–4 show screenshots") }
        XCTAssertEqual([first.width, first.height], [1429, 804])
        XCTAssertEqual(first.base64, shot1)
        XCTAssertEqual(second.base64, shot2, "step 3 sees the screenshot step 2's last call returned")
        XCTAssertEqual(last.base64, shot2, "a step whose calls returned no image still shows the newest one")
        XCTAssertEqual(report.steps[1].record?.modelMs, 1234)
        XCTAssertEqual(report.usage.inputTokens, 4000)

        // Computer coordinates are the screenshot's own pixels; scroll without a coordinate is at the pointer.
        let step2 = report.steps[1].actions.map(\.overlay)
        XCTAssertEqual(step2[0].marks, [.click(ImagePoint(x: 100.5, y: 200.5))])
        XCTAssertEqual(step2[1].marks, [.drag(from: ImagePoint(x: 10.5, y: 20.5), to: ImagePoint(x: 300.5, y: 400.5))])
        XCTAssertEqual(step2[2].marks, [.scroll(at: ImagePoint(x: 300.5, y: 400.5), direction: "down", amount: 3)])
        XCTAssertEqual(step2[3].caption, "type “héllo <b>”")
        // Fractions of the screen × the image; tap_element's screen box × image / screen (the last placement wins
        // over one inside the label).
        let step3 = report.steps[2].actions.map(\.overlay)
        XCTAssertEqual(step3[0].marks, [.click(ImagePoint(x: 714.5, y: 201))])
        XCTAssertEqual(step3[1].marks, [.drag(from: ImagePoint(x: 0, y: 0), to: ImagePoint(x: 1429, y: 804))])
        let scale = 1429.0 / 1920.0, yScale = 804.0 / 1080.0
        XCTAssertEqual(
            step3[2].marks,
            [
                .box(x: 900 * scale, y: 520 * yScale, width: 120 * scale, height: 40 * yScale),
                .click(ImagePoint(x: 960.5 * scale, y: 540.5 * yScale)),
            ])
        XCTAssertEqual(step3[3].caption, "press ctrl+s")

        let html = ReportHTML.page(report)
        XCTAssertTrue(html.contains(ReportHTML.contentSecurityPolicy))
        XCTAssertFalse(html.contains("<script"), "untrusted text is escaped")
        XCTAssertFalse(html.contains("<img src=x>"))
        XCTAssertFalse(html.contains("héllo <b>"))
        XCTAssertTrue(html.contains("héllo &lt;b&gt;"))
        XCTAssertTrue(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; clicking"))
        XCTAssertTrue(html.contains("Fill in &lt;the&gt; form &amp; &quot;submit&quot;"))
        XCTAssertTrue(html.contains("viewBox=\"0 0 1429 804\""))
        for url in ["https://", "src=\"http", "url(http", "@import"] { XCTAssertFalse(html.contains(url), url) }
        // Every image is a data URI of a PNG.
        let sources = html.components(separatedBy: "<img src=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        XCTAssertEqual(sources.count, 3)
        for source in sources {
            XCTAssertTrue(source.hasPrefix("data:image/png;base64,"))
            let data = try XCTUnwrap(Data(base64Encoded: String(source.dropFirst("data:image/png;base64,".count))))
            XCTAssertNoThrow(try PNG.decode([UInt8](data)))
        }
    }

    /// A run whose model never took a screenshot (`tap_element` and the like) shows each acting call on the frame it
    /// acted on: consecutive calls on one screen share an image, each call drawn in its image's pixels; a step with
    /// no frame says why: it only read the screen, used no screen, the display was gone, the action failed first,
    /// retention removed the frame, or it only answered.
    func testEveryActingCallIsDrawnOnTheFrameItActedOnAndAStepWithoutOneSaysWhy() throws {
        let before = try png(1456, 819), after = try png(1456, 819, RGB(r: 250, g: 250, b: 250))
        let tapped = "(screen 960,540; box 900,520 120x40 of 1920x1080)"
        let id = try storeRun(
            prompt: "Save the form",
            turns: [
                (
                    [.toolUse(id: "s1", name: "screen_snapshot", input: [:])],
                    [result("s1", "e1 button \"Save\" at 900,520 120x40")]
                ),
                (
                    [
                        .toolUse(id: "t1", name: "tap_element", input: ["label": "Name"]),
                        .toolUse(id: "t2", name: "type_text", input: ["text": "Ada"]),
                        .toolUse(id: "t3", name: "tap_element", input: ["label": "Save"]),
                    ],
                    [
                        result("t1", "tapped e2 field \"Name\" at x=0.250 y=0.250 (screen 480,270 of 1920x1080)"),
                        result("t2", "typed 3 characters"),
                        result("t3", "tapped e1 button \"Save\" at x=0.500 y=0.500 \(tapped)"),
                    ]
                ),
                (
                    [.toolUse(id: "t4", name: "tap_element", input: ["label": "Close"])],
                    [result("t4", "tapped e9 button \"Close\" \(tapped)")]
                ),
                (
                    [.toolUse(id: "t5", name: "tap_element", input: ["label": "Gone"])],
                    [
                        .toolResult(
                            ToolResultBlock(
                                toolUseID: "t5",
                                content: [
                                    .text(
                                        "lost the connection to display :7: the X server died or went away; restart it")
                                ], isError: true))
                    ]
                ),
                (
                    [.toolUse(id: "t6", name: "tap_element", input: ["label": "Nothing"])],
                    [
                        .toolResult(
                            ToolResultBlock(
                                toolUseID: "t6", content: [.text("no element labelled \"Nothing\"\nclosest: Note")],
                                isError: true))
                    ]
                ),
                (
                    [.toolUse(id: "m1", name: "memory", input: ["action": "get", "key": "k"])],
                    [result("m1", "no note k")]
                ),
                ([.text("Saved.")], []),
            ])
        for (call, image) in [("t1", before), ("t2", before), ("t3", after), ("t4", after)] {
            try store.recordActionFrame(
                session: id, call: call, mediaType: "image/png", data: try XCTUnwrap(Data(base64Encoded: image)))
        }
        let report = RunReport(try store.runTranscript(session: id))
        XCTAssertEqual(report.steps.count, 7)
        XCTAssertEqual(report.steps.map(\.shot), Array(repeating: .none, count: 7), "the model saw no screenshot")

        // Step 2: the tap and the typing acted on one screen, the second tap on another.
        let step2 = report.steps[1]
        XCTAssertEqual(step2.panels.map(\.actions), [[0, 1], [2]])
        XCTAssertEqual(step2.panels.map(\.image.base64), [before, after])
        XCTAssertEqual(step2.panels.map(\.actedOn), [true, true])
        XCTAssertNil(step2.noFrame)
        let x = 1456.0 / 1920.0, y = 819.0 / 1080.0
        XCTAssertEqual(step2.actions[0].overlay.marks, [.click(ImagePoint(x: 480.5 * x, y: 270.5 * y))])
        XCTAssertEqual(step2.actions[1].overlay.caption, "type “Ada”")
        XCTAssertEqual(
            step2.actions[2].overlay.marks,
            [
                .box(x: 900 * x, y: 520 * y, width: 120 * x, height: 40 * y),
                .click(ImagePoint(x: 960.5 * x, y: 540.5 * y)),
            ])
        XCTAssertEqual(report.steps[2].panels.map(\.actions), [[0]])

        // Why the other steps show no screen.
        let reasons = report.steps.map(\.noFrame)
        XCTAssertEqual(
            reasons[0],
            "the model only read the screen in this step (screen_snapshot), and no screenshot was taken before it")
        XCTAssertEqual(reasons[3], "the display was gone, so nothing was captured or done")
        XCTAssertEqual(
            reasons[4], "its action failed before anything was captured: no element labelled \"Nothing\"")
        XCTAssertEqual(reasons[5], "the model's calls did not touch the screen (memory)")
        XCTAssertEqual(reasons[6], "the model acted on nothing in this step: it only answered")

        let html = ReportHTML.page(report)
        XCTAssertEqual(html.components(separatedBy: "<img src=\"data:image/png;base64,").count - 1, 3)
        XCTAssertTrue(html.contains("id=\"shot-2\""))
        XCTAssertTrue(html.contains("id=\"shot-2-2\""))
        XCTAssertTrue(html.contains("<figcaption>The screen calls 1, 2 acted on</figcaption>"))
        XCTAssertTrue(html.contains("<figcaption>The screen call 3 acted on</figcaption>"))
        XCTAssertTrue(html.contains("No screen for this step: the display was gone"))
        XCTAssertTrue(html.contains("No screen for this step: the model only read the screen"))
        XCTAssertTrue(html.contains("viewBox=\"0 0 1456 819\""))

        // Retention removes the frames of old runs: the report says so.
        let next = try storeRun(prompt: "again", turns: [([.text("ok")], [])])
        XCTAssertEqual(try store.pruneImages(sessionsBefore: next, placeholder: ImagePruner.placeholder), 4)
        let pruned = RunReport(try store.runTranscript(session: id))
        XCTAssertEqual(pruned.steps[1].panels, [])
        XCTAssertEqual(pruned.steps[1].noFrame, "the frame its action acted on was removed to keep the database small")
    }

    func testEachToolCaptionsItsOwnCallsAndAnyOtherToolIsListedByName() throws {
        func caption(_ tool: String, _ input: String, pointer: (x: Double, y: Double)? = nil) throws -> OverlayAction {
            var pointer = pointer
            let json = try JSONDecoder().decode(JSONValue.self, from: Data(input.utf8))
            return ReportOverlay.action(tool: tool, input: json, result: nil, image: (100, 50), pointer: &pointer)
        }
        XCTAssertEqual(try caption("computer", #"{"action": "key", "text": "ctrl+s"}"#).caption, "key ctrl+s")
        XCTAssertEqual(try caption("computer", #"{"action": "hold_key", "text": "shift"}"#).caption, "hold shift")
        XCTAssertEqual(try caption("computer", #"{"action": "type", "text": "a\nb"}"#).caption, "type “a⏎b”")
        XCTAssertEqual(try caption("computer", #"{"action": "screenshot"}"#).caption, "screenshot")
        XCTAssertEqual(try caption("computer", #"{}"#).caption, "computer")
        XCTAssertEqual(
            try caption("computer", #"{"action": "left_click", "text": "shift"}"#, pointer: (0.5, 0.5)),
            OverlayAction(marks: [.click(ImagePoint(x: 50, y: 25))], caption: "left click holding shift at the pointer")
        )
        XCTAssertEqual(
            try caption("computer", #"{"action": "zoom", "region": [10, 5, 30, 15]}"#),
            OverlayAction(marks: [.box(x: 10, y: 5, width: 20, height: 10)], caption: "zoom"))
        XCTAssertEqual(
            try caption("type_text", #"{"text": "hi", "into": "Name", "submit": true}"#).caption,
            "type “hi” into “Name” and Return")
        XCTAssertEqual(try caption("press_button", #"{"name": "Enter"}"#).caption, "press Enter")
        XCTAssertEqual(try caption("tap_xy", #"{"x": "left"}"#), OverlayAction(marks: [], caption: "tap_xy"))
        XCTAssertEqual(try caption("swipe", #"{}"#), OverlayAction(marks: [], caption: "swipe"))
        XCTAssertEqual(
            try caption("scroll", #"{"direction": "up"}"#, pointer: (0.1, 0.2)),
            OverlayAction(
                marks: [.scroll(at: ImagePoint(x: 10, y: 10), direction: "up", amount: 3)], caption: "scroll up 3"))
        XCTAssertEqual(try caption("tap_element", #"{"label": "OK"}"#), OverlayAction(marks: [], caption: "tap “OK”"))
        XCTAssertEqual(
            try caption("tap_element", #"{"label": "OK", "double": true, "button": "right"}"#).caption,
            "double right tap “OK”")
        XCTAssertEqual(
            try caption("launch_app", #"{"name": "xterm"}"#), OverlayAction(marks: [], caption: "launch_app"))
        XCTAssertEqual(try caption("memory", #"{"action": "get"}"#), OverlayAction(marks: [], caption: "memory"))
    }

    func testControlCharactersAndBidiOverridesAreShownNotObeyed() {
        XCTAssertEqual(ReportHTML.escape("a\u{1b}[2Jb\u{202e}c'\n"), "a\\x1b[2Jb\\u{202e}c&#39;\n")
    }

    func testAScheduledRunIsTitledByItsTaskAndAnImageThatIsNotAPNGIsNotShown() throws {
        let id = try storeRun(
            prompt: "check the build", sender: "schedule:nightly",
            turns: [
                (
                    [.toolUse(id: "t1", name: "computer", input: ["action": "screenshot"])],
                    [
                        .toolResult(
                            ToolResultBlock(
                                toolUseID: "t1", content: [.image(mediaType: "image/png", base64: "PHN2Zz4=")]))
                    ]
                ),
                ([.text("ok")], []),
            ])
        let report = RunReport(try store.runTranscript(session: id))
        XCTAssertEqual(report.task, "nightly")
        XCTAssertEqual(report.title, "nightly")
        XCTAssertEqual(report.steps[1].shot, .removed)
        XCTAssertFalse(ReportHTML.page(report).contains("PHN2Zz4="))
    }

    func testRetentionKeepsTheNewestRunsReportsAndScreenshots() throws {
        let reports = temporary.directory.appendingPathComponent("state")
        let environment = ["XDG_STATE_HOME": reports.path, "HOME": temporary.directory.path]
        let shot = try png(64, 48)
        var ids: [Int64] = []
        for n in 1...4 {
            ids.append(
                try storeRun(
                    prompt: "run \(n)",
                    turns: [
                        (
                            [.toolUse(id: "t\(n)", name: "computer", input: ["action": "screenshot"])],
                            [result("t\(n)", "shot", image: shot)]
                        ),
                        ([.text("done")], []),
                    ]))
        }
        let retention = try ReportRetention(keepRuns: 2)
        var paths: [String] = []
        for id in ids {
            let kept = try RunReports.keep(session: id, store: store, retention: retention, environment: environment)
            XCTAssertEqual(kept.path, reports.appendingPathComponent("xclaw/reports/run-\(id).html").path)
            paths.append(kept.path)
        }
        // Only the newest two runs keep their reports, and their screenshots.
        XCTAssertEqual(paths.map { FileManager.default.fileExists(atPath: $0) }, [false, false, true, true])
        XCTAssertEqual(try store.reports().map(\.session), [ids[3], ids[2]])
        XCTAssertEqual(try store.session(ids[0]).report, nil)
        XCTAssertEqual(try store.session(ids[3]).report, paths[3])
        let attributes = try FileManager.default.attributesOfItem(atPath: paths[3])
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        func images(_ id: Int64) throws -> Int {
            try store.runTranscript(session: id).messages.reduce(0) { $0 + ImagePruner.count([$1.message]) }
        }
        XCTAssertEqual(try images(ids[0]), 0)
        XCTAssertEqual(try images(ids[1]), 0)
        XCTAssertEqual(try images(ids[2]), 1)
        XCTAssertEqual(try images(ids[3]), 1)
        // The pruned conversation is still valid: every call answered, the placeholder where the image was.
        let old = try store.runTranscript(session: ids[0])
        XCTAssertTrue(ConversationCheck.unansweredToolUses(old.messages.map(\.message)).isEmpty)
        XCTAssertTrue(old.messages.contains { $0.message.json.jsonText.contains(ImagePruner.placeholder) })
        XCTAssertEqual(RunReport(old).steps[1].shot, .removed)
        XCTAssertTrue(ReportHTML.page(RunReport(old)).contains("removed to keep the database small"))

        // The size cap: the newest report is always kept, older ones go once the total is over.
        let tight = try ReportRetention(keepRuns: 10, maxMB: 1)
        let big = temporary.directory.appendingPathComponent("big.html").path
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: Data(count: 1024 * 1024)))
        try store.setReport(session: ids[3], path: big)
        let outcome = try RunReports.applyRetention(store: store, retention: tight)
        XCTAssertEqual(outcome.deletedReports, [paths[2]])
        XCTAssertTrue(FileManager.default.fileExists(atPath: big))
        XCTAssertEqual(try store.reports().map(\.session), [ids[3]])

        XCTAssertThrowsError(try ReportRetention(keepRuns: 0))
        XCTAssertThrowsError(try store.runTranscript(session: 999)) { error in
            XCTAssertEqual(error as? StoreError, .unknownSession(999))
        }
    }
}

import Foundation
import XCTest
import XclawAgent
import XclawScreen
import XclawSkills

/// Each recorded action is done again by its tool's playback: the script export's lines are pinned here, and an
/// action no tool plays back (a launch, a held key, a name from another xclaw) is refused with its name.
final class ActionPlaybackTests: XCTestCase {
    /// A replay that only notes what a playback asked of it; no playback here may send input.
    private final class Refusing: StepReplaying {
        struct Divergence: Error { let reason: String }
        var asked: [String] = []
        var text: String? { nil }
        var input: InputController { preconditionFailure("a refused step sends no input") }
        func stopped() -> Bool { false }
        func located() throws -> Point {
            asked.append("located")
            throw Divergence(reason: "no target")
        }
        func activeWindowHolds() throws { asked.append("window") }
        func modifiers(_ text: String?) throws -> [UInt] { [] }
        func approve(at point: Point?, text: String?) throws { asked.append("approve") }
        func acting() { asked.append("acting") }
        func divergence(_ reason: String) -> any Error { Divergence(reason: reason) }
    }

    private func refusal(_ step: RecordedStep) -> (reason: String?, asked: [String]) {
        let replay = Refusing()
        do {
            try RecordingTools.playback(for: step.action, tool: step.tool).replay(step, on: replay)
            return (nil, replay.asked)
        } catch let divergence as Refusing.Divergence {
            return (divergence.reason, replay.asked)
        } catch {
            return ("\(error)", replay.asked)
        }
    }

    func testWhatNoToolPlaysBackIsRefusedWithItsNameBeforeAnything() {
        for (tool, action) in [
            ("computer", RecordedAction.other("frobnicate")), ("launch_app", .launch), ("computer", .holdKey),
            ("computer", .leftClickDrag), ("swipe", .swipe), ("computer", .mouseMove), ("computer", .zoom),
        ] {
            let step = RecordedStep(tool: tool, action: action, x: 5, y: 6, text: "to 7,8")
            let (reason, asked) = refusal(step)
            XCTAssertEqual(reason, "\(tool) \(action.rawValue) cannot be replayed without the model yet")
            XCTAssertEqual(asked, [])
        }
        let scroll = RecordedStep(tool: "scroll", action: .scroll, text: "sideways 3")
        XCTAssertEqual(refusal(scroll).reason, "the recorded scroll sideways 3 names no direction")
        XCTAssertEqual(refusal(scroll).asked, [])
        // A click finds its target before anything else (and stops there when it is gone).
        XCTAssertEqual(refusal(RecordedStep(tool: "computer", action: .tripleClick, x: 1, y: 2)).asked, ["located"])
    }

    func testAStepIsPlayedBackByItsOwnToolFirst() {
        // Every tool's own playback of each action it records is the one a step of that tool gets.
        for tool in RecordingTools.all {
            for (action, own) in tool.playbacks {
                let chosen = RecordingTools.playback(for: action, tool: tool.toolName)
                XCTAssertTrue(type(of: chosen) == type(of: own), "\(tool.toolName) \(action.rawValue)")
            }
        }
        // A step of a tool that records it no more (or of an unknown tool) falls back to any tool that does.
        let older = RecordingTools.playback(for: .typeText, tool: "type_text")
        XCTAssertEqual(
            older.shell(ShellStep(RecordedStep(tool: "type_text", action: .typeText, text: "x"))).first?.hasPrefix("#"),
            true, "an older type_text step is still exported as not replayable by a command")
        let elsewhere = RecordingTools.playback(for: .tap, tool: "some_removed_tool")
        XCTAssertEqual(
            elsewhere.shell(ShellStep(RecordedStep(tool: "x", action: .tap, x: 1, y: 2))), ["$xclaw click 1 2"])
    }

    func testEachActionExportsAsTheCommandsThatDoItAgain() {
        func lines(_ step: RecordedStep) -> [String] {
            RecordingTools.playback(for: step.action, tool: step.tool).shell(ShellStep(step))
        }
        var labelled = RecordedStep(tool: "tap_element", action: .doubleTap, x: 10, y: 20)
        labelled.target = StepAnchor(label: "Save it", role: "button", box: [0, 0, 1, 1], windowTitle: "Doc's", nth: 2)
        XCTAssertEqual(
            lines(labelled),
            ["$xclaw tap --role 'button' --window 'Doc'\\''s' --nth 2 --double --timeout 10 -- 'Save it'"])
        var right = RecordedStep(tool: "computer", action: .rightClick, x: 10, y: 20)
        right.modifiers = "shift"
        XCTAssertEqual(lines(right), ["$xclaw click 10 20 --button right --with 'shift'"])
        XCTAssertEqual(
            lines(RecordedStep(tool: "computer", action: .tripleClick, x: 1, y: 2)), ["$xclaw click 1 2 --count 3"])
        XCTAssertEqual(lines(RecordedStep(tool: "tap_element", action: .press, x: 1, y: 2)), ["$xclaw click 1 2"])
        XCTAssertEqual(lines(RecordedStep(tool: "old", action: .click, x: 1, y: 2)), ["$xclaw click 1 2"])

        var typed = RecordedStep(tool: "type_text", action: .typeSubmit, x: 3, y: 4, text: "it's")
        typed.target = StepAnchor(label: "Name", role: "field", box: [0, 0, 1, 1])
        typed.focus = true
        XCTAssertEqual(
            lines(typed),
            ["$xclaw tap --role 'field' --timeout 10 -- 'Name'", "$xclaw type -- 'it'\\''s'", "$xclaw key Return"])
        var secret = RecordedStep(tool: "computer", action: .type)
        secret.parameter = "password"
        XCTAssertEqual(lines(secret), ["$xclaw type -- \"$PASSWORD\""])
        XCTAssertEqual(
            lines(RecordedStep(tool: "type_text", action: .typeText, text: "x")),
            ["# not replayable by a command: type_text type_text"])

        XCTAssertEqual(
            lines(RecordedStep(tool: "press_button", action: .key, text: "ctrl+s Return")),
            ["$xclaw key -- 'ctrl+s' 'Return'"])
        XCTAssertEqual(
            lines(RecordedStep(tool: "press_button", action: .pressButton, text: "Tab")), ["$xclaw key -- 'Tab'"])
        XCTAssertEqual(
            lines(RecordedStep(tool: "scroll", action: .scroll, x: 5, y: 6, text: "up 4 with ctrl")),
            ["$xclaw scroll up --amount 4 --at 5,6"])
        XCTAssertEqual(
            lines(RecordedStep(tool: "computer", action: .scroll)), ["$xclaw scroll down --amount 1"])
        XCTAssertEqual(
            lines(RecordedStep(tool: "computer", action: .leftClickDrag, x: 1, y: 2, text: "to 30,40")),
            ["$xclaw drag 1 2 30 40"])
        XCTAssertEqual(
            lines(RecordedStep(tool: "swipe", action: .swipe, x: 1, y: 2, text: "to 3,4")), ["$xclaw drag 1 2 3 4"])
        XCTAssertEqual(lines(RecordedStep(tool: "computer", action: .mouseMove, x: 1, y: 2)), ["$xclaw move 1 2"])
        XCTAssertEqual(lines(RecordedStep(tool: "computer", action: .leftMouseDown)), ["$xclaw mousedown"])
        XCTAssertEqual(lines(RecordedStep(tool: "computer", action: .leftMouseUp)), ["$xclaw mouseup"])
        for (tool, action) in [("launch_app", RecordedAction.launch), ("computer", .holdKey), ("x", .other("y"))] {
            XCTAssertEqual(
                lines(RecordedStep(tool: tool, action: action)),
                ["# not replayable by a command: \(tool) \(action.rawValue)"])
        }
    }

    func testEveryRecordingToolHasItsOwnNameAndTheReportFindsIt() {
        let names = RecordingTools.all.map { $0.toolName }
        XCTAssertEqual(Set(names).count, names.count)
        for name in names { XCTAssertTrue(RecordingTools.tool(named: name) != nil, name) }
        XCTAssertNil(RecordingTools.tool(named: "memory"))
    }
}

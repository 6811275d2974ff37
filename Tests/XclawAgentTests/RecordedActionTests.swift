import Foundation
import XCTest
import XclawAgent

/// Recorded actions are typed, but stored and printed as the strings xclaw always wrote: every known name reads as
/// its case and writes back byte for byte, and any other name still reads.
final class RecordedActionTests: XCTestCase {
    /// The names records carried before the enum, written out here so a renamed case cannot change them.
    static let names = [
        "left_click", "tap", "press", "click", "right_click", "middle_click", "double_click", "double_tap",
        "triple_click", "type", "type_submit", "type_text", "key", "press_button", "hold_key", "scroll",
        "left_click_drag", "swipe", "mouse_move", "left_mouse_down", "left_mouse_up", "launch", "zoom", "screenshot",
        "cursor_position", "wait",
    ]

    func testEveryKnownNameReadsAsItsCaseAndWritesBackTheSameBytes() throws {
        XCTAssertEqual(RecordedAction.known.map(\.rawValue), Self.names)
        XCTAssertEqual(Set(RecordedAction.known).count, Self.names.count)
        for name in Self.names {
            let action = RecordedAction(rawValue: name)
            if case .other = action { XCTFail("\(name) is known, not other") }
            XCTAssertEqual(action.rawValue, name)
            XCTAssertEqual("\(action)", name)
            let json = Data("\"\(name)\"".utf8)
            let decoded = try JSONDecoder().decode(RecordedAction.self, from: json)
            XCTAssertEqual(decoded, action)
            XCTAssertEqual(try JSONEncoder().encode(decoded), json)
        }
    }

    func testAnUnknownNameReadsAsOtherAndWritesBackTheSameBytes() throws {
        for name in ["frobnicate", "", "Left_Click", "left_click ", "fetch_url", "ünï"] {
            let json = try JSONEncoder().encode(name)
            let decoded = try JSONDecoder().decode(RecordedAction.self, from: json)
            XCTAssertEqual(decoded, .other(name))
            XCTAssertEqual(decoded.rawValue, name)
            XCTAssertEqual(try JSONEncoder().encode(decoded), json)
        }
        XCTAssertThrowsError(try JSONDecoder().decode(RecordedAction.self, from: Data("3".utf8)))
    }

    func testAnOtherHoldingAKnownNameIsThatCase() {
        for action in RecordedAction.known {
            let spelled = RecordedAction.other(action.rawValue)
            XCTAssertEqual(spelled, action, "equality goes by the name, as the records do")
            XCTAssertEqual(spelled.hashValue, action.hashValue)
            XCTAssertTrue(Set([action]).contains(spelled))
        }
        XCTAssertNotEqual(RecordedAction.other("tap "), .tap)
    }

    func testRecordsAndStepsKeepTheirJSONBytes() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let step = RecordedStep(tool: "computer", action: .leftClickDrag, x: 1, y: 2, text: "to 3,4")
        let stepJSON = String(decoding: try encoder.encode(step), as: UTF8.self)
        XCTAssertTrue(stepJSON.contains("\"action\":\"left_click_drag\""), stepJSON)
        let older = stepJSON.replacingOccurrences(of: "left_click_drag", with: "teleport")
        let read = try JSONDecoder().decode(RecordedStep.self, from: Data(older.utf8))
        XCTAssertEqual(read.action, .other("teleport"))
        XCTAssertEqual(String(decoding: try encoder.encode(read), as: UTF8.self), older)

        let record = ActionRecord(
            time: Date(timeIntervalSince1970: 0), tool: "type_text", action: .typeSubmit, text: "hi", result: "ok")
        let recordJSON = String(decoding: try encoder.encode(record), as: UTF8.self)
        XCTAssertTrue(recordJSON.contains("\"action\":\"type_submit\""), recordJSON)
        XCTAssertEqual(try JSONDecoder().decode(ActionRecord.self, from: Data(recordJSON.utf8)), record)
    }
}

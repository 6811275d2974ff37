import ArgumentParser
import Foundation
import XCTest
import XclawCommandLine

@testable import XclawCommands

/// What `notify`, `watch --notification` and `media` accept and refuse as bad usage (exit 2), in-process.
final class NotifyMediaParseTests: XCTestCase {
    /// The message of a refused command line, after checking it is bad usage.
    private func refusal(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try CommandRunner.parse(Xclaw.self, arguments: arguments)
            XCTFail("accepted: \(arguments)", file: file, line: line)
            return ""
        } catch {
            let failure = CommandRunner.failure(of: error, root: Xclaw.self)
            XCTAssertEqual(failure.status, 2, "\(arguments)", file: file, line: line)
            return failure.message ?? ""
        }
    }

    func testNotifyTakesActionsUrgencyAndAWaitWithItsTimeout() throws {
        let parsed = try CommandRunner.parse(
            Xclaw.self,
            arguments: [
                "notify", "Deploy?", "Version 2", "--action", "yes=Deploy now", "--action", "no", "--urgency",
                "critical", "--expire", "5000", "--wait", "--timeout", "30", "--app-name", "ci",
            ])
        let notify = try XCTUnwrap(parsed as? Notify)
        let request = notify.request
        XCTAssertEqual([request.title, request.body, request.appName], ["Deploy?", "Version 2", "ci"])
        XCTAssertEqual(request.actions.map(\.id), ["yes", "no"])
        XCTAssertEqual(request.actions.map(\.label), ["Deploy now", "no"])
        XCTAssertEqual(request.urgency, .critical)
        XCTAssertEqual(request.expireMilliseconds, 5000)
        XCTAssertEqual(notify.timeout, 30)
        XCTAssertTrue(refusal(["notify", "T", "--timeout", "5"]).contains("--timeout goes with --wait"))
        XCTAssertTrue(refusal(["notify", "T", "--action", "=Label"]).contains("non-empty ID"))
        XCTAssertTrue(refusal(["notify", "T", "--action", "a=1", "--action", "a=2"]).contains("must differ"))
        XCTAssertTrue(refusal(["notify", ""]).contains("title is empty"))
        XCTAssertTrue(refusal(["notify", "T", "--urgency", "urgent"]).contains("urgency"))
        XCTAssertTrue(refusal(["notify", "T", "--expire", "-5"]).contains("--expire"))
    }

    func testWatchNotificationIsOneConditionAndTakesNoScreenOption() throws {
        let watch = try XCTUnwrap(
            try CommandRunner.parse(Xclaw.self, arguments: ["watch", "--notification", "done", "--from", "ci"])
                as? Watch)
        XCTAssertEqual(watch.described, "a notification containing \"done\" from \"ci\"")
        XCTAssertTrue(refusal(["watch", "--notification", "a", "--text", "b"]).contains("exactly one of"))
        XCTAssertTrue(refusal(["watch", "--notification", "a", "--region", "0,0,5,5"]).contains("leave out --region"))
        XCTAssertTrue(refusal(["watch", "--notification", "a", "--window", "xterm"]).contains("not the screen"))
        XCTAssertTrue(refusal(["watch", "--notification", "a", "--class", "XTerm"]).contains("not the screen"))
        XCTAssertTrue(refusal(["watch", "--text", "a", "--from", "ci"]).contains("--from goes with --notification"))
    }

    func testMediaTakesSignedOffsetsAndDefaultsToTheList() throws {
        XCTAssertTrue(try CommandRunner.parse(Xclaw.self, arguments: ["media"]) is MediaList)
        XCTAssertTrue(try CommandRunner.parse(Xclaw.self, arguments: ["media", "--json"]) is MediaList)
        for (words, offset) in [(["-5"], -5.0), (["+10"], 10), (["2.5", "--player", "vlc"], 2.5)] {
            let seek = try XCTUnwrap(
                try CommandRunner.parse(Xclaw.self, arguments: ["media", "seek"] + words) as? MediaSeek)
            XCTAssertEqual(seek.offset, offset, "\(words)")
        }
        let chosen = try XCTUnwrap(
            try CommandRunner.parse(Xclaw.self, arguments: ["media", "seek", "--player", "vlc", "-5"]) as? MediaSeek)
        XCTAssertEqual(chosen.chooser.player, "vlc")
        XCTAssertEqual(chosen.offset, -5)
        XCTAssertTrue(refusal(["media", "seek"]).contains("give one offset"))
        XCTAssertTrue(refusal(["media", "seek", "forward"]).contains("give one offset"))
        XCTAssertTrue(refusal(["media", "seek", "nan"]).contains("give one offset"))
        XCTAssertTrue(refusal(["media", "position", "--", "-3"]).contains("SECONDS"))
        _ = refusal(["media", "pause", "--json"])  // an action prints its state as text only
    }
}

import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawTesting
import XclawTimeTesting

/// `xclaw media` against mpv with its MPRIS plugin on the class's private session bus, playing a generated tone;
/// mpv's own IPC is the oracle of what it does.
final class MediaCLITests: XCTestCase {
    /// The class's scene, started by its first test, or why it could not start (each test fails with it).
    private static let scene = ClassScene { try MediaScene() }

    override class func tearDown() {
        scene.stop()
        super.tearDown()
    }

    private var bus: TestSessionBus { get throws { try Self.scene.get().bus } }
    private var mpv: TestMediaPlayer { get throws { try Self.scene.get().mpv } }

    /// Runs `xclaw media …` on the class's bus and checks its exit status.
    @discardableResult
    private func media(_ arguments: [String], status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line)
        throws -> CLIResult
    {
        let result = try runCLI(["media"] + arguments, environment: try bus.environment)
        XCTAssertEqual(result.status, status, "\(arguments): \(result.stderr)", file: file, line: line)
        return result
    }

    func testListAndStatusShowMpvAndWhatItPlays() throws {
        try media(["play"])
        let list = try media([])
        XCTAssertTrue(
            list.text.hasPrefix("mpv: Playing \"Test tone\" by \"The Oscillators\" from \"Sine Waves\" at "), list.text)
        XCTAssertTrue(list.text.hasSuffix(" of 600.0 s\n"), list.text)
        let json = try media(["list", "--json"])
        let players = try XCTUnwrap(JSONValue.parse(json.stdout).array)
        XCTAssertEqual(players.count, 1)
        XCTAssertEqual(players.first?["title"]?.string, "Test tone")
        XCTAssertEqual(players.first?["status"]?.string, "playing")
        XCTAssertEqual(players.first?["bus_name"]?.string, try mpv.busName)
        let status = try media(["status", "--player", "MPV", "--json"])
        XCTAssertEqual(try JSONValue.parse(status.stdout)["artists"], ["The Oscillators"])
        XCTAssertEqual(
            try JSONSchemas.errors([
                .init(name: "media list", schema: "media-list", stdout: json.stdout),
                .init(name: "media status", schema: "media-status", stdout: status.stdout),
            ]), [])
    }

    func testPauseTogglesAndSeeksAsMpvItselfSays() throws {
        let mpv = try mpv
        let paused = try media(["pause"])
        XCTAssertTrue(paused.text.hasPrefix("mpv: Paused \"Test tone\""), paused.text)
        XCTAssertTrue(try XCTUnwrap(mpv.isPaused))
        let toggled = try media(["play-pause"])
        XCTAssertTrue(toggled.text.hasPrefix("mpv: Playing"), toggled.text)
        XCTAssertFalse(try XCTUnwrap(mpv.isPaused))
        try media(["play-pause"])
        XCTAssertTrue(try XCTUnwrap(mpv.isPaused))
        let placed = try media(["position", "30"])
        XCTAssertEqual(try XCTUnwrap(mpv.position), 30, accuracy: 0.5)
        // The state printed is read after the seek: "… at 29.8 of 600.0 s" (mpv lands near, not on, the second).
        let printed = try XCTUnwrap(placed.text.split(separator: " at ").last?.split(separator: " ").first)
        XCTAssertEqual(try XCTUnwrap(Double(printed)), 30, accuracy: 0.5, placed.text)
        // A negative offset is the offset, not an option. mpv may land half a second short of a backward seek.
        try media(["seek", "-10"])
        XCTAssertEqual(try XCTUnwrap(mpv.position), 20, accuracy: 1)
        let before = try XCTUnwrap(mpv.position)
        try media(["seek", "+5", "--player", "mpv"])
        XCTAssertEqual(try XCTUnwrap(mpv.position), before + 5, accuracy: 0.5)
        try media(["play"])
        XCTAssertFalse(try XCTUnwrap(mpv.isPaused))
    }

    func testNoPlayerIsExitOneAndSeveralWithoutOnePlayingIsExitTwo() throws {
        let empty = try TestSessionBus()
        let none = try runCLI(["media", "pause"], environment: empty.environment)
        XCTAssertEqual(none.status, 1, none.stderr)
        XCTAssertTrue(none.stderr.contains("no media player is running (MPRIS)"), none.stderr)
        let nothing = try runCLI(["media"], environment: empty.environment)
        XCTAssertEqual(nothing.status, 0, nothing.stderr)
        XCTAssertEqual(nothing.text, "")

        let second = try TestMediaPlayer(on: try bus, title: "Second Tone", paused: true)
        defer { second.stop() }
        try media(["pause", "--player", "mpv"])
        let several = try media(["play-pause"], status: 2)
        let suffix = String(second.busName.dropFirst("org.mpris.MediaPlayer2.".count))
        XCTAssertTrue(several.stderr.contains("name one (mpv, \(suffix))"), several.stderr)
        XCTAssertTrue(try XCTUnwrap(second.isPaused))
        let missing = try media(["status", "--player", "vlc"], status: 1)
        XCTAssertTrue(missing.stderr.contains("no media player is called \"vlc\""), missing.stderr)
        try media(["play", "--player", "mpv"])
    }
}

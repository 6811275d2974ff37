import Foundation
import XCTest
import XclawBase
import XclawPolling
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// MPRIS against a real player: mpv with its MPRIS plugin on the class's private session bus, playing a generated
/// tone; mpv's own IPC is the oracle of what it does.
final class MediaServiceTests: XCTestCase {
    /// The class's scene, started by its first test, or why it could not start (each test fails with it).
    private static let scene = ClassScene { try MediaScene() }

    override class func tearDown() {
        scene.stop()
        super.tearDown()
    }

    private var bus: TestSessionBus { get throws { try Self.scene.get().bus } }
    private var mpv: TestMediaPlayer { get throws { try Self.scene.get().mpv } }
    private var players: MediaPlayers {
        get throws { MediaPlayers(connection: try BusConnection.session(environment: try bus.environment)) }
    }

    func testThePlayerIsListedWithWhatItPlays() throws {
        let players = try players
        let mpv = try mpv
        _ = try MediaControl(players: players).perform(.play, on: try players.choose("mpv"))
        let listed = try players.list()
        XCTAssertEqual(listed.count, 1)
        let player = try XCTUnwrap(listed.first)
        XCTAssertEqual(player.name, "mpv")
        XCTAssertEqual(player.busName, mpv.busName)
        XCTAssertEqual(player.identity, "mpv")
        XCTAssertEqual(player.status, .playing)
        XCTAssertEqual(player.title, "Test tone")
        XCTAssertEqual(player.artists, ["The Oscillators"])
        XCTAssertEqual(player.album, "Sine Waves")
        XCTAssertEqual(try XCTUnwrap(player.lengthSeconds), 600, accuracy: 0.5)
        XCTAssertNotNil(player.positionSeconds)
        XCTAssertTrue(player.canSeek)
        XCTAssertTrue(
            player.summary.hasPrefix("mpv: Playing \"Test tone\" by \"The Oscillators\" from \"Sine Waves\" at "))
    }

    func testPausePlayAndPlayPauseAreReadBackAndMpvAgrees() throws {
        let players = try players
        let mpv = try mpv
        let control = MediaControl(players: players)
        let paused = try XCTUnwrap(try control.perform(.pause, on: try players.choose()))
        XCTAssertEqual(paused.status, .paused)
        XCTAssertTrue(try XCTUnwrap(mpv.isPaused))
        let toggled = try XCTUnwrap(try control.perform(.playPause, on: paused))
        XCTAssertEqual(toggled.status, .playing)
        XCTAssertFalse(try XCTUnwrap(mpv.isPaused))
        let again = try XCTUnwrap(try control.perform(.playPause, on: toggled))
        XCTAssertEqual(again.status, .paused)
        XCTAssertTrue(try XCTUnwrap(mpv.isPaused))
        XCTAssertEqual(try control.perform(.play, on: again)?.status, .playing)
        XCTAssertFalse(try XCTUnwrap(mpv.isPaused))
    }

    func testSeekAndPositionMoveWhereMpvPlays() throws {
        let players = try players
        let mpv = try mpv
        let control = MediaControl(players: players)
        // Paused, so the position stays where the requests put it.
        let player = try XCTUnwrap(try control.perform(.pause, on: try players.choose()))
        let placed = try XCTUnwrap(try control.perform(.position(30), on: player))
        XCTAssertEqual(try XCTUnwrap(mpv.position), 30, accuracy: 0.5)
        XCTAssertEqual(try XCTUnwrap(placed.positionSeconds), 30, accuracy: 0.5)
        _ = try control.perform(.seek(10), on: placed)
        XCTAssertEqual(try XCTUnwrap(mpv.position), 40, accuracy: 0.5)
        // mpv lands up to half a second short of a backward seek's target, exact seeks or not: a second's leeway.
        let back = try XCTUnwrap(try control.perform(.seek(-15), on: placed))
        XCTAssertEqual(try XCTUnwrap(mpv.position), 25, accuracy: 1)
        XCTAssertEqual(try XCTUnwrap(back.positionSeconds), try XCTUnwrap(mpv.position), accuracy: 0.1)
        _ = try control.perform(.play, on: back)
    }

    func testAPlayerIsChosenByNameElseTheOnePlayingElseRefusedAsAmbiguous() throws {
        let players = try players
        let first = try mpv
        let control = MediaControl(players: players)
        _ = try control.perform(.play, on: try players.choose("mpv"))
        let second = try TestMediaPlayer(on: try bus, title: "Second Tone", paused: true)
        defer { second.stop() }
        let suffix = String(second.busName.dropFirst(MediaPlayers.prefix.count))
        XCTAssertEqual(try players.choose().busName, first.busName, "the one playing")
        XCTAssertEqual(try players.choose("mpv").busName, first.busName, "an exact name wins over a part of one")
        XCTAssertEqual(try players.choose("INSTANCE").busName, second.busName)
        XCTAssertThrowsError(try players.choose("vlc")) { error in
            XCTAssertEqual(error as? MediaError, .noMatch("vlc", players: ["mpv", suffix]))
            XCTAssertEqual((error as? MediaError)?.exitStatus, .notFound)
        }
        _ = try control.perform(.pause, on: try players.choose("mpv"))
        XCTAssertThrowsError(try players.choose()) { error in
            XCTAssertEqual(error as? MediaError, .ambiguous(["mpv", suffix]))
            XCTAssertEqual((error as? MediaError)?.exitStatus, .usage)
            XCTAssertTrue("\(error)".contains("name one (mpv, "), "\(error)")
        }
        // mpv quits on Stop: the player is gone afterwards, and the bus says so.
        XCTAssertNil(try control.perform(.stop, on: try players.choose("instance")))
        XCTAssertTrue(second.process.exits(within: .seconds(10)))
        XCTAssertEqual(try players.list().map(\.busName), [first.busName])
        _ = try control.perform(.play, on: try players.choose())
    }

    func testNoPlayerIsNotFound() throws {
        let empty = try TestSessionBus()
        let players = MediaPlayers(connection: try BusConnection.session(environment: empty.environment))
        XCTAssertEqual(try players.list(), [])
        XCTAssertThrowsError(try players.choose()) { error in
            XCTAssertEqual(error as? MediaError, .noPlayer)
            XCTAssertEqual((error as? MediaError)?.exitStatus, .notFound)
            XCTAssertTrue("\(error)".hasPrefix("no media player is running (MPRIS)"), "\(error)")
        }
    }
}

extension Subprocess {
    /// Whether it exited within `within`.
    fileprivate func exits(within: Duration) -> Bool { poll(within: within) { isRunning ? nil : true } ?? false }
}

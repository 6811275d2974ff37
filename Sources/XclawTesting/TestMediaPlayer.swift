import Foundation
import XclawBase
import XclawPolling

/// A real MPRIS media player for a test: mpv with Debian's MPRIS plugin on the test's private session bus, playing a
/// generated tone (a WAV file whose tags give the title, artist and album) with no audio device and no window,
/// looping. Its own IPC socket is the oracle of what it does (`pause`, `time-pos`), read without the bus the code
/// under test uses.
public final class TestMediaPlayer: @unchecked Sendable {
    /// The well-known name the plugin took (`org.mpris.MediaPlayer2.mpv`, or `….mpv.instancePID` for a second mpv).
    public let busName: String
    /// mpv's IPC socket.
    public let ipc: String
    /// The mpv process.
    public let process: Subprocess
    private let socket: UnixSocket

    /// Starts mpv on `bus` playing a tone of `seconds` tagged with `title`, `artist` and `album` (`paused`: paused
    /// from the start), and waits until it is on the bus, says what it plays, and its IPC answers.
    public init(
        on bus: TestSessionBus, title: String = "Test tone", artist: String = "The Oscillators",
        album: String = "Sine Waves", seconds: Int = 600, paused: Bool = false
    ) throws {
        let stem = "\(bus.directory)/mpv-\(UUID().uuidString.prefix(8))"
        try Self.tone(seconds: seconds, title: title, artist: artist, album: album).write(
            to: URL(fileURLWithPath: stem + ".wav"))
        let ipc = stem + ".sock"
        self.ipc = ipc
        process = try bus.start(
            [
                "/usr/bin/mpv", "--no-config", "--script=/etc/mpv/scripts/mpris.so", "--ao=null", "--vo=null",
                // Seeks to the time asked for, not to the nearest index point before it.
                "--idle=no", "--loop-file=inf", "--hr-seek=yes", "--input-ipc-server=" + ipc,
                "--pause=" + (paused ? "yes" : "no"),
                stem + ".wav",
            ], log: URL(fileURLWithPath: stem).lastPathComponent)
        let pid = process.pid
        // The plugin takes `mpv`, or `mpv.instancePID` when another mpv has it: the one whose owner is this process,
        // once it publishes the file's tags (the file's name stands for its title until mpv has read them).
        let names = ["org.mpris.MediaPlayer2.mpv.instance\(pid)", "org.mpris.MediaPlayer2.mpv"]
        let found = poll(within: .seconds(10), every: .milliseconds(20)) { () -> String? in
            names.first { Self.ownerPID(of: $0, bus: bus) == pid && Self.publishes(title, name: $0, bus: bus) }
        }
        guard let found, let connected = try? UnixSocket.connect(path: ipc) else {
            _ = process.kill()
            throw TestSessionBus.Failure(
                description: "mpv did not come on the bus: \(bus.log(URL(fileURLWithPath: stem).lastPathComponent)); "
                    + "run scripts/install-deps.sh (mpv, mpv-mpris)")
        }
        busName = found
        socket = connected
    }

    deinit {
        socket.close()
        _ = process.kill()
    }

    /// The pid owning `name` on `bus`, through `gdbus` (a client independent of xclaw's).
    static func ownerPID(of name: String, bus: TestSessionBus) -> pid_t? {
        let outcome = try? Subprocess.run(
            [
                "/usr/bin/gdbus", "call", "--address", bus.address, "--dest", "org.freedesktop.DBus", "--object-path",
                "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", name,
            ], timeout: .seconds(5))
        guard let outcome, outcome.ending == .exited(0) else { return nil }
        // `(uint32 1234,)`
        let digits = String(decoding: outcome.stdout, as: UTF8.self).split(whereSeparator: { !$0.isNumber }).last
        return digits.flatMap { pid_t($0) }
    }

    /// Whether the player `name` on `bus` says `title` is playing (its MPRIS `Metadata`, through `gdbus`).
    static func publishes(_ title: String, name: String, bus: TestSessionBus) -> Bool {
        let outcome = try? Subprocess.run(
            [
                "/usr/bin/gdbus", "call", "--address", bus.address, "--dest", name, "--object-path",
                "/org/mpris/MediaPlayer2", "--method", "org.freedesktop.DBus.Properties.Get",
                "org.mpris.MediaPlayer2.Player", "Metadata",
            ], timeout: .seconds(5))
        guard let outcome, outcome.ending == .exited(0) else { return false }
        return String(decoding: outcome.stdout, as: UTF8.self).contains("'xesam:title': <'\(title)'>")
    }

    /// A property read through mpv's IPC (`pause`, `time-pos`, `media-title`): its `data`, as JSON.
    public func property(_ name: String) throws -> Any? {
        let request = "{\"command\":[\"get_property\",\"\(name)\"],\"request_id\":1}\n"
        guard socket.write(Data(request.utf8)) else {
            throw TestSessionBus.Failure(description: "mpv's IPC socket closed (mpv quit?)")
        }
        // Events come on the same socket; the reply is the line with the request's id.
        let deadline = ContinuousClock.now + .seconds(5)
        while let line = socket.readLine(deadline: deadline) {
            guard let reply = try JSONSerialization.jsonObject(with: line) as? [String: Any],
                reply["request_id"] as? Int == 1
            else { continue }
            guard reply["error"] as? String == "success" else {
                throw TestSessionBus.Failure(description: "mpv's get_property \(name): \(reply)")
            }
            return reply["data"]
        }
        throw TestSessionBus.Failure(description: "mpv's IPC did not answer get_property \(name)")
    }

    /// Whether mpv says it is paused; nil when it does not answer.
    public var isPaused: Bool? { (try? property("pause")) as? Bool }

    /// mpv's playback position in seconds; nil when it does not answer.
    public var position: Double? { (try? property("time-pos")) as? Double }

    /// Ends mpv.
    public func stop() { _ = process.kill() }

    /// A mono WAV of a 440 Hz sine, 8-bit at 2 kHz (ten minutes in 1.2 MB: nobody listens; mpv's null output
    /// refuses 1 kHz), its LIST/INFO chunk naming title (INAM), artist (IART) and album (IPRD), which mpv reads as
    /// tags.
    static func tone(seconds: Int, title: String, artist: String, album: String) -> Data {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> ($0 * 8)) & 0xff) } }
        func le16(_ v: Int) -> [UInt8] { (0..<2).map { UInt8((v >> ($0 * 8)) & 0xff) } }
        func chunk(_ tag: String, _ body: [UInt8]) -> [UInt8] {
            Array(tag.utf8) + le32(body.count) + body + (body.count % 2 == 1 ? [0] : [])
        }
        let rate = 2000
        let samples = (0..<(rate * seconds)).map { i in
            UInt8(128 + (sin(2 * Double.pi * 440 * Double(i) / Double(rate)) * 100).rounded())
        }
        let info =
            Array("INFO".utf8) + chunk("INAM", Array(title.utf8) + [0]) + chunk("IART", Array(artist.utf8) + [0])
            + chunk("IPRD", Array(album.utf8) + [0])
        let format = le16(1) + le16(1) + le32(rate) + le32(rate) + le16(1) + le16(8)
        let body = Array("WAVE".utf8) + chunk("fmt ", format) + chunk("LIST", info) + chunk("data", samples)
        return Data(Array("RIFF".utf8) + le32(body.count) + body)
    }
}

/// A private session bus and an mpv playing on it: what a media test class starts once.
public final class MediaScene: StoppableScene, @unchecked Sendable {
    /// The bus.
    public let bus: TestSessionBus
    /// The player.
    public let mpv: TestMediaPlayer

    /// Starts both.
    public init() throws {
        bus = try TestSessionBus()
        mpv = try TestMediaPlayer(on: bus)
    }

    /// Ends both.
    public func stop() {
        mpv.stop()
        bus.stop()
    }
}

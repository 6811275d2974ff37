import Foundation
import XclawBase
import XclawMessages

/// What can be asked of a media player.
public enum MediaAction: Sendable, Hashable {
    /// `Play`.
    case play
    /// `Pause`.
    case pause
    /// `PlayPause`: pause when playing, else play.
    case playPause
    /// `Stop` (some players, mpv among them, quit on it).
    case stop
    /// `Next` track.
    case next
    /// `Previous` track.
    case previous
    /// `Seek` by this many seconds (negative: back).
    case seek(Double)
    /// `SetPosition` to this many seconds into the track.
    case position(Double)

    /// The verb, for messages and the approval gate's label ("pause", "seek").
    public var verb: String {
        switch self {
        case .play: return "play"
        case .pause: return "pause"
        case .playPause: return "play-pause"
        case .stop: return "stop"
        case .next: return "skip to the next track on"
        case .previous: return "go back to the previous track on"
        case .seek(let s): return "seek \(s < 0 ? "back" : "forward") \(MediaPlayer.seconds(abs(s))) s on"
        case .position(let s): return "move to \(MediaPlayer.seconds(s)) s on"
        }
    }
}

/// Drives one MPRIS player and reads back what the request did: a player changes its state after it answers, so the
/// new state is waited for (its `PropertiesChanged` or `Seeked` signal, at most `settle`) before it is read.
public struct MediaControl: Sendable {
    /// The players, and the connection they are reached on.
    public let players: MediaPlayers
    /// How long a request's effect is waited for before the state is read anyway.
    public var settle: Duration

    /// A control over `players`' connection.
    public init(players: MediaPlayers, settle: Duration = .seconds(1)) {
        (self.players, self.settle) = (players, settle)
    }

    /// Asks `player` for `action` and returns its state afterwards; nil when the player left the bus (mpv quits on
    /// stop).
    public func perform(_ action: MediaAction, on player: MediaPlayer) throws -> MediaPlayer? {
        let connection = players.connection
        let service = MediaPlayers.service(player.busName)
        // Asked for before the request, so a quick change is not missed; matched by the well-known name.
        let signals =
            "type='signal',sender='\(player.busName)',path='\(MediaPlayers.path)',"
        try connection.subscribe(
            signals + "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        try connection.subscribe(signals + "interface='\(MediaPlayers.playerInterface)',member='Seeked'")
        // Signals queued by an earlier request are not this one's; the owner tells this player's from another's.
        while try connection.next(timeout: .zero) != nil {}
        let owner = try connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "GetNameOwner", [.string(player.busName)], service: service
        ).first?.string
        var arguments: [BusValue] = []
        let method: String
        var expected: PlaybackStatus?
        switch action {
        case .play: (method, expected) = ("Play", .playing)
        case .pause: (method, expected) = ("Pause", .paused)
        case .playPause: (method, expected) = ("PlayPause", player.status == .playing ? .paused : .playing)
        case .stop: (method, expected) = ("Stop", .stopped)
        case .next:
            guard player.canGoNext else {
                throw MediaError.unsupported(player: player.name, what: "go to a next track")
            }
            method = "Next"
        case .previous:
            guard player.canGoPrevious else {
                throw MediaError.unsupported(player: player.name, what: "go to a previous track")
            }
            method = "Previous"
        case .seek(let seconds):
            guard player.canSeek else { throw MediaError.unsupported(player: player.name, what: "seek") }
            method = "Seek"
            arguments = [.int64(Int64((seconds * 1_000_000).rounded()))]
        case .position(let seconds):
            guard player.canSeek else { throw MediaError.unsupported(player: player.name, what: "seek") }
            guard let track = player.trackID, !track.isEmpty else {
                throw MediaError.unsupported(player: player.name, what: "move to a position: it names no track")
            }
            method = "SetPosition"
            arguments = [.objectPath(track), .int64(Int64((seconds * 1_000_000).rounded()))]
        }
        _ = try connection.call(
            service, path: MediaPlayers.path, interface: MediaPlayers.playerInterface, method: method, arguments)
        return try readBack(
            player, owner: owner, expected: expected, seeking: method == "Seek" || method == "SetPosition")
    }

    /// The player's state once the request shows: its status is `expected` (when there is one; read again at each
    /// signal of the player), or it signalled the seek or the change, or `settle` passed; nil when it left the bus.
    private func readBack(_ player: MediaPlayer, owner: String?, expected: PlaybackStatus?, seeking: Bool) throws
        -> MediaPlayer?
    {
        let connection = players.connection
        guard let expected else {
            // Without a status to reach, the player's first signal is the change (a new track, a seek).
            let member = seeking ? "Seeked" : "PropertiesChanged"
            _ = try connection.next(within: settle) { $0.sender == owner && $0.member == member }
            return try current(player)
        }
        let deadline = ContinuousClock.now + settle
        while true {
            guard let now = try current(player) else { return nil }
            if now.status == expected { return now }
            let left = deadline - ContinuousClock.now
            guard left > .zero, try connection.next(within: left, where: { $0.sender == owner }) != nil else {
                return try current(player)
            }
        }
    }

    /// The player's state, or nil when it left the bus.
    private func current(_ player: MediaPlayer) throws -> MediaPlayer? {
        try players.statusIfPresent(of: player.busName)
    }
}

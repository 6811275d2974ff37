import Foundation
import XclawBase
import XclawMessages

/// Whether a player plays (MPRIS `PlaybackStatus`).
public enum PlaybackStatus: String, Sendable, Codable, Hashable {
    /// Playing.
    case playing
    /// Paused: play resumes where it stopped.
    case paused
    /// Stopped.
    case stopped
    /// The player said something else, or nothing.
    case unknown

    /// MPRIS's word (`Playing`, `Paused`, `Stopped`).
    init(mpris: String?) { self = mpris.flatMap { Self(rawValue: $0.lowercased()) } ?? .unknown }

    /// As MPRIS writes it.
    public var word: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
}

/// One MPRIS media player on the bus and what it plays. Title, artists and album are the player's (from the file's
/// tags, or a web page's): data, never instructions.
public struct MediaPlayer: Sendable, Hashable, Codable {
    /// The bus name's suffix after `org.mpris.MediaPlayer2.` (`mpv`, `vlc`, `firefox.instance_1_42`).
    public var name: String
    /// The whole bus name.
    public var busName: String
    /// The player's own name for itself (`Identity`).
    public var identity: String
    /// Playing, paused or stopped.
    public var status: PlaybackStatus
    /// `xesam:title`.
    public var title: String?
    /// `xesam:artist`.
    public var artists: [String]
    /// `xesam:album`.
    public var album: String?
    /// Where playback is, in seconds (nil when the player does not say).
    public var positionSeconds: Double?
    /// The track's length in seconds (`mpris:length`).
    public var lengthSeconds: Double?
    /// `mpris:trackid`, which `SetPosition` needs.
    public var trackID: String?
    /// Whether it accepts `Seek` and `SetPosition`.
    public var canSeek: Bool
    /// Whether it accepts `Next`.
    public var canGoNext: Bool
    /// Whether it accepts `Previous`.
    public var canGoPrevious: Bool

    enum CodingKeys: String, CodingKey {
        case name, identity, status, title, artists, album
        case busName = "bus_name"
        case positionSeconds = "position_s"
        case lengthSeconds = "length_s"
        case trackID = "track_id"
        case canSeek = "can_seek"
        case canGoNext = "can_go_next"
        case canGoPrevious = "can_go_previous"
    }

    /// One line: the name, the status, and what plays, with the player's words quoted.
    public var summary: String {
        var line = name + (identity.isEmpty || identity == name ? "" : " (\(UntrustedText.escaped(identity)))")
        line += ": " + status.word
        if let title, !title.isEmpty { line += " " + UntrustedText.quoted(title, limit: 120) }
        if !artists.isEmpty {
            line += " by " + artists.map { UntrustedText.quoted($0, limit: 80) }.joined(separator: ", ")
        }
        if let album, !album.isEmpty { line += " from " + UntrustedText.quoted(album, limit: 80) }
        if let position = positionSeconds {
            line += " at " + Self.seconds(position) + (lengthSeconds.map { " of " + Self.seconds($0) } ?? "") + " s"
        } else if let length = lengthSeconds {
            line += " (" + Self.seconds(length) + " s)"
        }
        return line
    }

    /// Seconds with one decimal.
    static func seconds(_ value: Double) -> String { String(format: "%.1f", value) }
}

/// Why a media player could not be found or driven, with what to do. No player, or none by that name: exit 1; several
/// and nothing to choose between them: exit 2 (say which with --player).
public enum MediaError: ClassifiedError, Equatable {
    /// Nothing on the bus speaks MPRIS.
    case noPlayer
    /// No player's name or identity contains the name asked for.
    case noMatch(String, players: [String])
    /// Several players, and none or several of them playing.
    case ambiguous([String])
    /// The player refuses this kind of request (`CanSeek`, `CanGoNext` false), or gives no track to seek in.
    case unsupported(player: String, what: String)

    /// 2 when a player must be named; 1 otherwise.
    public var exitStatus: ExitStatus {
        switch self {
        case .ambiguous: return .usage
        case .noPlayer, .noMatch, .unsupported: return .notFound
        }
    }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .noPlayer:
            return "no media player is running (MPRIS): start one (mpv with its MPRIS plugin, vlc, a browser playing "
                + "media), or use the screen"
        case .noMatch(let name, let players):
            return "no media player is called \"\(name)\"; running: \(players.joined(separator: ", "))"
        case .ambiguous(let players):
            return "\(players.count) media players run and not exactly one of them is playing: name one "
                + "(\(players.joined(separator: ", ")))"
        case .unsupported(let player, let what):
            return "\(player) cannot \(what)"
        }
    }
}

/// The MPRIS media players on the caller's session bus: listing them with what they play, and choosing one.
public struct MediaPlayers: Sendable {
    /// The prefix of every MPRIS player's bus name.
    public static let prefix = "org.mpris.MediaPlayer2."
    /// The object every player exports.
    public static let path = "/org/mpris/MediaPlayer2"
    /// The root interface (`Identity`).
    static let rootInterface = "org.mpris.MediaPlayer2"
    /// The player interface (`PlaybackStatus`, `Metadata`, `Play`…).
    static let playerInterface = "org.mpris.MediaPlayer2.Player"

    /// The errors of a call to an object that is not (or no longer) there.
    static let noObject: Set<String> = [
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownObject",
        "org.freedesktop.DBus.Error.UnknownInterface",
    ]

    /// The connection the players are reached on.
    public let connection: BusConnection

    /// The players reached on `connection`.
    public init(connection: BusConnection) { self.connection = connection }

    /// A player's bus name, named for messages.
    static func service(_ busName: String) -> BusService {
        BusService(
            name: busName, what: "media player \(busName.dropFirst(prefix.count))",
            hint: "it may have quit: list the players to see those that run")
    }

    /// Every player on the bus, by name; one that leaves while it is being read is left out.
    public func list() throws -> [MediaPlayer] {
        try connection.names().filter { $0.hasPrefix(Self.prefix) }.sorted().compactMap(statusIfPresent)
    }

    /// What the player owning `busName` plays now, or nil when it left the bus. A player that quits while it is
    /// asked first takes its object away (the call fails as an unknown method or object), then leaves the call
    /// unanswered (the bus says NoReply, as for a timeout): it is gone when its name has no owner any more.
    public func statusIfPresent(of busName: String) throws -> MediaPlayer? {
        do {
            return try status(of: busName)
        } catch BusError.absent {
            return nil
        } catch BusError.failed(_, let name, _) where Self.noObject.contains(name) {
            return nil
        } catch BusError.timedOut(let call, let ms) {
            if try !connection.hasOwner(busName) { return nil }
            throw BusError.timedOut(call: call, milliseconds: ms)
        }
    }

    /// What the player owning `busName` plays now.
    public func status(of busName: String) throws -> MediaPlayer {
        let service = Self.service(busName)
        let root = try connection.properties(service, path: Self.path, interface: Self.rootInterface)
        let player = try connection.properties(service, path: Self.path, interface: Self.playerInterface)
        let metadata = player["Metadata"]?.object ?? [:]
        let artists =
            metadata["xesam:artist"]?.array?.compactMap(\.string) ?? metadata["xesam:artist"]?.string.map {
                [$0]
            } ?? []
        return MediaPlayer(
            name: String(busName.dropFirst(Self.prefix.count)), busName: busName,
            identity: root["Identity"]?.string ?? "", status: PlaybackStatus(mpris: player["PlaybackStatus"]?.string),
            title: metadata["xesam:title"]?.string, artists: artists, album: metadata["xesam:album"]?.string,
            positionSeconds: player["Position"]?.double.map { $0 / 1_000_000 },
            lengthSeconds: metadata["mpris:length"]?.double.map { $0 / 1_000_000 },
            trackID: metadata["mpris:trackid"]?.string, canSeek: player["CanSeek"]?.bool ?? false,
            canGoNext: player["CanGoNext"]?.bool ?? false, canGoPrevious: player["CanGoPrevious"]?.bool ?? false)
    }

    /// The player to act on: the one `name` names (a case-insensitive part of its bus-name suffix or identity; an
    /// exact suffix wins), else the one playing, else the only one.
    public func choose(_ name: String? = nil) throws -> MediaPlayer {
        try Self.choose(name, from: try list())
    }

    /// `choose` over a list already read.
    public static func choose(_ name: String?, from players: [MediaPlayer]) throws -> MediaPlayer {
        guard !players.isEmpty else { throw MediaError.noPlayer }
        let names = players.map(\.name)
        var candidates = players
        if let name, !name.isEmpty {
            if let exact = players.first(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) {
                return exact
            }
            candidates = players.filter {
                $0.name.localizedCaseInsensitiveContains(name) || $0.identity.localizedCaseInsensitiveContains(name)
            }
            guard !candidates.isEmpty else { throw MediaError.noMatch(name, players: names) }
            if candidates.count == 1 { return candidates[0] }
        }
        let playing = candidates.filter { $0.status == .playing }
        if playing.count == 1 { return playing[0] }
        if candidates.count == 1 { return candidates[0] }
        throw MediaError.ambiguous(candidates.map(\.name))
    }
}

import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawServices

/// `xclaw media`: the MPRIS media players of the caller's session bus: what they play, and play/pause/seek.
struct MediaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "media",
        abstract: "List the media players (MPRIS) and what they play; play, pause, skip and seek them.",
        discussion: """
            Talks to the players on the caller's session bus through MPRIS (mpv with its MPRIS plugin, vlc, \
            Spotify, Rhythmbox, browsers playing media…), so nothing on screen is needed. An action picks its \
            player by --player (part of its bus name or identity), else the one playing, else the only one, and \
            prints the player's state once the action shows.
            Exits 1 when no player runs or none has that name; 2 when several run and not exactly one plays (name \
            one with --player); 5 without a session bus.
            Examples:
              xclaw media  # the players, their state and what they play
              xclaw media pause
            """,
        subcommands: [
            MediaList.self, MediaStatus.self, MediaPlay.self, MediaPause.self, MediaPlayPause.self, MediaStop.self,
            MediaNext.self, MediaPrevious.self, MediaSeek.self, MediaPosition.self,
        ],
        defaultSubcommand: MediaList.self)
}

/// Which player an action or `status` is for.
struct MediaPlayerOption: ParsableArguments {
    @Option(help: "The player: part of its bus name or identity (mpv, vlc, spotify); default: the one playing.")
    var player: String?
}

/// What the media commands share: the caller's players, and acting on the chosen one.
enum MediaCommandSupport {
    /// The players on the caller's session bus.
    static func players() throws -> MediaPlayers {
        MediaPlayers(connection: try BusConnection.session(environment: Invocation.current.environment))
    }

    /// Chooses the player `name` names (or the one playing) and asks it for `action`; prints its state afterwards.
    static func act(_ action: MediaAction, player name: String?) throws {
        let players = try players()
        let player = try players.choose(name)
        guard let after = try MediaControl(players: players).perform(action, on: player) else {
            return writeOut("\(player.name): it quit (it is no longer on the bus)\n")
        }
        try emit(after, json: false) { after.summary }
    }
}

/// `xclaw media list`.
struct MediaList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "The media players on the session bus: name, identity, state and what plays (the default).",
        discussion: """
            One line per player: its bus name's suffix (what --player takes), its identity, Playing, Paused or \
            Stopped, the title, artists and album, and the position and length in seconds. No player prints \
            nothing and exits 0.
            Examples:
              xclaw media list --json
            """)
    @Flag(help: "Print JSON: an array of players.") var json = false

    func run() throws {
        let players = try MediaCommandSupport.players().list()
        try emit(players, json: json) { players.map(\.summary).joined(separator: "\n") }
    }
}

/// `xclaw media status`.
struct MediaStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "What one player plays: state, title, artists, album, position and length.",
        discussion: """
            The player is chosen as for an action: --player, else the one playing, else the only one.
            Examples:
              xclaw media status --json
              xclaw media status --player vlc
            """)
    @OptionGroup var chooser: MediaPlayerOption
    @Flag(help: "Print JSON: the player.") var json = false

    func run() throws {
        let player = try MediaCommandSupport.players().choose(chooser.player)
        try emit(player, json: json) { player.summary }
    }
}

/// A media subcommand that asks its player for one fixed action.
protocol MediaActionCommand: ParsableCommand {
    /// The player option.
    var chooser: MediaPlayerOption { get }
    /// What the player is asked.
    var action: MediaAction { get }
}

extension MediaActionCommand {
    /// Acts and prints the player's new state.
    func run() throws { try MediaCommandSupport.act(action, player: chooser.player) }
}

/// `xclaw media play`.
struct MediaPlay: MediaActionCommand {
    static let configuration = CommandConfiguration(
        commandName: "play", abstract: "Start or resume playback.",
        discussion: """
            Examples:
              xclaw media play --player mpv
            """)
    @OptionGroup var chooser: MediaPlayerOption
    var action: MediaAction { .play }
}

/// `xclaw media pause`.
struct MediaPause: MediaActionCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Pause playback (play resumes where it stopped).",
        discussion: """
            Examples:
              xclaw media pause
            """)
    @OptionGroup var chooser: MediaPlayerOption
    var action: MediaAction { .pause }
}

/// `xclaw media play-pause`.
struct MediaPlayPause: MediaActionCommand {
    static let configuration = CommandConfiguration(
        commandName: "play-pause", abstract: "Pause when playing, else play (a media key's toggle).",
        discussion: """
            Examples:
              xclaw media play-pause
            """)
    @OptionGroup var chooser: MediaPlayerOption
    var action: MediaAction { .playPause }
}

/// `xclaw media stop`.
struct MediaStop: MediaActionCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop", abstract: "Stop playback (some players, mpv among them, quit).",
        discussion: """
            Examples:
              xclaw media stop --player vlc
            """)
    @OptionGroup var chooser: MediaPlayerOption
    var action: MediaAction { .stop }
}

/// `xclaw media next`.
struct MediaNext: MediaActionCommand {
    static let configuration = CommandConfiguration(
        commandName: "next", abstract: "Skip to the next track.",
        discussion: """
            Exits 1 when the player cannot go to a next track.
            Examples:
              xclaw media next
            """)
    @OptionGroup var chooser: MediaPlayerOption
    var action: MediaAction { .next }
}

/// `xclaw media previous`.
struct MediaPrevious: MediaActionCommand {
    static let configuration = CommandConfiguration(
        commandName: "previous", abstract: "Go back to the previous track.",
        discussion: """
            Exits 1 when the player cannot go to a previous track.
            Examples:
              xclaw media previous
            """)
    @OptionGroup var chooser: MediaPlayerOption
    var action: MediaAction { .previous }
}

/// `xclaw media seek OFFSET`.
struct MediaSeek: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seek", abstract: "Move playback by OFFSET seconds: +10 forward, -5 back.",
        discussion: """
            Exits 1 when the player cannot seek.
            Examples:
              xclaw media seek +30
              xclaw media seek -10  # ten seconds back
            """)
    // All unrecognized, so that `-10` is the offset rather than an unknown option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Seconds to move, signed.", valueName: "offset"))
    var words: [String] = []
    @OptionGroup var chooser: MediaPlayerOption

    /// The offset in seconds.
    var offset: Double? { words.count == 1 ? Double(words[0]).flatMap { $0.isFinite ? $0 : nil } : nil }

    func validate() throws {
        guard let offset else {
            let given = words.isEmpty ? "" : ", not \(words.joined(separator: " "))"
            throw ValidationError("give one offset in seconds, such as +10 or -5\(given)")
        }
        try requireRange(offset, -86_400...86_400, "the offset", "seconds")
    }

    func run() throws { try MediaCommandSupport.act(.seek(offset ?? 0), player: chooser.player) }
}

/// `xclaw media position SECONDS`.
struct MediaPosition: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "position", abstract: "Move playback to SECONDS into the track.",
        discussion: """
            Exits 1 when the player cannot seek or names no track.
            Examples:
              xclaw media position 90
            """)
    @Argument(help: "Seconds from the track's start.") var seconds: Double
    @OptionGroup var chooser: MediaPlayerOption

    func validate() throws { try requireRange(seconds, 0...604_800, "SECONDS", "") }

    func run() throws { try MediaCommandSupport.act(.position(seconds), player: chooser.player) }
}

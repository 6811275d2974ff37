import Foundation
import XclawAgent
import XclawBase
import XclawMessages
import XclawServices

/// `media`: the media players of the session bus (MPRIS): what plays, and play, pause, skip, seek, in one call and
/// without looking at the screen.
public struct MediaTool: AgentTool {
    /// Where the session bus is found (`DBUS_SESSION_BUS_ADDRESS`, `XDG_RUNTIME_DIR`).
    public let environment: [String: String]

    /// Creates the tool; `environment` defaults to the running command's (the caller's when the daemon serves it).
    public init(environment: [String: String] = Invocation.current.environment) { self.environment = environment }

    /// The tool's name.
    public var name: String { "media" }

    /// What the model reads to decide when to call it.
    public var description: String {
        "Control the media players (music, video, podcasts) through MPRIS on the session bus: list the players and "
            + "what they play (list, status), or play, pause, play_pause, next, previous, stop, seek. Prefer it to "
            + "the screen whenever a task is about media playing (\"pause the music\" is one call: action pause): "
            + "it is faster, and it does not depend on what is on screen. Without player, an action goes to the "
            + "player that is playing, else the only one. Each action answers with the player's new state."
    }

    /// The action, an optional player and, for seek, the offset.
    public var inputSchema: JSONValue {
        [
            "type": "object",
            "properties": [
                "action": [
                    "type": "string",
                    "enum": ["list", "status", "play", "pause", "play_pause", "next", "previous", "stop", "seek"],
                    "description": "list and status only read; the others act on a player.",
                ],
                "player": [
                    "type": "string",
                    "description": .string(
                        "Part of the player's name as list shows it (mpv, vlc, spotify); default: the one playing, "
                            + "else the only one."),
                ],
                "offset_s": [
                    "type": "number",
                    "description": "For seek: seconds to move, negative to go back (e.g. 30 or -10).",
                ],
            ],
            "required": ["action"],
        ]
    }

    /// Reads, or acts through the run's gates and answers with the player's state afterwards.
    public func execute(_ input: JSONValue, context: ToolContext) async throws -> ToolOutput {
        let environment = environment
        let name = input["player"]?.string
        let verb = input["action"]?.string ?? ""
        let action: MediaAction
        switch verb {
        case "list":
            let players = try await ServiceAction.read {
                try MediaPlayers(connection: BusConnection.session(environment: environment)).list()
            }
            guard !players.isEmpty else {
                return .text(
                    "no media player is running (MPRIS); if one shows on screen, it offers no MPRIS: use the screen")
            }
            return .text(UntrustedText.serviceData(players.map(\.summary).joined(separator: "\n"), source: "mpris"))
        case "status":
            let player = try await ServiceAction.read {
                try MediaPlayers(connection: BusConnection.session(environment: environment)).choose(name)
            }
            return .text(UntrustedText.serviceData(player.summary, source: "mpris"))
        case "play": action = .play
        case "pause": action = .pause
        case "play_pause": action = .playPause
        case "next": action = .next
        case "previous": action = .previous
        case "stop": action = .stop
        case "seek":
            guard let offset = input["offset_s"]?.double, offset.isFinite, abs(offset) <= 86_400 else {
                throw ToolError("seek needs offset_s: the seconds to move, from -86400 to 86400 (negative: back)")
            }
            action = .seek(offset)
        default:
            throw ToolError("action must be list, status, play, pause, play_pause, next, previous, stop or seek")
        }
        // Chosen first, so the person asked sees which player.
        let (players, player) = try await ServiceAction.read {
            let players = MediaPlayers(connection: try BusConnection.session(environment: environment))
            return (players, try players.choose(name))
        }
        let answer = try await ServiceAction.perform(
            tool: self.name, verb: verb, label: "\(action.verb) media player \(player.name)", text: player.name,
            context: context
        ) {
            guard let after = try MediaControl(players: players).perform(action, on: player) else {
                return "done; \(player.name) quit (it left the bus)"
            }
            return "done; the player now:\n" + UntrustedText.serviceData(after.summary, source: "mpris")
        }
        return .text(answer)
    }
}

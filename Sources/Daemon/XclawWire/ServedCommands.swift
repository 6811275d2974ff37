/// Which commands the daemon serves, in the one module both sides link: the front (which must stay free of
/// Foundation, so this module is standard library only) hands these to the daemon, and the commands library's test
/// ties the list to the command table and to the MCP tools, so a new command cannot be forgotten by either.
public enum ServedCommands {
    /// The commands the daemon serves: those that touch a display or run an agent, and the desktop services' quick
    /// calls, which a script makes as often as it would run `notify-send` (in-process, `xclaw notify` takes 20 ms;
    /// served, 3.7 ms against notify-send's 3.3 in `bench services`). The rest (the store's commands, `display`,
    /// `daemon`, `bench`, help, and a shortcut's script or an opened file, which start programs in the caller's
    /// session) run in-process.
    public static let names: Set<String> = [
        "move", "click", "mousedown", "mouseup", "drag", "scroll", "key", "type", "cursor", "windows", "activate",
        "keydown", "keyup", "release-all", "active", "window", "desktop", "clipboard",
        "monitors", "capture", "pixel", "ocr", "snapshot", "tree", "find", "tap", "watch", "wait-stable", "run", "send",
        "chat", "pipeline", "notify", "media", "units", "unit", "calendar", "contacts", "shortcuts",
    ]

    /// Whether the command line `arguments` (without the program's name) is one the daemon serves.
    public static func serves(_ arguments: [String]) -> Bool { names.contains(arguments.first ?? "") }
}

/// The friendly key names xclaw accepts besides X's own keysym names (`ctrl`, `enter`, `pgup`), in a module of
/// their own that needs nothing but the standard library: the full binary and the small front binary share them.
public enum KeyAliases {
    /// Lower-case alias → X keysym name.
    public static let table: [String: String] = [
        "ctrl": "Control_L", "control": "Control_L", "lctrl": "Control_L", "rctrl": "Control_R",
        "shift": "Shift_L", "lshift": "Shift_L", "rshift": "Shift_R",
        "alt": "Alt_L", "lalt": "Alt_L", "ralt": "Alt_R", "altgr": "ISO_Level3_Shift", "option": "Alt_L",
        "super": "Super_L", "win": "Super_L", "windows": "Super_L", "cmd": "Super_L", "command": "Super_L",
        "meta": "Meta_L", "hyper": "Hyper_L",
        "enter": "Return", "ret": "Return", "esc": "Escape", "del": "Delete", "ins": "Insert",
        "bs": "BackSpace", "backspace": "BackSpace", "pgup": "Prior", "pageup": "Prior", "page_up": "Prior",
        "pgdn": "Next", "pgdown": "Next", "pagedown": "Next", "page_down": "Next",
        "capslock": "Caps_Lock", "caps": "Caps_Lock", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock",
        "printscreen": "Print", "prtsc": "Print", "spacebar": "space",
        "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    ]
}

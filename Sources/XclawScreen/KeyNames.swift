import CX11
import Foundation
import XclawBase
import XclawKeyNames

/// A key combination in xdotool syntax (`ctrl+shift+t`, `Return`, `alt+Tab`): modifiers held, one key pressed.
public struct KeyCombo: Sendable, Hashable, CustomStringConvertible {
    /// Keysyms held down, in the order they are pressed.
    public var modifiers: [KeySym]
    /// The keysym pressed and released while the modifiers are held.
    public var key: KeySym
    /// The text it was parsed from.
    public var text: String
    public var description: String { text }

    /// Parses `mod+mod+key`. Names are X keysym names (case-insensitive) or common aliases (`ctrl`, `alt`,
    /// `super`, `Enter`, `Esc`, `PgUp`…). A trailing `+` is the plus key (`ctrl++`).
    public static func parse(_ text: String) throws -> KeyCombo {
        var parts = text.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        if text == "+" {
            parts = ["plus"]
        } else if text.hasSuffix("++") {
            parts.removeLast(2)
            parts.append("plus")
        }
        guard !parts.isEmpty, !parts.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ScreenError.unknownKey(text, suggestion: nil)
        }
        let syms = try parts.map { try KeyNames.keysym(for: $0.trimmingCharacters(in: .whitespaces)) }
        return KeyCombo(modifiers: Array(syms.dropLast()), key: syms[syms.count - 1], text: text)
    }
}

/// Key names: X keysym names looked up case-insensitively, xdotool's aliases, and suggestions for typos.
public enum KeyNames {
    /// Aliases people type that are not keysym names (all lower case).
    static let aliases = KeyAliases.table

    /// The keysym for a name, or `unknownKey` with the closest known name.
    public static func keysym(for name: String) throws -> KeySym {
        let exact = XStringToKeysym(name)
        if exact != 0 { return exact }
        let lower = name.lowercased()
        if let alias = aliases[lower] { return XStringToKeysym(alias) }
        if let sym = table.byLowercase[lower] { return sym }
        // A single character names itself (`é`, `€`): its Unicode keysym.
        if name.unicodeScalars.count == 1, let scalar = name.unicodeScalars.first, scalar.value >= 0x20 {
            return Keyboard.keysym(for: scalar)
        }
        throw ScreenError.unknownKey(name, suggestion: suggestion(for: name))
    }

    /// The canonical name of a keysym (`XKeysymToString`), or its hex value.
    public static func name(of keysym: KeySym) -> String {
        if let raw = XKeysymToString(keysym) { return String(cString: raw) }
        return "0x" + String(keysym, radix: 16)
    }

    /// The known name closest to `name` by edit distance, when one is close enough to be a likely typo.
    public static func suggestion(for name: String) -> String? {
        let lower = Array(name.lowercased())
        var best: (name: String, distance: Int)?
        for candidate in table.names + aliases.keys.sorted() {
            let c = Array(candidate.lowercased())
            guard abs(c.count - lower.count) <= 2 else { continue }
            let d = editDistance(lower, c)
            if d < (best?.distance ?? Int.max) || (d == best?.distance && candidate.count < (best?.name.count ?? 0)) {
                best = (candidate, d)
            }
        }
        guard let best, best.distance <= max(1, min(3, lower.count / 3)) else { return nil }
        return best.name
    }

    /// Every named keysym libX11 knows in the ranges people use (Latin and other legacy sets, function and
    /// modifier keys, XF86 media keys), read from `XKeysymToString` so the list matches the library.
    private static let table: (names: [String], byLowercase: [String: KeySym]) = {
        var names: [String] = []
        var map: [String: KeySym] = [:]
        let ranges: [ClosedRange<KeySym>] = [0x20...0x20ff, 0xfe00...0xffff, 0x1008_ff00...0x1008_ffff]
        for range in ranges {
            for sym in range {
                guard let raw = XKeysymToString(sym) else { continue }
                let name = String(cString: raw)
                names.append(name)
                // Lower-case keysyms win collisions ("a" before "A") when a name is not typed exactly.
                let key = name.lowercased()
                if map[key] == nil || name == key { map[key] = sym }
            }
        }
        return (names, map)
    }()
}

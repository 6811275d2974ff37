// Parsers for the fixture's drawing options (--text, --button, --field, --checkbox, --animate), kept apart from
// main.swift so the grammar is in one place.
import Foundation
import XclawScreen
import XclawTesting

/// Splits `HEAD:TAIL` at the first ':' (texts and labels may hold commas and colons); throws when there is none.
func splitAtColon(_ spec: String, option: String, grammar: String) throws -> (head: String, tail: String) {
    guard let colon = spec.firstIndex(of: ":") else {
        throw ScreenError.invalidArgument("\(option) \"\(spec)\": expected \(grammar)")
    }
    return (String(spec[..<colon]), String(spec[spec.index(after: colon)...]))
}

/// Parses a `show=`/`hide=` time in whole milliseconds (0 or more).
private func parseMilliseconds(_ value: Substring, in spec: String) throws -> Duration {
    guard let ms = Int(value), ms >= 0, ms <= 86_400_000 else {
        throw ScreenError.invalidArgument("--text \"\(spec)\": \"\(value)\" is not a time in milliseconds (0–86400000)")
    }
    return .milliseconds(ms)
}

/// Parses `--text "X,Y,FONT,#FG[,#BG][,show=MS][,hide=MS]:TEXT"`.
func parseText(_ spec: String) throws -> ProbeText {
    let grammar = "X,Y,FONT,#FG[,#BG][,show=MS][,hide=MS]:TEXT"
    let (head, text) = try splitAtColon(spec, option: "--text", grammar: grammar)
    let parts = head.split(separator: ",", omittingEmptySubsequences: false)
    guard parts.count >= 4, !parts[2].isEmpty else {
        throw ScreenError.invalidArgument("--text \"\(spec)\": expected \(grammar)")
    }
    var result = ProbeText(
        origin: try Point(parsing: parts[0..<2].joined(separator: ",")), font: String(parts[2]),
        foreground: try RGB(hex: String(parts[3])), text: text)
    for part in parts.dropFirst(4) {
        if part.hasPrefix("#"), result.background == nil {
            result.background = try RGB(hex: String(part))
        } else if part.hasPrefix("show="), result.showAfter == nil {
            result.showAfter = try parseMilliseconds(part.dropFirst(5), in: spec)
        } else if part.hasPrefix("hide="), result.hideAfter == nil {
            result.hideAfter = try parseMilliseconds(part.dropFirst(5), in: spec)
        } else {
            throw ScreenError.invalidArgument(
                "--text \"\(spec)\": unexpected or repeated \"\(part)\"; expected \(grammar)")
        }
    }
    if let show = result.showAfter, let hide = result.hideAfter, hide <= show {
        throw ScreenError.invalidArgument("--text \"\(spec)\": hide= must be later than show=")
    }
    return result
}

/// Parses `--button "X,Y,W,H:LABEL"`.
func parseButton(_ spec: String) throws -> ProbeWidget {
    let (head, label) = try splitAtColon(spec, option: "--button", grammar: "X,Y,W,H:LABEL")
    return .button(try Rect(parsing: head), label: label)
}

/// Parses `--checkbox "X,Y:LABEL"`.
func parseCheckbox(_ spec: String) throws -> ProbeWidget {
    let (head, label) = try splitAtColon(spec, option: "--checkbox", grammar: "X,Y:LABEL")
    return .checkbox(try Point(parsing: head), label: label)
}

import Foundation
import XclawBase
import XclawCommandLine

/// Prints a benchmark's result like every xclaw command (`emit`), but its JSON with snake_case keys: the reports'
/// Swift names are camelCase (`coldWithoutControlsMs`), and xclaw's `--json` convention is `cold_without_controls_ms`.
func emitBench<T: Encodable>(_ value: T, json: Bool, text: () -> String) throws {
    guard json else { return try emit(value, json: false, text: text) }
    let encoder = JSONEncoder.xclaw
    encoder.keyEncodingStrategy = .convertToSnakeCase
    // Rows quote screen text (OCR's readings in notes): escaped for a terminal as every result is.
    writeOut(UntrustedText.jsonForTerminal(String(decoding: try encoder.encode(value), as: UTF8.self)) + "\n")
    JSONResultMark.current?.set()
}

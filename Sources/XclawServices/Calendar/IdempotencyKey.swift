import Foundation
import XclawBase

/// The client-side key that makes a retried create make one item, not two: the uid is derived from the key, so a
/// second create of the same key finds the first item's uid taken and returns that item instead.
public enum IdempotencyKey {
    /// The uid for `key`: `xclaw-` and 32 hex digits of its SHA-256.
    public static func uid(for key: String) -> String {
        "xclaw-" + SHA256.hex(Data(key.utf8)).prefix(32)
    }

    /// The key of a create that was given none, from what it creates (`parts`: kind, source, summary, times…):
    /// `auto-` and 32 hex digits of their SHA-256, so the same content twice is one item.
    public static func derived(_ parts: [String]) -> String {
        // A separator no part can hold unescaped keeps ("a b", "c") and ("a", "b c") apart.
        "auto-"
            + SHA256.hex(
                Data(
                    parts.map { $0.replacingOccurrences(of: "\u{1F}", with: " ") }
                        .joined(separator: "\u{1F}").utf8)
            ).prefix(32)
    }
}

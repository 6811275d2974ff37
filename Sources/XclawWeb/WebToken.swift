import Foundation
import XclawBase

/// The web view's token: 32 random bytes as hex, kept 0600 in the state directory so a restarted daemon keeps the
/// browser's cookie valid. Every request and websocket must carry it.
public enum WebToken {
    /// The token at `path`, made when there is none (or it is not one of ours).
    public static func load(at path: String) throws -> String {
        if let data = try PrivateFiles.read(path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.count == 64, text.allSatisfy(\.isHexDigit) { return text }
        }
        let token = random()
        try PrivateFiles.write(Data((token + "\n").utf8), to: path)
        return token
    }

    /// 32 random bytes as hex: a token, or a session's secret.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Compares in time independent of where the strings differ, so the token cannot be guessed byte by byte.
    public static func matches(_ candidate: String?, _ token: String) -> Bool {
        guard let candidate else { return false }
        let a = Array(candidate.utf8)
        let b = Array(token.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<a.count { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

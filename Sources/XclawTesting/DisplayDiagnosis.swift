import Foundation
import XclawBase

/// What a test display looked like when something on it did not happen in time: a window that never mapped, a
/// window manager that never managed it. Said in the failure's message, so a rare failure in a shard's log explains
/// itself instead of needing a second reproduction.
public enum DisplayDiagnosis {
    /// The server's answer (or silence) to a new client, the window tree, `window`'s attributes when given, and the
    /// processes connected to the server's socket (read from the kernel, so it works while a client holds a grab).
    public static func describe(display: String, window: UInt? = nil) -> String {
        let environment = ProcessInfo.processInfo.environment.merging(["DISPLAY": display]) { $1 }
        func run(_ arguments: [String]) -> String {
            guard let outcome = try? Subprocess.run(arguments, timeout: .seconds(4), environment: environment) else {
                return "\(arguments[0]): could not start"
            }
            let text = String(decoding: outcome.stdout + outcome.stderr, as: UTF8.self)
            guard outcome.ending == .exited(0) else {
                return text + "\n\(arguments[0]) ended \(outcome.ending) (no answer in 4 s means a client holds a grab)"
            }
            return text
        }
        var parts = ["-- diagnosis of \(display) --"]
        if let window {
            parts.append(run(["/usr/bin/xwininfo", "-id", "0x" + String(window, radix: 16), "-stats", "-wm"]))
        }
        parts.append(run(["/usr/bin/xwininfo", "-root", "-tree"]))
        parts.append("clients of its socket:\n" + clients(of: display))
        return parts.joined(separator: "\n")
    }

    /// The processes whose Unix socket is connected to the X server of `display` (`ss` pairs each accepted socket
    /// of the server with its peer).
    static func clients(of display: String) -> String {
        guard let number = display.split(separator: ":").last?.split(separator: ".").first else { return "?" }
        guard let outcome = try? Subprocess.run(["/usr/bin/ss", "-xpn"], timeout: .seconds(4)) else {
            return "ss: could not start"
        }
        let lines = String(decoding: outcome.stdout, as: UTF8.self).split(separator: "\n")
        // The server's side: its listening path; its peers' inodes name the client sockets.
        let path = "/tmp/.X11-unix/X\(number)"
        let serverSide = lines.filter { $0.contains(path) }
        let peers = Set(
            serverSide.compactMap { line -> Substring? in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                return fields.count >= 8 ? fields[7] : nil
            })
        let clientSide = lines.filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count >= 6 && peers.contains(fields[5])
        }
        return (clientSide.isEmpty ? serverSide : clientSide).map { String($0) }.joined(separator: "\n")
    }
}

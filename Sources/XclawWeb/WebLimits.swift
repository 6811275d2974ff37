import Foundation
import NIOCore
import Synchronization

/// How long a connection may take and how many there may be: anyone local can connect to the web view, so each
/// connection must end in time and none past the caps may hold a descriptor the daemon needs for its own work.
public struct WebLimits: Sendable, Hashable {
    /// Seconds a connection may take to send its first request's head (an idle or trickling one is closed after).
    public var headSeconds: Double
    /// Seconds a kept-alive connection may stay quiet between requests.
    public var idleSeconds: Double
    /// Connections one peer (one uid, or one address when its uid cannot be known) may hold.
    public var perPeer: Int
    /// Connections all other peers together may hold; the daemon's own user has as many again of its own, so no one
    /// else can crowd it out.
    public var total: Int

    /// Limits; `total` defaults to a quarter of the descriptors this process may open (at most 256): others and the
    /// owner together can take half of them, never the ones the daemon's socket and its commands need.
    public init(headSeconds: Double = 10, idleSeconds: Double = 60, perPeer: Int = 32, total: Int? = nil) {
        (self.headSeconds, self.idleSeconds, self.perPeer) = (headSeconds, idleSeconds, perPeer)
        self.total = total ?? max(8, min(256, Self.descriptorLimit() / 4))
    }

    /// This process's soft limit on open descriptors.
    public static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(min(limit.rlim_cur, 1 << 20))  // (unlimited is the largest value)
    }
}

/// Who is at the other end of a connection, as far as the caps care.
enum WebPeer: Hashable, Sendable {
    /// A local process's user, as the kernel's socket table says.
    case user(uid_t)
    /// A peer whose user cannot be known (another machine, or the table did not say).
    case address(String)

    /// The peer of `channel`: its uid when it connects over loopback, else its address.
    static func of(_ channel: any Channel) -> WebPeer {
        guard let remote = channel.remoteAddress, let local = channel.localAddress else { return .address("?") }
        if let uid = LoopbackPeers.uid(remote: remote, local: local) { return .user(uid) }
        return .address(remote.ipAddress ?? "?")
    }
}

/// The connections open, per peer and in all.
final class WebConnections: Sendable {
    private let limits: WebLimits
    private let owner: uid_t
    private let counts = Mutex<(others: Int, perPeer: [WebPeer: Int])>((0, [:]))

    /// Counts against `limits`; `owner` is the daemon's user, whose connections have a cap of their own.
    init(limits: WebLimits, owner: uid_t = getuid()) { (self.limits, self.owner) = (limits, owner) }

    /// Whether one more connection from `peer` may stay; counted when it may.
    func admit(_ peer: WebPeer) -> Bool {
        counts.withLock { counts in
            let mine = counts.perPeer[peer, default: 0]
            if peer == .user(owner) {
                guard mine < limits.total else { return false }
            } else {
                guard counts.others < limits.total, mine < limits.perPeer else { return false }
                counts.others += 1
            }
            counts.perPeer[peer] = mine + 1
            return true
        }
    }

    /// A connection `admit` let in has closed.
    func release(_ peer: WebPeer) {
        counts.withLock { counts in
            if peer != .user(owner) { counts.others -= 1 }
            let left = counts.perPeer[peer, default: 1] - 1
            counts.perPeer[peer] = left > 0 ? left : nil
        }
    }
}

/// The uid behind a loopback TCP connection, from the kernel's socket table (`/proc/net/tcp`, `tcp6`): the peer's
/// own socket is the row whose local end is the connection's remote one, and the row says whose it is.
enum LoopbackPeers {
    /// The uid of the process that owns the other end, if the table has it.
    static func uid(remote: SocketAddress, local: SocketAddress) -> uid_t? {
        guard let peer = tableAddress(remote), let server = tableAddress(local) else { return nil }
        let file = peer.v6 ? "/proc/net/tcp6" : "/proc/net/tcp"
        guard let stream = fopen(file, "r") else { return nil }
        defer { fclose(stream) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        // "sl: local rem st queues timer retransmits uid …": the row is found by its two ends, in C (a flood makes
        // the table long, and every connection looks once).
        let ends = " \(peer.text) \(server.text) "
        while getline(&line, &capacity, stream) > 0, let line {
            guard strstr(line, ends) != nil else { continue }
            let fields = String(cString: line).split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 7 else { return nil }
            return uid_t(fields[7])
        }
        return nil
    }

    /// An address as the table writes it: the address's 32-bit words in memory order as hex, a colon, the port.
    private static func tableAddress(_ address: SocketAddress) -> (text: String, v6: Bool)? {
        guard let port = address.port else { return nil }
        switch address {
        case .v4(let v4):
            return (String(format: "%08X:%04X", v4.address.sin_addr.s_addr, port), false)
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            let words = withUnsafeBytes(of: &raw) { bytes in
                (0..<4).map { bytes.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self) }
            }
            return (words.map { String(format: "%08X", $0) }.joined() + String(format: ":%04X", port), true)
        default:
            return nil
        }
    }
}

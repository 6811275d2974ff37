import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 address, as the bytes a socket connects to: what the web fetcher checks before it lets a
/// connection open, so a page cannot steer an agent into the local network whatever name or redirect it uses.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    public let bytes: [UInt8]

    /// Parses a literal address (`10.0.0.1`, `::1`, `[fe80::1]`); nil for anything else, host names included.
    public init?(_ text: String) {
        var literal = text
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, literal, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
    }

    /// The address of a `sockaddr_in` or `sockaddr_in6` (`family` says which); nil for other families.
    init?(family: Int32, sockaddr: UnsafeRawPointer) {
        switch family {
        case AF_INET:
            let address = sockaddr.loadUnaligned(as: sockaddr_in.self).sin_addr
            bytes = withUnsafeBytes(of: address) { Array($0) }
        case AF_INET6:
            let address = sockaddr.loadUnaligned(as: sockaddr_in6.self).sin6_addr
            bytes = withUnsafeBytes(of: address) { Array($0) }
        default:
            return nil
        }
    }

    fileprivate init(bytes: [UInt8]) { self.bytes = bytes }

    /// The usual text form (`inet_ntop`).
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) != nil }
        guard ok else { return bytes.map(String.init).joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The IPv4 address an IPv6 one stands for (mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
    /// `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::`): a socket to it reaches that IPv4 host, so it is judged as that host.
    var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let head = bytes[0..<12]
        if head.elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]) || head.allSatisfy({ $0 == 0 }) {
            // `::` and `::1` are IPv6's own unspecified and loopback addresses, not IPv4 ones.
            return bytes[12..<16].allSatisfy { $0 == 0 } || bytes[12..<16].elementsEqual([0, 0, 0, 1])
                ? nil : IPAddress(bytes: Array(bytes[12..<16]))
        }
        if head.elementsEqual([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]) {
            return IPAddress(bytes: Array(bytes[12..<16]))
        }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(bytes: Array(bytes[2..<6])) }
        return nil
    }

    /// True for every address that is not a public Internet host: loopback, the private LANs, link-local (cloud
    /// metadata lives at 169.254.169.254), carrier-grade NAT, unspecified, multicast and reserved ranges, and IPv6
    /// addresses that carry one of those.
    public var isPrivate: Bool {
        if let v4 = embeddedIPv4 { return v4.isPrivate }
        return IPRange.privateRanges.contains { $0.contains(self) }
    }
}

/// An address range in CIDR form (`10.0.0.0/8`, `fe80::/10`; a bare address is a range of one), as
/// `fetch_allow_private` lists them.
public struct IPRange: Hashable, Sendable, CustomStringConvertible {
    /// The first address (host bits zeroed).
    public let base: IPAddress
    /// How many leading bits are fixed.
    public let prefix: Int

    /// Parses `ADDRESS` or `ADDRESS/BITS`; nil when either part is malformed or the bits exceed the address's length.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = IPAddress(String(parts[0])) else { return nil }
        let width = address.bytes.count * 8
        let bits = parts.count == 2 ? Int(parts[1]) : width
        guard let bits, (0...width).contains(bits) else { return nil }
        var masked = address.bytes
        for i in masked.indices {
            let keep = max(0, min(8, bits - i * 8))
            masked[i] &= keep == 0 ? 0 : UInt8(truncatingIfNeeded: 0xff << (8 - keep))
        }
        base = IPAddress(bytes: masked)
        prefix = bits
    }

    /// Whether `address` lies in the range (an IPv4 range never contains an IPv6 address, nor the reverse).
    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == base.bytes.count else { return false }
        for i in base.bytes.indices {
            let keep = max(0, min(8, prefix - i * 8))
            if keep == 0 { return true }
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - keep))
            if address.bytes[i] & mask != base.bytes[i] { return false }
        }
        return true
    }

    /// `base/prefix`.
    public var description: String { "\(base)/\(prefix)" }

    /// The ranges that are not the public Internet (RFC 6890's special-purpose registries, the parts an HTTP client
    /// could reach something private through).
    static let privateRanges: [IPRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
        "::/128", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    ].compactMap(IPRange.init)
}

/// Which private addresses `fetch_url` may reach: none (the default), all, or the listed ranges (an intranet host
/// the user trusts, without opening the whole local network).
public enum PrivateAddressPolicy: Sendable, Hashable {
    /// Only public addresses.
    case refuse
    /// Every address: the agent may read the local network and the cloud metadata endpoint.
    case allowAll
    /// Public addresses and these ranges.
    case allow([IPRange])

    /// Whether a connection to `address` may open.
    public func permits(_ address: IPAddress) -> Bool {
        guard address.isPrivate else { return true }
        switch self {
        case .refuse: return false
        case .allowAll: return true
        case .allow(let ranges):
            return ranges.contains { $0.contains(address) || address.embeddedIPv4.map($0.contains) == true }
        }
    }

    /// Parses a `fetch_allow_private` value: `true`/`yes`/`on`/`1`, `false`/`no`/`off`/`0`, or a comma-separated list
    /// of addresses and CIDR ranges; nil when an entry is none of these.
    public init?(parsing text: String) {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "yes", "on", "1": self = .allowAll
        case "false", "no", "off", "0", "": self = .refuse
        default:
            let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
            let ranges = entries.compactMap(IPRange.init)
            guard ranges.count == entries.count else { return nil }
            self = .allow(ranges)
        }
    }
}

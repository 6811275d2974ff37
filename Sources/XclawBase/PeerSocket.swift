import CXclawSystem

/// Whether the other end of the connected socket `fd` has gone away, asked without reading from it: a caller that
/// must not read (another library owns the stream) can still notice a dead peer.
public func socketPeerClosed(_ fd: Int32) -> Bool { xclaw_peer_closed(fd) != 0 }

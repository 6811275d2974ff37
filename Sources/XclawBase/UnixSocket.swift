import CXclawSystem
import Foundation
import Synchronization

/// A connected or listening Unix stream socket, owned: closed when released. Typed over the POSIX calls so a
/// failure is an `Errno` with the path, not a bare -1.
public final class UnixSocket: @unchecked Sendable {
    /// The descriptor; valid until `close`.
    public let descriptor: Int32
    private let closed = NSLock()
    private var isClosed = false
    private let buffered = Mutex<(bytes: [UInt8], descriptors: [Int32])>(([], []))

    private init(_ descriptor: Int32) { self.descriptor = descriptor }

    deinit {
        close()
        for fd in takeDescriptors() { Glibc.close(fd) }
    }

    /// Listens at `path` with mode 0600 (the socket file is made under a umask of 077, so no other user can
    /// connect even for a moment). A file already at `path` is an error: the caller decides whether it is stale.
    public static func listen(path: String, backlog: Int32 = 64) throws -> UnixSocket {
        // Bound and listening under a staging name first, then linked to `path`: a client that finds the file
        // always finds a listener. Between a bind and a listen at `path` itself, a client got ECONNREFUSED, took
        // the socket for a dead daemon's and removed it, and the new daemon listened on a name nobody could reach
        // (`daemon start` then waited its 30 s out under load).
        let staging = URL(fileURLWithPath: path).deletingLastPathComponent()
            .appendingPathComponent(".listening-\(getpid())").path
        unlink(staging)  // left by a process of the same pid that died here
        let socket = try make()
        var address = try self.address(staging)
        let old = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(old)
        guard bound == 0 else { throw UnixSocketError(path: path, operation: "bind", errno: .current) }
        defer { unlink(staging) }
        guard Glibc.listen(socket.descriptor, backlog) == 0 else {
            throw UnixSocketError(path: path, operation: "listen", errno: .current)
        }
        // A hard link, not a rename: a file already at `path` stays an error (EEXIST), as with a bind there.
        guard link(staging, path) == 0 else { throw UnixSocketError(path: path, operation: "bind", errno: .current) }
        return socket
    }

    /// The listening socket an earlier image of this process handed over as descriptor `fd` (the daemon recycling
    /// itself: connections waited in its backlog meanwhile); nil unless `fd` is a listening Unix stream socket. It
    /// is close-on-exec again from here.
    public static func adopt(listening fd: Int32) -> UnixSocket? {
        guard ProcessImage.isListeningUnixSocket(fd) else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return UnixSocket(fd)
    }

    /// Connects to the socket at `path`.
    public static func connect(path: String) throws -> UnixSocket {
        let socket = try make()
        var address = try self.address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw UnixSocketError(path: path, operation: "connect", errno: .current) }
        return socket
    }

    /// Waits for the next connection; nil once the socket was closed (the server is stopping). A shortage of
    /// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) is waited out, backing off up to a second, never an
    /// end: whoever fills the descriptor table must not stop the server. The connection stays queued meanwhile.
    public func accept() -> UnixSocket? {
        var pause = 0.01
        while true {
            let fd = Glibc.accept(descriptor, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // accept4 is a GNU extension Swift does not see
                return UnixSocket(fd)
            }
            let error = errno
            if error == EINTR || error == ECONNABORTED || error == EPROTO { continue }
            guard [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error), !closed.withLock({ isClosed }) else { return nil }
            Thread.sleep(forTimeInterval: pause)
            pause = min(1, pause * 2)
            if closed.withLock({ isClosed }) { return nil }
        }
    }

    /// The uid of the process at the other end (SO_PEERCRED): who is asking, as the kernel says.
    public func peerUID() throws -> uid_t {
        var uid: UInt32 = 0
        guard xclaw_peer_uid(descriptor, &uid) == 0 else {
            throw UnixSocketError(path: "", operation: "SO_PEERCRED", errno: .current)
        }
        return uid_t(uid)
    }

    /// Writes all of `data`; false when the peer is gone.
    @discardableResult
    public func write(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return true }
            var sent = 0
            while sent < raw.count {
                let n = Glibc.send(descriptor, base + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                sent += n
            }
            return true
        }
    }

    /// Reads up to the first newline (not included), at most `limit` bytes; nil at end of stream, on an error or
    /// past `deadline`. Reads in chunks; bytes past the line wait for the next call, and descriptors that came
    /// with them (SCM_RIGHTS) are kept for `takeDescriptors`.
    public func readLine(limit: Int = 1 << 20, deadline: ContinuousClock.Instant? = nil) -> Data? {
        while true {
            let line: Data?? = buffered.withLock { state in
                if let newline = state.bytes.firstIndex(of: 0x0a) {
                    defer { state.bytes.removeSubrange(...newline) }
                    return .some(Data(state.bytes[..<newline]))
                }
                return state.bytes.count >= limit ? .some(nil) : .none
            }
            if let line { return line }
            if let deadline {
                let left = deadline - .now
                if left <= .zero { return nil }
                var p = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ms = Int32(clamping: Int((left / .milliseconds(1)).rounded(.up)) + 1)
                let ready = poll(&p, 1, ms)
                if ready < 0 && errno == EINTR { continue }
                if ready <= 0 { return nil }
            }
            var chunk = [UInt8](repeating: 0, count: 16384)
            var fds = [Int32](repeating: -1, count: 8)
            var count: Int32 = 0
            let n = xclaw_receive_with_fds(descriptor, &chunk, UInt(chunk.count), &fds, 8, &count)
            if n < 0 && errno == EINTR { continue }
            buffered.withLock { $0.descriptors += fds.prefix(Int(count)) }
            if n <= 0 { return nil }
            buffered.withLock { $0.bytes += chunk[0..<n] }
        }
    }

    /// The bytes received past the last line read, now the caller's (a client may write more right after a line).
    public func takeBufferedBytes() -> [UInt8] {
        buffered.withLock { state in
            defer { state.bytes = [] }
            return state.bytes
        }
    }

    /// The descriptors received so far, now the caller's to close.
    public func takeDescriptors() -> [Int32] {
        buffered.withLock { state in
            defer { state.descriptors = [] }
            return state.descriptors
        }
    }

    /// Sends `data` with `descriptors` attached (SCM_RIGHTS): the receiver gets its own copies of them.
    public func send(_ data: Data, descriptors: [Int32]) -> Bool {
        guard !descriptors.isEmpty else { return write(data) }
        let first = data.withUnsafeBytes { raw in
            descriptors.withUnsafeBufferPointer {
                xclaw_send_with_fds(descriptor, raw.baseAddress, UInt(raw.count), $0.baseAddress, Int32($0.count))
            }
        }
        guard first >= 0 else { return false }
        return Int(first) == data.count || write(data.dropFirst(Int(first)))
    }

    /// Closes the descriptor (also wakes a thread blocked in `accept` on a listening socket); safe to call twice.
    public func close() {
        closed.lock()
        defer { closed.unlock() }
        guard !isClosed else { return }
        isClosed = true
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }

    private static func make() throws -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UnixSocketError(path: "", operation: "socket", errno: .current) }
        return UnixSocket(fd)
    }

    private static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw UnixSocketError(path: path, operation: "bind", errno: Errno(rawValue: ENAMETOOLONG))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return address
    }
}

/// A socket call that failed, with the path and the system's reason.
public struct UnixSocketError: ClassifiedError, Hashable {
    /// The socket file.
    public var path: String
    /// The call that failed.
    public var operation: String
    /// Why.
    public var errno: Errno
    /// An environment problem, not a bug.
    public var exitStatus: ExitStatus { .internal }
    /// The message.
    public var description: String { "\(operation) \(path): \(errno)" }
}

import Foundation
import XclawBase

/// How the CLI talks to the daemon: one request per connection.
public struct DaemonClient: Sendable {
    /// The socket.
    public let socketPath: String

    /// A client of the daemon at `socketPath`.
    public init(socketPath: String) { self.socketPath = socketPath }

    /// The running daemon's status; nil when none answers. A socket file nobody listens on (the daemon was killed)
    /// is stale and removed, so the next start can take the path.
    public func status() throws -> DaemonStatus? {
        guard let reply = try send(DaemonRequest(.status)) else { return nil }
        return reply.status
    }

    /// Asks the daemon to stop; its status as it stopped, nil when none ran.
    public func stop() throws -> DaemonStatus? {
        guard let reply = try send(DaemonRequest(.stop)) else { return nil }
        return reply.status
    }

    /// Sends one request; nil when no daemon answers (a stale socket is removed on the way).
    func send(_ request: DaemonRequest) throws -> DaemonReply? {
        let socket: UnixSocket
        do { socket = try UnixSocket.connect(path: socketPath) } catch let error as UnixSocketError {
            switch error.errno.rawValue {
            case ENOENT: return nil
            case ECONNREFUSED:
                unlink(socketPath)  // nobody listens: a daemon killed with -9 left it
                return nil
            default: throw error
            }
        }
        defer { socket.close() }
        guard socket.write(try JSONEncoder().encode(request) + Data("\n".utf8)),
            let line = socket.readLine(deadline: .now + .seconds(10))
        else {
            throw DaemonError.refused("no answer on \(socketPath) within 10 s")
        }
        let reply: DaemonReply
        do { reply = try JSONDecoder().decode(DaemonReply.self, from: line) } catch {
            throw DaemonError.refused("an answer this xclaw does not understand (another version?): \(error)")
        }
        if let error = reply.error { throw DaemonError.refused(error) }
        return reply
    }
}

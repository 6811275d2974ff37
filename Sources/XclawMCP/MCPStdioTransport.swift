import Foundation
import Glibc
import Logging
import Synchronization
import XclawBase

/// MCP over stdio: newline-delimited JSON-RPC messages on stdin, replies on stdout. Every request runs at once, on a
/// task of its own, so a long `watch` never holds up a `snapshot`; every reply goes out through one writer that
/// writes it whole, so two large replies can never interleave on stdout.
public final class MCPStdioTransport: Sendable {
    private let server: MCPServer
    private let input: Int32
    private let writer: MessageWriter
    private let logger = Logger(label: "xclaw.mcp")

    /// Serves `server` on `input` and `output` (stdin and stdout by default).
    public init(server: MCPServer, input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO) {
        (self.server, self.input) = (server, input)
        writer = MessageWriter(output)
    }

    /// Reads messages until stdin ends (the client closed the connection) and answers each; then gives the calls
    /// still running `grace` to answer (a client that wrote its last requests and closed its end still reads the
    /// replies), cancels the rest and returns once they ended. Returns early when stdout is gone. A line longer than
    /// `limit` (`MCPServer.maximumMessage`, as over HTTP) is answered with an error as soon as it is that long, and
    /// the rest of it is read and dropped, never buffered; the next line is read as usual.
    public func run(grace: Duration = .seconds(5), limit: Int = MCPServer.maximumMessage) {
        let pending = DispatchGroup()
        var buffer = [UInt8]()
        var discarding = false
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        reading: while !writer.isBroken {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            var start = 0
            while start < count {
                let newline = chunk[start..<count].firstIndex(of: 0x0A)
                let end = newline ?? count
                if !discarding {
                    if buffer.count + (end - start) > limit {
                        logger.warning("a message over the limit; dropped", metadata: ["limit": "\(limit)"])
                        writer.write(MCPServer.overlongReply(limit: limit))
                        (buffer, discarding) = ([], true)
                    } else {
                        buffer += chunk[start..<end]
                    }
                }
                guard newline != nil else { break }
                if !discarding { dispatch(Data(buffer), pending) }
                (buffer, discarding) = ([], false)
                start = end + 1
                if writer.isBroken { break reading }
            }
        }
        if !buffer.isEmpty && !discarding { dispatch(Data(buffer), pending) }
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        if writer.isBroken || pending.wait(timeout: .now() + seconds) == .timedOut {
            server.cancelAll()
            pending.wait()
        }
    }

    private func dispatch(_ line: Data, _ pending: DispatchGroup) {
        var line = line
        if line.last == 0x0D { line.removeLast() }  // a client that ends lines with CRLF
        guard line.contains(where: { ![0x20, 0x09].contains($0) }) else { return }
        pending.enter()
        let (server, writer) = (self.server, self.writer)
        Task {
            if let reply = await server.handle(line) { writer.write(reply) }
            pending.leave()
        }
    }
}

/// The one writer of a stream of messages: each message and its newline in one locked loop of `write(2)` calls, so
/// a partial write (a pipe fills up with a 5 MB image) is finished before any other message starts.
final class MessageWriter: Sendable {
    private let descriptor: Int32
    private let broken = Atomic<Bool>(false)
    private let lock = Mutex(())

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    /// Whether the reader went away (EPIPE; SIGPIPE must be ignored by the process).
    var isBroken: Bool { broken.load(ordering: .relaxed) }

    /// Writes `message` and a newline, whole; after a failed write, nothing more is written.
    func write(_ message: Data) {
        var bytes = message
        bytes.append(0x0A)
        lock.withLock { _ in
            if !isBroken && !writeAll(descriptor, bytes) { broken.store(true, ordering: .relaxed) }
        }
    }
}

import Foundation
import Glibc

/// One accepted connection: reads one HTTP/1.1 request, writes one reply, closes (`Connection: close`).
/// Used by its own thread only.
final class Connection {
    private let fd: Int32
    private let core: ServerCore
    private var buffer: [UInt8] = []
    private var closed = false

    private static let maxHead = 1 << 20
    private static let maxBody = 256 << 20
    private static let pollRDHUP: Int16 = 0x2000

    init(fd: Int32, core: ServerCore) {
        self.fd = fd
        self.core = core
    }

    func run() {
        defer { closeNow() }
        guard let head = readHead() else { return }
        guard let request = parseHead(head) else {
            _ = writeError(
                status: 400, type: "invalid_request_error", message: "mock: malformed HTTP request",
                requestID: "req_mock_bad", extra: [:])
            lingerAndClose()
            return
        }
        if request.headers["expect"]?.lowercased().contains("100-continue") == true {
            guard writeAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
        }
        guard let body = readBody(headers: request.headers) else {
            _ = writeError(
                status: 400, type: "invalid_request_error", message: "mock: unreadable request body",
                requestID: "req_mock_bad", extra: [:])
            lingerAndClose()
            return
        }
        let (recorded, decision, observer) = core.admit(
            method: request.method, target: request.target,
            headers: request.headers, body: Data(body))
        observer?(recorded)
        let rules = core.state.withLock { $0.rules }
        var reply: MockReply
        if recorded.path == "/v1/messages", let refused = rules.refusal(recorded) {
            reply = refused  // the API refuses before any model sees the request
        } else {
            switch decision {
            case .reply(let r): reply = r
            case .ask(let handler): reply = handler(recorded, recorded.index)
            }
            if recorded.path == "/v1/messages" { reply = rules.apply(reply, to: recorded) }
        }
        send(reply, requestID: recorded.requestID)
    }

    // MARK: Replies

    private func send(_ reply: MockReply, requestID: String) {
        switch reply {
        case .stream(let stream):
            if writeStream(stream, requestID: requestID, end: true) { lingerAndClose() } else { clientLeft() }
        case .error(let status, let type, let message, let headers):
            if writeError(status: status, type: type, message: message, requestID: requestID, extra: headers) {
                lingerAndClose()
            }
        case .raw(let status, let headers, let body):
            let bytes = Array(body.utf8)
            let head = Self.head(
                status: status,
                defaults: [
                    ("request-id", requestID),
                    ("content-length", String(bytes.count)),
                    ("connection", "close"),
                ], extra: headers)
            if writeAll(head + bytes) { lingerAndClose() }
        case .hang:
            let start = MockStream.turn(blocks: [], pings: false).frames.prefix(1)
            if writeStream(MockStream(frames: Array(start)), requestID: requestID, end: false) {
                waitForClientToLeave()
            } else {
                clientLeft()
            }
        case .stall(let stream):
            if writeStream(stream, requestID: requestID, end: false) { waitForClientToLeave() } else { clientLeft() }
        case .disconnect:
            closeNow()
        }
    }

    private func writeError(
        status: Int, type: String, message: String, requestID: String,
        extra: [String: String]
    ) -> Bool {
        let body = JSONText.object([
            ("type", .string("error")),
            ("error", .object([("type", .string(type)), ("message", .string(message))])),
            ("request_id", .string(requestID)),
        ]).serialized
        let bytes = Array(body.utf8)
        let head = Self.head(
            status: status,
            defaults: [
                ("content-type", "application/json"),
                ("request-id", requestID),
                ("content-length", String(bytes.count)),
                ("connection", "close"),
            ], extra: extra)
        return writeAll(head + bytes)
    }

    /// Writes headers and the SSE body as HTTP chunks; `end: false` leaves the body open (hang, stall).
    private func writeStream(_ stream: MockStream, requestID: String, end: Bool) -> Bool {
        let head = Self.head(
            status: 200,
            defaults: [
                ("content-type", "text/event-stream; charset=utf-8"),
                ("cache-control", "no-cache"),
                ("request-id", requestID),
                ("transfer-encoding", "chunked"),
                ("connection", "close"),
            ], extra: stream.headers)
        let pieces = stream.pieces()
        let terminator = end ? Array("0\r\n\r\n".utf8) : []
        if stream.chunking == .whole {
            return writeAll(head + pieces.flatMap(Self.chunk) + terminator)
        }
        let delay = stream.interChunkDelay ?? .milliseconds(1)
        guard writeAll(head) else { return false }
        for (i, piece) in pieces.enumerated() {
            if i > 0 { pause(delay) }
            guard !core.isStopped, writeAll(Self.chunk(piece)) else { return false }
        }
        return terminator.isEmpty || writeAll(terminator)
    }

    private static func chunk(_ piece: [UInt8]) -> [UInt8] {
        Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + [13, 10]
    }

    private static func head(status: Int, defaults: [(String, String)], extra: [String: String]) -> [UInt8] {
        let overridden = Set(extra.keys.map { $0.lowercased() })
        var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (name, value) in defaults where !overridden.contains(name) { text += "\(name): \(value)\r\n" }
        for name in extra.keys.sorted() { text += "\(name): \(extra[name]!)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Payload Too Large"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 529: "Site Overloaded"
        default: "Status \(status)"
        }
    }

    // MARK: Reading

    private struct Head {
        var method: String
        var target: String
        var headers: [String: String]
    }

    private func readHead() -> [UInt8]? {
        var searched = 0
        while true {
            if let end = find([13, 10, 13, 10], from: max(0, searched - 3)) {
                let head = Array(buffer[..<end])
                buffer.removeFirst(end + 4)
                return head
            }
            searched = buffer.count
            guard buffer.count < Self.maxHead, readMore() else { return nil }
        }
    }

    private func parseHead(_ bytes: [UInt8]) -> Head? {
        guard let text = String(bytes: bytes, encoding: .utf8) ?? String(bytes: bytes, encoding: .isoLatin1) else {
            return nil
        }
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        return Head(method: String(parts[0]), target: String(parts[1]), headers: headers)
    }

    private func readBody(headers: [String: String]) -> [UInt8]? {
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            var body: [UInt8] = []
            while true {
                guard let line = readLine(), let field = line.split(separator: ";").first,
                    let size = Int(field.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0,
                    size <= Self.maxBody - body.count
                else { return nil }
                if size == 0 {
                    while let trailer = readLine() { if trailer.isEmpty { return body } }
                    return nil
                }
                guard let data = readExactly(size), readExactly(2) == [13, 10] else { return nil }
                body += data
            }
        }
        guard let lengthText = headers["content-length"] else { return [] }
        guard let length = Int(lengthText), (0...Self.maxBody).contains(length) else { return nil }
        return readExactly(length)
    }

    private func readExactly(_ n: Int) -> [UInt8]? {
        while buffer.count < n { guard readMore() else { return nil } }
        let out = Array(buffer[..<n])
        buffer.removeFirst(n)
        return out
    }

    private func readLine() -> String? {
        while true {
            if let end = find([13, 10], from: 0) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            guard buffer.count < Self.maxHead, readMore() else { return nil }
        }
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard buffer.count >= needle.count, start <= buffer.count - needle.count else { return nil }
        for i in start...(buffer.count - needle.count) where buffer[i] == needle[0] {
            if buffer[i..<i + needle.count].elementsEqual(needle) { return i }
        }
        return nil
    }

    /// Appends what the socket has; false on EOF, error or server stop.
    private func readMore() -> Bool {
        var scratch = [UInt8](repeating: 0, count: 65536)
        while true {
            guard waitFor(Int16(POLLIN)) else { return false }
            let n = recv(fd, &scratch, scratch.count, 0)
            if n > 0 {
                buffer += scratch[..<n]
                return true
            }
            if n == 0 { return false }
            if errno == EAGAIN || errno == EINTR { continue }
            return false
        }
    }

    // MARK: Low level

    private enum Readiness { case ready, timedOut, stopping }

    /// Waits until the socket is ready for `events`, the timeout passes, or the server stops.
    private func wait(for events: Int16, timeoutMS: Int32 = -1) -> Readiness {
        while true {
            var fds = [
                pollfd(fd: fd, events: events, revents: 0),
                pollfd(fd: core.wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, timeoutMS)
            if ready < 0 {
                if errno == EINTR { continue }
                return .stopping
            }
            if fds[1].revents != 0 { return .stopping }
            return ready > 0 ? .ready : .timedOut
        }
    }

    /// Waits without a timeout; false if the server is stopping.
    private func waitFor(_ events: Int16) -> Bool { wait(for: events) == .ready }

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var at = 0
        while at < bytes.count {
            let n = bytes[at...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                at += n
            } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                guard waitFor(Int16(POLLOUT)) else { return false }
            } else {
                return false
            }
        }
        return true
    }

    private func pause(_ delay: Duration) {
        let (seconds, attoseconds) = delay.components
        let nanos = Int64(seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        guard nanos > 0 else { return }
        if nanos < 20_000_000 {
            var ts = timespec(tv_sec: 0, tv_nsec: Int(nanos))
            nanosleep(&ts, nil)
        } else {
            var fds = [pollfd(fd: core.wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(min(nanos / 1_000_000, Int64(Int32.max))))
        }
    }

    /// Holds a hung reply open until the client closes (recorded) or the server stops (not recorded).
    private func waitForClientToLeave() {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            guard waitFor(Int16(POLLIN) | Self.pollRDHUP) else { return }
            let n = recv(fd, &scratch, scratch.count, 0)
            if n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)) { continue }
            clientLeft()
            return
        }
    }

    /// Records that the client went away early, unless it only looks so because the server is stopping.
    private func clientLeft() {
        if !core.isStopped { core.recordDisconnect() }
    }

    /// Half-closes after a complete reply and drains briefly, so the client reads everything instead of a reset.
    private func lingerAndClose() {
        shutdown(fd, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now.advanced(by: .seconds(1))
        while ContinuousClock.now < deadline {
            let readiness = wait(for: Int16(POLLIN), timeoutMS: 100)
            if readiness == .stopping { break }
            if readiness == .timedOut { continue }
            let n = recv(fd, &scratch, scratch.count, 0)
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { break }
        }
        closeNow()
    }

    private func closeNow() {
        guard !closed else { return }
        closed = true
        close(fd)
    }
}

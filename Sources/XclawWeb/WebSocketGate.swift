import Foundation
import HummingbirdCore
import Logging
import NIOCore

/// The first request's gate. It reads each connection's first request head before the HTTP decoder does, and:
/// closes a connection whose head is not complete in time (an idle or trickling one would otherwise hold its
/// descriptor for ever: Hummingbird's idle timeout starts only once a head was decoded); answers a malformed head
/// (a space before a header's colon, a folded line) with 400 and closes, where the decoder would give no answer at
/// all; and answers a websocket handshake that `WebAccess` refuses with 401 and the reason (Hummingbird's upgrade
/// answers every refusal with a bare 400). Anything else passes on untouched, and the gate leaves the pipeline.
/// (The router's middleware still guards later requests on a kept-alive connection, and Hummingbird's idle timeout
/// closes one that stays quiet.)
final class WebSocketGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// A longer head is refused (431): nobody may hold the server's memory with an endless one.
    static let maximumHead = 16 << 10
    private let access: WebAccess
    private let headDeadline: TimeAmount
    private var buffered: ByteBuffer?
    /// How far the last read was searched for the head's end, so each byte is looked at once.
    private var searched = 0
    private var deadline: Scheduled<Void>?

    init(access: WebAccess, headDeadline: TimeAmount) {
        self.access = access
        self.headDeadline = headDeadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loop = context.eventLoop.assumeIsolated()
        deadline = loop.scheduleTask(in: headDeadline) { [weak self] in
            self?.deadline = nil
            self?.refuse("408 Request Timeout", "the request's head did not come in time", context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if var held = buffered {
            held.writeBuffer(&bytes)
            bytes = held
        }
        let view = bytes.readableBytesView
        guard let end = Self.headEnd(view, from: max(0, searched - 3)) else {
            searched = view.count
            if bytes.readableBytes > Self.maximumHead {
                refuse("431 Request Header Fields Too Large", "the request's head is over 16 KB", context: context)
            } else {
                buffered = bytes
            }
            return
        }
        let head = String(decoding: view.prefix(end), as: UTF8.self)
        if let (status, why) = verdict(head) {
            refuse(status, why, context: context)
            return
        }
        pass(bytes, context: context)
    }

    /// Answers with `status` and the reason, and closes.
    private func refuse(_ status: String, _ why: String, context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        let body = (try? JSONSerialization.data(withJSONObject: ["error": why])) ?? Data()
        var response = context.channel.allocator.buffer(capacity: 256 + body.count)
        response.writeString(
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
                + "Cache-Control: no-store\r\nConnection: close\r\n\r\n")
        response.writeBytes(body)
        buffered = nil
        let channel = context.channel
        context.writeAndFlush(NIOAny(response)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Hands what was read on and leaves the pipeline.
    private func pass(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        buffered = nil
        searched = 0
        context.fireChannelRead(wrapInboundOut(bytes))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// The status and reason a head is refused with: 400 for a malformed one, 401 for a websocket handshake
    /// `WebAccess` refuses; nil for any other.
    private func verdict(_ head: String) -> (String, String)? {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let requestLine = lines.first, requestLine.split(separator: " ").count == 3 else {
            return ("400 Bad Request", "the request line is not METHOD TARGET VERSION")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), Self.isFieldName(line[..<colon]) else {
                return ("400 Bad Request", "a header line is not NAME: VALUE (no space before the colon, no folding)")
            }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        guard headers["upgrade"]?.lowercased().contains("websocket") == true else { return nil }
        let words = requestLine.split(separator: " ")
        let target = String(words[1])
        let components = URLComponents(string: target)
        return access.refusal(
            WebRequestParts(
                path: components?.path ?? target, method: String(words[0]), origin: headers["origin"],
                host: headers["host"], fetchSite: headers["sec-fetch-site"], authorization: headers["authorization"],
                protocols: headers["sec-websocket-protocol"], ticket: nil)
        ).map { ("401 Unauthorized", $0) }
    }

    /// Whether `name` is a header name HTTP allows (a token: no space, no separator).
    private static func isFieldName(_ name: Substring) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// Where a request head ends (just past its blank line), if it has, looking from `start` on.
    private static func headEnd(_ bytes: ByteBufferView, from start: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        let base = bytes.startIndex
        var offset = start
        while offset + 3 < bytes.count {
            if bytes[base + offset] == 13, bytes[base + offset + 1] == 10, bytes[base + offset + 2] == 13,
                bytes[base + offset + 3] == 10
            {
                return offset + 4
            }
            offset += 1
        }
        return nil
    }
}

/// The server's channel with the gate in front of it, and each connection counted against `WebConnections`' caps:
/// one over them is closed at once.
struct GatedChannel<Inner: HTTPChannelHandler>: HTTPChannelHandler {
    let inner: Inner
    let access: WebAccess
    let limits: WebLimits
    let connections: WebConnections

    var responder: Responder { inner.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        let peer = WebPeer.of(channel)
        guard connections.admit(peer) else {
            // Set up as usual so the server's bookkeeping stays whole, then closed before anything is read.
            let value = inner.setup(channel: channel, logger: logger)
            channel.close(promise: nil)
            return value
        }
        channel.closeFuture.whenComplete { _ in connections.release(peer) }
        do {
            try channel.pipeline.syncOperations.addHandler(
                WebSocketGate(access: access, headDeadline: .nanoseconds(Int64(limits.headSeconds * 1e9))),
                position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Inner.Value, logger: Logger) async {
        // A connection closed over the caps ends quietly: a flood must not fill the log.
        var quiet = logger
        if !value.channel.isActive { quiet.logLevel = .critical }
        await inner.handle(value: value, logger: quiet)
    }
}

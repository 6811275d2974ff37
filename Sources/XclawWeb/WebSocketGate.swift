import Foundation
import HummingbirdCore
import Logging
import NIOCore

/// The websocket handshake's gate. Hummingbird's websocket upgrade answers every refused upgrade with a bare 400,
/// so a handshake without the token or from a foreign Origin would never hear why; this handler reads the first
/// request of each connection before the HTTP decoder does and, when it is a websocket handshake that `WebAccess`
/// refuses, answers 401 with the reason itself and closes. Anything else passes on untouched, and the gate leaves
/// the pipeline. (The router's middleware still guards later requests on a kept-alive connection.)
final class WebSocketGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// A longer head is refused (431): nobody may hold the server's memory with an endless one.
    static let maximumHead = 16 << 10
    private let access: WebAccess
    private var buffered: ByteBuffer?
    /// How far the last read was searched for the head's end, so each byte is looked at once.
    private var searched = 0

    init(access: WebAccess) { self.access = access }

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
        if let why = refusal(head) {
            refuse("401 Unauthorized", why, context: context)
            return
        }
        pass(bytes, context: context)
    }

    /// Answers with `status` and the reason, and closes.
    private func refuse(_ status: String, _ why: String, context: ChannelHandlerContext) {
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

    /// Why a websocket handshake is refused; nil for one the token allows and for any other request.
    private func refusal(_ head: String) -> String? {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let requestLine = lines.first else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + (name == "cookie" ? "; " : ", ") + value } ?? value
        }
        guard headers["upgrade"]?.lowercased().contains("websocket") == true else { return nil }
        let words = requestLine.split(separator: " ")
        let target = words.dropFirst().first.map(String.init) ?? "/"
        let components = URLComponents(string: target)
        return access.refusal(
            WebRequestParts(
                path: components?.path ?? target, method: words.first.map(String.init) ?? "GET",
                origin: headers["origin"], host: headers["host"], fetchSite: headers["sec-fetch-site"],
                queryToken: components?.queryItems?.first { $0.name == "token" }?.value,
                authorization: headers["authorization"], cookies: headers["cookie"]))
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

/// The server's channel with the gate in front of it.
struct GatedChannel<Inner: HTTPChannelHandler>: HTTPChannelHandler {
    let inner: Inner
    let access: WebAccess

    var responder: Responder { inner.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(WebSocketGate(access: access), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Inner.Value, logger: Logger) async { await inner.handle(value: value, logger: logger) }
}

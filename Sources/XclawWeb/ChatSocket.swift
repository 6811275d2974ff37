import Foundation
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import Synchronization
import XclawMCP

/// `/ws/chat`: a message to an agent and its reply as it streams. The page sends `{"agent": NAME, "text": TEXT}`
/// (or `{"cancel": true}` to stop the reply); the server answers with `{"type": "text", "text": CHUNK}` as the
/// reply comes and `{"type": "done", "exit": N, "error": MESSAGE?}` at its end. The message goes through
/// `xclaw send NAME TEXT --sender web`, stored like any other.
struct ChatSocket: Sendable {
    let backend: any WebBackend

    func add<Context: WebSocketRequestContext>(to router: Router<Context>) {
        let backend = backend
        router.ws("/ws/chat", shouldUpgrade: { request, _ in .upgrade(WebAccess.upgradeHeaders(request)) }) {
            inbound, outbound, _ in
            // The reply in progress, if any: its cancellation.
            let current = ReplyInProgress()
            // A page closed mid-reply leaves the run going: its reply is stored, and a page opened again shows it.
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message,
                    let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                else {
                    try await outbound.write(
                        .text(WebResponses.text(["type": "error", "error": "send a JSON object"])))
                    continue
                }
                if object["cancel"] as? Bool == true {
                    current.state.withLock { $0?.cancel() }
                    continue
                }
                guard let agent = object["agent"] as? String, !agent.isEmpty, let prompt = object["text"] as? String,
                    !prompt.isEmpty
                else {
                    try await outbound.write(
                        .text(
                            WebResponses.text(["type": "error", "error": "send {\"agent\": NAME, \"text\": MESSAGE}"])))
                    continue
                }
                // One reply at a time per page, as in a terminal; the reader never waits, so a cancel is read at once.
                let cancellation = MCPCancellation()
                let started = current.state.withLock { current -> Bool in
                    guard current == nil else { return false }
                    current = cancellation
                    return true
                }
                guard started else {
                    try await outbound.write(
                        .text(
                            WebResponses.text([
                                "type": "error", "error": "a reply is still coming: wait for it, or stop it",
                            ])))
                    continue
                }
                Task {
                    // Chunks in the order they came: one writer; a character split between two reads of the pipe
                    // waits for its other bytes.
                    let (chunks, continuation) = AsyncStream.makeStream(of: Data.self)
                    let forward = Task {
                        var carried = Data()
                        for await chunk in chunks {
                            let (text, rest) = UTF8Chunks.split(carried + chunk)
                            carried = rest
                            guard !text.isEmpty else { continue }
                            try? await outbound.write(.text(WebResponses.text(["type": "text", "text": text])))
                        }
                        if !carried.isEmpty {
                            try? await outbound.write(
                                .text(
                                    WebResponses.text([
                                        "type": "text", "text": String(decoding: carried, as: UTF8.self),
                                    ])))
                        }
                    }
                    let result = await backend.stream(
                        ["send", "--sender", "web", "--", agent, prompt], needsKeys: true, cancellation: cancellation
                    ) { continuation.yield($0) }
                    continuation.finish()
                    await forward.value
                    var end: [String: Any] = ["type": "done", "exit": Int(result.status)]
                    if result.status != 0 {
                        end["error"] = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
                    }
                    current.state.withLock { $0 = nil }
                    try? await outbound.write(.text(WebResponses.text(end)))
                }
            }
        }
    }

}

/// Text out of a byte stream cut anywhere: the whole characters, and the bytes of one that is not complete yet.
enum UTF8Chunks {
    /// `data` as text up to its last complete character, and what is left after it (at most 3 bytes).
    static func split(_ data: Data) -> (text: String, rest: Data) {
        let bytes = [UInt8](data)
        var end = bytes.count
        // Back over at most 3 continuation bytes to the start of the last character; keep it if it is cut.
        var index = bytes.count - 1
        var back = 0
        while index >= 0, back < 3, bytes[index] & 0xC0 == 0x80 {
            index -= 1
            back += 1
        }
        if index >= 0 {
            let lead = bytes[index]
            let length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
            if index + length > bytes.count { end = index }
        }
        return (String(decoding: bytes[..<end], as: UTF8.self), Data(bytes[end...]))
    }
}

/// The reply a chat socket is streaming, shared by its reader and the reply's task.
final class ReplyInProgress: Sendable {
    /// Its cancellation; nil when none runs.
    let state = Mutex<MCPCancellation?>(nil)
}

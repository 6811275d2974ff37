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
        router.ws("/ws/chat") { inbound, outbound, _ in
            let current = Mutex<(MCPCancellation, Task<Void, Never>)?>(nil)
            // A page closed mid-reply leaves the run going: its reply is stored, and a page opened again shows it.
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message,
                    let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                else {
                    try await outbound.write(.text(Self.event(["type": "error", "error": "send a JSON object"])))
                    continue
                }
                if object["cancel"] as? Bool == true {
                    current.withLock { $0?.0.cancel() }
                    continue
                }
                guard let agent = object["agent"] as? String, !agent.isEmpty, let prompt = object["text"] as? String,
                    !prompt.isEmpty
                else {
                    try await outbound.write(
                        .text(Self.event(["type": "error", "error": "send {\"agent\": NAME, \"text\": MESSAGE}"])))
                    continue
                }
                if let running = current.withLock({ $0?.1 }) {
                    // One reply at a time per page, as in a terminal.
                    await running.value
                }
                let cancellation = MCPCancellation()
                let task = Task {
                    // Chunks in the order they came: one writer.
                    let (chunks, continuation) = AsyncStream.makeStream(of: Data.self)
                    let forward = Task {
                        for await chunk in chunks {
                            try? await outbound.write(
                                .text(Self.event(["type": "text", "text": String(decoding: chunk, as: UTF8.self)])))
                        }
                    }
                    let result = await backend.stream(
                        ["send", "--sender", "web", "--", agent, prompt], cancellation: cancellation
                    ) { continuation.yield($0) }
                    continuation.finish()
                    await forward.value
                    var end: [String: Any] = ["type": "done", "exit": Int(result.status)]
                    if result.status != 0 {
                        end["error"] = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
                    }
                    try? await outbound.write(.text(Self.event(end)))
                }
                current.withLock { $0 = (cancellation, task) }
            }
        }
    }

    static func event(_ object: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

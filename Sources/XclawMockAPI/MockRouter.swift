import Foundation
import Synchronization

/// A scripted model for several agents at once: each request goes to the first route whose text its system prompt
/// contains (a role's prompt, the orchestrator's), so each agent of a pipeline gets its own script however their
/// requests interleave. A route either answers from its own FIFO of replies or decides per request.
public final class MockRouter: Sendable {
    /// One route: the system-prompt text it matches and how it answers.
    private struct Route {
        let match: String
        var replies: [MockReply]
        let decide: MockMessagesServer.Handler?
    }

    private let routes = Mutex<[Route]>([])

    /// A router with no routes; an unmatched request is answered with a 400 (never retried) naming its system prompt.
    public init() {}

    /// Requests whose system prompt contains `text` get `replies`, in order (a 400 once they run out).
    public func route(systemContains text: String, replies: [MockReply]) {
        routes.withLock { $0.append(Route(match: text, replies: replies, decide: nil)) }
    }

    /// Requests whose system prompt contains `text` are answered by `decide` (it sees the request and its index).
    public func route(systemContains text: String, decide: @escaping MockMessagesServer.Handler) {
        routes.withLock { $0.append(Route(match: text, replies: [], decide: decide)) }
    }

    /// The server handler that routes.
    public var handler: MockMessagesServer.Handler {
        { [self] request, index in
            let system = request.system ?? ""
            let chosen: Result<MockReply, MockRouteMiss> = routes.withLock { routes in
                guard let i = routes.firstIndex(where: { system.contains($0.match) }) else {
                    return .failure(MockRouteMiss(detail: "no route matches the system prompt"))
                }
                if let decide = routes[i].decide { return .success(decide(request, index)) }
                guard !routes[i].replies.isEmpty else {
                    return .failure(MockRouteMiss(detail: "the route \"\(routes[i].match)\" has no replies left"))
                }
                return .success(routes[i].replies.removeFirst())
            }
            switch chosen {
            case .success(let reply): return reply
            case .failure(let miss):
                return .error(
                    status: 400, type: "invalid_request_error",
                    message: "mock router: \(miss.detail): \(system.prefix(120))")
            }
        }
    }
}

/// Why the router could not answer a request.
private struct MockRouteMiss: Error {
    let detail: String
}

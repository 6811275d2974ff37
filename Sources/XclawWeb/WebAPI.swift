import Foundation
import HTTPTypes
import Hummingbird
import XclawBase
import XclawMCP

/// The pages' JSON: each route is an xclaw command with `--json`, run by the backend exactly as typed, so the web
/// view shows what the CLI shows. Names go after `--`, so none is read as an option; ids must be numbers.
struct WebAPI: Sendable {
    let backend: any WebBackend
    let displays: @Sendable () -> [String]
    /// The MCP server, whose calls the emergency stop cancels too.
    let mcp: MCPServer?

    func add<Context: RequestContext>(to router: Router<Context>) {
        let api = router.group("api")
        get(api, "agents") { request, _ in
            ["agents", "--json"] + (request.uri.queryParameters.get("all") == "1" ? ["--all"] : [])
        }
        get(api, "runs") { request, _ in
            var arguments = ["runs", "--json"]
            if let task = request.uri.queryParameters.get("task") { arguments.append("--task=\(task)") }
            if let last = request.uri.queryParameters.get("last").flatMap({ Int($0) }) {
                arguments.append("--last=\(last)")
            }
            if let agent = request.uri.queryParameters.get("agent") { arguments += ["--", agent] }
            return arguments
        }
        get(api, "schedules") { _, _ in ["schedule", "list", "--json"] }
        get(api, "usage") { request, _ in
            ["usage", "--json"] + (request.uri.queryParameters.get("agent").map { ["--", $0] } ?? [])
        }
        get(api, "approvals") { _, _ in ["approvals", "--json"] }
        get(api, "fleet") { _, _ in ["fleet", "workers", "--json"] }
        get(api, "fleet/runs") { _, _ in ["fleet", "runs", "--json", "--last=200"] }
        get(api, "pipelines") { _, _ in ["pipeline", "list", "--json"] }
        get(api, "pipelines/:id") { _, context in ["pipeline", "show", "--json", try Self.id(context)] }
        get(api, "history/:agent") { request, context in
            ["history", "--json"]
                + (request.uri.queryParameters.get("last").flatMap(Int.init).map { ["--last", "\($0)"] } ?? [])
                + ["--", try Self.name(context)]
        }
        get(api, "memory/:agent") { _, context in ["memory", "--json", "--", try Self.name(context)] }
        api.get("displays") { _, _ in WebResponses.json(["displays": displays()]) }
        api.get("export/:agent") { request, context in
            let format = request.uri.queryParameters.get("format") == "json" ? "json" : "md"
            let agent = try Self.name(context)
            let result = await backend.run(["export", "--format", format, "--", agent])
            guard result.status == 0 else { return Self.failure(result) }
            let filename = agent.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }
            return WebResponses.raw(
                result.stdout, type: format == "json" ? "application/json" : "text/markdown; charset=utf-8",
                headers: [.contentDisposition: "attachment; filename=\"\(filename).\(format)\""])
        }
        api.get("reports/:id") { _, context in
            let result = await backend.run(["report", "--json", try Self.id(context)])
            guard result.status == 0 else { return Self.failure(result) }
            guard let object = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
                let path = object["path"] as? String, let page = FileManager.default.contents(atPath: path)
            else { return WebResponses.json(["error": "the report was not written"], status: .internalServerError) }
            // The report's own policy: no script at all, its screenshots inline.
            return WebResponses.raw(
                page, type: "text/html; charset=utf-8",
                headers: [
                    .contentSecurityPolicy:
                        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'; "
                        + "form-action 'none'; base-uri 'none'",
                    HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                ])
        }
        post(api, "stop") { request, _ in
            let body = try await Self.body(request)
            if body["all"] as? Bool == true {
                // Everything that acts on the screens: the agents' runs, and the MCP calls in flight.
                mcp?.cancelAll()
                return ["stop", "--all", "--wait", "0", "--json"]
            }
            if let run = body["run"] as? Int { return ["stop", "--wait", "0", "--json", "--", "\(run)"] }
            if let agent = body["agent"] as? String { return ["stop", "--wait", "0", "--json", "--", agent] }
            throw HTTPError(
                .badRequest, message: "say what to stop: {\"all\": true}, {\"run\": ID} or {\"agent\": NAME}")
        }
        post(api, "approve/:id") { _, context in ["approve", "--json", try Self.id(context)] }
        post(api, "deny/:id") { _, context in ["deny", "--json", try Self.id(context)] }
    }

    /// A GET route whose answer is the command's JSON.
    private func get<Context: RequestContext>(
        _ group: RouterGroup<Context>, _ path: String,
        _ arguments: @escaping @Sendable (Request, Context) async throws -> [String]
    ) {
        group.get(RouterPath(path)) { request, context in
            await Self.answer(backend.run(try await arguments(request, context)))
        }
    }

    /// A POST route (the stop, approve and deny buttons).
    private func post<Context: RequestContext>(
        _ group: RouterGroup<Context>, _ path: String,
        _ arguments: @escaping @Sendable (Request, Context) async throws -> [String]
    ) {
        group.post(RouterPath(path)) { request, context in
            await Self.answer(backend.run(try await arguments(request, context)))
        }
    }

    static func answer(_ result: WebCommandResult) -> Response {
        result.status == 0 ? WebResponses.raw(result.stdout, type: "application/json") : failure(result)
    }

    /// A failed command as JSON: its message, its exit code, and the HTTP status that says the same.
    static func failure(_ result: WebCommandResult) -> Response {
        let message = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "xclaw: ", with: "", options: .anchored)
        let status: HTTPResponse.Status
        switch ExitStatus(rawValue: result.status) {
        case .notFound: status = .notFound
        case .usage: status = .badRequest
        case .display: status = .serviceUnavailable
        case .api: status = .badGateway
        default: status = .internalServerError
        }
        struct Failure: Encodable {
            var error: String
            var exit: Int32
        }
        return WebResponses.json(
            Failure(error: message.isEmpty ? "exit \(result.status)" : message, exit: result.status), status: status)
    }

    static func id<Context: RequestContext>(_ context: Context) throws -> String {
        guard let id = context.parameters.get("id"), let number = Int64(id), number > 0 else {
            throw HTTPError(.badRequest, message: "an id is a positive number")
        }
        return String(number)
    }

    static func name<Context: RequestContext>(_ context: Context) throws -> String {
        guard let name = context.parameters.get("agent"), !name.isEmpty, name.count <= 200 else {
            throw HTTPError(.badRequest, message: "name an agent")
        }
        return name
    }

    static func body(_ request: Request) async throws -> [String: Any] {
        let buffer = try await request.body.collect(upTo: 1 << 16)
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: buffer)) as? [String: Any] else {
            throw HTTPError(.badRequest, message: "send a JSON object")
        }
        return object
    }
}

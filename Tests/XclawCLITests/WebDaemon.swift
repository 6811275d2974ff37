import Foundation
import XCTest
import XclawBase
import XclawTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A daemon with its web view on a free loopback port, in a state directory of its own, for the web and MCP-over-HTTP
/// tests: started as `xclaw-core daemon run --web 127.0.0.1:0`, ended with the test.
final class WebDaemon {
    let state: URL
    let process = Process()
    let url: String
    let token: String
    let log: URL

    /// Starts one with `environment` over the test's; waits until `daemon status --json` shows its web view.
    init(environment: [String: String] = [:]) throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        chmod(state.path, 0o700)
        log = state.appendingPathComponent("daemon.log")
        process.executableURL = productsDirectory.appendingPathComponent("xclaw-core")
        process.arguments = ["daemon", "run", "--web", "127.0.0.1:0", "--parent", String(getpid())]
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        env["XCLAW_STATE_DIR"] = state.path
        env["XDG_DATA_HOME"] = state.appendingPathComponent("data").path
        env["XDG_STATE_HOME"] = state.appendingPathComponent("state").path
        env["XDG_CONFIG_HOME"] = env["XDG_CONFIG_HOME"] ?? state.appendingPathComponent("config").path
        env.removeValue(forKey: "XCLAW_TEST_DAEMON")
        process.environment = env
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        var web: [String: Any]?
        while Date() < deadline, process.isRunning {
            let status = try runCLI(["daemon", "status", "--json"], environment: env)
            if status.status == 0,
                let object = try? JSONSerialization.jsonObject(with: status.stdout) as? [String: Any],
                let found = object["web"] as? [String: Any]
            {
                web = found
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        guard let web, let url = web["url"] as? String, let token = web["token"] as? String else {
            process.terminate()
            throw WebDaemonError(
                "the daemon's web view did not come up in 30 s: "
                    + ((try? String(contentsOf: log, encoding: .utf8)) ?? "no log"))
        }
        (self.url, self.token) = (url, token)
        self.environment = env
    }

    /// The environment it runs with (its state directory, database), for CLI commands that must reach it.
    private(set) var environment: [String: String] = [:]

    /// Stops it and removes its state.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: state)
    }

    /// What it logged.
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// One HTTP exchange with it: status, headers (lowercased names), body.
    func request(
        _ path: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil,
        token: String? = nil, followRedirects: Bool = false
    ) throws -> (status: Int, headers: [String: String], body: Data) {
        let target = try XCTUnwrap(URL(string: url + (path.hasPrefix("/") ? String(path.dropFirst()) : path)))
        var request = URLRequest(url: target)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let delegate = RedirectPolicy(follow: followRedirects)
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        session.dataTask(with: request) { data, response, error in
            box.set(data, response as? HTTPURLResponse, error)
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 60) == .success else {
            throw WebDaemonError("\(method) \(path): no answer in 60 s")
        }
        let (data, response, error) = box.get()
        if let error { throw error }
        let http = try XCTUnwrap(response)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return (http.statusCode, fields, data ?? Data())
    }
}

/// Whether a test's request follows redirects (the token's 303 is checked as it is).
private final class RedirectPolicy: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // Safe because: immutable after init.
    let follow: Bool
    init(follow: Bool) { self.follow = follow }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(follow ? request : nil)
    }
}

/// A data task's result, handed from its queue to the test's thread.
private final class ResultBox: @unchecked Sendable {
    // Safe because: every access holds `lock`.
    private let lock = NSLock()
    private var value: (Data?, HTTPURLResponse?, (any Error)?) = (nil, nil, nil)
    func set(_ data: Data?, _ response: HTTPURLResponse?, _ error: (any Error)?) {
        lock.withLock { value = (data, response, error) }
    }
    func get() -> (Data?, HTTPURLResponse?, (any Error)?) { lock.withLock { value } }
}

/// The web daemon did not do what a test needs of it.
struct WebDaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

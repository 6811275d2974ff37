import Foundation
import XCTest
import XclawBase
import XclawTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The web tests' daemon (`WebViewDaemon`, in a temporary state directory removed at the end), with a way to ask it
/// over HTTP as a browser or a script would.
final class WebDaemon {
    private let daemon: WebViewDaemon
    var url: String { daemon.url }
    var token: String { daemon.token }
    /// The environment it runs with (its state directory, database), for CLI commands that must reach it.
    var environment: [String: String] { daemon.environment }
    /// What it logged.
    var logText: String { daemon.logText }

    /// Starts one with `environment` over the test's.
    init(environment: [String: String] = [:]) throws {
        daemon = try WebViewDaemon(
            state: FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-web-\(UUID().uuidString)"),
            environment: environment)
    }

    /// Stops it and removes its state.
    func stop() {
        daemon.stop()
        try? FileManager.default.removeItem(at: daemon.state)
    }

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

import Foundation
import XCTest
import XclawMessages
import XclawMockAPI
import XclawTesting

/// `xclaw run --tools web_search,fetch_url` end to end, with no display at all: the scripted model (a `MockScript`)
/// searches, then reads the page the search found; the search goes to the loopback Brave API and the page to the
/// loopback site, both through the real binary's configuration (BRAVE_API_KEY, XCLAW_BRAVE_BASE_URL,
/// XCLAW_FETCH_ALLOW_PRIVATE), and each tool's result reaches the next request. The Brave key never shows in the
/// output, the log, the database or a request.
final class WebToolsCLITests: XCTestCase {
    private var workDir: URL!
    /// A fake key, built from parts.
    private let braveKey = "BSA" + "e2e-" + String(repeating: "z", count: 6) + "-SECRET-5150"

    override func setUpWithError() throws {
        workDir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "xclaw-web-e2e-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let workDir { try? FileManager.default.removeItem(at: workDir) }
    }

    func testTheModelSearchesThenReadsAPageAndBothResultsReachTheNextRequest() throws {
        let brave = MockBraveSearch(
            token: braveKey,
            results: [
                .init(title: "Orbit <strong>report</strong>", url: "PLACEHOLDER/article", description: "The report."),
                .init(title: "Second", url: "https://example.com/2", description: "Another <strong>page</strong>."),
                .init(title: "Third", url: "https://example.com/3", description: "A third one."),
            ])
        let web = try MockWebServer { request, _ in
            if request.path == "/article" {
                return .raw(
                    status: 200, headers: ["content-type": "text/html"],
                    body: "<html><head><title>Orbit report</title><script>var x = 1</script></head><body>"
                        + "<h1>Findings</h1><p>The probe reached orbit on &ldquo;day 3&rdquo;.</p></body></html>")
            }
            // The first result is the site's own article (its port is known once it listens).
            var answer = brave
            answer.results[0].url = "http://\(request.header("host") ?? "")/article"
            return answer.reply(request)
        }
        defer { web.stop() }
        let script = """
            {"replies": [
              {"text": "Searching.", "tool_uses": [{"id": "toolu_s", "name": "web_search",
                "input": {"query": "orbit report", "count": 3}}]},
              {"text": "Reading it.", "tool_uses": [{"id": "toolu_f", "name": "fetch_url",
                "input": {"url": "\(web.baseURL)/article", "max_chars": 1000}}]},
              {"text": "The probe reached orbit on day 3."}
            ]}
            """
        let model = try MockMessagesServer(replies: try MockScript(data: Data(script.utf8)).replies)
        defer { model.stop() }
        let environment = [
            "ANTHROPIC_BASE_URL": model.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-web-e2e",
            "BRAVE_API_KEY": braveKey, "XCLAW_BRAVE_BASE_URL": web.baseURL,
            // The loopback site is a private address: allowed here, and only this one.
            "XCLAW_FETCH_ALLOW_PRIVATE": "127.0.0.1", "XCLAW_LOG": "trace", "HOME": workDir.path,
            "XDG_STATE_HOME": workDir.appendingPathComponent("state").path,
            "XDG_DATA_HOME": workDir.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": workDir.appendingPathComponent("config").path,
        ]
        let result = try runCLI(
            [
                "run", "What does the orbit report say?", "--tools", "web_search,fetch_url", "--model",
                "claude-sonnet-4-6",
            ], environment: environment, removing: ["DISPLAY"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.text.contains("The probe reached orbit on day 3."), result.text)

        let requests = model.requests
        XCTAssertEqual(requests.count, 3)
        XCTAssertEqual(requests[0].toolNames, ["web_search", "fetch_url"], "only the tools asked for, no screen tool")
        XCTAssertTrue(requests[0].system?.contains("the web (inside <web_data> … </web_data>)") == true)
        // The search went to the loopback Brave API with the key, and its results came back to the model.
        let search = try XCTUnwrap(web.requests.first)
        XCTAssertEqual(search.path, "/res/v1/web/search")
        XCTAssertEqual(search.query, "q=orbit%20report&count=3")
        XCTAssertEqual(search.header("x-subscription-token"), braveKey)
        let found = try XCTUnwrap(requests[1].toolResults.first)
        XCTAssertEqual(found.toolUseID, "toolu_s")
        XCTAssertFalse(found.isError, found.texts.joined())
        let listing = found.texts.joined()
        XCTAssertTrue(listing.hasPrefix("3 web results for \"orbit report\""), listing)
        XCTAssertTrue(listing.contains("1. Orbit report\n   \(web.baseURL)/article\n   The report."), listing)
        // The page's readable text came back to the model, title first, without its script.
        let read = try XCTUnwrap(requests[2].toolResults.first)
        XCTAssertEqual(read.toolUseID, "toolu_f")
        XCTAssertFalse(read.isError, read.texts.joined())
        let page = read.texts.joined()
        XCTAssertTrue(
            page.contains(
                "<web_data source=\"\(web.baseURL)/article\">\nTitle: Orbit report\n\n# Findings\n\n"
                    + "The probe reached orbit on “day 3”.\n</web_data>"), page)
        XCTAssertFalse(page.contains("var x"), page)

        // The key is in no output, no log line (XCLAW_LOG=trace), no request to the model and no stored file.
        XCTAssertFalse(result.text.contains(braveKey))
        XCTAssertFalse(result.stderr.contains(braveKey))
        XCTAssertTrue(result.stderr.contains("xclaw.web"), "the web tools logged at trace level: \(result.stderr)")
        for request in requests { XCTAssertNil(String(decoding: request.body, as: UTF8.self).range(of: braveKey)) }
        let files = FileManager.default.enumerator(at: workDir, includingPropertiesForKeys: nil)?.allObjects ?? []
        var scanned = 0
        for case let file as URL in files {
            guard let data = try? Data(contentsOf: file) else { continue }
            scanned += 1
            XCTAssertNil(data.range(of: Data(braveKey.utf8)), "the key is stored in \(file.path)")
        }
        XCTAssertGreaterThan(scanned, 0, "the run stored its database under \(workDir.path)")
    }
}

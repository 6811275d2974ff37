import Foundation
import XCTest
import XclawAgent
import XclawBase
import XclawClient
import XclawMessages
import XclawMockAPI
import XclawScreen
import XclawSkills

/// `fetch_url` and `web_search` through the real client (libcurl) against loopback servers: a small web site that
/// serves a page with scripts, styles and entities, redirect chains, a 404, a server that never answers and an
/// oversize page; and Brave Search's API, which checks the path, the query and the token. The loopback site is a
/// private address, so these tests allow 127.0.0.1 explicitly, and check separately that the default refuses it.
/// Names carry the issue's goals: 3.1 readable text, 3.2 ≥3 search results, 3.5 fetch errors, 3.6 no key (3.3 and
/// 3.4, memory, are `SkillsTests.testMemorySetGetListDelete` and `StoreTests.testMemorySurvivesReopeningTheFile`).
final class WebToolsTests: XCTestCase {
    /// A fake key, built from parts so no scanner mistakes it for a real one.
    private let key = "BSA" + "-test-" + String(repeating: "k", count: 4) + "-SECRET-7731"

    private static let page = """
        <!DOCTYPE html>
        <html><head><title>  Caf&eacute; &amp; Co &#8212; Menu </title>
        <style>body { color: red } .hidden { display: none }</style>
        <script type="text/javascript">var secret = "do not read"; if (a < b && c > d) { alert("x") }</script>
        </head>
        <body>
        <!-- a comment that is not text -->
        <h1>Today's <em>specials</em></h1>
        <p>Fresh bread &amp; butter, 3&nbsp;&euro; &mdash; baked at 6&#x3A;00.</p>
        <p class="x" data-note='a > b'>Second   paragraph
        on two lines.</p>
        <ul><li>Soup</li><li>Salad <b>bowl</b></li></ul>
        <ol><li>First</li><li>Second</li></ol>
        <table><tr><th>Dish</th><th>Price</th></tr><tr><td>Tea</td><td>2</td></tr></table>
        <noscript>Enable JavaScript</noscript>
        <script>document.write("<p>never</p>")</script>
        <h2>Contact</h2><p>Call us.<br>Or write.</p>
        </body></html>
        """

    /// The loopback web site every fetch test reads.
    private static func site() throws -> MockWebServer {
        try MockWebServer { request, _ in
            let path = request.path
            if path == "/page" {
                return .raw(status: 200, headers: ["content-type": "text/html; charset=utf-8"], body: page)
            }
            if path == "/text" {
                return .raw(status: 200, headers: ["content-type": "text/plain"], body: "plain\r\ntext <b>kept</b>")
            }
            if path == "/image" { return .raw(status: 200, headers: ["content-type": "image/png"], body: "\u{89}PNG") }
            if path == "/missing" {
                return .raw(status: 404, headers: ["content-type": "text/html"], body: "<h1>Not here</h1>")
            }
            if path == "/broken" { return .raw(status: 503, headers: [:], body: "down") }
            if path == "/slow" { return .hang }
            if path == "/big" {
                let paragraph = "<p>" + String(repeating: "word ", count: 200) + "</p>\n"
                return .raw(
                    status: 200, headers: ["content-type": "text/html"],
                    body: "<title>Big</title>" + String(repeating: paragraph, count: 1_000))
            }
            // /r/N redirects N times (relative Location) before the page that says where the chain ended.
            if path.hasPrefix("/r/"), let n = Int(path.dropFirst(3)) {
                if n == 0 {
                    return .raw(status: 200, headers: ["content-type": "text/html"], body: "<p>end of the chain</p>")
                }
                return .raw(status: 302, headers: ["location": "/r/\(n - 1)"], body: "moved")
            }
            if path == "/to-metadata" {
                return .raw(status: 302, headers: ["location": "http://169.254.169.254/latest/meta-data/"], body: "")
            }
            if path == "/to-ftp" { return .raw(status: 302, headers: ["location": "ftp://127.0.0.1/x"], body: "") }
            return .raw(status: 404, headers: [:], body: "")
        }
    }

    /// Only the loopback site's own address is allowed: every other private address stays refused.
    private let loopbackOnly = WebConfiguration(privateAddresses: .allow([IPRange("127.0.0.1")].compactMap { $0 }))

    private func fetch(_ url: String, maxChars: Int? = nil, configuration: WebConfiguration? = nil) async throws
        -> String
    {
        var input: [String: JSONValue] = ["url": .string(url)]
        if let maxChars { input["max_chars"] = .number(Double(maxChars)) }
        let tool = FetchURLTool(fetcher: WebFetcher(configuration: configuration ?? loopbackOnly))
        return try await text(tool.execute(.object(input), context: ToolContext()))
    }

    private func text(_ output: ToolOutput) -> String {
        output.content.compactMap { block -> String? in
            if case .text(let t) = block { return t }
            return nil
        }.joined(separator: "\n")
    }

    /// The `ToolError` message `body` throws, or a failure when it throws none.
    private func toolError(_ body: () async throws -> String, file: StaticString = #filePath, line: UInt = #line) async
        -> String
    {
        do {
            let output = try await body()
            XCTFail("expected an error, got: \(output.prefix(300))", file: file, line: line)
            return ""
        } catch let error as ToolError {
            return error.message
        } catch {
            XCTFail("expected a ToolError, got \(error)", file: file, line: line)
            return ""
        }
    }

    // MARK: fetch_url

    func testSeed3_1_FetchURLReturnsTheReadableTextOfAPage() async throws {
        let site = try Self.site()
        defer { site.stop() }
        let out = try await fetch(site.baseURL + "/page")
        XCTAssertTrue(out.hasPrefix("Fetched \"\(site.baseURL)/page\" (text/html; charset=utf-8);"), out)
        let body = try XCTUnwrap(out.components(separatedBy: "<web_data source=\"\(site.baseURL)/page\">\n").last)
        XCTAssertTrue(body.hasSuffix("\n</web_data>"), body)
        let text = String(body.dropLast("\n</web_data>".count))
        XCTAssertEqual(
            text,
            """
            Title: Café & Co — Menu

            # Today's specials

            Fresh bread & butter, 3 € — baked at 6:00.

            Second paragraph on two lines.

            - Soup
            - Salad bowl

            1. First
            2. Second

            Dish | Price
            Tea | 2

            ## Contact

            Call us.
            Or write.
            """)
        for hidden in ["secret", "alert", "color", "display", "comment", "never", "JavaScript", "<", "&amp;", "&#"] {
            XCTAssertFalse(text.contains(hidden), "\(hidden) leaked into: \(text)")
        }
        let request = try XCTUnwrap(site.requests.first)
        XCTAssertEqual(request.method, "GET")
        XCTAssertTrue(request.header("user-agent")?.contains("xclaw") == true)
    }

    func testFetchURLReadsPlainTextAndRefusesImages() async throws {
        let site = try Self.site()
        defer { site.stop() }
        let out = try await fetch(site.baseURL + "/text")
        XCTAssertTrue(out.contains("\nplain\ntext <b>kept</b>\n</web_data>"), out)
        let image = await toolError { try await self.fetch(site.baseURL + "/image") }
        XCTAssertTrue(image.contains("is image/png, not a text page"), image)
    }

    func testFetchURLFollowsFiveRedirectsAndRefusesTheSixth() async throws {
        let site = try Self.site()
        defer { site.stop() }
        let out = try await fetch(site.baseURL + "/r/5")
        XCTAssertTrue(out.hasPrefix("Fetched \"\(site.baseURL)/r/0\""), "the final URL is reported: \(out)")
        XCTAssertTrue(out.contains("end of the chain"), out)
        XCTAssertFalse(out.contains("moved"), "a redirect's own body is not the page")
        XCTAssertEqual(site.requests.map(\.path), ["/r/5", "/r/4", "/r/3", "/r/2", "/r/1", "/r/0"])
        let six = await toolError { try await self.fetch(site.baseURL + "/r/6") }
        XCTAssertTrue(six.contains("redirected more than 5 times"), six)
        let ftp = await toolError { try await self.fetch(site.baseURL + "/to-ftp") }
        XCTAssertTrue(ftp.contains("scheme other than http or https"), ftp)
    }

    func testSeed3_5_FetchURLReportsAStatusOtherThan200AsAnErrorResult() async throws {
        let site = try Self.site()
        defer { site.stop() }
        let missing = await toolError { try await self.fetch(site.baseURL + "/missing") }
        XCTAssertEqual(
            missing,
            "\"\(site.baseURL)/missing\" answered HTTP 404 Not Found; the page does not exist: check the URL or "
                + "search for it")
        let broken = await toolError { try await self.fetch(site.baseURL + "/broken") }
        XCTAssertTrue(broken.contains("HTTP 503 Service Unavailable; the server failed"), broken)
        // Through the registry, as the model gets it: an is_error result.
        let registry = ToolRegistry([FetchURLTool(fetcher: WebFetcher(configuration: loopbackOnly))])
        let result = await registry.run(
            id: "t1", name: "fetch_url", input: ["url": .string(site.baseURL + "/missing")], context: ToolContext())
        XCTAssertTrue(result.isError)
        XCTAssertEqual(result.content, [.text(missing)])
    }

    func testFetchURLGivesUpOnASlowServerAtItsTimeout() async throws {
        let site = try Self.site()
        defer { site.stop() }
        var configuration = loopbackOnly
        configuration.fetchTimeout = .seconds(1)
        let start = ContinuousClock.now
        let slow = await toolError { try await self.fetch(site.baseURL + "/slow", configuration: configuration) }
        XCTAssertTrue(slow.contains("did not answer within 1 s"), slow)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(10))
    }

    func testFetchURLCapsAnOversizePageAndHonoursMaxChars() async throws {
        let site = try Self.site()
        defer { site.stop() }
        var configuration = loopbackOnly
        configuration.fetchByteLimit = 64 << 10
        let capped = try await fetch(site.baseURL + "/big", configuration: configuration)
        XCTAssertTrue(capped.contains("the page is larger than 64 KB and only its start was read"), capped)
        XCTAssertTrue(capped.contains("the first 4000 shown: ask again with a larger max_chars for more"), capped)
        let shown = try XCTUnwrap(capped.components(separatedBy: "\">\n").last).dropLast("\n</web_data>".count)
        XCTAssertEqual(shown.count, FetchURLTool.defaultMaxChars)
        XCTAssertTrue(shown.hasPrefix("Title: Big\n\nword word"), String(shown.prefix(80)))
        // The whole page is 1 MB: its text, cut at the byte limit, is still counted.
        let total = try XCTUnwrap(
            capped.split(separator: ";").first { $0.hasSuffix("characters of text") }?.split(separator: " ").first
                .flatMap { Int($0) })
        XCTAssertGreaterThan(total, 60_000)
        XCTAssertLessThan(total, 66_000)
        let short = try await fetch(site.baseURL + "/big", maxChars: 500, configuration: configuration)
        XCTAssertEqual(
            try XCTUnwrap(short.components(separatedBy: "\">\n").last).dropLast("\n</web_data>".count).count, 500)
        for bad in [JSONValue.number(50), .number(100_001), .number(1.5), .string("lots")] {
            let tool = FetchURLTool(fetcher: WebFetcher(configuration: loopbackOnly))
            let message = await toolError {
                self.text(
                    try await tool.execute(
                        ["url": .string(site.baseURL + "/page"), "max_chars": bad], context: ToolContext()))
            }
            XCTAssertTrue(message.contains("max_chars must be a whole number from 100 to 100000"), message)
        }
    }

    func testSeed3_5_PrivateAddressesAreRefusedByDefault() async throws {
        let site = try Self.site()
        defer { site.stop() }
        let refusing = WebConfiguration()
        let cases: [(String, Set<String>)] = [
            ("\(site.baseURL)/page", ["127.0.0.1"]),
            // A name is judged by what it resolves to (localhost: 127.0.0.1 and ::1, each refused as it is tried).
            ("http://localhost:\(site.port)/page", ["127.0.0.1", "::1"]),
            ("http://10.1.2.3/", ["10.1.2.3"]),
            ("http://169.254.169.254/latest/meta-data/", ["169.254.169.254"]),
            ("http://192.168.0.1/", ["192.168.0.1"]),
            ("http://[::1]:\(site.port)/page", ["::1"]),
            ("http://[::ffff:127.0.0.1]:\(site.port)/page", ["::ffff:127.0.0.1"]),
            ("http://0.0.0.0:\(site.port)/page", ["0.0.0.0"]),
        ]
        for (url, addresses) in cases {
            let message = await toolError { try await self.fetch(url, configuration: refusing) }
            XCTAssertTrue(message.hasPrefix("refused to fetch"), "\(url): \(message)")
            XCTAssertTrue(
                addresses.contains { message.contains("it leads to \($0), a private address") }, "\(url): \(message)")
        }
        XCTAssertEqual(site.requests.count, 0, "no request reached the loopback site")
        let scheme = await toolError { try await self.fetch("file:///etc/passwd", configuration: refusing) }
        XCTAssertTrue(scheme.contains("only http and https URLs can be fetched"), scheme)
    }

    func testARedirectFromAnAllowedHostToAPrivateOneIsRefused() async throws {
        let site = try Self.site()
        defer { site.stop() }
        let message = await toolError { try await self.fetch(site.baseURL + "/to-metadata") }
        XCTAssertEqual(
            message,
            "refused to fetch \"http://169.254.169.254/latest/meta-data/\": it leads to 169.254.169.254, a private "
                + "address (loopback, local network, link-local or cloud metadata), which fetch_url does not reach "
                + "unless xclaw's config allows it (fetch_allow_private)")
        XCTAssertEqual(site.requests.map(\.path), ["/to-metadata"])
    }

    func testAddressClassesAndTheAllowSetting() throws {
        let privateOnes = [
            "127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "0.0.0.0", "100.64.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "fc00::1", "fd12:3456::1",
            "fe80::1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "2002:7f00:1::",
        ]
        for text in privateOnes {
            XCTAssertTrue(try XCTUnwrap(IPAddress(text), text).isPrivate, text)
        }
        for text in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            XCTAssertFalse(try XCTUnwrap(IPAddress(text), text).isPrivate, text)
        }
        XCTAssertNil(IPAddress("localhost"))
        XCTAssertEqual(PrivateAddressPolicy(parsing: "true"), .allowAll)
        XCTAssertEqual(PrivateAddressPolicy(parsing: " Off "), .refuse)
        let listed = try XCTUnwrap(PrivateAddressPolicy(parsing: "10.1.0.0/16, 127.0.0.1 ,fd00::/8"))
        XCTAssertTrue(listed.permits(try XCTUnwrap(IPAddress("10.1.200.3"))))
        XCTAssertTrue(listed.permits(try XCTUnwrap(IPAddress("::ffff:127.0.0.1"))))
        XCTAssertFalse(listed.permits(try XCTUnwrap(IPAddress("10.2.0.1"))))
        XCTAssertFalse(listed.permits(try XCTUnwrap(IPAddress("169.254.169.254"))))
        XCTAssertTrue(listed.permits(try XCTUnwrap(IPAddress("93.184.216.34"))), "public addresses are always fine")
        XCTAssertNil(PrivateAddressPolicy(parsing: "10.0.0.0/33"))
        XCTAssertNil(PrivateAddressPolicy(parsing: "intranet.example"))
    }

    func testTheAllowSettingComesFromTheEnvironmentOrTheConfigFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("xclaw-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("config").path
        try "fetch_allow_private = 192.168.1.0/24\nbrave_base_url = http://127.0.0.1:9/\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        let fromFile = try WebConfiguration.load(environment: [:], configPath: path)
        XCTAssertEqual(fromFile.privateAddresses, .allow([IPRange("192.168.1.0/24")].compactMap { $0 }))
        XCTAssertEqual(fromFile.braveBaseURL, "http://127.0.0.1:9")
        XCTAssertNil(fromFile.braveKey)
        let fromEnv = try WebConfiguration.load(
            environment: ["XCLAW_FETCH_ALLOW_PRIVATE": "yes", "BRAVE_API_KEY": key], configPath: path)
        XCTAssertEqual(fromEnv.privateAddresses, .allowAll)
        XCTAssertEqual(fromEnv.braveKey?.value, key)
        XCTAssertEqual(WebConfiguration().privateAddresses, .refuse, "refused unless the config says otherwise")
        XCTAssertThrowsError(
            try WebConfiguration.load(environment: ["XCLAW_FETCH_ALLOW_PRIVATE": "sometimes"], configPath: path)
        ) { error in
            XCTAssertTrue("\(error)".contains("XCLAW_FETCH_ALLOW_PRIVATE is \"sometimes\""), "\(error)")
        }
        // A key in a file others can read is refused, as the Anthropic key is, and the error does not show it.
        try "brave_api_key = \(key)\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        XCTAssertThrowsError(try WebConfiguration.load(environment: [:], configPath: path)) { error in
            XCTAssertEqual((error as? ClassifiedError)?.exitStatus, .usage)
            XCTAssertTrue("\(error)".contains("chmod 600"), "\(error)")
            XCTAssertFalse("\(error)".contains(key))
        }
        chmod(path, 0o600)
        XCTAssertEqual(try WebConfiguration.load(environment: [:], configPath: path).braveKey?.value, key)
        let loaded = try XCTUnwrap(try WebConfiguration.load(environment: [:], configPath: path).braveKey)
        XCTAssertFalse("\(loaded)".contains(key), "a key prints redacted")
        // An application launch_app starts (like a run's setup command) does not inherit it.
        let launched = AppLauncher.environment(["BRAVE_API_KEY": key, "PATH": "/usr/bin"], display: ":5")
        XCTAssertNil(launched["BRAVE_API_KEY"])
        XCTAssertEqual(launched["PATH"], "/usr/bin")
    }

    func testHTMLTextIsTolerantOfBrokenPages() {
        XCTAssertEqual(HTMLText(html: "a < b and c > d").text, "a < b and c > d")
        XCTAssertEqual(HTMLText(html: "<p>one<p>two").text, "one\n\ntwo")
        XCTAssertEqual(HTMLText(html: "x<script>never closed").text, "x")
        XCTAssertEqual(HTMLText(html: "<SCRIPT>a</ScRiPt>shown").text, "shown")
        XCTAssertEqual(
            HTMLText(html: "&unknown; &amp &#0; &#x110000; &#65;").text, "&unknown; &amp \u{fffd} \u{fffd} A")
        XCTAssertEqual(HTMLText(html: "<pre>  two\n  lines</pre>").text, "two\n  lines")
        XCTAssertEqual(HTMLText(html: "bidi \u{202e}override\u{1b}[2J").text, "bidi override[2J")
        XCTAssertNil(HTMLText(html: "<p>no title</p>").title)
        XCTAssertEqual(HTMLText.inline("The <strong>quick</strong> fox &amp; <b>dog</b>\n"), "The quick fox & dog")
    }

    // MARK: web_search

    private static let results = [
        MockBraveSearch.Result(
            title: "Swift.org - <strong>Swift</strong> Programming", url: "https://swift.org/",
            description: "The <strong>Swift</strong> programming language &amp; its tools.", pageAge: "2025-05-01"),
        MockBraveSearch.Result(
            title: "Swift (programming language) - Wikipedia",
            url: "https://en.wikipedia.org/wiki/Swift_(programming_language)",
            description: "<strong>Swift</strong> is a general-purpose language."),
        MockBraveSearch.Result(
            title: "Documentation", url: "https://www.swift.org/documentation/",
            description: "Read the <strong>docs</strong>."),
        MockBraveSearch.Result(title: "Forums", url: "https://forums.swift.org/", description: "Talk."),
        MockBraveSearch.Result(title: "GitHub", url: "https://github.com/swiftlang/swift", description: "Code."),
        MockBraveSearch.Result(title: "Sixth", url: "https://example.com/6", description: "Not asked for."),
    ]

    private func searchTool(_ server: MockWebServer?, key: String?) -> WebSearchTool {
        var configuration = WebConfiguration(braveKey: key.map(APIKey.init))
        if let server { configuration.braveBaseURL = server.baseURL + "/" }
        return WebSearchTool(search: BraveSearch(configuration: configuration))
    }

    func testSeed3_2_WebSearchReturnsAtLeastThreeResults() async throws {
        let brave = MockBraveSearch(token: key, results: Self.results)
        let server = try MockWebServer { request, _ in brave.reply(request) }
        defer { server.stop() }
        let out = text(
            try await searchTool(server, key: key).execute(["query": "swift language & tools"], context: ToolContext()))
        let request = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.path, "/res/v1/web/search")
        XCTAssertEqual(request.query, "q=swift%20language%20%26%20tools&count=5")
        XCTAssertEqual(request.header("accept"), "application/json")
        XCTAssertEqual(request.header("x-subscription-token"), key)
        XCTAssertTrue(
            out.hasPrefix("5 web results for \"swift language & tools\" (read a page with fetch_url):\n"), out)
        XCTAssertTrue(
            out.contains(
                """
                <web_data source="web_search">
                1. Swift.org - Swift Programming
                   https://swift.org/
                   The Swift programming language & its tools. (2025-05-01)
                2. Swift (programming language) - Wikipedia
                   https://en.wikipedia.org/wiki/Swift_(programming_language)
                   Swift is a general-purpose language.
                3. Documentation
                   https://www.swift.org/documentation/
                   Read the docs.
                """), out)
        XCTAssertTrue(out.contains("5. GitHub"), out)
        XCTAssertFalse(out.contains("Sixth"), out)
        XCTAssertFalse(out.contains("<strong>"), out)
        XCTAssertFalse(out.contains(key), "the key is never in a result")
        let three = text(
            try await searchTool(server, key: key).execute(["query": "swift", "count": 3], context: ToolContext()))
        XCTAssertTrue(three.hasPrefix("3 web results"), three)
        XCTAssertEqual(server.requests.last?.query, "q=swift&count=3")
    }

    func testSeed3_6_WebSearchWithoutAKeySaysHowToSetOne() async throws {
        let brave = MockBraveSearch(token: key, results: Self.results)
        let server = try MockWebServer { request, _ in brave.reply(request) }
        defer { server.stop() }
        let message = await toolError {
            self.text(try await self.searchTool(server, key: nil).execute(["query": "swift"], context: ToolContext()))
        }
        XCTAssertTrue(message.hasPrefix("web_search has no Brave Search API key: set BRAVE_API_KEY"), message)
        XCTAssertTrue(message.contains("`brave_api_key = ...`"), message)
        XCTAssertTrue(message.contains("mode 600"), message)
        XCTAssertEqual(server.requests.count, 0, "nothing is sent without a key")
    }

    func testWebSearchReportsRateLimitsRefusedKeysAndServerErrorsWithoutTheKey() async throws {
        let statuses: [MockReply] = [
            MockBraveSearch.error(
                429, "RATE_LIMITED", "Request rate limit exceeded for plan.", headers: ["retry-after": "2"]),
            MockBraveSearch.error(503, "UNAVAILABLE", "Try later."),
            // A hostile or broken server echoing the key: the message must not carry it on.
            MockBraveSearch.error(422, "VALIDATION", "bad token \(key) for q"),
            .raw(status: 200, headers: ["content-type": "text/html"], body: "<html>portal</html>"),
        ]
        let server = try MockWebServer { _, index in
            index < statuses.count ? statuses[index] : .raw(status: 500, headers: [:], body: "")
        }
        defer { server.stop() }
        let tool = searchTool(server, key: key)
        var messages: [String] = []
        for _ in statuses {
            messages.append(
                await toolError { self.text(try await tool.execute(["query": "swift"], context: ToolContext())) })
        }
        XCTAssertEqual(
            messages[0],
            "Brave Search rate-limited this key (HTTP 429): wait 2 s before searching again, and search less often")
        XCTAssertEqual(messages[1], "Brave Search failed (HTTP 503: Try later.); try again later")
        XCTAssertEqual(messages[2], "Brave Search failed (HTTP 422: bad token [redacted] for q); check the query")
        XCTAssertTrue(messages[3].hasPrefix("unexpected answer from Brave Search"), messages[3])
        // A wrong key: the loopback API checks the token and answers 401.
        let brave = MockBraveSearch(token: key, results: Self.results)
        let api = try MockWebServer { request, _ in brave.reply(request) }
        defer { api.stop() }
        let wrong = await toolError {
            self.text(
                try await self.searchTool(api, key: "BSA-" + "wrong").execute(["query": "x"], context: ToolContext()))
        }
        XCTAssertEqual(
            wrong,
            "Brave Search refused the API key (HTTP 401): check BRAVE_API_KEY or `brave_api_key` in ~/.config/xclaw/config"
        )
        for message in messages + [wrong] { XCTAssertFalse(message.contains(key), message) }
        for bad in [JSONValue.number(0), .number(21), .string("5")] {
            let message = await toolError {
                self.text(try await tool.execute(["query": "swift", "count": bad], context: ToolContext()))
            }
            XCTAssertTrue(message.contains("count must be a whole number from 1 to 20"), message)
        }
    }
}

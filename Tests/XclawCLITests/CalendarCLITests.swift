import Foundation
import XCTest
import XclawBase
import XclawMessages
import XclawMockAPI
import XclawTesting
import XclawTimeTesting

/// `xclaw calendar` and `xclaw contacts` against a real evolution-data-server that a private session bus starts on
/// first call (one bus for the class, its state under the bus's HOME), in Berlin time: text and JSON output (checked
/// against their schemas), idempotent creates, exit codes; without EDS, exit 5; and an agent whose scripted model
/// adds an event through the `calendar` tool and has its delete held by the approval gate.
final class CalendarCLITests: XCTestCase {
    private static let shared = ClassScene { try TestSessionBus(activation: .standard) }

    override class func tearDown() { shared.stop() }

    /// The class's bus, started by its first test.
    private var bus: TestSessionBus { get throws { try Self.shared.get() } }

    /// The bus's environment in Berlin time, so local times in and out are known.
    private var env: [String: String] { get throws { try bus.environment.merging(["TZ": "Europe/Berlin"]) { $1 } } }

    /// Runs xclaw on the bus and checks its exit status.
    @discardableResult
    private func xclaw(
        _ arguments: [String], status: Int32 = 0, extra: [String: String] = [:], file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> CLIResult {
        let result = try runCLI(arguments, environment: try env.merging(extra) { $1 })
        XCTAssertEqual(result.status, status, "\(arguments): \(result.text)", file: file, line: line)
        return result
    }

    private func json(_ result: CLIResult) throws -> JSONValue { try JSONValue.parse(result.stdout) }

    func testEventsAndTasksAreAddedListedUpdatedAndDeletedOnceEach() throws {
        var checks: [JSONSchemas.Check] = []
        func check(_ result: CLIResult, _ schema: String) {
            checks.append(.init(name: schema, schema: schema, stdout: result.stdout))
        }
        let add = [
            "calendar", "add", "Dentist, Dr. X", "--start", "2031-06-10T09:00", "--duration", "45m",
            "--location", "Main St 3", "--json",
        ]
        let made = try xclaw(add)
        check(made, "calendar-add")
        let uid = try XCTUnwrap(try json(made)["uid"]?.string)
        XCTAssertEqual(try json(made)["created"]?.bool, true)
        XCTAssertEqual(try json(made)["start"]?.string, "2031-06-10T07:00:00Z", "09:00 in Berlin (CEST)")
        XCTAssertEqual(try json(made)["end"]?.string, "2031-06-10T07:45:00Z")
        // The same command again: the same event, exit 0, nothing added.
        let again = try xclaw(Array(add.dropLast()))
        XCTAssertEqual(again.text, "already exists: \(uid)\n")
        let listed = try xclaw(["calendar", "list", "--from", "2031-06-10", "--to", "2031-06-10"])
        XCTAssertEqual(
            listed.text, "2031-06-10 09:00\t2031-06-10 09:45\tDentist, Dr. X\tMain St 3\t\(uid)\n",
            "one event, local time")
        let listedJSON = try xclaw(["calendar", "list", "--from", "2031-06-10", "--to", "2031-06-11", "--json"])
        check(listedJSON, "calendar-list")
        XCTAssertEqual(try json(listedJSON).array?.map { $0["uid"]?.string }, [uid])
        XCTAssertEqual(try xclaw(["calendar", "list", "--from", "2031-06-11", "--to", "2031-06-12"]).text, "")
        // A key makes a create idempotent whatever the content.
        let keyed = try xclaw([
            "calendar", "add", "Holidays", "--start", "2031-07-01", "--end", "2031-07-03", "--key", "hol",
        ])
        XCTAssertTrue(keyed.text.hasPrefix("created xclaw-"), keyed.text)
        XCTAssertEqual(
            try xclaw(["calendar", "add", "Holidays (moved)", "--start", "2031-08-01", "--key", "hol"]).text,
            keyed.text.replacingOccurrences(of: "created ", with: "already exists: "))
        XCTAssertEqual(
            try xclaw(["calendar", "list", "--from", "2031-07-03", "--to", "2031-07-03"]).text.split(separator: "\t")
                .prefix(3), ["2031-07-01", "2031-07-03", "Holidays"], "all day, to its last day")

        let updated = try xclaw(["calendar", "update", uid, "--start", "2031-06-11T10:00", "--location", "", "--json"])
        check(updated, "calendar-update")
        XCTAssertEqual(try json(updated)["end"]?.string, "2031-06-11T08:45:00Z", "moved with its 45 minutes")
        XCTAssertNil(try json(updated)["location"])
        XCTAssertTrue(try xclaw(["calendar", "update", uid], status: 2).stderr.contains("nothing to change"))
        let bad = try xclaw(["calendar", "add", "x", "--start", "next tuesday"], status: 2)
        XCTAssertTrue(bad.stderr.contains("accepted: 2026-12-10 (a day), 2026-12-10T09:00 (local time)"), bad.stderr)
        XCTAssertTrue(try xclaw(["calendar", "list", "--to", "soon"], status: 2).stderr.contains("today, tomorrow"))

        let task = try xclaw(["calendar", "task", "add", "Buy milk", "--due", "2031-06-12", "--json"])
        check(task, "calendar-task-add")
        let taskUID = try XCTUnwrap(try json(task)["uid"]?.string)
        let tasks = try xclaw(["calendar", "tasks", "--json"])
        check(tasks, "calendar-tasks")
        XCTAssertTrue(
            try json(tasks).array?.contains { $0["uid"]?.string == taskUID && $0["done"]?.bool == false } == true)
        XCTAssertEqual(try xclaw(["calendar", "task", "done", taskUID]).text, "done \(taskUID)\tBuy milk\n")
        XCTAssertFalse(try xclaw(["calendar", "tasks"]).text.contains(taskUID))
        XCTAssertTrue(
            try xclaw(["calendar", "tasks", "--all"]).text.contains("2031-06-12\tdone\tBuy milk\t\(taskUID)"))
        XCTAssertEqual(try xclaw(["calendar", "task", "delete", taskUID]).text, "deleted \(taskUID)\tBuy milk\n")

        let sources = try xclaw(["calendar", "sources", "--json"])
        check(sources, "calendar-sources")
        XCTAssertTrue(
            try xclaw(["calendar", "sources"]).text.contains("calendar\tsystem-calendar\tPersonal\tenabled\tlocal"))

        XCTAssertEqual(try xclaw(["calendar", "delete", uid]).text, "deleted \(uid)\tDentist, Dr. X\n")
        let gone = try xclaw(["calendar", "delete", uid], status: 1)
        XCTAssertTrue(gone.stderr.contains("no event or task with uid \"\(uid)\""), gone.stderr)
        XCTAssertTrue(
            try xclaw(["calendar", "list", "--calendar", "nope"], status: 1).stderr.contains("(there are: "))
        XCTAssertEqual(try JSONSchemas.errors(checks), [])
    }

    func testContactsAreAddedFoundShownAndDeleted() throws {
        var checks: [JSONSchemas.Check] = []
        let zoe = try xclaw(
            [
                "contacts", "add", "Zoë Müller", "--email", "zoe@example.org", "--phone", "+49 30 1234",
                "--organization",
                "ACME", "--json",
            ])
        checks.append(.init(name: "contacts add", schema: "contacts-add", stdout: zoe.stdout))
        let zoeUID = try XCTUnwrap(try json(zoe)["uid"]?.string)
        let bob = try xclaw(["contacts", "add", "Bob Stone", "--email", "bob@stone.test", "--key", "crm-1"])
        XCTAssertTrue(bob.text.hasPrefix("created xclaw-"), bob.text)
        XCTAssertEqual(
            try xclaw(["contacts", "add", "Bob Stone", "--email", "bob@stone.test", "--key", "crm-1"]).text,
            bob.text.replacingOccurrences(of: "created ", with: "already exists: "))
        XCTAssertEqual(
            try xclaw(["contacts", "search", "zoe"]).text, "Zoë Müller\tzoe@example.org\t+49 30 1234\t\(zoeUID)\n")
        let byEmail = try xclaw(["contacts", "search", "stone.test", "--in", "email", "--json"])
        checks.append(.init(name: "contacts search", schema: "contacts-search", stdout: byEmail.stdout))
        XCTAssertEqual(try json(byEmail).array?.map { $0["name"]?.string }, ["Bob Stone"])
        XCTAssertEqual(try xclaw(["contacts", "search", "stone", "--in", "phone"]).text, "")
        let shown = try xclaw(["contacts", "show", zoeUID, "--json"])
        checks.append(.init(name: "contacts show", schema: "contacts-show", stdout: shown.stdout))
        XCTAssertEqual(try json(shown)["organization"]?.string, "ACME")
        XCTAssertTrue(
            try xclaw(["contacts", "show", zoeUID]).text.contains("email: zoe@example.org\nphone: +49 30 1234\n"))
        XCTAssertEqual(try xclaw(["contacts", "delete", zoeUID]).text, "deleted \(zoeUID)\tZoë Müller\n")
        XCTAssertEqual(try xclaw(["contacts", "show", zoeUID], status: 1).status, 1)
        XCTAssertEqual(try xclaw(["contacts", "search", "x", "--in", "nickname"], status: 2).status, 2)
        XCTAssertEqual(try JSONSchemas.errors(checks), [])
    }

    func testWithoutEDSEveryCommandExitsFiveWithWhatToDo() throws {
        let bare = try TestSessionBus(activation: .none)
        defer { bare.stop() }
        for arguments in [
            ["calendar", "list"], ["calendar", "add", "x", "--start", "tomorrow"], ["calendar", "tasks"],
            ["calendar", "sources"], ["contacts", "search", "x"], ["contacts", "add", "x"],
        ] {
            let result = try runCLI(arguments, environment: bare.environment)
            XCTAssertEqual(result.status, 5, "\(arguments): \(result.text)")
            XCTAssertEqual(
                result.stderr,
                "xclaw: evolution-data-server is not running on this session bus: install and start it (Debian: "
                    + "evolution-data-server) or use the screen\n", "\(arguments)")
        }
        let json = try runCLI(["calendar", "list", "--json"], environment: bare.environment)
        XCTAssertEqual(try JSONValue.parse(json.stdout)["error"]?["exit_code"]?.int, 5)
    }

    func testAnAgentAddsAnEventThroughTheCalendarToolAndItsDeleteWaitsForApproval() throws {
        let event = #"{"action": "create_event", "summary": "Dentist", "start": "2031-09-15T09:00", "key": "dentist"}"#
        let server = try MockMessagesServer(replies: [
            .toolUse(name: "calendar", input: event, id: "toolu_1"),
            .toolUse(name: "calendar", input: event, id: "toolu_2", text: "Once more, to be sure."),
            .text("The dentist is on your calendar."),
        ])
        defer { server.stop() }
        let dir = try bus.directory
        let agent = [
            "ANTHROPIC_BASE_URL": server.baseURL, "ANTHROPIC_API_KEY": "sk-" + "ant-cal-SECRET",
            "XCLAW_DB": dir + "/agents.sqlite",
        ]
        let ran = try xclaw(["run", "Put my dentist appointment on the calendar", "--tools", "calendar"], extra: agent)
        XCTAssertTrue(ran.text.contains("The dentist is on your calendar."), ran.text)
        // The tool offered says to prefer it to the screen; no screen tool is offered.
        let first = try JSONValue.parse(server.requests[0].body)
        let tools = first["tools"]?.array ?? []
        XCTAssertEqual(tools.compactMap { $0["name"]?.string }, ["calendar"])
        XCTAssertTrue(tools.first?["description"]?.string?.contains("Prefer it to the screen") == true)
        // Two creates with one key: one event, and the model was told the second added nothing.
        let results = server.requests.dropFirst().map { String(decoding: $0.body, as: UTF8.self) }
        XCTAssertTrue(results[0].contains("created: event uid="), results[0])
        XCTAssertTrue(results[1].contains("already exists (nothing added)"), results[1])
        let listed = try json(try xclaw(["calendar", "list", "--from", "2031-09-15", "--to", "2031-09-15", "--json"]))
        XCTAssertEqual(listed.array?.compactMap { $0["summary"]?.string }, ["Dentist"])
        XCTAssertEqual(listed.array?.first?["start"]?.string, "2031-09-15T07:00:00Z")
        let uid = try XCTUnwrap(listed.array?.first?["uid"]?.string)

        // A delete is gated like a click on "Delete": the unattended run waits; denied, the event stays.
        let deleter = try MockMessagesServer(replies: [
            .toolUse(name: "calendar", input: #"{"action": "delete", "uid": "\#(uid)"}"#, id: "toolu_3"),
            .text("I could not delete it."),
        ])
        defer { deleter.stop() }
        var gated = try env.merging(agent) { $1 }
        gated["ANTHROPIC_BASE_URL"] = deleter.baseURL
        let run = try launchCLI(["run", "Cancel the dentist", "--tools", "calendar"], environment: gated)
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        let pending = try XCTUnwrap(
            eventually("the delete waits for approval") { () -> JSONValue? in
                let list = try? JSONValue.parse(try runCLI(["approvals", "--json"], environment: gated).stdout)
                return list?.array?.first
            })
        XCTAssertEqual(pending["kind"]?.string, "delete")
        XCTAssertTrue(pending["action"]?.string?.contains("delete event Dentist") == true, "\(pending)")
        let id = try XCTUnwrap(pending["run"]?.int)
        XCTAssertEqual(try runCLI(["deny", "\(id)"], environment: gated).status, 0)
        run.waitUntilExit()
        XCTAssertEqual(run.terminationStatus, 0)
        let told = String(decoding: try XCTUnwrap(deleter.requests.last).body, as: UTF8.self)
        XCTAssertTrue(told.contains("not approved"), told)
        XCTAssertEqual(
            try json(try xclaw(["calendar", "list", "--from", "2031-09-15", "--to", "2031-09-15", "--json"])).array?
                .count, 1, "still there")
    }
}

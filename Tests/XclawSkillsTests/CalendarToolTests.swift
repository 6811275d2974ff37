import Foundation
import Synchronization
import XCTest
import XclawAgent
import XclawBase
import XclawMessages
import XclawTesting

@testable import XclawSkills

/// The `calendar` and `contacts` tools against a real evolution-data-server on a private bus: reads answer at once,
/// every change asks the run's gates first (dry run, the terminal's confirmation, the approval gate, with a label
/// naming the verb and the item) and is logged with its result; what EDS returns reaches the model quoted.
final class CalendarToolTests: XCTestCase {
    private static let shared = ClassScene { try TestSessionBus(activation: .standard) }

    override class func tearDown() { shared.stop() }

    private func environment() throws -> [String: String] {
        try Self.shared.get().environment.merging(["TZ": "Europe/Berlin"]) { $1 }
    }

    /// What the gate was asked (the labels) and what the tools logged.
    private final class Seen: Sendable {
        let asked = Mutex<[String]>([])
        let logged = Mutex<[ActionRecord]>([])
        var labels: [String] { asked.withLock { $0 } }
        var results: [String] { logged.withLock { $0.map(\.result) } }
    }

    /// A context whose gate answers `verdict`, keeping what it was asked and what was logged in `seen`.
    private func context(_ seen: Seen, dryRun: Bool = false, confirm: Bool = true, verdict: GateVerdict = .allow)
        -> ToolContext
    {
        ToolContext(
            dryRun: dryRun, confirm: { _ in confirm }, log: { record in seen.logged.withLock { $0.append(record) } },
            gate: { request in
                seen.asked.withLock { $0.append(request.subject.label ?? "") }
                return verdict
            })
    }

    /// Runs `tool` and returns the text it answered.
    private func run(_ tool: any AgentTool, _ input: JSONValue, _ context: ToolContext) async throws -> String {
        try await tool.execute(input, context: context).content.compactMap { block -> String? in
            if case .text(let text) = block { return text }
            return nil
        }.joined()
    }

    /// The first quoted value in a tool's line: the uid.
    private func uid(_ line: String) throws -> String {
        try XCTUnwrap(line.split(separator: "\"").dropFirst().first.map(String.init), line)
    }

    func testACreateIsGatedLoggedAndIdempotentAndADeleteIsHeldWhenDenied() async throws {
        let tool = CalendarTool(environment: try environment())
        let seen = Seen()
        let create: JSONValue = [
            "action": "create_event", "summary": "Dentist \"Dr. X\"", "start": "2032-02-03T09:00",
            "end": "2032-02-03T10:00", "key": "dentist-2032",
        ]
        let listing: JSONValue = ["action": "list_events", "from": "2032-02-03", "to": "2032-02-03"]
        // A dry run and a declined confirmation change nothing.
        let dry = try await run(tool, create, context(seen, dryRun: true))
        XCTAssertTrue(dry.hasPrefix("dry run: would create event Dentist"), dry)
        let declined = try await run(tool, create, context(seen, confirm: false))
        XCTAssertTrue(declined.contains("the user declined"), declined)
        let empty = try await run(tool, listing, context(seen))
        XCTAssertEqual(empty, "no events in that range")

        let made = try await run(tool, create, context(seen))
        XCTAssertTrue(made.hasPrefix("created: event uid=\"xclaw-"), made)
        XCTAssertTrue(made.contains(#"start=2032-02-03 09:00 end=2032-02-03 10:00 summary="Dentist \"Dr. X\"""#), made)
        let again = try await run(tool, create, context(seen))
        XCTAssertTrue(again.hasPrefix("already exists (nothing added): "), again)
        XCTAssertEqual(seen.labels, ["create event Dentist \"Dr. X\"", "create event Dentist \"Dr. X\""])
        XCTAssertEqual(seen.results, ["dry-run", "declined", "ok", "ok"], "every attempt logged once")
        XCTAssertEqual(seen.logged.withLock { $0.last?.action }, RecordedAction.other("create_event"))
        let listed = try await run(tool, listing, context(seen))
        XCTAssertEqual(listed.split(separator: "\n").count, 1, listed)
        let uid = try uid(listed)

        // A delete the gate denies: the model reads why, the event stays.
        let delete: JSONValue = ["action": "delete", "uid": .string(uid)]
        let denied = try await run(tool, delete, context(seen, verdict: .deny("not approved: delete event (delete)")))
        XCTAssertEqual(denied, "not approved: delete event (delete)")
        XCTAssertEqual(seen.labels.last, "delete event Dentist \"Dr. X\"")
        let still = try await run(tool, listing, context(seen))
        XCTAssertEqual(still, listed)
        let deleted = try await run(tool, delete, context(seen))
        XCTAssertTrue(deleted.hasPrefix("deleted: event uid=\"\(uid)\""), deleted)
        let gone = try await run(tool, listing, context(seen))
        XCTAssertEqual(gone, "no events in that range")
        // A missing item and a bad date are errors the model can act on.
        do {
            _ = try await run(tool, delete, context(seen))
            XCTFail("deleted twice")
        } catch let error as ToolError {
            XCTAssertTrue(error.message.contains("no event or task with uid"), error.message)
        }
        do {
            _ = try await run(tool, ["action": "create_event", "summary": "x", "start": "next week"], context(seen))
            XCTFail("a bad date was accepted")
        } catch let error as ToolError {
            XCTAssertTrue(
                error.message.contains("start: cannot read \"next week\" as a date; accepted:"), error.message)
        }
    }

    func testTasksAreCreatedCompletedAndListed() async throws {
        let tool = CalendarTool(environment: try environment())
        let seen = Seen()
        let made = try await run(
            tool, ["action": "create_task", "summary": "Renew passport", "due": "2032-03-01"], context(seen))
        XCTAssertTrue(made.contains("due=2032-03-01 summary=\"Renew passport\" open"), made)
        let uid = try uid(made)
        let done = try await run(tool, ["action": "complete_task", "uid": .string(uid)], context(seen))
        XCTAssertTrue(done.hasPrefix("done: task uid=\"\(uid)\"") && done.hasSuffix(" done"), done)
        XCTAssertEqual(seen.labels, ["create task Renew passport", "complete task Renew passport"])
        let open = try await run(tool, ["action": "list_tasks"], context(seen))
        XCTAssertFalse(open.contains(uid), open)
        let all = try await run(tool, ["action": "list_tasks", "include_done": true], context(seen))
        XCTAssertTrue(all.contains(uid), all)
    }

    func testContactsAreSearchedAtOnceAndCreatedAndDeletedThroughTheGate() async throws {
        let tool = ContactsTool(environment: try environment())
        let seen = Seen()
        let made = try await run(
            tool, ["action": "create", "name": "Ada Lovelace", "emails": ["ada@engine.test"], "key": "ada"],
            context(seen))
        XCTAssertTrue(made.hasPrefix("created: contact uid=\"xclaw-"), made)
        let found = try await run(tool, ["action": "search", "text": "engine", "field": "email"], context(seen))
        XCTAssertTrue(found.contains(#"name="Ada Lovelace" email="ada@engine.test""#), found)
        let deleted = try await run(tool, ["action": "delete", "uid": .string(try uid(found))], context(seen))
        XCTAssertTrue(deleted.hasPrefix("deleted: contact uid="), deleted)
        XCTAssertEqual(seen.labels, ["create contact Ada Lovelace", "delete contact Ada Lovelace"], "not the search")
        let none = try await run(tool, ["action": "search", "text": "lovelace"], context(seen))
        XCTAssertEqual(none, "no contact matches \"lovelace\"")
    }

    func testWithoutEDSTheToolsSayWhatToDo() async throws {
        let bare = try TestSessionBus(activation: .none)
        defer { bare.stop() }
        let attempts: [(any AgentTool, JSONValue)] = [
            (CalendarTool(environment: bare.environment), ["action": "list_events"]),
            (ContactsTool(environment: bare.environment), ["action": "search", "text": "x"]),
        ]
        for (tool, input) in attempts {
            do {
                _ = try await run(tool, input, context(Seen()))
                XCTFail("\(tool.name) answered without EDS")
            } catch let error as ToolError {
                XCTAssertTrue(
                    error.message.hasPrefix("evolution-data-server is not running on this session bus"), error.message)
            }
        }
    }
}

import Foundation
import XCTest
import XclawBase
import XclawTesting
import XclawTimeTesting

@testable import XclawServices

/// Calendars, tasks and contacts against a real evolution-data-server, started by a private session bus on first
/// call (its state under the bus's HOME). One bus serves the class; each test uses its own days and names.
final class CalendarStoreTests: XCTestCase {
    private static let shared = ClassScene { try TestSessionBus(activation: .standard) }
    private let berlin = TimeZone(identifier: "Europe/Berlin")!

    override class func tearDown() { shared.stop() }

    /// The class's bus, started by its first test.
    private var bus: TestSessionBus { get throws { try Self.shared.get() } }

    private func calendars() throws -> CalendarStore {
        CalendarStore(connection: try BusConnection.session(environment: try bus.environment), zone: berlin)
    }

    private func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    /// The calendar file EDS's local backend keeps: an oracle that is not EDS's bus API.
    private func calendarFile() throws -> String {
        let path = try bus.environment["XDG_DATA_HOME"]! + "/evolution/calendar/system/calendar.ics"
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    func testAnEventIsCreatedInEDSAndReadBackThroughItsQueryAndItsFile() throws {
        let store = try calendars()
        let draft = EventDraft(
            summary: "Dentist, Dr. X", start: .instant(date("2031-03-10T08:00:00Z")),
            end: .instant(date("2031-03-10T08:45:00Z")), location: "Main St; 3", description: "bring card\nand book")
        let made = try store.createEvent(draft, key: nil, calendar: nil)
        XCTAssertEqual(made.created, true)
        XCTAssertTrue(made.uid.hasPrefix("xclaw-"))
        XCTAssertEqual(made.source, "system-calendar")
        // Through EDS's own query (GetObjectList with occur-in-time-range?).
        let (items, warnings) = try store.events(from: date("2031-03-10T00:00:00Z"), to: date("2031-03-11T00:00:00Z"))
        XCTAssertEqual(warnings, [])
        let item = try XCTUnwrap(items.first { $0.uid == made.uid })
        XCTAssertEqual(item.summary, "Dentist, Dr. X")
        XCTAssertEqual(item.start, .instant(date("2031-03-10T08:00:00Z")))
        XCTAssertEqual(item.end, .instant(date("2031-03-10T08:45:00Z")))
        XCTAssertEqual(item.location, "Main St; 3")
        XCTAssertEqual(item.description, "bring card\nand book")
        XCTAssertEqual(item.key, made.key)
        XCTAssertEqual(
            try store.events(from: date("2031-03-11T00:00:00Z"), to: date("2031-03-12T00:00:00Z")).items.map(\.uid)
                .filter { $0 == made.uid }, [], "not on the next day")
        // And in the file EDS wrote, as iCalendar: DTSTART in UTC, the summary escaped.
        XCTAssertTrue(
            try eventually("the event in calendar.ics") { try self.calendarFile().contains("UID:\(made.uid)") })
        let file = try ContentComponent.parse(try calendarFile()).flatMap(\.components).first {
            $0.text("UID") == made.uid
        }
        XCTAssertEqual(file?.first("DTSTART")?.value, "20310310T080000Z")
        XCTAssertEqual(file?.first("SUMMARY")?.value, #"Dentist\, Dr. X"#)
        // And through EDS's bus API by another client (GLib's, from Python): gdbus alone cannot, as the calendar it
        // opens is closed when its process leaves.
        let oracle = try Subprocess.run(
            [
                "/usr/bin/python3", "-c",
                """
                import sys
                from gi.repository import Gio, GLib
                c = Gio.bus_get_sync(Gio.BusType.SESSION)
                def call(dest, path, iface, method, args):
                    return c.call_sync(dest, path, iface, method, args, None, 0, 20000, None).unpack()
                path, name = call('org.gnome.evolution.dataserver.Calendar8',
                    '/org/gnome/evolution/dataserver/CalendarFactory',
                    'org.gnome.evolution.dataserver.CalendarFactory', 'OpenCalendar', GLib.Variant('(s)', ('system-calendar',)))
                call(name, path, 'org.gnome.evolution.dataserver.Calendar', 'Open', None)
                sys.stdout.write(call(name, path, 'org.gnome.evolution.dataserver.Calendar', 'GetObject',
                    GLib.Variant('(ss)', (sys.argv[1], '')))[0])
                """, made.uid,
            ], timeout: .seconds(30), environment: try bus.environment)
        let seen = String(decoding: oracle.stdout, as: UTF8.self)
        XCTAssertTrue(
            seen.contains("\r\nDTSTART:20310310T080000Z\r\n"), seen + String(decoding: oracle.stderr, as: UTF8.self))
        XCTAssertTrue(seen.contains("\r\nSUMMARY:Dentist\\, Dr. X\r\n"), seen)
    }

    func testARetriedCreateMakesOneEventWithAKeyOrWithout() throws {
        let store = try calendars()
        let range = (date("2031-04-01T00:00:00Z"), date("2031-04-02T00:00:00Z"))
        func count(_ summary: String) throws -> Int {
            try store.events(from: range.0, to: range.1).items.filter { $0.summary == summary }.count
        }
        // The same key twice: the second is the first event, even with another time.
        let start = CalendarTime.instant(date("2031-04-01T09:00:00Z"))
        let first = try store.createEvent(
            EventDraft(summary: "Standup", start: start), key: "meeting-17", calendar: nil)
        let again = try store.createEvent(
            EventDraft(summary: "Standup", start: .instant(date("2031-04-01T10:00:00Z"))), key: "meeting-17",
            calendar: nil)
        XCTAssertEqual(first.created, true)
        XCTAssertEqual(again.created, false)
        XCTAssertEqual(again.uid, first.uid)
        XCTAssertEqual(again.start, start, "the existing event, unchanged")
        XCTAssertEqual(first.uid, IdempotencyKey.uid(for: "meeting-17"))
        XCTAssertEqual(first.key, "meeting-17")
        XCTAssertEqual(try count("Standup"), 1)
        // The same content twice without a key.
        let lunch = EventDraft(summary: "Lunch", start: .instant(date("2031-04-01T11:00:00Z")))
        let one = try store.createEvent(lunch, key: nil, calendar: nil)
        let two = try calendars().createEvent(lunch, key: nil, calendar: nil)
        XCTAssertEqual([one.created, two.created], [true, false])
        XCTAssertEqual(one.uid, two.uid)
        XCTAssertEqual(try count("Lunch"), 1)
        // Another time is another event.
        var later = lunch
        later.start = .instant(date("2031-04-01T12:00:00Z"))
        XCTAssertEqual(try store.createEvent(later, key: nil, calendar: nil).created, true)
        XCTAssertEqual(try count("Lunch"), 2)
    }

    func testAnEventIsUpdatedMovedAndDeletedAndAMissingOneIsNotFound() throws {
        let store = try calendars()
        let made = try store.createEvent(
            EventDraft(summary: "Review", start: .instant(date("2031-05-05T13:00:00Z")), location: "Room 1"),
            key: "review", calendar: nil)
        let moved = try store.update(
            made.uid, ItemChanges(summary: "Design review", start: .instant(date("2031-05-06T14:00:00Z")), location: "")
        )
        XCTAssertEqual(moved.summary, "Design review")
        XCTAssertNil(moved.location)
        XCTAssertEqual(moved.end, .instant(date("2031-05-06T15:00:00Z")), "moved with its length")
        XCTAssertEqual(moved.key, "review", "the key is kept")
        let listed = try store.events(from: date("2031-05-06T00:00:00Z"), to: date("2031-05-07T00:00:00Z")).items
        XCTAssertEqual(listed.filter { $0.uid == made.uid }.map(\.summary), ["Design review"])
        XCTAssertThrowsError(
            try store.update(made.uid, ItemChanges(end: .instant(date("2031-05-06T13:00:00Z"))))
        ) { XCTAssertEqual(($0 as? EDSError)?.exitStatus, .usage, "\($0)") }

        let deleted = try store.delete(made.uid)
        XCTAssertEqual(deleted.summary, "Design review")
        XCTAssertThrowsError(try store.delete(made.uid)) { error in
            XCTAssertEqual(error as? EDSError, .notFound(what: "event or task", uid: made.uid))
            XCTAssertEqual((error as? EDSError)?.exitStatus, .notFound)
        }
        XCTAssertThrowsError(try store.update("xclaw-nothing", ItemChanges(summary: "x"), kind: .event)) {
            XCTAssertEqual($0 as? EDSError, .notFound(what: "event", uid: "xclaw-nothing"))
        }
        XCTAssertThrowsError(
            try store.createEvent(
                EventDraft(summary: "x", start: .instant(Date())), key: nil, calendar: "no-such-calendar")
        ) { error in
            guard case .noSource(_, "no-such-calendar", let known)? = error as? EDSError else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(known.contains("system-calendar"), "\(known)")
        }
    }

    func testAllDayEventsAndTasksKeepTheirDays() throws {
        let store = try calendars()
        let christmas = CalendarDay(year: 2031, month: 12, day: 24)!
        let holiday = try store.createEvent(
            EventDraft(summary: "Holidays", start: .day(christmas), end: .day(christmas.adding(days: 2))), key: nil,
            calendar: nil)
        XCTAssertEqual(holiday.start, .day(christmas))
        XCTAssertEqual(holiday.shownEnd, .day(christmas.adding(days: 2)))
        // It occurs on its last day (the 26th, Berlin), not on the 27th.
        let on26 = try store.events(
            from: christmas.adding(days: 2).start(in: berlin), to: christmas.adding(days: 3).start(in: berlin))
        XCTAssertTrue(on26.items.contains { $0.uid == holiday.uid })

        let milk = try store.createTask(TaskDraft(summary: "Buy milk", due: .day(christmas)), key: nil, list: nil)
        let taxes = try store.createTask(
            TaskDraft(summary: "File taxes", due: .instant(date("2031-05-31T10:00:00Z"))), key: "taxes", list: nil)
        XCTAssertEqual(
            try store.createTask(TaskDraft(summary: "Buy milk", due: .day(christmas)), key: nil, list: nil).created,
            false)
        var open = try store.tasks(includeDone: false).items.map(\.uid)
        XCTAssertEqual(open.filter { [milk.uid, taxes.uid].contains($0) }, [taxes.uid, milk.uid], "by due time")
        let done = try store.update(taxes.uid, ItemChanges(completed: true), kind: .task)
        XCTAssertTrue(done.isDone)
        XCTAssertNotNil(done.completed)
        open = try store.tasks(includeDone: false).items.map(\.uid)
        XCTAssertFalse(open.contains(taxes.uid))
        XCTAssertTrue(open.contains(milk.uid))
        XCTAssertTrue(try store.tasks(includeDone: true).items.contains { $0.uid == taxes.uid && $0.isDone })
        XCTAssertEqual(try store.delete(milk.uid, kind: .task).summary, "Buy milk")
        XCTAssertFalse(try store.tasks(includeDone: true).items.contains { $0.uid == milk.uid })
        // The sources the registry lists include the defaults.
        let sources = try EDSSource.all(store.connection)
        for (kind, uid) in [
            (EDSSource.Kind.calendar, "system-calendar"), (.taskList, "system-task-list"),
            (.addressBook, "system-address-book"),
        ] {
            XCTAssertTrue(sources.contains { $0.kind == kind && $0.uid == uid && $0.enabled }, "\(uid): \(sources)")
        }
        // Its name is the untranslated DisplayName, not one of the hundred translations beside it.
        XCTAssertEqual(sources.first { $0.uid == "system-calendar" }?.name, "Personal")
        let parsed = EDSSource.parse(
            uid: "u",
            keyFile: "# c\r\n[Data Source]\r\nDisplayName[de]=Persönlich\r\n  DisplayName = Work ✓ \r\nEnabled=true\r\n"
                + "[Calendar]\nBackendName=local\nEnabled = false\n")
        XCTAssertEqual(parsed, [EDSSource(uid: "u", name: "Work ✓", kind: .calendar, enabled: false, backend: "local")])
    }

    func testContactsAreFoundByNameEmailPhoneAndAnyFieldAndAddedOnce() throws {
        let store = ContactStore(connection: try BusConnection.session(environment: try bus.environment))
        let zoe = try store.create(
            ContactDraft(
                name: "Zoë Müller", emails: ["zoe@example.org"], phones: ["+49 30 1234"], organization: "ACME"),
            key: nil, book: nil)
        let bob = try store.create(
            ContactDraft(name: "Bob \"The\" Stone", emails: ["bob@stone.test", "robert@work.test"]), key: "crm-4711",
            book: nil)
        XCTAssertEqual([zoe.created, bob.created], [true, true])
        XCTAssertEqual(bob.uid, IdempotencyKey.uid(for: "crm-4711"))
        XCTAssertEqual(try store.search("zoe", in: .name).contacts.map(\.uid), [zoe.uid], "accents ignored")
        XCTAssertEqual(try store.search("STONE.test", in: .email).contacts.map(\.uid), [bob.uid])
        XCTAssertEqual(try store.search("robert", in: .email).contacts.map(\.uid), [bob.uid], "the second address")
        XCTAssertEqual(try store.search("1234", in: .phone).contacts.map(\.uid), [zoe.uid])
        XCTAssertEqual(try store.search("acme").contacts.map(\.uid), [zoe.uid], "any field: the organisation")
        XCTAssertEqual(try store.search("\"The\"", in: .name).contacts.map(\.uid), [bob.uid], "quotes in the query")
        XCTAssertEqual(try store.search("nobody-by-that-name").contacts, [])
        let shown = try store.contact(zoe.uid)
        XCTAssertEqual(shown.name, "Zoë Müller")
        XCTAssertEqual(shown.emails.map(\.value), ["zoe@example.org"])
        XCTAssertEqual(shown.phones.map(\.value), ["+49 30 1234"])
        XCTAssertEqual(shown.organization, "ACME")
        // A retry adds nothing: the same content, and the same key with other content.
        let again = try store.create(
            ContactDraft(
                name: "Zoë Müller", emails: ["zoe@example.org"], phones: ["+49 30 1234"], organization: "ACME"),
            key: nil, book: nil)
        XCTAssertEqual(again.created, false)
        XCTAssertEqual(again.uid, zoe.uid)
        XCTAssertEqual(
            try store.create(ContactDraft(name: "Robert Stone"), key: "crm-4711", book: nil).name, "Bob \"The\" Stone")
        XCTAssertEqual(try store.search("").contacts.filter { [zoe.uid, bob.uid].contains($0.uid) }.count, 2)

        XCTAssertEqual(try store.delete(bob.uid).name, "Bob \"The\" Stone")
        XCTAssertEqual(try store.search("stone").contacts, [])
        XCTAssertThrowsError(try store.delete(bob.uid)) {
            XCTAssertEqual($0 as? EDSError, .notFound(what: "contact", uid: bob.uid))
        }
    }

    /// EDS built to run a process per backend (Arch's and NixOS's builds) serves an opened calendar or address book
    /// from the backend's own bus name, which the factory's reply gives: every call after opening goes there.
    func testABackendInAProcessOfItsOwnIsCalledByTheNameTheFactoryGives() throws {
        let own = try TestSessionBus(activation: .none)
        defer { own.stop() }
        try own.addService(
            name: "org.gnome.evolution.dataserver.Sources5", command: ["/usr/libexec/evolution-source-registry"])
        try own.addService(
            name: "org.gnome.evolution.dataserver.Calendar8",
            command: ["/usr/libexec/evolution-calendar-factory", "--backend-per-process=1"])
        try own.addService(
            name: "org.gnome.evolution.dataserver.AddressBook10",
            command: ["/usr/libexec/evolution-addressbook-factory", "--backend-per-process=1"])
        let connection = try BusConnection.session(environment: own.environment)
        let store = CalendarStore(connection: connection, zone: berlin)
        let start = Date(timeIntervalSince1970: 1_796_900_400)  // 2026-12-10 10:00 UTC
        let made = try store.createEvent(
            EventDraft(summary: "Own process", start: .instant(start), end: .instant(start + 3600)), key: "own",
            calendar: nil)
        let listed = try store.events(from: start - 3600, to: start + 7200).items
        XCTAssertEqual(listed.map(\.uid), [made.uid])
        // The backend is a process of its own: a name on the bus besides the factory's.
        XCTAssertTrue(try connection.names().contains { $0.contains("Subprocess.Backend.Calendar") })
        let contacts = ContactStore(connection: connection)
        let zoe = try contacts.create(ContactDraft(name: "Zoë Own", emails: ["own@example.org"]), key: nil, book: nil)
        XCTAssertEqual(try contacts.search("zoë own").contacts.map(\.uid), [zoe.uid])
    }

    func testWithoutEDSOnTheBusEveryOperationSaysSoAndNothingHangs() throws {
        let bare = try TestSessionBus(activation: .none)
        defer { bare.stop() }
        let connection = try BusConnection.session(environment: bare.environment)
        let calendars = CalendarStore(connection: connection, zone: berlin)
        let contacts = ContactStore(connection: connection)
        let attempts: [(String, () throws -> Void)] = [
            ("sources", { _ = try EDSSource.all(connection) }),
            ("events", { _ = try calendars.events(from: Date(), to: Date().addingTimeInterval(60)) }),
            (
                "create",
                {
                    _ = try calendars.createEvent(
                        EventDraft(summary: "x", start: .instant(Date())), key: nil, calendar: "system-calendar")
                }
            ),
            ("tasks", { _ = try calendars.tasks(includeDone: true) }),
            ("search", { _ = try contacts.search("x") }),
            ("add", { _ = try contacts.create(ContactDraft(name: "x"), key: nil, book: "system-address-book") }),
        ]
        for (name, attempt) in attempts {
            XCTAssertThrowsError(try attempt(), name) { error in
                XCTAssertEqual(error as? EDSError, .notRunning, name)
                XCTAssertEqual((error as? EDSError)?.exitStatus, .internal)
                XCTAssertEqual(
                    "\(error)",
                    "evolution-data-server is not running on this session bus: install and start it "
                        + "(Debian: evolution-data-server) or use the screen")
            }
        }
    }
}

import Foundation
import XCTest
import XclawBase

@testable import XclawServices

/// The iCalendar and vCard reader and writer on their own: folding at 75 octets, the escapes, parameters, times and
/// zones, the components xclaw writes, and the dates and durations people type.
final class ICalendarTests: XCTestCase {
    private let berlin = TimeZone(identifier: "Europe/Berlin")!
    private let utc = TimeZone(identifier: "UTC")!

    private func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    func testLongLinesFoldAt75OctetsWithoutSplittingACharacterAndUnfoldBack() {
        let summary = String(repeating: "Zoë’s café ☕ ", count: 12)
        let line = ContentLine(name: "SUMMARY", text: summary)
        let folded = ContentLines.fold(line.unfolded)
        XCTAssertTrue(folded.hasSuffix("\r\n"))
        let physical = folded.components(separatedBy: "\r\n").dropLast()
        XCTAssertGreaterThan(physical.count, 3)
        for (index, piece) in physical.enumerated() {
            XCTAssertLessThanOrEqual(piece.utf8.count, 75, piece)
            // Every piece is whole UTF-8 (a split sequence would not survive the round trip through String).
            XCTAssertEqual(String(decoding: Array(piece.utf8), as: UTF8.self), piece)
            if index > 0 { XCTAssertTrue(piece.hasPrefix(" "), "a continuation starts with a space") }
        }
        XCTAssertEqual(ContentLines.unfold(folded), [line.unfolded])
        XCTAssertEqual(ContentLine.parse(ContentLines.unfold(folded)[0])?.text, summary)
        // Exactly 75 octets stays one line; 76 folds.
        XCTAssertEqual(ContentLines.fold(String(repeating: "a", count: 75)), String(repeating: "a", count: 75) + "\r\n")
        XCTAssertEqual(
            ContentLines.fold(String(repeating: "a", count: 76)), String(repeating: "a", count: 75) + "\r\n a\r\n")
        // LF-only text and a tab as the continuation unfold too.
        XCTAssertEqual(ContentLines.unfold("A:1\n\tb\nB:2"), ["A:1b", "B:2"])
    }

    func testTextEscapesRoundTripAndStructuredValuesSplitOnUnescapedSemicolons() {
        let text = "Dentist, Dr. X; room 3\\4\nsecond line"
        let escaped = ContentLines.escape(text)
        XCTAssertEqual(escaped, #"Dentist\, Dr. X\; room 3\\4\nsecond line"#)
        XCTAssertEqual(ContentLines.unescape(escaped), text)
        XCTAssertEqual(ContentLines.escape("a\r\nb"), #"a\nb"#)
        XCTAssertEqual(ContentLines.unescape(#"a\Nb\:c\qd"#), "a\nb:c\\qd")
        let n = ContentLine.parse(#"N:Müller;Zoë\; Anna;;Dr.;"#)
        XCTAssertEqual(n?.parts, ["Müller", "Zoë; Anna", "", "Dr.", ""])
    }

    func testParametersAreQuotedWhenTheyMustBeAndReadBack() throws {
        // As EDS writes a phone number: a quoted value holding a comma, then another parameter.
        let tel = try XCTUnwrap(ContentLine.parse(#"TEL;X-EVOLUTION-E164=301234,"+49";TYPE=CELL:+49 30 1234"#))
        XCTAssertEqual(tel.name, "TEL")
        XCTAssertEqual(
            tel.parameters, [ContentParameter("X-EVOLUTION-E164", ["301234", "+49"]), .init("TYPE", ["CELL"])])
        XCTAssertEqual(tel.value, "+49 30 1234")
        let odd = ContentLine(
            name: "ATTENDEE", parameters: [ContentParameter("CN", ["Doe; Jane: \"JD\""])], value: "mailto:jd@x.test")
        XCTAssertEqual(odd.unfolded, #"ATTENDEE;CN="Doe; Jane: ^'JD^'":mailto:jd@x.test"#)
        XCTAssertEqual(ContentLine.parse(odd.unfolded), odd)
        XCTAssertEqual(ContentLine.parse("DESCRIPTION:a:b;c")?.value, "a:b;c", "only the first colon ends the name")
        XCTAssertNil(ContentLine.parse("no colon here"))
    }

    func testComponentsNestKeepUnknownPropertiesAndRefuseBrokenText() throws {
        let text = """
            BEGIN:VCALENDAR\r
            VERSION:2.0\r
            BEGIN:VEVENT\r
            UID:e1\r
            SUMMARY:Long \r
             title\r
            RRULE:FREQ=WEEKLY\r
            BEGIN:VALARM\r
            TRIGGER:-PT15M\r
            END:VALARM\r
            END:VEVENT\r
            END:VCALENDAR\r

            """
        let top = try ContentComponent.parse(text)
        XCTAssertEqual(top.map(\.name), ["VCALENDAR"])
        let event = try XCTUnwrap(top.first?.components.first)
        XCTAssertEqual(event.text("SUMMARY"), "Long title")
        XCTAssertEqual(event.components.first?.text("TRIGGER"), "-PT15M")
        XCTAssertEqual(try ContentComponent.parse(top[0].serialized), top, "written and read back unchanged")
        var changed = event
        changed.setText("SUMMARY", "New")
        XCTAssertEqual(changed.properties.map(\.name), ["UID", "SUMMARY", "RRULE"], "in its place, the rest kept")
        XCTAssertThrowsError(try ContentComponent.parse("BEGIN:VEVENT\r\nUID:x\r\n")) {
            XCTAssertEqual($0 as? ContentError, .unclosed("VEVENT"))
        }
        XCTAssertThrowsError(try ContentComponent.parse("BEGIN:VEVENT\r\nEND:VTODO\r\n")) {
            XCTAssertEqual($0 as? ContentError, .unbalanced("VTODO"))
        }
        XCTAssertThrowsError(try ContentComponent.parse("UID:x\r\n")) {
            XCTAssertEqual($0 as? ContentError, .outside("UID"))
        }
    }

    func testTimesAreReadAsUTCInTheirTZIDOrFloatingAndDaysAsDays() throws {
        func read(_ line: String) -> CalendarTime? { CalendarTime.read(ContentLine.parse(line)!, local: berlin) }
        XCTAssertEqual(read("DTSTART:20261210T090000Z"), .instant(date("2026-12-10T09:00:00Z")))
        XCTAssertEqual(read("DTSTART;TZID=America/New_York:20261210T090000"), .instant(date("2026-12-10T14:00:00Z")))
        XCTAssertEqual(
            read("DTSTART;TZID=/freeassociation.sourceforge.net/Asia/Tokyo:20261210T090000"),
            .instant(date("2026-12-10T00:00:00Z")), "libical's prefixed zone names")
        XCTAssertEqual(
            read("DTSTART:20260710T090000"), .instant(date("2026-07-10T07:00:00Z")), "floating: local (CEST)")
        XCTAssertEqual(read("DTSTART;TZID=Nowhere/Special:20261210T090000"), .instant(date("2026-12-10T08:00:00Z")))
        XCTAssertEqual(read("DTSTART;VALUE=DATE:20261224"), .day(CalendarDay(year: 2026, month: 12, day: 24)!))
        XCTAssertEqual(read("DUE:20261224"), .day(CalendarDay(year: 2026, month: 12, day: 24)!))
        XCTAssertNil(read("DTSTART:20261310T090000Z"))
        XCTAssertNil(read("DTSTART:2026-12-10"))
        XCTAssertEqual(
            CalendarTime.instant(date("2026-12-10T08:00:00Z")).line("DTSTART").unfolded, "DTSTART:20261210T080000Z")
        XCTAssertEqual(
            CalendarTime.day(CalendarDay(year: 2026, month: 2, day: 1)!).line("DTEND").unfolded,
            "DTEND;VALUE=DATE:20260201")
        XCTAssertNil(CalendarDay(year: 2026, month: 2, day: 30))
    }

    func testAnEventIsWrittenAsRFC5545SaysAndReadBackAsTheSameItem() throws {
        let start = CalendarTime.instant(date("2026-12-10T08:00:00Z"))
        let draft = EventDraft(
            summary: "Dentist, Dr. X", start: start, end: nil, location: "Main St; 3", description: "line 1\nline 2")
        let event = try ContentComponent.event(
            uid: "xclaw-1", draft: draft, key: "k", now: date("2026-12-01T00:00:00Z"), zone: berlin)
        XCTAssertEqual(
            event.serialized,
            [
                "BEGIN:VEVENT", "UID:xclaw-1", "DTSTAMP:20261201T000000Z", "DTSTART:20261210T080000Z",
                "DTEND:20261210T090000Z", #"SUMMARY:Dentist\, Dr. X"#, #"LOCATION:Main St\; 3"#,
                #"DESCRIPTION:line 1\nline 2"#, "X-XCLAW-KEY:k", "END:VEVENT", "",
            ].joined(separator: "\r\n"))
        let item = try XCTUnwrap(CalendarItem(event, source: "system-calendar", zone: berlin))
        XCTAssertEqual(item.summary, "Dentist, Dr. X")
        XCTAssertEqual(item.location, "Main St; 3")
        XCTAssertEqual(item.description, "line 1\nline 2")
        XCTAssertEqual(item.end, .instant(date("2026-12-10T09:00:00Z")), "an hour by default")
        XCTAssertEqual(item.key, "k")
        // All day: the end given is the last day; DTEND is the day after.
        let day = CalendarDay(year: 2026, month: 12, day: 24)!
        let holiday = try ContentComponent.event(
            uid: "h", draft: EventDraft(summary: "Holiday", start: .day(day), end: .day(day.adding(days: 2))), key: "k",
            now: Date(), zone: berlin)
        XCTAssertEqual(holiday.first("DTEND")?.unfolded, "DTEND;VALUE=DATE:20261227")
        let read = try XCTUnwrap(CalendarItem(holiday, source: "c", zone: berlin))
        XCTAssertEqual(read.shownEnd, .day(day.adding(days: 2)))
        let json = String(decoding: try JSONEncoder.xclaw.encode(read), as: UTF8.self)
        XCTAssertTrue(json.contains(#""all_day":true"#), json)
        XCTAssertTrue(json.contains(#""end":"2026-12-26""#), json)
        XCTAssertThrowsError(
            try ContentComponent.event(
                uid: "x", draft: EventDraft(summary: "x", start: start, end: .instant(date("2026-12-10T07:00:00Z"))),
                key: "k", now: Date(), zone: berlin)
        ) { XCTAssertEqual(($0 as? EDSError)?.exitStatus, .usage) }
        // DURATION instead of DTEND.
        let timed = try ContentComponent.parse(
            "BEGIN:VEVENT\r\nUID:d\r\nDTSTART:20261210T080000Z\r\nDURATION:PT1H30M\r\nEND:VEVENT\r\n")
        XCTAssertEqual(CalendarItem(timed[0], source: "c", zone: utc)?.end, .instant(date("2026-12-10T09:30:00Z")))
    }

    func testAnUpdateChangesWhatItNamesMovesTheEndAlongAndKeepsTheRest() throws {
        let text =
            "BEGIN:VEVENT\r\nUID:u\r\nDTSTART:20261210T080000Z\r\nDTEND:20261210T090000Z\r\nSUMMARY:Old\r\n"
            + "LOCATION:There\r\nRRULE:FREQ=DAILY\r\nBEGIN:VALARM\r\nTRIGGER:-PT5M\r\nEND:VALARM\r\nEND:VEVENT\r\n"
        let event = try ContentComponent.parse(text)[0]
        let now = date("2026-12-05T00:00:00Z")
        let moved = try event.applying(
            ItemChanges(summary: "New", start: .instant(date("2026-12-11T10:00:00Z")), location: ""), now: now,
            zone: utc)
        let item = try XCTUnwrap(CalendarItem(moved, source: "c", zone: utc))
        XCTAssertEqual(item.summary, "New")
        XCTAssertNil(item.location)
        XCTAssertEqual(item.end, .instant(date("2026-12-11T11:00:00Z")), "the same hour's length")
        XCTAssertTrue(item.recurring)
        XCTAssertEqual(moved.components.count, 1, "the alarm is kept")
        XCTAssertEqual(moved.text("LAST-MODIFIED"), "20261205T000000Z")
        // A task done, then open again.
        let task = try ContentComponent.parse("BEGIN:VTODO\r\nUID:t\r\nSUMMARY:Milk\r\nEND:VTODO\r\n")[0]
        let done = try task.applying(ItemChanges(completed: true), now: now, zone: utc)
        XCTAssertEqual(CalendarItem(done, source: "l", zone: utc)?.isDone, true)
        XCTAssertEqual(done.text("STATUS"), "COMPLETED")
        let open = try done.applying(ItemChanges(completed: false), now: now, zone: utc)
        XCTAssertEqual(CalendarItem(open, source: "l", zone: utc)?.isDone, false)
        XCTAssertNil(open.first("COMPLETED"))
    }

    func testAContactIsWrittenAsVCard3AndReadWithItsTypes() throws {
        let card = ContentComponent.card(
            uid: "xclaw-c",
            draft: ContactDraft(
                name: "Zoë Anna Müller", emails: ["zoe@example.org"], phones: ["+49 30 1"],
                organization: "ACME, Inc."), key: "k")
        XCTAssertEqual(
            card.serialized,
            [
                "BEGIN:VCARD", "VERSION:3.0", "UID:xclaw-c", "FN:Zoë Anna Müller", "N:Müller;Zoë Anna;;;",
                "EMAIL:zoe@example.org", "TEL:+49 30 1", #"ORG:ACME\, Inc."#, "X-XCLAW-KEY:k", "END:VCARD", "",
            ].joined(separator: "\r\n"))
        // As EDS hands one out: no final CRLF, types in parameters.
        let stored = try ContentComponent.parse(
            "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:c1\r\nN:Stone;Bob;;Dr.;\r\nEMAIL;TYPE=WORK:bob@stone.test\r\n"
                + "TEL;TYPE=CELL,VOICE:+1 555\r\nORG:Stone Ltd;Sales\r\nEND:VCARD")[0]
        let contact = try XCTUnwrap(Contact(stored, book: "b"))
        XCTAssertEqual(contact.name, "Dr. Bob Stone", "no FN: the name from N")
        XCTAssertEqual(contact.emails, [Contact.Entry(value: "bob@stone.test", types: ["work"])])
        XCTAssertEqual(contact.phones, [Contact.Entry(value: "+1 555", types: ["cell", "voice"])])
        XCTAssertEqual(contact.organization, "Stone Ltd, Sales")
    }

    func testDatesAreReadInTheCallersZoneAndABadOneNamesTheAcceptedForms() throws {
        let now = date("2026-12-05T15:30:00Z")
        let input = DateInput(zone: berlin, now: now)
        let day = CalendarDay(year: 2026, month: 12, day: 10)!
        XCTAssertEqual(try input.parse("2026-12-10"), .day(day))
        XCTAssertEqual(try input.parse("2026-12-10T09:00"), .instant(date("2026-12-10T08:00:00Z")))
        XCTAssertEqual(try input.parse("2026-12-10 09:00:30"), .instant(date("2026-12-10T08:00:30Z")))
        XCTAssertEqual(try input.parse("2026-12-10T09:00Z"), .instant(date("2026-12-10T09:00:00Z")))
        XCTAssertEqual(try input.parse("2026-12-10T09:00+01:00"), .instant(date("2026-12-10T08:00:00Z")))
        XCTAssertEqual(try input.parse("2026-12-10T09:00:00.250-0500"), .instant(date("2026-12-10T14:00:00Z")))
        XCTAssertEqual(try input.parse("today"), .day(CalendarDay(year: 2026, month: 12, day: 5)!))
        XCTAssertEqual(try input.parse("Tomorrow"), .day(CalendarDay(year: 2026, month: 12, day: 6)!))
        XCTAssertEqual(try input.parse("tomorrow 9:15"), .instant(date("2026-12-06T08:15:00Z")))
        XCTAssertEqual(try input.parse("now"), .instant(now))
        for bad in ["next week", "2026-13-01", "2026-12-10T25:00", "10.12.2026", "2026-12-10T09:00+1:00", ""] {
            XCTAssertThrowsError(try input.parse(bad), bad) { error in
                XCTAssertEqual(error as? EDSError, .badDate(bad))
                XCTAssertEqual((error as? EDSError)?.exitStatus, .usage)
                XCTAssertTrue("\(error)".contains("2026-12-10T09:00 (local time)"), "\(error)")
            }
        }
        XCTAssertEqual(DateInput.zone(environment: ["TZ": ":Asia/Tokyo"]).identifier, "Asia/Tokyo")
        XCTAssertEqual(try DateInput.duration("1h30m"), 5400)
        XCTAssertEqual(try DateInput.duration("45"), 2700)
        XCTAssertEqual(try DateInput.duration("2d"), 172_800)
        XCTAssertThrowsError(try DateInput.duration("1x")) { XCTAssertEqual($0 as? EDSError, .badDuration("1x")) }
        XCTAssertThrowsError(try DateInput.duration("h"))
    }

    func testIdempotencyKeysMakeStableUIDs() {
        XCTAssertEqual(IdempotencyKey.uid(for: "abc"), "xclaw-ba7816bf8f01cfea414140de5dae2223")
        XCTAssertEqual(IdempotencyKey.derived(["a", "b"]), IdempotencyKey.derived(["a", "b"]))
        XCTAssertNotEqual(IdempotencyKey.derived(["a b", "c"]), IdempotencyKey.derived(["a", "b c"]))
        XCTAssertTrue(IdempotencyKey.derived(["x"]).hasPrefix("auto-"))
    }
}

import Foundation
import XclawBase

/// An event (VEVENT) or task (VTODO) as xclaw shows it: read from the component EDS holds, which stays the truth
/// (an update changes the properties it names and keeps the rest).
public struct CalendarItem: Sendable, Hashable {
    /// Event or task.
    public enum Kind: String, Sendable, Hashable, Encodable {
        /// A VEVENT in a calendar.
        case event
        /// A VTODO in a task list.
        case task
    }

    /// Event or task.
    public var kind: Kind
    /// The uid.
    public var uid: String
    /// The calendar or task list it is in.
    public var source: String
    /// The summary (title).
    public var summary: String
    /// When an event starts (a task's DTSTART, if it has one).
    public var start: CalendarTime?
    /// When an event ends: DTEND (exclusive), or DTSTART + DURATION; a day after a one-day event's start.
    public var end: CalendarTime?
    /// When a task is due.
    public var due: CalendarTime?
    /// Where.
    public var location: String?
    /// The description.
    public var description: String?
    /// The status (`CONFIRMED`, `NEEDS-ACTION`, `COMPLETED`…).
    public var status: String?
    /// When a task was completed.
    public var completed: Date?
    /// The client-side key it was created with (`X-XCLAW-KEY`), for one made by xclaw.
    public var key: String?
    /// Whether it repeats (RRULE or RDATE): listed once, as its first occurrence.
    public var recurring: Bool
    /// Set on a create's answer: false when the item existed already.
    public var created: Bool?

    /// The property that holds xclaw's idempotency key.
    public static let keyProperty = "X-XCLAW-KEY"

    /// Reads `component` (a VEVENT or VTODO) of `source`; floating times are read in `zone`. Nil without a UID.
    public init?(_ component: ContentComponent, source: String, zone: TimeZone) {
        guard let uid = component.text("UID"), !uid.isEmpty else { return nil }
        self.uid = uid
        self.source = source
        kind = component.name == "VTODO" ? .task : .event
        summary = component.text("SUMMARY") ?? ""
        start = component.first("DTSTART").flatMap { CalendarTime.read($0, local: zone) }
        end = component.first("DTEND").flatMap { CalendarTime.read($0, local: zone) }
        if end == nil, let start, kind == .event {
            if let duration = component.first("DURATION").flatMap({ Self.duration($0.value) }) {
                end = Self.adding(duration, to: start)
            } else if start.isDay {
                end = Self.adding(86_400, to: start)
            }
        }
        due = component.first("DUE").flatMap { CalendarTime.read($0, local: zone) }
        location = component.text("LOCATION").flatMap { $0.isEmpty ? nil : $0 }
        description = component.text("DESCRIPTION").flatMap { $0.isEmpty ? nil : $0 }
        status = component.text("STATUS")
        completed = component.first("COMPLETED").flatMap { line -> Date? in
            guard case .instant(let date)? = CalendarTime.read(line, local: zone) else { return nil }
            return date
        }
        key = component.text(Self.keyProperty)
        recurring = component.first("RRULE") != nil || component.first("RDATE") != nil
    }

    /// The DTEND for an event from `start` to `end` as people say it (an all-day event's last day, inclusive; nil:
    /// an hour, or the one day); `invalid` when it ends before it starts or mixes a day with a time.
    public static func dtend(start: CalendarTime, end: CalendarTime?, zone: TimeZone) throws -> CalendarTime {
        guard let end else { return adding(start.isDay ? 86_400 : 3600, to: start) }
        guard end.isDay == start.isDay else {
            throw EDSError.invalid(
                "the end must be a time like the start, or both days for an all-day event (its last day)")
        }
        let exclusive = adding(end.isDay ? 86_400 : 0, to: end)
        guard exclusive.date(in: zone) > start.date(in: zone) else {
            throw EDSError.invalid("the end must come after the start")
        }
        return exclusive
    }

    /// Whether a task is done: it has a COMPLETED time or the status says so.
    public var isDone: Bool { completed != nil || status?.uppercased() == "COMPLETED" }

    /// A time `seconds` later; a day stays a day (whole days added).
    static func adding(_ seconds: TimeInterval, to time: CalendarTime) -> CalendarTime {
        switch time {
        case .day(let day): return .day(day.adding(days: Int((seconds / 86_400).rounded())))
        case .instant(let date): return .instant(date.addingTimeInterval(seconds))
        }
    }

    /// An iCalendar DURATION (`PT1H30M`, `P1D`, `P2W`, `-PT15M`) in seconds; nil when unreadable.
    static func duration(_ value: String) -> TimeInterval? {
        var text = Substring(value.trimmingCharacters(in: .whitespaces).uppercased())
        var sign = 1.0
        if text.first == "-" || text.first == "+" {
            sign = text.first == "-" ? -1 : 1
            text = text.dropFirst()
        }
        guard text.first == "P" else { return nil }
        // T only separates the date part from the time part; M after it is minutes (DURATION has no months).
        let units = text.dropFirst().filter { $0 != "T" }
        return DateInput.seconds(
            Substring(units), scales: ["W": 604_800, "D": 86_400, "H": 3600, "M": 60, "S": 1]
        ).map { sign * $0 }
    }
}

/// What a new event says.
public struct EventDraft: Sendable, Hashable {
    /// The summary (title).
    public var summary: String
    /// When it starts; a day makes an all-day event.
    public var start: CalendarTime
    /// When it ends: a time, or an all-day event's last day (inclusive, as people say it); nil: an hour after a
    /// time, the same day for a day.
    public var end: CalendarTime?
    /// Where.
    public var location: String?
    /// The description.
    public var description: String?

    /// A draft.
    public init(
        summary: String, start: CalendarTime, end: CalendarTime? = nil, location: String? = nil,
        description: String? = nil
    ) {
        (self.summary, self.start, self.end, self.location, self.description) =
            (summary, start, end, location, description)
    }

    /// The DTEND it will have (exclusive: the day after an all-day event's last day); `invalid` when it is not
    /// after the start, or a day ends a timed event (or a time a day's).
    public func dtend(zone: TimeZone) throws -> CalendarTime {
        try CalendarItem.dtend(start: start, end: end, zone: zone)
    }
}

/// What a new task says.
public struct TaskDraft: Sendable, Hashable {
    /// The summary (title).
    public var summary: String
    /// When it is due (a day, or a moment).
    public var due: CalendarTime?
    /// The description.
    public var description: String?

    /// A draft.
    public init(summary: String, due: CalendarTime? = nil, description: String? = nil) {
        (self.summary, self.due, self.description) = (summary, due, description)
    }
}

/// What an update changes; nil leaves a field as it is, an empty text removes it.
public struct ItemChanges: Sendable, Hashable {
    /// A new summary.
    public var summary: String?
    /// A new start (an event's end moves with it, keeping the duration, unless `end` is given too).
    public var start: CalendarTime?
    /// A new end.
    public var end: CalendarTime?
    /// A new location ("" removes it).
    public var location: String?
    /// A new description ("" removes it).
    public var description: String?
    /// A new due time (tasks).
    public var due: CalendarTime?
    /// Done (true) or open again (false) (tasks).
    public var completed: Bool?

    /// Changes.
    public init(
        summary: String? = nil, start: CalendarTime? = nil, end: CalendarTime? = nil, location: String? = nil,
        description: String? = nil, due: CalendarTime? = nil, completed: Bool? = nil
    ) {
        (self.summary, self.start, self.end, self.location, self.description, self.due, self.completed) =
            (summary, start, end, location, description, due, completed)
    }

    /// Whether nothing would change.
    public var isEmpty: Bool {
        summary == nil && start == nil && end == nil && location == nil && description == nil && due == nil
            && completed == nil
    }
}

extension ContentComponent {
    /// A new VEVENT: `uid`, DTSTAMP `now`, the draft's fields and the idempotency key.
    public static func event(uid: String, draft: EventDraft, key: String, now: Date, zone: TimeZone) throws
        -> ContentComponent
    {
        var event = ContentComponent(name: "VEVENT")
        event.properties = [
            ContentLine(name: "UID", text: uid), ContentLine(name: "DTSTAMP", value: CalendarTime.utcBasic(now)),
            draft.start.line("DTSTART"), try draft.dtend(zone: zone).line("DTEND"),
            ContentLine(name: "SUMMARY", text: draft.summary),
        ]
        event.setOptionalText("LOCATION", draft.location)
        event.setOptionalText("DESCRIPTION", draft.description)
        event.setText(CalendarItem.keyProperty, key)
        return event
    }

    /// A new VTODO: `uid`, DTSTAMP `now`, the draft's fields, NEEDS-ACTION, and the idempotency key.
    public static func task(uid: String, draft: TaskDraft, key: String, now: Date) -> ContentComponent {
        var task = ContentComponent(name: "VTODO")
        task.properties = [
            ContentLine(name: "UID", text: uid), ContentLine(name: "DTSTAMP", value: CalendarTime.utcBasic(now)),
            ContentLine(name: "SUMMARY", text: draft.summary), ContentLine(name: "STATUS", value: "NEEDS-ACTION"),
        ]
        if let due = draft.due { task.set("DUE", due.line("DUE")) }
        task.setOptionalText("DESCRIPTION", draft.description)
        task.setText(CalendarItem.keyProperty, key)
        return task
    }

    /// `changes` applied: the named properties rewritten, the others kept as they were; LAST-MODIFIED and DTSTAMP
    /// set to `now`. Throws `invalid` when the result would end before it starts.
    public func applying(_ changes: ItemChanges, now: Date, zone: TimeZone) throws -> ContentComponent {
        var item = self
        if let summary = changes.summary { item.setText("SUMMARY", summary) }
        if let location = changes.location { item.setOptionalText("LOCATION", location) }
        if let description = changes.description { item.setOptionalText("DESCRIPTION", description) }
        if let due = changes.due { item.set("DUE", due.line("DUE")) }
        if changes.start != nil || changes.end != nil {
            guard let read = CalendarItem(self, source: "", zone: zone) else {
                throw EDSError.invalid("the item has no UID")
            }
            guard let start = changes.start ?? read.start else {
                throw EDSError.invalid("the item has no start: give one with the end")
            }
            let end: CalendarTime
            if let given = changes.end {
                end = try CalendarItem.dtend(start: start, end: given, zone: zone)
            } else if let oldStart = read.start, let oldEnd = read.end, oldStart.isDay == start.isDay {
                // Moved, not resized: the old length (whole days for an all-day event).
                end = CalendarItem.adding(oldEnd.date(in: zone).timeIntervalSince(oldStart.date(in: zone)), to: start)
            } else {
                end = try CalendarItem.dtend(start: start, end: nil, zone: zone)
            }
            item.set("DTSTART", start.line("DTSTART"))
            if name == "VEVENT" {
                item.set("DURATION", nil)
                item.set("DTEND", end.line("DTEND"))
            }
        }
        if let completed = changes.completed {
            if completed {
                item.set("COMPLETED", ContentLine(name: "COMPLETED", value: CalendarTime.utcBasic(now)))
                item.set("STATUS", ContentLine(name: "STATUS", value: "COMPLETED"))
                item.set("PERCENT-COMPLETE", ContentLine(name: "PERCENT-COMPLETE", value: "100"))
            } else {
                item.set("COMPLETED", nil)
                item.set("STATUS", ContentLine(name: "STATUS", value: "NEEDS-ACTION"))
                item.set("PERCENT-COMPLETE", nil)
            }
        }
        item.set("LAST-MODIFIED", ContentLine(name: "LAST-MODIFIED", value: CalendarTime.utcBasic(now)))
        item.set("DTSTAMP", ContentLine(name: "DTSTAMP", value: CalendarTime.utcBasic(now)))
        return item
    }

    /// Sets a TEXT property, or removes it when `text` is nil or empty.
    mutating func setOptionalText(_ name: String, _ text: String?) {
        setText(name, text.flatMap { $0.isEmpty ? nil : $0 })
    }
}

extension CalendarItem: Encodable {
    enum CodingKeys: String, CodingKey {
        case kind, uid, calendar, summary, start, end, due, location, description, status, completed, key, recurring
        case created
        case allDay = "all_day"
        case done
    }

    /// snake_case keys; a day as `2026-12-10`, a moment as UTC ISO 8601. An all-day event's `end` is its last day
    /// (iCalendar's DTEND is the day after).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(uid, forKey: .uid)
        try c.encode(source, forKey: .calendar)
        try c.encode(summary, forKey: .summary)
        try c.encodeIfPresent(start.map(Self.json), forKey: .start)
        try c.encodeIfPresent(shownEnd.map(Self.json), forKey: .end)
        if kind == .event { try c.encode(start?.isDay ?? false, forKey: .allDay) }
        try c.encodeIfPresent(due.map(Self.json), forKey: .due)
        try c.encodeIfPresent(location, forKey: .location)
        try c.encodeIfPresent(description, forKey: .description)
        try c.encodeIfPresent(status, forKey: .status)
        if kind == .task { try c.encode(isDone, forKey: .done) }
        try c.encodeIfPresent(completed.map(CalendarTime.iso), forKey: .completed)
        try c.encodeIfPresent(key, forKey: .key)
        try c.encode(recurring, forKey: .recurring)
        try c.encodeIfPresent(created, forKey: .created)
    }

    /// The end as people read it: an all-day event's last day, not the day after.
    public var shownEnd: CalendarTime? {
        guard case .day(let day)? = end, start?.isDay == true else { return end }
        return .day(day.adding(days: -1))
    }

    private static func json(_ time: CalendarTime) -> String {
        switch time {
        case .day(let day): return day.description
        case .instant(let date): return CalendarTime.iso(date)
        }
    }
}

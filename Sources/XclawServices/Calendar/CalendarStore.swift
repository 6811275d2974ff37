import Foundation
import Synchronization
import XclawBase

/// The calendar operations xclaw offers, over evolution-data-server on one connection to the caller's session bus
/// (the calendars it opens live as long as that connection): sources, events in a time range, tasks, and creates
/// that a retry cannot double.
public final class CalendarStore: Sendable {
    /// The connection every calendar is opened and used on.
    public let connection: BusConnection
    /// The zone of floating times and of days.
    public let zone: TimeZone
    private let opened = Mutex<[String: EDSCalendar]>([:])

    /// A store on `connection`, reading floating times in `zone`.
    public init(connection: BusConnection, zone: TimeZone) { (self.connection, self.zone) = (connection, zone) }

    /// A store on the caller's session bus, in the zone its `TZ` names.
    public convenience init(environment: [String: String], timeout: Duration = Services.callTimeout) throws {
        self.init(
            connection: try BusConnection.session(environment: environment, timeout: timeout),
            zone: DateInput.zone(environment: environment))
    }

    /// The calendars (`.event`) or task lists (`.task`), enabled or not.
    public func sources(_ kind: CalendarItem.Kind) throws -> [EDSSource] {
        try EDSSource.all(connection, kind: kind == .event ? .calendar : .taskList)
    }

    /// The calendar or task list `source`, opened once per store.
    public func calendar(_ source: String, kind: CalendarItem.Kind) throws -> EDSCalendar {
        let id = "\(kind.rawValue):\(source)"
        if let open = opened.withLock({ $0[id] }) { return open }
        let calendar: EDSCalendar
        do {
            calendar = try EDSCalendar(connection: connection, source: source, kind: kind)
        } catch let error as EDSError {
            // EDS refuses an unknown uid with a bare "not found": say which sources there are.
            let known = try sources(kind).map(\.uid)
            guard known.contains(source) else {
                throw EDSError.noSource(kind: kind == .event ? "calendar" : "task list", uid: source, known: known)
            }
            throw error
        }
        opened.withLock { $0[id] = calendar }
        return calendar
    }

    /// The sources a listing reads: `only`, else every enabled one. A listing over all of them skips one that
    /// fails to open (`skipped` gets why), so one offline calendar does not hide the others.
    private func targets(_ kind: CalendarItem.Kind, only: String?, skipped: inout [String]) throws -> [EDSCalendar] {
        if let only { return [try calendar(only, kind: kind)] }
        var out: [EDSCalendar] = []
        for source in try sources(kind) where source.enabled {
            do {
                out.append(try calendar(source.uid, kind: kind))
            } catch let error as EDSError where error != .notRunning {
                skipped.append("\(source.uid): \(error)")
            }
        }
        return out
    }

    /// The events that occur between `from` and `to` (recurring ones once, as their first occurrence), by start;
    /// `warnings` says which calendars could not be read.
    public func events(from: Date, to: Date, calendar only: String? = nil) throws -> (
        items: [CalendarItem], warnings: [String]
    ) {
        guard to > from else { throw EDSError.invalid("the end of the range must come after its start") }
        var warnings: [String] = []
        let query =
            "(occur-in-time-range? (make-time \"\(CalendarTime.utcBasic(from))\") "
            + "(make-time \"\(CalendarTime.utcBasic(to))\"))"
        var items: [CalendarItem] = []
        for calendar in try targets(.event, only: only, skipped: &warnings) {
            items += try calendar.objects(matching: query).compactMap {
                CalendarItem($0, source: calendar.source, zone: zone)
            }.filter { $0.recurring || occurs($0, from: from, to: to) }
        }
        return (sorted(items), warnings)
    }

    /// Whether a one-off event overlaps [from, to) with its days in this store's zone: EDS reads an all-day
    /// event's days in UTC, which is a day off for half the world.
    private func occurs(_ item: CalendarItem, from: Date, to: Date) -> Bool {
        guard let start = item.start?.date(in: zone) else { return true }
        let end = item.end?.date(in: zone) ?? start
        return start < to && (end > from || (end == start && start >= from))
    }

    /// The tasks: open ones, or all when `includeDone`; by due time (none last).
    public func tasks(includeDone: Bool, list only: String? = nil) throws -> (items: [CalendarItem], warnings: [String])
    {
        var warnings: [String] = []
        var items: [CalendarItem] = []
        for list in try targets(.task, only: only, skipped: &warnings) {
            items += try list.objects(matching: includeDone ? "#t" : "(not (is-completed?))").compactMap {
                CalendarItem($0, source: list.source, zone: zone)
            }.filter { includeDone || !$0.isDone }
        }
        return (sorted(items), warnings)
    }

    private func sorted(_ items: [CalendarItem]) -> [CalendarItem] {
        func when(_ item: CalendarItem) -> Date { (item.start ?? item.due)?.date(in: zone) ?? .distantFuture }
        return items.sorted { (when($0), $0.summary, $0.uid) < (when($1), $1.summary, $1.uid) }
    }

    /// Creates an event in `calendar` (default: the personal one). `key` is the client's idempotency key; without
    /// one it is derived from the summary, start, end and calendar. The uid comes from the key, so when an item
    /// with it exists already (a retried create) that item is returned, `created` false, and nothing is added.
    public func createEvent(_ draft: EventDraft, key: String?, calendar: String?, now: Date = Date()) throws
        -> CalendarItem
    {
        let source = calendar ?? EDSSource.defaultUID(.calendar)
        guard !draft.summary.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw EDSError.invalid("the event needs a summary")
        }
        let dtend = try draft.dtend(zone: zone)
        let key =
            key
            ?? IdempotencyKey.derived([
                "event", source, draft.summary.trimmingCharacters(in: .whitespaces),
                draft.start.line("DTSTART").unfolded, dtend.line("DTEND").unfolded,
            ])
        let component = try ContentComponent.event(
            uid: IdempotencyKey.uid(for: key), draft: draft, key: key, now: now, zone: zone)
        return try create(component, in: try self.calendar(source, kind: .event))
    }

    /// Creates a task in `list` (default: the personal one); idempotent as `createEvent` is, a derived key coming
    /// from the summary, due time and list.
    public func createTask(_ draft: TaskDraft, key: String?, list: String?, now: Date = Date()) throws -> CalendarItem {
        let source = list ?? EDSSource.defaultUID(.taskList)
        guard !draft.summary.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw EDSError.invalid("the task needs a summary")
        }
        let key =
            key
            ?? IdempotencyKey.derived([
                "task", source, draft.summary.trimmingCharacters(in: .whitespaces),
                draft.due?.line("DUE").unfolded ?? "",
            ])
        let component = ContentComponent.task(uid: IdempotencyKey.uid(for: key), draft: draft, key: key, now: now)
        return try create(component, in: try calendar(source, kind: .task))
    }

    private func create(_ component: ContentComponent, in calendar: EDSCalendar) throws -> CalendarItem {
        let uid = component.text("UID") ?? ""
        let made = try calendar.create(component)
        // Read back what EDS stored (the existing item, after a retry).
        guard let stored = try calendar.object(uid: uid),
            var item = CalendarItem(stored, source: calendar.source, zone: zone)
        else {
            throw EDSError.failed(call: "creating \(uid)", message: "the item is not there after it was created")
        }
        item.created = made
        return item
    }

    /// Where the item `uid` is: in `source` when given, else the first calendar (then task list, unless `kind`
    /// says which) that has it. Throws `notFound`.
    public func find(_ uid: String, kind: CalendarItem.Kind? = nil, source: String? = nil) throws -> (
        calendar: EDSCalendar, component: ContentComponent
    ) {
        let kinds: [CalendarItem.Kind] = kind.map { [$0] } ?? [.event, .task]
        for kind in kinds {
            let uids = try source.map { [$0] } ?? sources(kind).map(\.uid)
            for source in uids {
                let calendar: EDSCalendar
                do {
                    calendar = try self.calendar(source, kind: kind)
                } catch EDSError.noSource where kinds.count > 1 {
                    continue  // a calendar's uid, asked of the task lists too
                } catch let error as EDSError where error != .notRunning && uids.count > 1 {
                    continue  // a calendar that cannot be opened holds nothing findable
                }
                if let component = try calendar.object(uid: uid) { return (calendar, component) }
            }
        }
        throw EDSError.notFound(what: kind.map { $0 == .event ? "event" : "task" } ?? "event or task", uid: uid)
    }

    /// Changes the item `uid` (see `ItemChanges`), and returns it as EDS stored it.
    public func update(
        _ uid: String, _ changes: ItemChanges, kind: CalendarItem.Kind? = nil, source: String? = nil,
        now: Date = Date()
    ) throws -> CalendarItem {
        let (calendar, component) = try find(uid, kind: kind, source: source)
        try calendar.modify(try component.applying(changes, now: now, zone: zone))
        guard let stored = try calendar.object(uid: uid),
            let item = CalendarItem(stored, source: calendar.source, zone: zone)
        else { throw EDSError.notFound(what: calendar.kind.rawValue, uid: uid) }
        return item
    }

    /// Removes the item `uid` (every occurrence of a recurring one) and returns what it was.
    public func delete(_ uid: String, kind: CalendarItem.Kind? = nil, source: String? = nil) throws -> CalendarItem {
        let (calendar, component) = try find(uid, kind: kind, source: source)
        let item = CalendarItem(component, source: calendar.source, zone: zone)
        try calendar.remove(uid: uid)
        guard let item else { throw EDSError.notFound(what: calendar.kind.rawValue, uid: uid) }
        return item
    }
}

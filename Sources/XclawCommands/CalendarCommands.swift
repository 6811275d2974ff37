import ArgumentParser
import Foundation
import XclawBase
import XclawCommandLine
import XclawServices

/// `xclaw calendar`: events and tasks through evolution-data-server.
struct CalendarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calendar",
        abstract: "Events and tasks through evolution-data-server (GNOME's calendar store), without the GUI.",
        discussion: """
            Reads and changes the calendars and task lists of evolution-data-server (EDS) on the caller's session \
            bus: what GNOME Calendar, Evolution and GNOME To Do show. Dates are ISO 8601 (2026-12-10, \
            2026-12-10T09:00 in local time, 2026-12-10T09:00Z or +01:00), today, tomorrow, now, or a day and a time \
            (tomorrow 09:00). A create is idempotent: its uid comes from --key (or, without one, from what it \
            creates), so running it again returns the existing item ("already exists: UID", exit 0) instead of \
            adding a second. Exit 1 when an item or calendar is not found, 2 for a date or value that cannot be \
            read, 5 when evolution-data-server is not on the session bus.
            Examples:
              xclaw calendar list --from today --to 2026-12-31
              xclaw calendar add "Dentist" --start 2026-12-10T09:00 --duration 45m --location "Main St 3"
            """,
        subcommands: [
            CalendarList.self, CalendarAdd.self, CalendarUpdate.self, CalendarDelete.self, CalendarTasks.self,
            CalendarTaskCommand.self, CalendarSources.self,
        ])
}

/// What every calendar command reads from its caller: the bus, the zone of local times, now.
struct CalendarCaller {
    let environment = Invocation.current.environment
    let now = Date()
    var zone: TimeZone { DateInput.zone(environment: environment) }
    var dates: DateInput { DateInput(zone: zone, now: now) }

    /// `text` read as a date, or nil for nil.
    func date(_ text: String?) throws -> CalendarTime? { try text.map(dates.parse) }

    /// The store on the caller's bus.
    func store() throws -> CalendarStore { try CalendarStore(environment: environment) }

    /// `time` for people: `2026-12-10` or `2026-12-10 09:00` in local time.
    func shown(_ time: CalendarTime?) -> String {
        switch time {
        case .day(let day)?: return day.description
        case .instant(let date)?: return CalendarTime.local(date, in: zone)
        case nil: return "-"
        }
    }

    /// An event's line: start, end, summary, location, uid (and `repeats` for a recurring one), tab-separated.
    func eventLine(_ item: CalendarItem) -> String {
        [
            shown(item.start), shown(item.shownEnd), UntrustedText.escaped(item.summary),
            item.location.map { UntrustedText.escaped($0) } ?? "-", UntrustedText.escaped(item.uid),
        ].joined(separator: "\t") + (item.recurring ? "\trepeats" : "")
    }

    /// A task's line: due, open or done, summary, uid.
    func taskLine(_ item: CalendarItem) -> String {
        [
            shown(item.due), item.isDone ? "done" : "open", UntrustedText.escaped(item.summary),
            UntrustedText.escaped(item.uid),
        ]
        .joined(separator: "\t")
    }

    /// What a create printed: `created UID` or `already exists: UID`.
    static func created(_ uid: String, _ made: Bool?) -> String {
        (made == false ? "already exists: " : "created ") + UntrustedText.escaped(uid)
    }

    /// What a change printed: `deleted UID SUMMARY` (tab-separated).
    static func said(_ verb: String, _ uid: String, _ name: String) {
        writeOut("\(verb) \(UntrustedText.escaped(uid))\t\(UntrustedText.escaped(name))\n")
    }

    /// Tells stderr which sources a listing could not read.
    static func warn(_ warnings: [String]) {
        for warning in warnings { printError("xclaw: skipped \(warning)") }
    }
}

/// `xclaw calendar list`.
struct CalendarList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the events in a time range (default: the next 7 days), by start.",
        discussion: """
            One event a line: start, end (an all-day event's last day), summary, location and uid, tab-separated, \
            in local time; a recurring event is listed once, as its first occurrence, marked "repeats". --from \
            and --to take a day (--to a day includes it) or a time. Every enabled calendar is read unless \
            --calendar names one; a calendar that cannot be read is skipped with a line on stderr.
            Examples:
              xclaw calendar list  # the next 7 days
              xclaw calendar list --from 2026-12-01 --to 2026-12-31 --json
            """)
    @Option(help: ArgumentHelp("The start of the range (default: now).", valueName: "DATE")) var from: String?
    @Option(
        help: ArgumentHelp(
            "The end of the range; a day includes that day (default: 7 days after --from).", valueName: "DATE")) var to:
        String?
    @Option(help: ArgumentHelp("Only this calendar (a uid from `calendar sources`).", valueName: "UID")) var calendar:
        String?
    @Flag var json = false

    func run() throws {
        let caller = CalendarCaller()
        let start = try caller.date(from)?.date(in: caller.zone) ?? caller.now
        let end: Date
        switch try caller.date(to) {
        case .day(let day)?: end = day.adding(days: 1).start(in: caller.zone)
        case .instant(let date)?: end = date
        case nil: end = start.addingTimeInterval(7 * 86_400)
        }
        guard end > start else { throw ValidationError("--to must come after --from") }
        let (items, warnings) = try caller.store().events(from: start, to: end, calendar: calendar)
        CalendarCaller.warn(warnings)
        try emit(items, json: json) { items.map(caller.eventLine).joined(separator: "\n") }
    }
}

/// The event options `calendar add` and `calendar update` share.
struct EventOptions: ParsableArguments {
    @Option(help: ArgumentHelp("When it starts: a time, or a day for an all-day event.", valueName: "DATE")) var start:
        String?
    @Option(
        help: ArgumentHelp(
            "When it ends: a time, or an all-day event's last day (default: an hour, or the one day).",
            valueName: "DATE")) var end: String?
    @Option(help: ArgumentHelp("How long it lasts instead of --end: 90m, 1h30m, 2h, 1d.", valueName: "DURATION"))
    var duration: String?
    @Flag(name: .customLong("all-day"), help: "A whole-day event: --start (and --end) are read as days.")
    var allDay = false
    @Option(help: ArgumentHelp("Where (\"\" removes it in an update).", valueName: "TEXT")) var location: String?
    @Option(help: ArgumentHelp("The description (\"\" removes it in an update).", valueName: "TEXT")) var description:
        String?

    func validate() throws {
        if end != nil && duration != nil { throw ValidationError("give --end or --duration, not both") }
    }

    /// The start and end as given: --all-day makes days of them, --duration gives the end.
    func times(_ caller: CalendarCaller) throws -> (start: CalendarTime?, end: CalendarTime?) {
        var first = try caller.date(start)
        var last = try caller.date(end)
        if allDay {
            if case .instant(let date)? = first { first = .day(CalendarDay(date, in: caller.zone)) }
            if case .instant(let date)? = last { last = .day(CalendarDay(date, in: caller.zone)) }
        }
        if let duration {
            guard let first else { throw ValidationError("--duration needs --start") }
            let seconds = try DateInput.duration(duration)
            switch first {
            case .day(let day):
                // Whole days, the last one included.
                last = .day(day.adding(days: max(1, Int((seconds / 86_400).rounded(.up))) - 1))
            case .instant(let date):
                last = .instant(date.addingTimeInterval(seconds))
            }
        }
        return (first, last)
    }
}

/// `xclaw calendar add`.
struct CalendarAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Create an event; run again with the same key (or the same content), it adds nothing.",
        discussion: """
            Prints "created UID", or "already exists: UID" (exit 0) when the event was created before: the uid is \
            derived from --key, or without one from the summary, start, end and calendar, so a retried create \
            makes one event. The key is kept in the event (X-XCLAW-KEY). A --start that is a day (or --all-day) \
            makes an all-day event. Times are stored in UTC.
            Examples:
              xclaw calendar add "Dentist" --start 2026-12-10T09:00 --duration 45m --location "Main St 3"
              xclaw calendar add "Holiday" --start 2026-12-24 --end 2026-12-26 --key holiday-2026
            """)
    @Argument(help: "The summary (title).") var summary: String
    @OptionGroup var event: EventOptions
    @Option(help: ArgumentHelp("The client's idempotency key (default: derived from the content).", valueName: "KEY"))
    var key: String?
    @Option(
        help: ArgumentHelp("The calendar (a uid from `calendar sources`; default: system-calendar).", valueName: "UID"))
    var calendar: String?
    @Flag var json = false

    func validate() throws {
        if event.start == nil { throw ValidationError("--start is required: when the event starts") }
        if key?.isEmpty == true { throw ValidationError("--key must not be empty") }
    }

    func run() throws {
        let caller = CalendarCaller()
        let (start, end) = try event.times(caller)
        guard let start else { throw ValidationError("--start is required") }
        let draft = EventDraft(
            summary: summary, start: start, end: end, location: event.location, description: event.description)
        let item = try caller.store().createEvent(draft, key: key, calendar: calendar, now: caller.now)
        try emit(item, json: json) { CalendarCaller.created(item.uid, item.created) }
    }
}

/// `xclaw calendar update`.
struct CalendarUpdate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change an event or task by uid: summary, times, location, description, due, done.",
        discussion: """
            Only what is given changes; everything else in the item (alarms, attendees, repeats) is kept. A new \
            --start without --end keeps the event's length. Prints "updated UID".
            Examples:
              xclaw calendar update xclaw-1a2b3c --start 2026-12-11T09:00  # moved, same length
              xclaw calendar update xclaw-1a2b3c --location "" --summary "Dentist (Dr. Who)"
            """)
    @Argument(help: "The uid (from `calendar list` or `calendar tasks`).") var uid: String
    @Option(help: ArgumentHelp("A new summary.", valueName: "TEXT")) var summary: String?
    @OptionGroup var event: EventOptions
    @Option(help: ArgumentHelp("A new due time or day (tasks).", valueName: "DATE")) var due: String?
    @Flag(help: "Mark a task done.") var done = false
    @Flag(help: "Mark a task open again.") var undone = false
    @Option(
        help: ArgumentHelp(
            "The calendar or task list that holds it (default: every one is looked in).", valueName: "UID"))
    var calendar: String?
    @Flag var json = false

    func validate() throws {
        if done && undone { throw ValidationError("give --done or --undone, not both") }
    }

    func run() throws {
        let caller = CalendarCaller()
        let (start, end) = try event.times(caller)
        let changes = ItemChanges(
            summary: summary, start: start, end: end, location: event.location, description: event.description,
            due: try caller.date(due), completed: done ? true : undone ? false : nil)
        guard !changes.isEmpty else {
            throw ValidationError("nothing to change: give --summary, --start, --end, --location, --due, --done…")
        }
        let item = try caller.store().update(uid, changes, source: calendar, now: caller.now)
        try emit(item, json: json) { "updated " + UntrustedText.escaped(item.uid) }
    }
}

/// `xclaw calendar delete`.
struct CalendarDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete an event or task by uid (every occurrence of a recurring one).",
        discussion: """
            Prints "deleted UID SUMMARY". Exit 1 when no calendar or task list has the uid.
            Examples:
              xclaw calendar delete xclaw-1a2b3c
            """)
    @Argument(help: "The uid (from `calendar list` or `calendar tasks`).") var uid: String
    @Option(
        help: ArgumentHelp(
            "The calendar or task list that holds it (default: every one is looked in).", valueName: "UID"))
    var calendar: String?

    func run() throws {
        let item = try CalendarCaller().store().delete(uid, source: calendar)
        CalendarCaller.said("deleted", item.uid, item.summary)
    }
}

/// `xclaw calendar tasks`.
struct CalendarTasks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasks",
        abstract: "List the open tasks (--all: the done ones too), by due time.",
        discussion: """
            One task a line: due (or -), open or done, summary and uid, tab-separated. Every enabled task list is \
            read unless --list names one.
            Examples:
              xclaw calendar tasks
              xclaw calendar tasks --all --json
            """)
    @Flag(help: "The done tasks too.") var all = false
    @Option(help: ArgumentHelp("Only this task list (a uid from `calendar sources`).", valueName: "UID")) var list:
        String?
    @Flag var json = false

    func run() throws {
        let caller = CalendarCaller()
        let (items, warnings) = try caller.store().tasks(includeDone: all, list: list)
        CalendarCaller.warn(warnings)
        try emit(items, json: json) { items.map(caller.taskLine).joined(separator: "\n") }
    }
}

/// `xclaw calendar task`.
struct CalendarTaskCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "task",
        abstract: "Add a task, mark one done, or delete one.",
        discussion: """
            Examples:
              xclaw calendar task add "Buy milk" --due tomorrow
              xclaw calendar task done xclaw-1a2b3c
            """,
        subcommands: [CalendarTaskAdd.self, CalendarTaskDone.self, CalendarTaskDelete.self])
}

/// `xclaw calendar task add`.
struct CalendarTaskAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Create a task; run again with the same key (or the same content), it adds nothing.",
        discussion: """
            Prints "created UID", or "already exists: UID" (exit 0) when it was created before (the uid comes \
            from --key, or from the summary, due time and list).
            Examples:
              xclaw calendar task add "Buy milk" --due tomorrow
              xclaw calendar task add "File taxes" --due 2027-05-31 --key taxes-2026 --json
            """)
    @Argument(help: "The summary (title).") var summary: String
    @Option(help: ArgumentHelp("When it is due: a day or a time.", valueName: "DATE")) var due: String?
    @Option(help: ArgumentHelp("The description.", valueName: "TEXT")) var description: String?
    @Option(help: ArgumentHelp("The client's idempotency key (default: derived from the content).", valueName: "KEY"))
    var key: String?
    @Option(
        help: ArgumentHelp(
            "The task list (a uid from `calendar sources`; default: system-task-list).", valueName: "UID")) var list:
        String?
    @Flag var json = false

    func validate() throws {
        if key?.isEmpty == true { throw ValidationError("--key must not be empty") }
    }

    func run() throws {
        let caller = CalendarCaller()
        let draft = TaskDraft(summary: summary, due: try caller.date(due), description: description)
        let item = try caller.store().createTask(draft, key: key, list: list, now: caller.now)
        try emit(item, json: json) { CalendarCaller.created(item.uid, item.created) }
    }
}

/// `xclaw calendar task done`.
struct CalendarTaskDone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "done",
        abstract: "Mark a task done (COMPLETED now).",
        discussion: """
            Prints "done UID SUMMARY". Exit 1 when no task list has the uid.
            Examples:
              xclaw calendar task done xclaw-1a2b3c
            """)
    @Argument(help: "The task's uid (from `calendar tasks`).") var uid: String
    @Option(help: ArgumentHelp("The task list that holds it (default: every one is looked in).", valueName: "UID"))
    var list: String?

    func run() throws {
        let caller = CalendarCaller()
        let item = try caller.store().update(
            uid, ItemChanges(completed: true), kind: .task, source: list, now: caller.now)
        CalendarCaller.said("done", item.uid, item.summary)
    }
}

/// `xclaw calendar task delete`.
struct CalendarTaskDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a task by uid.",
        discussion: """
            Prints "deleted UID SUMMARY". Exit 1 when no task list has the uid.
            Examples:
              xclaw calendar task delete xclaw-1a2b3c
            """)
    @Argument(help: "The task's uid (from `calendar tasks`).") var uid: String
    @Option(help: ArgumentHelp("The task list that holds it (default: every one is looked in).", valueName: "UID"))
    var list: String?

    func run() throws {
        let item = try CalendarCaller().store().delete(uid, kind: .task, source: list)
        CalendarCaller.said("deleted", item.uid, item.summary)
    }
}

/// `xclaw calendar sources`.
struct CalendarSources: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sources",
        abstract: "List the calendars, task lists and address books evolution-data-server knows.",
        discussion: """
            One a line: kind (calendar, task_list, address_book), uid, name, enabled or disabled, backend. The \
            defaults are system-calendar, system-task-list and system-address-book.
            Examples:
              xclaw calendar sources
              xclaw calendar sources --json
            """)
    @Flag var json = false

    func run() throws {
        let connection = try BusConnection.session(environment: Invocation.current.environment)
        let sources = try EDSSource.all(connection)
        try emit(sources, json: json) {
            sources.map { s in
                [
                    s.kind.rawValue, UntrustedText.escaped(s.uid), UntrustedText.escaped(s.name),
                    s.enabled ? "enabled" : "disabled", UntrustedText.escaped(s.backend ?? "-"),
                ].joined(separator: "\t")
            }.joined(separator: "\n")
        }
    }
}

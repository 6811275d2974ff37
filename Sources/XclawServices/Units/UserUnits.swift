import Foundation
import XclawBase
import XclawMessages

/// One unit's state, as `xclaw units` lists it (the first six fields) and `xclaw unit status` shows it.
public struct UnitStatus: Encodable, Sendable, Hashable {
    /// The unit's name.
    public var name: String
    /// Its `Description=`; empty for a unit file not loaded.
    public var description: String
    /// `loaded`, `not-found`, `masked`…; `not-loaded` for an installed unit file the manager has not loaded.
    public var loadState: String
    /// `active`, `inactive`, `failed`….
    public var activeState: String
    /// `running`, `dead`, `exited`….
    public var subState: String
    /// `enabled`, `disabled`, `static`…, when it has a file.
    public var unitFileState: String?
    /// The file it was loaded from.
    public var fragmentPath: String?
    /// A service's main process, while it has one.
    public var mainPID: Int?
    /// A service's main process's last exit status.
    public var execMainStatus: Int?
    /// A service's result (`success`, `exit-code`, `signal`, `timeout`…).
    public var result: String?
    /// When it last became active (UTC, ISO 8601), if it ever did.
    public var activeSince: String?

    enum CodingKeys: String, CodingKey {
        case name, description, result
        case loadState = "load_state"
        case activeState = "active_state"
        case subState = "sub_state"
        case unitFileState = "unit_file_state"
        case fragmentPath = "fragment_path"
        case mainPID = "main_pid"
        case execMainStatus = "exec_main_status"
        case activeSince = "active_since"
    }
}

extension UnitStatus {
    /// The status as `unit status` prints it (and the model reads it): the state, then what is known, one a line.
    public var lines: [String] {
        var lines = ["\(name): \(activeState) (\(subState))"]
        if !description.isEmpty { lines.append("description: \(UntrustedText.quoted(description))") }
        if let mainPID { lines.append("main pid: \(mainPID)") }
        if let execMainStatus, let result { lines.append("last exit status: \(execMainStatus) (\(result))") }
        if let activeSince { lines.append("active since: \(activeSince)") }
        if let fragmentPath { lines.append("file: \(fragmentPath)" + (unitFileState.map { " (\($0))" } ?? "")) }
        return lines
    }
}

/// What a start, stop or restart did.
public struct UnitChange: Encodable, Sendable, Hashable {
    /// The unit.
    public var name: String
    /// `start`, `stop` or `restart`.
    public var action: String
    /// The manager's job for it (its object path).
    public var job: String
    /// `queued` when not waited for; else how the job ended (`done`, `failed`, `canceled`, `timeout`,
    /// `dependency`, `skipped`).
    public var result: String
    /// The unit's state afterwards (once the job ended, when waited for).
    public var status: UnitStatus
}

/// The changes a unit can be asked for, each a method of the manager.
public enum UnitAction: String, CaseIterable, Sendable {
    /// `StartUnit`.
    case start
    /// `StopUnit`.
    case stop
    /// `RestartUnit`.
    case restart

    /// The manager's method.
    var method: String {
        switch self {
        case .start: return "StartUnit"
        case .stop: return "StopUnit"
        case .restart: return "RestartUnit"
        }
    }

    /// The verb's present participle, for messages ("starting backup.service failed").
    var doing: String {
        switch self {
        case .start: return "starting"
        case .stop: return "stopping"
        case .restart: return "restarting"
        }
    }
}

/// Why a unit could not be found or changed.
public enum UnitError: ClassifiedError, Equatable {
    /// The manager knows no unit of that name.
    case notFound(String, closest: [String])
    /// The job ended without doing what was asked.
    case jobFailed(String, action: UnitAction, result: String)
    /// The job had not ended when the wait did.
    case jobTimedOut(String, action: UnitAction, seconds: Double)

    /// All three are conditions (1).
    public var exitStatus: ExitStatus { .notFound }

    /// The message, saying what to do.
    public var description: String {
        switch self {
        case .notFound(let name, let closest):
            return "the systemd user manager has no unit \(UntrustedText.quoted(name))"
                + (closest.isEmpty ? "" : " (closest: \(closest.joined(separator: ", ")))")
                + "; listing every unit shows their names"
        case .jobFailed(let name, let action, let result):
            return "\(action.doing) \(name) failed (the job's result: \(result)); its status says how it stands, "
                + "`journalctl --user -u \(name)` why"
        case .jobTimedOut(let name, let action, let seconds):
            return "\(action.doing) \(name) did not finish within \(seconds.formatted()) s; the job goes on: "
                + "its status shows how it stands"
        }
    }
}

/// The user's systemd units over the user manager's bus API (`org.freedesktop.systemd1` on the session bus): list,
/// status, and start, stop or restart, optionally waiting for the job to end (its `JobRemoved` signal).
public struct UserUnits: Sendable {
    /// The user manager, named for the messages its absence produces.
    public static let manager = BusService(
        name: "org.freedesktop.systemd1", what: "systemd user manager",
        hint: "log in to a session run by systemd (`systemctl --user` must work), or manage the program another way")
    private static let path = "/org/freedesktop/systemd1"
    private static let interface = "org.freedesktop.systemd1.Manager"
    /// The unit kinds `units` lists.
    static let listed = [".service", ".timer"]

    /// The caller's session bus.
    public let connection: BusConnection

    /// Units over `connection`.
    public init(connection: BusConnection) { self.connection = connection }

    /// A unit name as the manager wants it: `backup` is `backup.service`, as systemctl reads it.
    public static func unitName(_ name: String) -> String {
        let kinds = [
            ".service", ".socket", ".target", ".device", ".mount", ".automount", ".swap", ".timer", ".path", ".slice",
            ".scope",
        ]
        return kinds.contains(where: name.hasSuffix) ? name : name + ".service"
    }

    private func manager(_ method: String, _ arguments: [BusValue] = [], timeout: Duration? = nil) throws
        -> [JSONValue]
    {
        try connection.call(
            Self.manager, path: Self.path, interface: Self.interface, method: method, arguments, timeout: timeout)
    }

    /// The services and timers: those loaded that are active, failed or changing (a job pending), or with `all`
    /// every loaded one and every installed unit file besides (templates aside), by name.
    public func list(all: Bool) throws -> [UnitStatus] {
        let kept = { (name: String) in Self.listed.contains(where: name.hasSuffix) }
        var units: [String: UnitStatus] = [:]
        // a(ssssssouso): name, description, load, active, sub, followed, path, job id, job type, job path.
        for row in try manager("ListUnits").first?.array ?? [] {
            guard let fields = row.array, fields.count >= 8, let name = fields[0].string, kept(name) else { continue }
            let (active, job) = (fields[3].string ?? "", fields[7].int ?? 0)
            guard all || active != "inactive" || job != 0 else { continue }
            units[name] = UnitStatus(
                name: name, description: fields[1].string ?? "", loadState: fields[2].string ?? "",
                activeState: active, subState: fields[4].string ?? "")
        }
        // Without `all`, each listed unit's file state alone: ListUnitFiles makes systemd scan every unit directory
        // (13 ms here, against 0.3 ms a unit).
        guard all else {
            for name in units.keys {
                units[name]?.unitFileState = try? manager("GetUnitFileState", [.string(name)]).first?.string
            }
            return units.values.sorted { $0.name < $1.name }
        }
        // a(ss): path, enablement state. A loaded unit gets its file's state; a file not loaded is listed.
        for row in try manager("ListUnitFiles").first?.array ?? [] {
            guard let fields = row.array, fields.count == 2, let path = fields[0].string else { continue }
            let name = (path as NSString).lastPathComponent
            guard kept(name), !name.contains("@.") else { continue }
            if units[name] != nil {
                units[name]?.unitFileState = fields[1].string
            } else {
                units[name] = UnitStatus(
                    name: name, description: "", loadState: "not-loaded", activeState: "inactive", subState: "dead",
                    unitFileState: fields[1].string)
            }
        }
        return units.values.sorted { $0.name < $1.name }
    }

    /// The state of the unit `name` names (`backup` is `backup.service`); one the manager cannot find is
    /// `UnitError.notFound` with the closest names.
    public func status(_ name: String) throws -> UnitStatus {
        let unit = Self.unitName(name)
        guard let path = try manager("LoadUnit", [.string(unit)]).first?.string else {
            throw BusError.failed(
                call: "LoadUnit", errorName: "xclaw.NoPath", message: "the manager answered without a unit path")
        }
        let properties = try connection.properties(
            Self.manager, path: path, interface: "org.freedesktop.systemd1.Unit")
        let text = { (key: String) in properties[key]?.string ?? "" }
        guard text("LoadState") != "not-found" else {
            let names = try list(all: true).map(\.name)
            throw UnitError.notFound(unit, closest: Self.closest(to: unit, in: names))
        }
        var status = UnitStatus(
            name: text("Id").isEmpty ? unit : text("Id"), description: text("Description"),
            loadState: text("LoadState"), activeState: text("ActiveState"), subState: text("SubState"),
            unitFileState: properties["UnitFileState"]?.string.flatMap { $0.isEmpty ? nil : $0 },
            fragmentPath: properties["FragmentPath"]?.string.flatMap { $0.isEmpty ? nil : $0 })
        if let since = properties["ActiveEnterTimestamp"]?.double, since > 0 {
            status.activeSince = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: since / 1_000_000))
        }
        if status.name.hasSuffix(".service") {
            let service = try connection.properties(
                Self.manager, path: path, interface: "org.freedesktop.systemd1.Service")
            status.mainPID = service["MainPID"]?.int.flatMap { $0 > 0 ? $0 : nil }
            status.execMainStatus = service["ExecMainStatus"]?.int
            status.result = service["Result"]?.string
        }
        return status
    }

    /// Starts, stops or restarts `name` (mode `replace`, as systemctl does). With `wait`, waits up to `wait` for the
    /// job to end, subscribed to `JobRemoved` before asking, so its end cannot be missed; a job that ends otherwise
    /// than `done` is `UnitError.jobFailed`.
    public func change(
        _ action: UnitAction, _ name: String, wait: Duration?, cancelled: () -> Bool = { false }
    ) throws -> UnitChange {
        let unit = Self.unitName(name)
        // A unit the manager cannot find is not asked for: the job would fail with "not found" less clearly.
        let before = try status(unit)
        if wait != nil {
            // The manager sends its job signals to subscribers; a second change on one connection is subscribed.
            do { _ = try manager("Subscribe") } catch BusError.failed(
                _, "org.freedesktop.systemd1.AlreadySubscribed", _)
            {}
            try connection.subscribe(
                "type='signal',sender='\(Self.manager.name)',interface='\(Self.interface)',member='JobRemoved',"
                    + "path='\(Self.path)'")
        }
        guard let job = try manager(action.method, [.string(before.name), .string("replace")]).first?.string else {
            throw BusError.failed(
                call: action.method, errorName: "xclaw.NoJob", message: "the manager answered without a job")
        }
        guard let wait else {
            return UnitChange(name: before.name, action: action.rawValue, job: job, result: "queued", status: before)
        }
        // JobRemoved(u id, o job, s unit, s result), in slices so a cancellation (Ctrl-C, forwarded to a served
        // command) is heard.
        let deadline = ContinuousClock.now + wait
        var ended: BusMessage?
        while ended == nil {
            if cancelled() { throw CancellationError() }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            ended = try connection.next(within: min(left, .milliseconds(100))) {
                $0.member == "JobRemoved" && $0.body.count == 4 && $0.body[1].string == job
            }
        }
        guard let ended else { throw UnitError.jobTimedOut(before.name, action: action, seconds: wait / .seconds(1)) }
        let result = ended.body[3].string ?? ""
        guard result == "done" else { throw UnitError.jobFailed(before.name, action: action, result: result) }
        return UnitChange(
            name: before.name, action: action.rawValue, job: job, result: result, status: try status(before.name))
    }

    /// The names nearest to `name` by edit distance, best first.
    static func closest(to name: String, in names: [String], count: Int = 3) -> [String] {
        let query = Array(name.lowercased())
        return names.map { (editDistance(query, Array($0.lowercased())), $0) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            .prefix(count).map(\.1)
    }
}

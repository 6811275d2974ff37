import ArgumentParser
import Foundation
import XclawBase
import XclawMessages
import XclawPolling
import XclawScreen
import XclawServices
import XclawTesting

/// `xclaw bench services`: each desktop-service call xclaw makes, on a private session bus with real services
/// (dunst on the bench's Xvfb, mpv with its MPRIS plugin, evolution-data-server), in process on an open connection
/// and with the connection a command opens, beside the same calls made by Debian's command-line clients. The issue's
/// target: each bus call ≤ 10 ms median.
struct BenchServices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "services",
        abstract: "Benchmark desktop-service calls over D-Bus (notifications, media, calendar, contacts, generic).")
    @OptionGroup var options: BenchOptions

    func run() throws { try runBench(options, bench) }

    private func bench(_ session: BenchSession) throws -> BenchReport {
        let connection = try DisplayConnection(name: session.name)
        var report = BenchReport(benchmark: "services", display: session.name, screen: try connection.screenSize())
        let bus = try TestSessionBus(activation: .standard, display: session.name)
        defer { bus.stop() }
        let env = bus.environment
        let dunstConfig = bus.directory + "/dunstrc"
        try "[global]\n    monitor = 0\n".write(toFile: dunstConfig, atomically: true, encoding: .utf8)
        try bus.start(["/usr/bin/dunst", "-config", dunstConfig], log: "dunst")
        try bus.start(
            [
                "/usr/bin/mpv", "--no-config", "--script=/etc/mpv/scripts/mpris.so", "--ao=null", "--vo=null",
                "--idle=no", "--loop-file=inf", "av://lavfi:sine=frequency=440",
            ], log: "mpv")
        let open = try BusConnection.session(environment: env)
        for name in ["org.freedesktop.Notifications", "org.mpris.MediaPlayer2.mpv"] {
            guard poll(within: .seconds(20), { (try? open.hasOwner(name)) == true }) else {
                throw ValidationError("\(name) did not appear on the bench's bus: see \(bus.directory)")
            }
        }
        let cheap = options.cheap
        func timed(_ body: () throws -> Void) rethrows -> Sample {
            let start = ContinuousClock.now
            try body()
            return Sample(elapsed: ContinuousClock.now - start)
        }

        let inProcess = "one call on an open connection (xclaw, in process)"
        let dbus = BusService(name: "org.freedesktop.DBus", what: "message bus", hint: "")
        try report.measure(inProcess, "bus: GetId", iterations: cheap) {
            try timed {
                _ = try open.call(
                    dbus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "GetId")
            }
        }
        let notifications = BusService(name: "org.freedesktop.Notifications", what: "notification server", hint: "")
        try report.measure(inProcess, "notifications: Notify (dunst)", iterations: cheap) {
            try timed {
                _ = try open.call(
                    notifications, path: "/org/freedesktop/Notifications",
                    interface: "org.freedesktop.Notifications", method: "Notify",
                    [
                        .string("xclaw-bench"), .uint32(0), .string(""), .string("bench"), .string("body"),
                        .strings([]), .vardict([]), .int32(1000),
                    ])
            }
        }
        let notifier = try Notifier(connection: open)
        try report.measure(inProcess, "notifications: send (Notifier)", iterations: cheap) {
            try timed {
                _ = try notifier.send(NotificationRequest(title: "bench", body: "body", expireMilliseconds: 1000))
            }
        }
        let mpv = BusService(name: "org.mpris.MediaPlayer2.mpv", what: "media player", hint: "")
        try report.measure(inProcess, "media: list the players (MediaPlayers)", iterations: cheap) {
            try timed { _ = try MediaPlayers(connection: open).list() }
        }
        try report.measure(inProcess, "media: one player's status (MediaPlayers)", iterations: cheap) {
            try timed { _ = try MediaPlayers(connection: open).status(of: "org.mpris.MediaPlayer2.mpv") }
        }
        try report.measure(inProcess, "media: player properties (mpv, GetAll)", iterations: cheap) {
            try timed {
                _ = try open.properties(
                    mpv, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player")
            }
        }
        let calendar = try openEDS(open, factory: "Calendar8", kind: "Calendar", source: "system-calendar")
        for i in 0..<20 {
            _ = try open.call(
                destination: calendar.name, path: calendar.path, interface: "org.gnome.evolution.dataserver.Calendar",
                method: "CreateObjects",
                [
                    .strings([
                        "BEGIN:VEVENT\r\nUID:bench-\(i)\r\nSUMMARY:Bench \(i)\r\nDTSTART:20261210T0\(i % 10)0000Z\r\n"
                            + "DTEND:20261210T0\(i % 10)3000Z\r\nEND:VEVENT\r\n"
                    ]), .uint32(0),
                ])
        }
        // 2026-12-10, the day the events are on (UTC).
        let day = (from: Date(timeIntervalSince1970: 1_796_860_800), to: Date(timeIntervalSince1970: 1_796_947_200))
        try report.measure(
            inProcess, "calendar: one day's 20 events, a command's (open, query, parse)", iterations: cheap
        ) {
            try timed { _ = try CalendarStore(connection: open, zone: .current).events(from: day.from, to: day.to) }
        }
        let store = CalendarStore(connection: open, zone: .current)
        try report.measure(inProcess, "calendar: the same on a store already open", iterations: cheap) {
            try timed { _ = try store.events(from: day.from, to: day.to) }
        }
        try report.measure(inProcess, "calendar: the sources alone (GetManagedObjects)", iterations: cheap) {
            try timed {
                _ = try open.call(
                    destination: "org.gnome.evolution.dataserver.Sources5",
                    path: "/org/gnome/evolution/dataserver/SourceManager",
                    interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
            }
        }
        try report.measure(inProcess, "calendar: the raw query alone (GetObjectList)", iterations: cheap) {
            try timed {
                _ = try open.call(
                    destination: calendar.name, path: calendar.path,
                    interface: "org.gnome.evolution.dataserver.Calendar", method: "GetObjectList", [.string("#t")])
            }
        }
        let book = try openEDS(open, factory: "AddressBook10", kind: "AddressBook", source: "system-address-book")
        _ = try open.call(
            destination: book.name, path: book.path, interface: "org.gnome.evolution.dataserver.AddressBook",
            method: "CreateContacts",
            [
                .strings(["BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Zoe Miller\r\nEMAIL:zoe@example.org\r\nEND:VCARD\r\n"]),
                .uint32(0),
            ])
        try report.measure(inProcess, "contacts: search by name, a command's (open, query, parse)", iterations: cheap) {
            try timed { _ = try ContactStore(connection: open).search("zoe") }
        }
        let contacts = ContactStore(connection: open)
        try report.measure(inProcess, "contacts: the same on a store already open", iterations: cheap) {
            try timed { _ = try contacts.search("zoe") }
        }
        // A user manager needs root and namespaces (TestUserManager): without them the rows are left out, said so.
        let units: TestUserManager?
        do { units = try TestUserManager() } catch {
            units = nil
            report.notes.append("units: no systemd user manager could start here (\(error)); its rows are left out")
        }
        defer { units?.stop() }
        if let units {
            try measureUnits(units, into: &report, section: inProcess, iterations: cheap)
        }
        try report.measure(inProcess, "shortcuts: list (files, no bus)", iterations: cheap) {
            try timed { _ = Shortcuts.all(environment: env) }
        }

        let command = "a command's bus work: connect, then one call"
        try report.measure(command, "connect + GetId", iterations: cheap) {
            try timed {
                let fresh = try BusConnection.session(environment: env)
                _ = try fresh.call(
                    dbus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", method: "GetId")
            }
        }
        try report.measure(command, "connect + media properties (mpv)", iterations: cheap) {
            try timed {
                let fresh = try BusConnection.session(environment: env)
                _ = try fresh.properties(
                    mpv, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player")
            }
        }

        let peers = "peers: the same call as a process (Debian's clients)"
        let slow = options.expensive
        func process(_ arguments: [String]) throws -> Sample {
            try timed {
                let outcome = try Subprocess.run(arguments, timeout: .seconds(10), environment: env)
                guard outcome.ending == .exited(0) else {
                    throw ValidationError(
                        "\(arguments[0]) ended \(outcome.ending): \(String(decoding: outcome.stderr, as: UTF8.self))")
                }
            }
        }
        try report.measure(peers, "gdbus call GetId", iterations: slow) {
            try process([
                "/usr/bin/gdbus", "call", "--address", bus.address, "--dest", "org.freedesktop.DBus", "--object-path",
                "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetId",
            ])
        }
        try report.measure(peers, "dbus-send GetId", iterations: slow) {
            try process([
                "/usr/bin/dbus-send", "--bus=" + bus.address, "--print-reply", "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus", "org.freedesktop.DBus.GetId",
            ])
        }
        try report.measure(peers, "notify-send (dunst)", iterations: slow) {
            try process(["/usr/bin/notify-send", "-t", "1000", "bench", "body"])
        }
        try report.measure(peers, "gdbus call mpv GetAll", iterations: slow) {
            try process([
                "/usr/bin/gdbus", "call", "--address", bus.address, "--dest", "org.mpris.MediaPlayer2.mpv",
                "--object-path", "/org/mpris/MediaPlayer2", "--method", "org.freedesktop.DBus.Properties.GetAll",
                "org.mpris.MediaPlayer2.Player",
            ])
        }
        // xclaw's own commands as a script runs them: served by the daemon the first one starts (its home is the
        // bus's), and in-process (`XCLAW_NO_DAEMON=1`).
        if let xclaw = xclawExecutable() {
            let served = env.merging(["XCLAW_DAEMON": "auto"]) { $1 }
            let alone = env.merging(["XCLAW_NO_DAEMON": "1"]) { $1 }
            defer { _ = try? Subprocess.run([xclaw, "daemon", "stop"], timeout: .seconds(20), environment: served) }
            func command(_ arguments: [String], _ environment: [String: String]) throws -> Sample {
                try timed {
                    let outcome = try Subprocess.run(
                        [xclaw] + arguments, timeout: .seconds(20), environment: environment)
                    guard outcome.ending == .exited(0) else {
                        throw ValidationError("xclaw \(arguments[0]) ended \(outcome.ending)")
                    }
                }
            }
            let notify = ["notify", "--expire", "1000", "bench", "body"]
            _ = try command(notify, served)  // starts the daemon, untimed
            for (name, arguments) in [("notify", notify), ("media status", ["media", "status"])] {
                try report.measure(peers, "xclaw \(name) (served by the daemon)", iterations: slow) {
                    try command(arguments, served)
                }
                try report.measure(peers, "xclaw \(name) (in-process)", iterations: slow) {
                    try command(arguments, alone)
                }
            }
        }
        report.notes.append(
            "target: each bus call ≤ 10 ms median (in process); every call carries a timeout "
                + "(\(Services.callTimeout) by default)")
        return report
    }

    /// The systemd user manager's rows: the listing, the raw calls it makes, one unit's status.
    private func measureUnits(
        _ units: TestUserManager, into report: inout BenchReport, section: String, iterations: Int
    )
        throws
    {
        func timed(_ body: () throws -> Void) rethrows -> Sample {
            let start = ContinuousClock.now
            try body()
            return Sample(elapsed: ContinuousClock.now - start)
        }
        try units.writeUnit("sleeper.service", "[Service]\nExecStart=/bin/sleep 300\n")
        let manager = try BusConnection.session(environment: units.environment)
        try report.measure(section, "units: list (systemd --user)", iterations: iterations) {
            try timed { _ = try UserUnits(connection: manager).list(all: false) }
        }
        let systemd = BusService(name: "org.freedesktop.systemd1", what: "systemd user manager", hint: "")
        for method in ["ListUnits", "ListUnitFiles"] {
            try report.measure(section, "units: \(method) alone", iterations: iterations) {
                try timed {
                    _ = try manager.call(
                        systemd, path: "/org/freedesktop/systemd1", interface: "org.freedesktop.systemd1.Manager",
                        method: method)
                }
            }
        }
        try report.measure(section, "units: status of one (systemd --user)", iterations: iterations) {
            try timed { _ = try UserUnits(connection: manager).status("sleeper.service") }
        }
    }

    /// Opens an evolution-data-server calendar or address book on `bus`: the object lives while this connection does.
    private func openEDS(_ bus: BusConnection, factory: String, kind: String, source: String) throws
        -> (name: String, path: String)
    {
        let service = BusService(
            name: "org.gnome.evolution.dataserver.\(factory)", what: "evolution-data-server", hint: "")
        let reply = try bus.call(
            service, path: "/org/gnome/evolution/dataserver/\(kind)Factory",
            interface: "org.gnome.evolution.dataserver.\(kind)Factory", method: "Open\(kind)", [.string(source)],
            timeout: .seconds(20))
        guard let path = reply.first?.string, let name = reply.dropFirst().first?.string else {
            throw ValidationError("evolution-data-server's \(kind)Factory answered \(reply)")
        }
        _ = try bus.call(
            destination: name, path: path, interface: "org.gnome.evolution.dataserver.\(kind)", method: "Open",
            timeout: .seconds(20))
        return (name, path)
    }
}

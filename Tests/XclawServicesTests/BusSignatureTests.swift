import XCTest
import XclawMessages
import XclawTesting

@testable import XclawServices

/// Signatures, JSON typed by them, introspection XML and the allow-list.
final class BusSignatureTests: XCTestCase {
    func testSignaturesParseIntoCompleteTypes() throws {
        XCTAssertEqual(
            try BusType.parse("susssasa{sv}i").map(\.signature), ["s", "u", "s", "s", "s", "as", "a{sv}", "i"])
        XCTAssertEqual(try BusType.parse("a(ss)u").map(\.signature), ["a(ss)", "u"])
        XCTAssertEqual(try BusType.parse(""), [])
        for (bad, why) in [
            ("a", "ends in the middle"), ("(s", "not closed"), ("a{vs}", "key must be a basic type"),
            ("h", "file descriptors"), ("z", "not a D-Bus type code"), ("()", "empty tuple"),
        ] {
            XCTAssertThrowsError(try BusType.parse(bad)) { error in
                guard case .invalidArguments(_, let message) = error as? BusError else { return XCTFail("\(error)") }
                XCTAssertTrue(message.contains(why), "\(bad): \(message)")
            }
        }
    }

    func testJSONIsTypedByTheSignature() throws {
        let types = try BusType.parse("susssasa{sv}ix")
        let json: [JSONValue] = [
            "app", 0, "", "Title", "Body", ["default", "Open"], ["urgency": 2, "transient": true], -1, 5_000_000_000,
        ]
        let values = try zip(types, json).map { try $0.value($1) }
        XCTAssertEqual(
            BusValue.tuple(values).gvariantText,
            "('app', uint32 0, '', 'Title', 'Body', @as ['default', 'Open'], "
                + "@a{sv} {'transient': <true>, 'urgency': <int32 2>}, int32 -1, int64 5000000000)")
        XCTAssertEqual(try BusType.parse("a{us}")[0].value(["7": "x"]).gvariantText, "@a{us} {uint32 7: 'x'}")
        XCTAssertThrowsError(try BusType.parse("y")[0].value(300))
        XCTAssertThrowsError(try BusType.parse("u")[0].value(-1))
        XCTAssertThrowsError(try BusType.parse("o")[0].value("relative"))
        XCTAssertThrowsError(try BusType.parse("(si)")[0].value(["only one"]))
        XCTAssertThrowsError(try BusType.parse("v")[0].value(.null))
    }

    func testIntrospectionOfARealObject() throws {
        let bus = try TestSessionBus()
        let connection = try BusConnection.session(environment: bus.environment)
        let xml = try connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus.Introspectable", method: "Introspect"
        ).first?.string
        let info = BusIntrospection(xml: try XCTUnwrap(xml))
        XCTAssertEqual(info.method("org.freedesktop.DBus", "RequestName")?.input, "su")
        XCTAssertEqual(info.method("org.freedesktop.DBus", "RequestName")?.output, "u")
        XCTAssertEqual(info.method("org.freedesktop.DBus", "ListNames")?.input, "")
        XCTAssertEqual(info.method("org.freedesktop.DBus.Monitoring", "BecomeMonitor")?.input, "asu")
        XCTAssertNil(info.method("org.freedesktop.DBus", "NoSuchMethod"))
    }

    func testTheAllowListParsesMatchesAndRefuses() throws {
        let list = try BusAllowList.parse(
            " org.mpris.MediaPlayer2.* , org.freedesktop.Notifications,org.mpris.MediaPlayer2.*")
        XCTAssertEqual(list.text, "org.mpris.MediaPlayer2.*,org.freedesktop.Notifications")
        XCTAssertTrue(list.allows("org.mpris.MediaPlayer2.vlc"))
        XCTAssertTrue(list.allows("org.freedesktop.Notifications"))
        XCTAssertFalse(list.allows("org.mpris.MediaPlayer2"))
        XCTAssertFalse(list.allows("org.freedesktop.Notifications.Extra"))
        XCTAssertFalse(list.allows(":1.4"))
        // A family never reaches the bus itself or the secret store; an exact entry does.
        let family = try BusAllowList.parse("org.freedesktop.*")
        XCTAssertTrue(family.allows("org.freedesktop.Notifications"))
        XCTAssertFalse(family.allows("org.freedesktop.DBus"))
        XCTAssertFalse(family.allows("org.freedesktop.secrets"))
        XCTAssertTrue(try BusAllowList.parse("org.freedesktop.DBus").allows("org.freedesktop.DBus"))
        XCTAssertTrue(try BusAllowList.parse("none").isEmpty)
        XCTAssertTrue(try BusAllowList.parse("").isEmpty)
        for bad in ["org", "org..x", "1org.x", "org.x y", ":1.2", "*", "org.*.x"] {
            XCTAssertThrowsError(try BusAllowList.parse(bad), bad) { error in
                XCTAssertEqual((error as? BusError)?.exitStatus, .usage)
            }
        }
    }
}

/// The desktop's own services, which let an agent act without the GUI: this module's folders are one mechanism each
/// (Bus: the session-bus client; the services over it; shortcuts), and every bus call carries a timeout.
public enum Services {
    /// The default wait of one bus call: long enough for a service the bus starts on demand.
    public static let callTimeout: Duration = .seconds(3)
}

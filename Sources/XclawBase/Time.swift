extension Duration {
    /// The duration in milliseconds, as a Double: the unit every report and log line of xclaw uses.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}

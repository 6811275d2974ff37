extension Duration {
    /// The duration in milliseconds, as a Double: the unit every report and log line of xclaw uses.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    /// The duration in seconds, as a Double, for `Thread.sleep` and poll timeouts.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

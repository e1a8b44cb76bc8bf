/// Bytes moved against bytes announced, for one direction of a task (NSProgress's
/// completed / total unit counts). `expected` is nil when the framing does not say
/// (chunked, close-delimited, or not known yet).
public struct TaskProgress: Sendable, Equatable {
    public var done: UInt64
    public var expected: UInt64?

    public init(done: UInt64 = 0, expected: UInt64? = nil) {
        self.done = done
        self.expected = expected
    }

    /// done / expected in 0...1; nil when the total is unknown. An empty body is complete.
    public var fraction: Double? {
        guard let expected else { return nil }
        if expected == 0 { return 1 }
        return min(1, Double(done) / Double(expected))
    }
}

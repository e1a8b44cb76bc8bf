/// A point in time after which a wait gives up. Every blocking call in this library takes one (or a waker).
struct Deadline: Sendable {
    let instant: ContinuousClock.Instant

    init(seconds: Double) {
        let clamped = max(0, min(seconds, 86_400))
        instant = .now + .microseconds(Int64(clamped * 1_000_000))
    }

    var hasPassed: Bool { ContinuousClock.now >= instant }

    /// Remaining time for `poll(2)`, rounded up so a wait never ends a hair early.
    var remainingMilliseconds: Int32 {
        let left = instant - .now
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: ms)
    }
}

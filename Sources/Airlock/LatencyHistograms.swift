import Synchronization

/// A route's per-request latency histograms (time to first byte and total), the two every
/// exchange records: both under one uncontended `Mutex` (one lock per request, integer
/// nanosecond bucket bounds), instead of two swift-prometheus histograms (a lock each and a
/// `Duration` comparison per bucket: about 1,500 instructions per request in callgrind).
/// Rendered into the `/metrics` exposition next to the registry's own families, in the same
/// Prometheus histogram format (cumulative `le` buckets, `+Inf`, `_sum` in seconds, `_count`).
final class LatencyHistograms: Sendable {
    /// Upper bounds in nanoseconds (the same as the registry's duration histograms).
    static let bounds: [UInt64] = [
        500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000, 100_000_000,
        250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000, 5_000_000_000, 10_000_000_000, 30_000_000_000,
    ]
    static let firstByteName = "airlock_time_to_first_byte_seconds"
    static let totalName = "airlock_request_duration_seconds"

    struct Counts {
        /// Per bucket (not cumulative), the last one is +Inf.
        var buckets = [UInt64](repeating: 0, count: LatencyHistograms.bounds.count + 1)
        var sumNanos: UInt64 = 0
        var count: UInt64 = 0

        mutating func observe(_ nanos: UInt64) {
            var i = 0
            let bounds = LatencyHistograms.bounds
            while i < bounds.count && nanos > bounds[i] { i += 1 }
            buckets[i] &+= 1
            sumNanos &+= nanos
            count &+= 1
        }
    }

    private let state = Mutex<(firstByte: Counts, total: Counts)>((Counts(), Counts()))
    let route: String

    init(route: String) { self.route = route }

    /// One exchange: `firstByte` is 0 when no response head came from the upstream.
    func observe(firstByte: UInt64, total: UInt64) {
        state.withLock { s in
            if firstByte > 0 { s.firstByte.observe(firstByte) }
            s.total.observe(total)
        }
    }

    var snapshot: (firstByte: Counts, total: Counts) { state.withLock { $0 } }

    /// The two histogram families for every route, as Prometheus text.
    static func render(_ all: [LatencyHistograms]) -> String {
        let snaps = all.map { ($0.route, $0.snapshot) }
        var out = ""
        for (name, pick) in [(firstByteName, \(firstByte: Counts, total: Counts).firstByte),
                             (totalName, \(firstByte: Counts, total: Counts).total)] {
            out += "# TYPE \(name) histogram\n"
            for (route, s) in snaps {
                let c = s[keyPath: pick]
                let label = "route=\"\(route)\""   // route names are [A-Za-z0-9._-]: nothing to escape
                var cumulative: UInt64 = 0
                for (i, bound) in bounds.enumerated() {
                    cumulative += c.buckets[i]
                    out += "\(name)_bucket{\(label),le=\"\(seconds(bound))\"} \(cumulative)\n"
                }
                cumulative += c.buckets[bounds.count]
                out += "\(name)_bucket{\(label),le=\"+Inf\"} \(cumulative)\n"
                out += "\(name)_sum{\(label)} \(Double(c.sumNanos) / 1e9)\n"
                out += "\(name)_count{\(label)} \(c.count)\n"
            }
        }
        return out
    }

    private static func seconds(_ nanos: UInt64) -> String { "\(Double(nanos) / 1e9)" }
}

/// When each milestone of an exchange happened, as `NSURLSessionTaskMetrics` has them
/// (fetchStart, domainLookupStart/End, connectStart/End, secureConnectionStart/End,
/// requestEnd, responseStart, responseEnd), in the loop's monotonic nanoseconds. A zero is a
/// milestone that did not happen (a pooled connection is never resolved nor connected).
/// Plain stored integers: recording one is a store, with nothing allocated.
public struct TaskMetrics: Sendable, Equatable {
    public var fetchStart: UInt64 = 0
    public var dnsStart: UInt64 = 0
    public var dnsEnd: UInt64 = 0
    public var connectStart: UInt64 = 0
    /// TCP connected (plain upstreams), or TCP + TLS handshake done (TLS upstreams).
    public var connectEnd: UInt64 = 0
    /// TLS: the handshake's start and the end of the trust evaluation.
    public var secureStart: UInt64 = 0
    public var secureEnd: UInt64 = 0
    public var requestSent: UInt64 = 0
    public var firstResponseByte: UInt64 = 0
    public var responseEnd: UInt64 = 0
    /// The upstream connection came from the pool (no DNS, connect or TLS for this exchange).
    public var reused = false

    public init(fetchStart: UInt64 = 0) {
        self.fetchStart = fetchStart
    }

    /// A phase's length in milliseconds, nil unless both ends were recorded in order.
    static func span(_ start: UInt64, _ end: UInt64) -> Double? {
        guard start != 0, end >= start else { return nil }
        return Double((end - start) / 1000) / 1000
    }

    public var dnsMillis: Double? { Self.span(dnsStart, dnsEnd) }
    public var connectMillis: Double? { Self.span(connectStart, connectEnd) }
    public var tlsMillis: Double? { Self.span(secureStart, secureEnd) }
    /// From the fetch's start until the request head (and body) went upstream.
    public var requestSentMillis: Double? { Self.span(fetchStart, requestSent) }
    /// Time to first byte: from the fetch's start to the response head.
    public var ttfbMillis: Double? { Self.span(fetchStart, firstResponseByte) }
    public var totalMillis: Double? { Self.span(fetchStart, responseEnd) }

    /// The recorded phases, named as the access record names them, in order; phases that did
    /// not happen are left out.
    public var phases: [(name: String, millis: Double)] {
        var out: [(String, Double)] = []
        if let v = dnsMillis { out.append(("dns", v)) }
        if let v = connectMillis { out.append(("connect", v)) }
        if let v = tlsMillis { out.append(("tls", v)) }
        if let v = requestSentMillis { out.append(("request_sent", v)) }
        if let v = ttfbMillis { out.append(("ttfb", v)) }
        if let v = totalMillis { out.append(("total", v)) }
        return out
    }
}

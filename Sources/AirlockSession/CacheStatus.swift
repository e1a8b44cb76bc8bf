public import AirlockWire

/// The `Cache-Status` response field's member for Airlock (RFC 9211): whether the response came
/// from the cache (`hit`) or why the request went forward (`fwd`), and what happened then.
///
///     Airlock; hit; ttl=42
///     Airlock; fwd=uri-miss; stored
///     Airlock; fwd=stale; fwd-status=304
///     Airlock; fwd=uri-miss; detail=set-cookie
public struct CacheStatus: Sendable, Equatable {
    /// The cache's name in the field.
    public static let cacheName: StaticString = "Airlock"

    /// RFC 9211 2.2's `fwd` values Airlock uses.
    public enum Forward: String, Sendable, Equatable, CaseIterable {
        case bypass = "bypass"        // the cache takes no part (a Range request)
        case method = "method"        // the method is not GET or HEAD
        case uriMiss = "uri-miss"     // nothing stored for the URL
        case varyMiss = "vary-miss"   // stored for the URL, not for these request fields
        case miss = "miss"
        case request = "request"      // a fresh response, but the request asked for validation
        case stale = "stale"          // a stored response, stale
    }

    public var hit = false
    public var fwd: Forward?
    /// The status the next hop answered a forwarded request with.
    public var fwdStatus: Int?
    /// Seconds of freshness left (a hit).
    public var ttl: Int64?
    /// The forwarded response was stored.
    public var stored = false
    /// The request waited for another's fill (request collapsing).
    public var collapsed = false
    /// A short token: why a response was not stored, or why it was answered 504.
    public var detail: Detail?

    /// `detail`'s values: a case, not a String, so that a status is copied without a retain
    /// (the miss path copies it from the lookup to the head and into the store's answer).
    public enum Detail: Sendable, Equatable {
        case refused(CacheRefusal)
        /// `Cache-Control: only-if-cached` and nothing usable stored.
        case onlyIfCached

        public var text: String {
            switch self {
            case .refused(let r): r.rawValue
            case .onlyIfCached: "only-if-cached"
            }
        }
    }

    @inlinable
    public init(hit: Bool = false, fwd: Forward? = nil, fwdStatus: Int? = nil, ttl: Int64? = nil,
                stored: Bool = false, collapsed: Bool = false, detail: Detail? = nil) {
        self.hit = hit
        self.fwd = fwd
        self.fwdStatus = fwdStatus
        self.ttl = ttl
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    /// The list member, parameters in RFC 9211's order.
    public var fieldValue: String { TextBuilder.string(capacity: capacity) { write(&$0) } }

    /// Writes `Cache-Status: <fieldValue>` into a head being written, the value's bytes in place
    /// (no String, array or copy of the head's fields made for it: every cached exchange's
    /// response carries one).
    public func write(into w: inout HeadWriter) {
        if !hit, let fwd, fwdStatus == 200, ttl == nil, !stored, !collapsed, detail == nil {
            w.field(Self.forwardedOK[fwd.index])   // a miss's: made once
        } else {
            w.field("Cache-Status", capacity: capacity) { write(&$0) }
        }
    }

    /// The field of a request that went forward and was answered 200, for each `fwd` value
    /// (what every miss's response carries): written as `write` writes it, once.
    private static let forwardedOK: [HeadWriter.FieldPrefix] = Forward.allCases.map { fwd in
        HeadWriter.FieldPrefix(name: "Cache-Status", valuePrefix: CacheStatus(fwd: fwd, fwdStatus: 200).fieldValue)
    }

    /// Room for the longest member: every part, a 20-digit `ttl` and `fwd-status`, the detail.
    private var capacity: Int { 128 + (detail?.text.utf8.count ?? 0) }

    private func write(_ out: inout TextBuilder) {
        out.append(Self.cacheName)
        if hit { out.append("; hit") }
        if let fwd {
            out.append("; fwd=")
            out.append(fwd.text)
        }
        if let fwdStatus {
            out.append("; fwd-status=")
            out.append(decimal: fwdStatus)
        }
        if let ttl {
            out.append("; ttl=")
            out.append(decimal: ttl)
        }
        if stored { out.append("; stored") }
        if collapsed { out.append("; collapsed") }
        if let detail {
            out.append("; detail=")
            out.append(string: detail.text)
        }
    }
}

extension CacheStatus.Forward {
    /// Its place in `allCases`.
    var index: Int {
        switch self {
        case .bypass: 0
        case .method: 1
        case .uriMiss: 2
        case .varyMiss: 3
        case .miss: 4
        case .request: 5
        case .stale: 6
        }
    }

    /// `rawValue` as static text (written without a String).
    var text: StaticString {
        switch self {
        case .bypass: "bypass"
        case .method: "method"
        case .uriMiss: "uri-miss"
        case .varyMiss: "vary-miss"
        case .miss: "miss"
        case .request: "request"
        case .stale: "stale"
        }
    }
}

/// `routes[].resume`: transparent resume of GET downloads cut mid-body (issue #21). On by
/// default; the gateway turns it into AirlockSession's `ResumePolicy`.
public struct ResumeConfig: Sendable, Equatable {
    public var enabled: Bool
    /// Resumed requests allowed per response, 1...`maxAttemptsLimit`.
    public var maxAttempts: Int

    public static let defaultMaxAttempts = 3
    public static let maxAttemptsLimit = 100

    public init(enabled: Bool = true, maxAttempts: Int = ResumeConfig.defaultMaxAttempts) {
        self.enabled = enabled
        self.maxAttempts = maxAttempts
    }
}

/// `routes[].cache`: the route's in-memory response cache (RFC 9111), off unless the block is
/// present. Sizes in bytes; the gateway turns it into AirlockSession's `ResponseCache.Limits`.
/// At load: `purge_to` < `memory`, `max_object` ≤ `memory`, all above 0; `heuristic` 1...100 %.
public struct CacheConfig: Sendable, Equatable {
    /// Stored bytes past which least recently used entries are purged.
    public var memory: Int64
    /// Stored bytes a purge goes down to.
    public var purgeTo: Int64
    /// The largest response stored.
    public var maxObject: Int64
    /// Heuristic freshness (RFC 9111 4.2.2) for responses with no explicit freshness: this
    /// percent of `Date` minus `Last-Modified`; nil (the default) gives them none.
    public var heuristicPercent: Int?

    public static let heuristicPercentRange = 1...100
    public static let defaultMemory: Int64 = 100 << 20
    public static let defaultPurgeTo: Int64 = 60 << 20
    public static let defaultMaxObject: Int64 = 4 << 20

    public init(memory: Int64 = CacheConfig.defaultMemory, purgeTo: Int64 = CacheConfig.defaultPurgeTo,
                maxObject: Int64 = CacheConfig.defaultMaxObject, heuristicPercent: Int? = nil) {
        self.memory = memory
        self.purgeTo = purgeTo
        self.maxObject = maxObject
        self.heuristicPercent = heuristicPercent
    }
}

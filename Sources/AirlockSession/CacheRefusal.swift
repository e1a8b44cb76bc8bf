/// Why a response was not stored (a short stable code: `Cache-Status`'s `detail`, a metric label).
public enum CacheRefusal: String, Sendable, Equatable, CaseIterable {
    case method = "method"
    case status = "status"
    case noStore = "no-store"
    case `private` = "private"
    case authorization = "authorization"
    case setCookie = "set-cookie"
    case varyStar = "vary-star"
    case noFreshness = "no-freshness"
    case rejected = "rejected"                  // the route's validation did not pass it
    case tooLarge = "too-large"                 // over `max_object`
    case notModifiedMismatch = "validator-mismatch"  // a 304 for another response than the stored one
    case entryGone = "entry-gone"               // the response a 304 would freshen was purged meanwhile
}

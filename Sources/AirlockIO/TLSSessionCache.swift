/// TLS sessions of one worker, one per key (host, port and trust identity): a session is
/// stored only after its connection passed the route's trust evaluation, and offered only
/// to connections under the same key, so resumption never skips a pin check.
public final class TLSSessionCache {
    private var sessions: [String: TLSSessionTicket] = [:]

    public init() {}

    /// The session to resume for `key`, if any. The cache may replace or drop its entry at
    /// any time (while a connection that will resume the session is still connecting);
    /// the ticket lives as long as someone holds it.
    public func session(for key: String) -> TLSSessionTicket? {
        sessions[key]
    }

    /// Makes `session` the one for `key` (the previous one is released).
    public func store(_ session: TLSSessionTicket, for key: String) {
        sessions[key] = session
    }

    /// Forgets the session for `key`, e.g. after its resumption failed.
    public func remove(_ key: String) {
        sessions.removeValue(forKey: key)
    }

    /// Forgets every session whose key `predicate` picks (a reload whose trust material changed).
    public func removeAll(where predicate: (String) -> Bool) {
        for key in sessions.keys where predicate(key) { sessions.removeValue(forKey: key) }
    }

    public var count: Int { sessions.count }
}

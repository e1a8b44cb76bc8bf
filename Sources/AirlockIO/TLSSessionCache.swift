import COpenSSL

/// TLS sessions of one worker, one per key (host, port and trust identity): a session is
/// stored only after its connection passed the route's trust evaluation, and offered only
/// to connections under the same key, so resumption never skips a pin check.
public final class TLSSessionCache {
    private var sessions: [String: OpaquePointer] = [:]

    public init() {}

    deinit { for s in sessions.values { SSL_SESSION_free(s) } }

    /// The session to resume for `key`, if any, as a new reference the caller owns (and
    /// must free, e.g. by handing it to `TLSSetup`): the cache may replace and free its own
    /// at any time, while a connection that will resume the session is still connecting.
    public func retainedSession(for key: String) -> OpaquePointer? {
        guard let s = sessions[key] else { return nil }
        SSL_SESSION_up_ref(s)
        return s
    }

    /// Takes ownership of `session` and makes it the one for `key`.
    public func store(_ session: OpaquePointer, for key: String) {
        if let old = sessions[key], old != session { SSL_SESSION_free(old) }
        sessions[key] = session
    }

    /// Forgets (and frees) the session for `key`, e.g. after its resumption failed.
    public func remove(_ key: String) {
        if let old = sessions.removeValue(forKey: key) { SSL_SESSION_free(old) }
    }

    /// Frees a session that is not going to be stored.
    public static func release(_ session: OpaquePointer) { SSL_SESSION_free(session) }

    public var count: Int { sessions.count }
}

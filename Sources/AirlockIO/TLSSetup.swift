/// How a connecting stream starts TLS once TCP is up.
public struct TLSSetup {
    public let context: TLSClientContext
    /// SNI name (omitted for IP literals).
    public let serverName: String
    /// A session to resume (from this worker's cache, same host and policy), or nil.
    public let session: TLSSessionTicket?
    /// Offered each new session the server issues (TLS 1.2 during the handshake, TLS 1.3
    /// tickets after it); the receiver keeps it or lets it go.
    public let onNewSession: (TLSSessionTicket) -> Void

    public init(context: TLSClientContext, serverName: String, session: TLSSessionTicket?,
                onNewSession: @escaping (TLSSessionTicket) -> Void) {
        self.context = context
        self.serverName = serverName
        self.session = session
        self.onNewSession = onNewSession
    }
}

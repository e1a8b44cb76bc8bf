/// The admin listener (`admin:` and `admin_allow_remote:` at the top level): `GET /rejects`
/// and `GET /healthz` on their own socket, never on the proxy listener.
public struct AdminConfig: Sendable, Equatable {
    /// 127.0.0.1:9090.
    public static let defaultAddress = ListenAddress(host: "127.0.0.1", port: 9090)

    /// Where it listens; nil for `admin: off`. Port 0 picks a free port (tests).
    public var address: ListenAddress?
    /// Permits a non-loopback `admin` address; refused at load without it.
    public var allowRemote: Bool
    /// `admin_token`: when set, every admin request needs `Authorization: Bearer <token>`
    /// (401 otherwise). Required for a non-loopback `admin` address. Never printed.
    public var token: String?

    public init(address: ListenAddress? = AdminConfig.defaultAddress, allowRemote: Bool = false, token: String? = nil) {
        self.address = address
        self.allowRemote = allowRemote
        self.token = token
    }

    /// True for the default address: when it is taken (another Airlock on the machine), the
    /// gateway runs without the admin listener and says so. A chosen address that cannot be
    /// bound fails the start like the proxy listener.
    public var isDefaultAddress: Bool { address == Self.defaultAddress }
}

/// `rejects:`: how many reject records the gateway keeps in memory for `GET /rejects`.
public struct RejectsConfig: Sendable, Equatable {
    public static let defaultKeep = 1000
    public static let maxKeep = 1_000_000

    /// Ring size; 0 keeps none (records are still logged).
    public var keep: Int

    public init(keep: Int = RejectsConfig.defaultKeep) {
        self.keep = keep
    }
}

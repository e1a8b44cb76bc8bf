/// Whom a route trusts when it speaks TLS to its upstream: AFSecurityPolicy at the network edge.
///
/// The TLS layer runs the X509 verifications `validations(for:)` asks for, gathers the outcomes
/// into a `ServerTrust`, and asks `evaluate(_:)` the one question. The policy never parses DER
/// and never does I/O.
public struct SecurityPolicy: Sendable, Equatable {
    public let mode: PinningMode
    /// The configured `pins` followed by those derived from `certificates`.
    public let pins: [Pin]
    /// DER of the `certificates` files: the trust anchors and pins of certificate mode.
    public let pinnedCertificates: [[UInt8]]
    public let pinScope: PinScope
    public let allowInvalidCertificates: Bool
    public let validatesDomainName: Bool
    /// OpenSSL security level (0...5) of the handshake and of every chain verification: at the default
    /// 2, RSA/DSA/DH keys of 2048 bits or more, ECC of 224 or more, and no SHA-1 or MD5 signature
    /// below the trust anchor. Lower only with pinning (`min_security_level`), for legacy hosts.
    public let minimumSecurityLevel: Int
    /// Stable identity for TLS session-cache and pool keys: two policies with the same key trust
    /// exactly the same servers. It covers this policy only: what `.defaultTrust` means (the
    /// system store plus the route's `ca:` bundle) is the TLS layer's to add to its own key.
    public let cacheKey: String

    let pinSet: Set<Pin>
    let pinnedCertificateSet: Set<[UInt8]>

    /// Validates at construction, each error naming its config key. `pinnedCertificates` are the
    /// DER of the files under `certificates:`, and `certificatePins` the SPKI pins the TLS layer
    /// derived from them, one per certificate in the same order.
    public init(
        mode: PinningMode,
        pins: [Pin] = [],
        pinnedCertificates: [[UInt8]] = [],
        certificatePins: [Pin] = [],
        pinScope: PinScope = .chain,
        allowInvalidCertificates: Bool = false,
        validatesDomainName: Bool = true,
        minimumSecurityLevel: Int = SecurityPolicy.defaultSecurityLevel
    ) throws(SecurityConfigError) {
        try Self.check(
            mode: mode, pins: pins, pinnedCertificates: pinnedCertificates, certificatePins: certificatePins,
            pinScope: pinScope, allowInvalidCertificates: allowInvalidCertificates, validatesDomainName: validatesDomainName
        )
        try Self.check(minimumSecurityLevel: minimumSecurityLevel, mode: mode)
        self.init(
            checkedMode: mode, pins: pins + certificatePins, pinnedCertificates: pinnedCertificates, pinScope: pinScope,
            allowInvalidCertificates: allowInvalidCertificates, validatesDomainName: validatesDomainName,
            minimumSecurityLevel: minimumSecurityLevel
        )
    }

    /// OpenSSL's security level 2, the system default on current distributions (what `curl` enforces).
    public static let defaultSecurityLevel = 2
    /// The levels OpenSSL defines.
    public static let securityLevels = 0...5

    /// No pinning: the chain must validate against default trust, hostname included.
    public static let `default` = SecurityPolicy(
        checkedMode: .none, pins: [], pinnedCertificates: [], pinScope: .chain,
        allowInvalidCertificates: false, validatesDomainName: true, minimumSecurityLevel: defaultSecurityLevel
    )

    private init(
        checkedMode mode: PinningMode, pins: [Pin], pinnedCertificates: [[UInt8]], pinScope: PinScope,
        allowInvalidCertificates: Bool, validatesDomainName: Bool, minimumSecurityLevel: Int
    ) {
        self.mode = mode
        self.pins = pins
        self.pinnedCertificates = pinnedCertificates
        self.pinScope = pinScope
        self.allowInvalidCertificates = allowInvalidCertificates
        self.validatesDomainName = validatesDomainName
        self.minimumSecurityLevel = minimumSecurityLevel
        self.pinSet = Set(pins)
        self.pinnedCertificateSet = Set(pinnedCertificates)
        self.cacheKey = Self.makeCacheKey(
            mode: mode, pins: pinSet, pinnedCertificates: pinnedCertificateSet, pinScope: pinScope,
            allowInvalidCertificates: allowInvalidCertificates, validatesDomainName: validatesDomainName,
            minimumSecurityLevel: minimumSecurityLevel
        )
    }

    /// A level OpenSSL defines, and below the default only with pinning: a pin names the one server a
    /// route accepts, so a legacy host's weak chain can be let through for that route alone.
    private static func check(minimumSecurityLevel level: Int, mode: PinningMode) throws(SecurityConfigError) {
        guard securityLevels.contains(level) else {
            throw SecurityConfigError(
                key: "min_security_level",
                "expected an OpenSSL security level from \(securityLevels.lowerBound) to \(securityLevels.upperBound), got \(level)"
            )
        }
        if level < defaultSecurityLevel && mode == .none {
            throw SecurityConfigError(
                key: "min_security_level",
                "lowering the security level below \(defaultSecurityLevel) would accept weak certificates (SHA-1 or MD5 "
                    + "signatures, small keys) from any server; it is allowed only with pinning "
                    + "(pinning: public-key with pins, or pinning: certificate with certificates)"
            )
        }
    }

    /// The load-time rules, in order. Insecure or meaningless combinations are refused, never
    /// silently ignored.
    private static func check(
        mode: PinningMode, pins: [Pin], pinnedCertificates: [[UInt8]], certificatePins: [Pin],
        pinScope: PinScope, allowInvalidCertificates: Bool, validatesDomainName: Bool
    ) throws(SecurityConfigError) {
        let nothingPinned = pins.isEmpty && pinnedCertificates.isEmpty && certificatePins.isEmpty
        if allowInvalidCertificates && validatesDomainName && (mode == .none || nothingPinned) {
            // AFSecurityPolicy refuses the same combination.
            throw SecurityConfigError(
                key: "allow_invalid_certificates",
                "in order to validate a domain name for self-signed certificates, you MUST use pinning "
                    + "(pinning: public-key with pins, or pinning: certificate with certificates)"
            )
        }
        if allowInvalidCertificates && mode == .none {
            throw SecurityConfigError(
                key: "allow_invalid_certificates",
                "with pinning: none this would trust any server; pin its public key (pinning: public-key) "
                    + "or certificate (pinning: certificate) instead"
            )
        }
        switch mode {
        case .none:
            if !pins.isEmpty || !pinnedCertificates.isEmpty || !certificatePins.isEmpty {
                throw SecurityConfigError(
                    key: "pinning",
                    "pins or certificates are given but pinning is none, so they would be ignored; "
                        + "set pinning: public-key or certificate"
                )
            }
            if pinScope == .leaf {
                throw SecurityConfigError(key: "pin_scope", "pin_scope has no effect with pinning: none")
            }
        case .publicKey:
            if nothingPinned {
                throw SecurityConfigError(key: "pins", "pinning: public-key needs at least one pin (under pins: or certificates:)")
            }
        case .certificate:
            if pinnedCertificates.isEmpty {
                throw SecurityConfigError(key: "certificates", "pinning: certificate needs at least one certificate")
            }
            if !pins.isEmpty {
                throw SecurityConfigError(
                    key: "pins",
                    "pinning: certificate trusts the listed certificates, not pins, so these would be ignored; "
                        + "use pinning: public-key or remove them"
                )
            }
        }
        if let empty = pinnedCertificates.firstIndex(where: \.isEmpty) {
            throw SecurityConfigError(key: "certificates[\(empty)]", "empty certificate")
        }
        if certificatePins.count != pinnedCertificates.count {
            throw SecurityConfigError(
                key: "certificates",
                "\(certificatePins.count) public-key pins were derived from \(pinnedCertificates.count) certificates (one each expected)"
            )
        }
    }
}

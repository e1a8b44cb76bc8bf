/// Everything the TLS layer learned about one server, handed to `SecurityPolicy.evaluate`.
public struct ServerTrust: Sendable {
    public var host: String
    /// The certificates as the server sent them, leaf first.
    public var presented: [CertificateFacts]
    /// One outcome per request of `policy.validations(for: host)`. A missing one rejects the
    /// server (handshake-failed): the policy never assumes a verification it did not see.
    public var outcomes: [ValidationRequest: ValidationOutcome]

    public init(host: String, presented: [CertificateFacts], outcomes: [ValidationRequest: ValidationOutcome]) {
        self.host = host
        self.presented = presented
        self.outcomes = outcomes
    }
}

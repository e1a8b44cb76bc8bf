/// The answer to the one question the session asks the policy.
public enum TrustDecision: Sendable, Equatable {
    case trusted
    case rejected(TrustFailure)
}

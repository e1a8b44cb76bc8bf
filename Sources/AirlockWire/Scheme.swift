/// URI schemes accepted in an absolute-form request target.
public enum Scheme: String, Sendable, Equatable {
    case http
    case https

    /// The port used when a target names none.
    public var defaultPort: UInt16 {
        switch self {
        case .http: 80
        case .https: 443
        }
    }
}

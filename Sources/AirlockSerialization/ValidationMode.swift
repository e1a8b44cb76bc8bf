/// What the gateway does with a rejected response.
public enum ValidationMode: String, Sendable {
    /// Answer the client with `reject_status` and write a reject record.
    case enforce
    /// Relay the response anyway; only write the reject record.
    case reportOnly = "report-only"
}

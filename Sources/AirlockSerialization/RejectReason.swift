/// Why a response was rejected: a bounded value fit for a metric label and the reject record.
public enum RejectReason: String, Sendable {
    case unacceptableStatus = "unacceptable-status"
    case unacceptableContentType = "unacceptable-content-type"
    case invalidJSON = "invalid-json"
    case invalidXML = "invalid-xml"
    case invalidImage = "invalid-image"
    case invalidPropertyList = "invalid-plist"
    case bodyTooLarge = "body-too-large"
}

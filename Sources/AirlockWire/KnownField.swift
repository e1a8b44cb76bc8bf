/// Field names the wire layer and the gateway act on, recognised once at parse time so later
/// look-ups compare a byte instead of a string.
public enum KnownField: UInt8, Sendable {
    case other, host, contentLength, transferEncoding, connection, proxyConnection, keepAlive,
         te, trailer, upgrade, proxyAuthorization, via, expect, contentType, date, server,
         requestID   // X-Request-Id: Airlock keeps a well-formed one and sends its own otherwise

    /// The canonical spelling, e.g. "Content-Length"; "" for `.other`.
    public var canonicalName: String {
        switch self {
        case .other: ""
        case .host: "Host"
        case .contentLength: "Content-Length"
        case .transferEncoding: "Transfer-Encoding"
        case .connection: "Connection"
        case .proxyConnection: "Proxy-Connection"
        case .keepAlive: "Keep-Alive"
        case .te: "TE"
        case .trailer: "Trailer"
        case .upgrade: "Upgrade"
        case .proxyAuthorization: "Proxy-Authorization"
        case .via: "Via"
        case .expect: "Expect"
        case .contentType: "Content-Type"
        case .date: "Date"
        case .server: "Server"
        case .requestID: "X-Request-Id"
        }
    }

    /// Classifies a field name, ignoring ASCII case.
    public init(name: String) {
        var name = name
        self = name.withUTF8 { KnownField.classify(UnsafeRawBufferPointer($0)) }
    }

    /// Classifies field-name bytes, ignoring ASCII case. Dispatches on length first.
    static func classify(_ name: UnsafeRawBufferPointer) -> KnownField {
        let eq = ByteClass.equalsLowercased
        switch name.count {
        case 2: return eq(name, "te") ? .te : .other
        case 3: return eq(name, "via") ? .via : .other
        case 4:
            if eq(name, "host") { return .host }
            return eq(name, "date") ? .date : .other
        case 6:
            if eq(name, "expect") { return .expect }
            return eq(name, "server") ? .server : .other
        case 7:
            if eq(name, "trailer") { return .trailer }
            return eq(name, "upgrade") ? .upgrade : .other
        case 10:
            if eq(name, "connection") { return .connection }
            return eq(name, "keep-alive") ? .keepAlive : .other
        case 12:
            if eq(name, "content-type") { return .contentType }
            return eq(name, "x-request-id") ? .requestID : .other
        case 14: return eq(name, "content-length") ? .contentLength : .other
        case 16: return eq(name, "proxy-connection") ? .proxyConnection : .other
        case 17: return eq(name, "transfer-encoding") ? .transferEncoding : .other
        case 19: return eq(name, "proxy-authorization") ? .proxyAuthorization : .other
        default: return .other
        }
    }
}

/// A request method. Method names are case-sensitive (RFC 9110 9.1): `get` is `.other("get")`.
public enum Method: Sendable, Equatable, Hashable {
    case get, head, post, put, delete, options, patch, trace, connect
    /// Any other valid token.
    case other(String)

    /// GET, by pattern: the derived `==` is a call (a `String` payload may have to be
    /// compared), and the response cache asks on every request.
    @inlinable public var isGet: Bool {
        if case .get = self { return true }
        return false
    }

    /// GET or HEAD (the methods a cache answers), by pattern.
    @inlinable public var isGetOrHead: Bool {
        switch self {
        case .get, .head: return true
        default: return false
        }
    }

    /// Maps a name to its case, so that `Method(name: "GET") == .get`. The name is not validated.
    public init(name: String) {
        switch name {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "DELETE": self = .delete
        case "OPTIONS": self = .options
        case "PATCH": self = .patch
        case "TRACE": self = .trace
        case "CONNECT": self = .connect
        default: self = .other(name)
        }
    }

    /// The method as sent on the wire: "GET", ...
    public var name: String {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .patch: "PATCH"
        case .trace: "TRACE"
        case .connect: "CONNECT"
        case .other(let name): name
        }
    }

    /// Parses a method token (RFC 9110 `token`).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Method {
        guard !bytes.isEmpty else { throw WireError(.badMethod, "empty method") }
        for b in bytes where !ByteClass.isTchar(b) {
            throw WireError.quoting(.badMethod, "method: ", bytes)
        }
        switch bytes.count {
        case 3:
            if matches(bytes, "GET") { return .get }
            if matches(bytes, "PUT") { return .put }
        case 4:
            if matches(bytes, "HEAD") { return .head }
            if matches(bytes, "POST") { return .post }
        case 5:
            if matches(bytes, "PATCH") { return .patch }
            if matches(bytes, "TRACE") { return .trace }
        case 6:
            if matches(bytes, "DELETE") { return .delete }
        case 7:
            if matches(bytes, "OPTIONS") { return .options }
            if matches(bytes, "CONNECT") { return .connect }
        default:
            break
        }
        return .other(String(decoding: bytes, as: UTF8.self))
    }

    /// Exact (case-sensitive) comparison with an ASCII name.
    private static func matches(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        let p = name.utf8Start
        for i in 0..<bytes.count where bytes[i] != p[i] {
            return false
        }
        return true
    }
}

import AirlockWire

/// The validated `request:` block of a route (issue #13): how the gateway will rewrite a request
/// before it goes upstream. Every check happens in `init`, so a config that exists is usable.
///
/// Problems are named by their YAML key relative to the block: `serializer`, `headers.X-Bad`,
/// `override_headers.Host`, `remove_headers[1]`, `parameters_in_uri`,
/// `authorization.basic.username`, `authorization.bearer`, `timeout`, `throttle.packet_bytes`,
/// `throttle.delay`.
public struct RequestSerializationConfig: Sendable, Equatable {
    /// AFNetworking's `HTTPMethodsEncodingParametersInURI`.
    public static let defaultParametersInURI: Set<String> = ["GET", "HEAD", "DELETE"]
    /// 16 MiB: the largest `throttle.packet_bytes`.
    public static let maxThrottlePacketBytes = 16 << 20
    /// The longest `throttle.delay`.
    public static let maxThrottleDelay = Duration.seconds(60)
    /// Fields a route may not set: they frame the message or belong to one connection, and the
    /// gateway writes them itself.
    public static let forbiddenHeaderNames: Set<String> = [
        "connection", "transfer-encoding", "content-length", "host", "te", "upgrade", "keep-alive",
        "proxy-connection", "trailer",
    ]

    public let serializer: RequestSerializerKind
    /// Set only when the client did not send the field; in YAML order.
    public let headers: [HeaderField]
    /// Always set, replacing the client's; in YAML order.
    public let overrideHeaders: [HeaderField]
    /// Lowercase field names removed from the client's request.
    public let removeHeaders: [String]
    public let parameters: RequestParameters
    /// Uppercase method names whose parameters go to the query string rather than the body.
    public let parametersInURI: Set<String>
    public let authorization: Authorization?
    /// The whole exchange, from the request's arrival to the response's end.
    public let timeout: Duration?
    /// Upload pacing.
    public let throttle: Throttle?
    public let validateMultipart: Bool

    /// One header a route sets. A secret's value is never rendered or described.
    public struct HeaderField: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        public let name: String
        public let value: String
        public let isSecret: Bool

        public init(name: String, value: String, isSecret: Bool = false) {
            self.name = name
            self.value = value
            self.isSecret = isSecret
        }

        public var description: String { "\(name): \(isSecret ? "(secret, not shown)" : value)" }
        public var debugDescription: String { description }
    }

    /// The `Authorization` a route sends. Descriptions never show the credentials.
    public enum Authorization: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
        case basic(username: String, password: String)
        /// The token was read from the environment variable `bearer_env` names, at load.
        case bearer(token: String)

        public var description: String {
            switch self {
            case .basic: "basic (not shown)"
            case .bearer: "bearer (not shown)"
            }
        }
        public var debugDescription: String { description }
    }

    /// Upload pacing: after each `packetBytes` of body, wait `delay`
    /// (`throttleBandwidthWithPacketSize:delay:`).
    public struct Throttle: Sendable, Equatable {
        public let packetBytes: Int
        public let delay: Duration

        public init(packetBytes: Int, delay: Duration) {
            self.packetBytes = packetBytes
            self.delay = delay
        }
    }

    /// Every problem with a block, each named by its key relative to the block.
    public struct Problems: Error, Sendable, Equatable {
        public let problems: [ValidationConfigError]
    }

    /// Header names keep their spelling; `removeHeaders` are lowercased and `parametersInURI`
    /// uppercased here. Throws every problem found, not just the first.
    public init(
        serializer: RequestSerializerKind = .http,
        headers: [HeaderField] = [],
        overrideHeaders: [HeaderField] = [],
        removeHeaders: [String] = [],
        parameters: RequestParameters = [:],
        parametersInURI: Set<String> = defaultParametersInURI,
        authorization: Authorization? = nil,
        timeout: Duration? = nil,
        throttle: Throttle? = nil,
        validateMultipart: Bool = false
    ) throws(Problems) {
        var problems: [ValidationConfigError] = []
        func report(_ key: String, _ message: String) { problems.append(ValidationConfigError(key: key, message: message)) }

        var setNames: [String: String] = [:]   // lowercase name → the list that sets it
        for (list, fields) in [("headers", headers), ("override_headers", overrideHeaders)] {
            for field in fields {
                let key = "\(list).\(field.name)"
                if let problem = Self.fieldNameProblem(field.name) {
                    report(key, problem)
                    continue
                }
                let lower = Self.lowercased(field.name)
                if Self.forbiddenHeaderNames.contains(lower) {
                    report(key, "\(field.name) frames the message or belongs to one connection; the gateway sets it")
                } else if let other = setNames[lower] {
                    report(key, other == list ? "duplicate field (names are case-insensitive)" : "also set in \(other)")
                } else if lower == "authorization", authorization != nil {
                    report(key, "authorization already sets this field")
                } else if let problem = Self.fieldValueProblem(field.value) {
                    report(key, problem)
                }
                setNames[lower] = setNames[lower] ?? list
            }
        }
        var removed: [String] = []
        for (index, name) in removeHeaders.enumerated() {
            if let problem = Self.fieldNameProblem(name) {
                report("remove_headers[\(index)]", problem)
            } else if removed.contains(Self.lowercased(name)) {
                report("remove_headers[\(index)]", "duplicate field (names are case-insensitive)")
            } else {
                removed.append(Self.lowercased(name))
            }
        }
        var methods: Set<String> = []
        for method in parametersInURI.sorted() {
            if !Self.isToken(method) {
                report("parameters_in_uri", "\"\(method)\" is not a method name (an RFC 9110 token)")
            } else {
                methods.insert(method.uppercased())
            }
        }
        switch authorization {
        case .basic(let username, let password)?:
            if username.isEmpty {
                report("authorization.basic.username", "must not be empty")
            } else if username.contains(":") {
                report("authorization.basic.username", "must not contain \":\" (RFC 7617)")
            } else if Self.hasControl(username) {
                report("authorization.basic.username", "must not contain control characters")
            }
            if Self.hasControl(password) {
                report("authorization.basic.password", "must not contain control characters")
            }
        case .bearer(let token)?:
            if token.isEmpty {
                report("authorization.bearer_env", "the token must not be empty")
            } else if !Self.isToken68(token) {
                report("authorization.bearer_env", "the token must be token68 (letters, digits, -._~+/ then any =), RFC 6750")
            }
        case nil:
            break
        }
        if let timeout, timeout <= .zero {
            report("timeout", "must be greater than 0")
        }
        if let throttle {
            if !(1...Self.maxThrottlePacketBytes).contains(throttle.packetBytes) {
                report("throttle.packet_bytes", "must be 1...\(Self.maxThrottlePacketBytes) (16 MiB), got \(throttle.packetBytes)")
            }
            if throttle.delay < .zero || throttle.delay > Self.maxThrottleDelay {
                report("throttle.delay", "must be 0...60s")
            }
        }
        guard problems.isEmpty else { throw Problems(problems: problems) }

        self.serializer = serializer
        self.headers = headers
        self.overrideHeaders = overrideHeaders
        self.removeHeaders = removed
        self.parameters = parameters
        self.parametersInURI = methods
        self.authorization = authorization
        self.timeout = timeout
        self.throttle = throttle
        self.validateMultipart = validateMultipart
    }

    /// The `Authorization` field value: `Basic base64(user:password)` or `Bearer token`.
    public var authorizationHeaderValue: String? {
        switch authorization {
        case .basic(let username, let password)?:
            "Basic " + Base64.encode(Array("\(username):\(password)".utf8))
        case .bearer(let token)?:
            "Bearer " + token
        case nil:
            nil
        }
    }
}

// MARK: - Syntax

extension RequestSerializationConfig {
    /// Why `name` is not a field name (an RFC 9110 token), or nil.
    static func fieldNameProblem(_ name: String) -> String? {
        isToken(name) ? nil : "\"\(name)\" is not a field name (an RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~)"
    }

    /// Why `value` cannot be a field value: CR, LF, NUL or another control character but HTAB.
    static func fieldValueProblem(_ value: String) -> String? {
        guard hasControl(value) else { return nil }
        return "the value must not contain CR, LF, NUL or other control characters (HTAB is allowed)"
    }

    /// RFC 9110 `token`: one or more tchar.
    public static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// RFC 7235 `token68`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isToken68(_ text: String) -> Bool {
        let body = text.utf8.prefix { $0 != UInt8(ascii: "=") }
        return !body.isEmpty
            && body.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default:
                    "-._~+/".utf8.contains(byte)
                }
            }
            && text.utf8.dropFirst(body.count).allSatisfy { $0 == UInt8(ascii: "=") }
    }

    /// Any C0 control other than HTAB, or DEL.
    static func hasControl(_ text: String) -> Bool {
        text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    static func lowercased(_ name: String) -> String {
        String(decoding: name.utf8.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

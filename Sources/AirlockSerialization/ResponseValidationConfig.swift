/// The validated `response:` block of a route. Every check happens in `init`, so a config that
/// loads can always build its validator. Errors name the YAML key:
/// `serializer`, `serializers`, `serializers[i]`, `acceptable_status_codes`,
/// `acceptable_content_types`, `removes_keys_with_null_values`, `max_body_bytes`, `reject_status`.
public struct ResponseValidationConfig: Sendable, Equatable {
    /// 4 MiB.
    public static let defaultMaxBodyBytes = 4_194_304
    public static let defaultRejectStatus = 502

    public var serializer: SerializerKind
    /// For `compound`: the serializers to try in order (non-empty, no nested compound).
    public var serializers: [SerializerKind]
    public var acceptableStatusCodes: StatusCodeSet
    /// Lowercased MIME types; nil means each serializer's default.
    public var acceptableContentTypes: Set<String>?
    public var removesKeysWithNullValues: Bool
    public var maxBodyBytes: Int
    public var mode: ValidationMode
    /// The status the gateway answers with when it rejects a response (400...599).
    public var rejectStatus: Int

    /// The embedded default route's: http serializer (any 2xx, any content type), report-only.
    public static let reportOnlyHTTP = ResponseValidationConfig(
        checked: .http, serializers: [], acceptableStatusCodes: .success, acceptableContentTypes: nil,
        removesKeysWithNullValues: false, maxBodyBytes: defaultMaxBodyBytes, mode: .reportOnly,
        rejectStatus: defaultRejectStatus)

    /// Content types are trimmed and lowercased; they must be bare `type/subtype` (no parameters,
    /// no wildcards).
    public init(
        serializer: SerializerKind = .http,
        serializers: [SerializerKind] = [],
        acceptableStatusCodes: StatusCodeSet = .success,
        acceptableContentTypes: Set<String>? = nil,
        removesKeysWithNullValues: Bool = false,
        maxBodyBytes: Int = defaultMaxBodyBytes,
        mode: ValidationMode = .enforce,
        rejectStatus: Int = defaultRejectStatus
    ) throws(ValidationConfigError) {
        if serializer == .compound {
            guard !serializers.isEmpty else {
                throw ValidationConfigError(
                    key: "serializers", message: "must list at least one serializer when serializer is compound")
            }
            for (index, kind) in serializers.enumerated() where kind == .compound {
                throw ValidationConfigError(key: "serializers[\(index)]", message: "a compound serializer cannot nest")
            }
        } else if !serializers.isEmpty {
            throw ValidationConfigError(
                key: "serializers", message: "only applies when serializer is compound (serializer is \(serializer.rawValue))")
        }

        guard !acceptableStatusCodes.ranges.isEmpty else {
            throw ValidationConfigError(
                key: "acceptable_status_codes", message: "must list at least one status code or range")
        }
        if let first = acceptableStatusCodes.ranges.first, let last = acceptableStatusCodes.ranges.last,
           first.lowerBound < StatusCodeSet.configurableCodes.lowerBound
            || last.upperBound > StatusCodeSet.configurableCodes.upperBound
        {
            throw ValidationConfigError(
                key: "acceptable_status_codes", message: "\(acceptableStatusCodes) is not within 100...599")
        }

        var contentTypes: Set<String>?
        if let acceptableContentTypes {
            guard !acceptableContentTypes.isEmpty else {
                throw ValidationConfigError(
                    key: "acceptable_content_types",
                    message: "must list at least one content type (omit it for the serializer's defaults)")
            }
            contentTypes = []
            for entry in acceptableContentTypes.sorted() {
                contentTypes?.insert(try Self.normalizedMIMEType(entry))
            }
        }

        let strips = serializer == .json || (serializer == .compound && serializers.contains(.json))
        if removesKeysWithNullValues && !strips {
            throw ValidationConfigError(
                key: "removes_keys_with_null_values", message: "only applies to the json serializer")
        }
        guard maxBodyBytes > 0 else {
            throw ValidationConfigError(key: "max_body_bytes", message: "must be a positive number of bytes")
        }
        guard (400...599).contains(rejectStatus) else {
            throw ValidationConfigError(key: "reject_status", message: "must be within 400...599, got \(rejectStatus)")
        }
        self.init(
            checked: serializer, serializers: serializers, acceptableStatusCodes: acceptableStatusCodes,
            acceptableContentTypes: contentTypes, removesKeysWithNullValues: removesKeysWithNullValues,
            maxBodyBytes: maxBodyBytes, mode: mode, rejectStatus: rejectStatus)
    }

    private init(
        checked serializer: SerializerKind, serializers: [SerializerKind], acceptableStatusCodes: StatusCodeSet,
        acceptableContentTypes: Set<String>?, removesKeysWithNullValues: Bool, maxBodyBytes: Int,
        mode: ValidationMode, rejectStatus: Int
    ) {
        self.serializer = serializer
        self.serializers = serializers
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
        self.removesKeysWithNullValues = removesKeysWithNullValues
        self.maxBodyBytes = maxBodyBytes
        self.mode = mode
        self.rejectStatus = rejectStatus
    }

    /// The validator for this block. For `compound`, the status codes, content types and null
    /// stripping apply to every member.
    public func makeValidator() -> any ResponseValidator {
        guard serializer == .compound else { return validator(for: serializer) }
        return CompoundResponseValidator(validators: serializers.map(validator(for:)))
    }

    private func validator(for kind: SerializerKind) -> any ResponseValidator {
        let base = HTTPResponseValidator(
            acceptableStatusCodes: acceptableStatusCodes,
            acceptableContentTypes: acceptableContentTypes ?? kind.defaultContentTypes)
        switch kind {
        case .http, .compound: return base
        case .json: return JSONResponseValidator(base: base, removesKeysWithNullValues: removesKeysWithNullValues)
        case .xml: return XMLResponseValidator(base: base)
        case .image: return ImageResponseValidator(base: base)
        case .plist: return PropertyListResponseValidator(base: base)
        }
    }

    /// `" Application/JSON "` -> `application/json`; refuses parameters, wildcards and non-token bytes.
    private static func normalizedMIMEType(_ entry: String) throws(ValidationConfigError) -> String {
        let lowered = ResponseFacts(status: 200, contentType: entry, url: "", bodyIsEmpty: nil).mimeType ?? ""
        let fail = { (why: String) in
            ValidationConfigError(key: "acceptable_content_types", message: "'\(entry)' \(why)")
        }
        guard !entry.contains(";") else { throw fail("must be a bare type/subtype without parameters") }
        guard !entry.contains("*") else {
            throw fail("uses a wildcard; omit acceptable_content_types to accept any content type")
        }
        let parts = lowered.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isTokenByte) }) else {
            throw fail("is not a MIME type like application/json")
        }
        return lowered
    }

    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'+-.^_`|~".utf8).contains(b)
        }
    }
}

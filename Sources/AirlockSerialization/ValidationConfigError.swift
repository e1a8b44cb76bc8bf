/// A `response:` block (or one of its entries) that cannot be used, named by its config key.
///
/// `key` is the YAML key relative to the block, with an index for list entries:
/// `"reject_status"`, `"serializers[1]"`, `"acceptable_status_codes[2]"`.
public struct ValidationConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public let key: String
    public let message: String

    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { "\(key): \(message)" }
}

import AirlockWire

/// A SHA-256 digest of a DER SubjectPublicKeyInfo, written "sha256/<base64>" (the HPKP and
/// `curl --pinnedpubkey` spelling). Checked when the configuration loads: a pin that is not
/// exactly 32 bytes of canonical base64 never reaches a handshake.
public struct Pin: Sendable, Hashable, CustomStringConvertible {
    /// Exactly 32 bytes (see `CertificateFacts.pin` for the one way around that).
    public let digest: [UInt8]

    static let prefix = "sha256/"
    static let digestLength = 32

    public init(digest: [UInt8]) throws(SecurityConfigError) {
        guard digest.count == Pin.digestLength else {
            throw SecurityConfigError(key: "pins", "a SHA-256 digest is \(Pin.digestLength) bytes, not \(digest.count)")
        }
        self.digest = digest
    }

    /// Parses "sha256/<base64 of 32 bytes>". Errors carry the key "pins"; `parsing(_:key:)`
    /// names the index in a list.
    public init(parsing text: String) throws(SecurityConfigError) {
        guard text.hasPrefix(Pin.prefix) else {
            throw SecurityConfigError(key: "pins", "a pin is written \"sha256/<base64 of the SPKI SHA-256>\"")
        }
        let encoded = String(text.dropFirst(Pin.prefix.count))
        let bytes: [UInt8]
        do {
            bytes = try Base64.decode(encoded)
        } catch {
            let why = switch error {
            case .badLength: "length is not a multiple of 4 (padding missing or extra)"
            case .badCharacter: "a character outside the base64 alphabet"
            case .nonZeroTrailingBits: "not canonical base64 (bits set under the padding)"
            }
            throw SecurityConfigError(key: "pins", "bad base64 after \"sha256/\": \(why)")
        }
        guard bytes.count == Pin.digestLength else {
            throw SecurityConfigError(key: "pins", "a pin decodes to \(Pin.digestLength) bytes (SHA-256), this one to \(bytes.count)")
        }
        self.digest = bytes
    }

    /// Parses a configured list, naming the failing entry: "pins[1]".
    public static func parsing(_ texts: [String], key: String = "pins") throws(SecurityConfigError) -> [Pin] {
        var pins: [Pin] = []
        pins.reserveCapacity(texts.count)
        for (i, text) in texts.enumerated() {
            do {
                pins.append(try Pin(parsing: text))
            } catch {
                throw SecurityConfigError(key: "\(key)[\(i)]", error.message)
            }
        }
        return pins
    }

    /// No length check: only for digests handed over by the TLS layer (see `CertificateFacts.pin`).
    init(unchecked digest: [UInt8]) {
        self.digest = digest
    }

    public var description: String { Pin.prefix + Base64.encode(digest) }
}

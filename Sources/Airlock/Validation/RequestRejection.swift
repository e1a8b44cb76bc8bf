/// Why the request phase refused a request (400 `request-serialization-failed`), kept on the
/// `Exchange` for the logging phase's `request.rejected` record.
struct RequestRejection {
    /// The serializer's reason code (`unmergeable-body`, `invalid-form-body`, `multipart-truncated`, …).
    let reason: String
    let message: String
    /// Up to `sampleLimit` bytes of the refused body, as far as they were buffered.
    let bodySample: [UInt8]

    /// 1 KiB, as a response reject's body sample.
    static let sampleLimit = 1024
}

@testable import AirlockWire

// Models the harnesses check the real encoders against, written from the RFC, not from the code.

/// Fields a proxy must drop (ForwardingHeads via HopByHop, RFC 9110 7.6.1), modelled from the
/// RFC: the fixed hop-by-hop names, and, when a Connection / Proxy-Connection field lists any
/// option other than close / keep-alive, every name listed there.
struct HopByHopModel {
    private var listed: Set<[UInt8]> = []

    init(_ fields: [Field]) {
        let options = fields.filter { $0.named("connection") || $0.named("proxy-connection") }
            .flatMap { Ref.elements($0.value) }.filter { !$0.isEmpty }.map { Ref.lower($0) }
        if options.contains(where: { $0 != Ref.bytes("close") && $0 != Ref.bytes("keep-alive") }) {
            listed = Set(options)
        }
    }

    static let fixed = ["connection", "proxy-connection", "keep-alive", "te", "trailer", "upgrade",
                        "proxy-authorization", "transfer-encoding", "content-length"].map(Ref.bytes)

    func drops(_ f: Field) -> Bool {
        HopByHopModel.fixed.contains(f.lowerName) || listed.contains(f.lowerName)
    }
}

/// The worker's "X-Request-Id: <prefix>-<worker>-" (Worker.idPrefix), for the harnesses.
let requestIDPrefix = HeadWriter.FieldPrefix(name: "X-Request-Id", valuePrefix: "fuzz-0-")

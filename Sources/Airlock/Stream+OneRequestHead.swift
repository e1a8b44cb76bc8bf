import AirlockIO
import AirlockWire

extension Stream {
    /// The request head of a connection that answers one request (the admin API, the demo
    /// origin): found within `limits` by `scanner`, then parsed; nil until the whole head is in.
    /// The gateway's client connections read theirs in `ClientConnection.readHead` (pipelining,
    /// keep-alive and the head's own deadlines).
    func readOneRequestHead(_ scanner: inout HeadScanner, limits: WireLimits) throws(WireError) -> RequestHead? {
        guard let n = try withInput(max: limits.headerBytes + 2, { buf throws(WireError) in try scanner.scan(buf) }) else {
            return nil
        }
        return try withInput(max: n) { buf throws(WireError) in try RequestParser.parse(buf, limits: limits) }
    }
}

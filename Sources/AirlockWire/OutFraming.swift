/// How a body goes out: as received (length), re-framed as chunks, delimited by close, or none.
public enum OutFraming: Equatable, Sendable {
    case none
    case length
    case chunked
    case close
}

/// Which start line a head begins with; decides the rules `HeadScanner` applies.
public enum HeadKind: Sendable {
    /// A request: one leading empty line is allowed and the request line is length-limited (414).
    case request
    /// A response: no leading empty line; only the whole-head limit applies.
    case response
}

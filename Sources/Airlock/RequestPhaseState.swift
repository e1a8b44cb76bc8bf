import AirlockIO
import AirlockSerialization

/// One exchange's request-phase state, on routes with a `request:` block only.
final class RequestPhaseState {
    /// The body sent instead of the client's (route parameters, a rebuilt JSON / plist / form).
    var replacementBody: HTTPRequestSerializer.Replacement?
    /// The client's body so far while it is read whole before an upstream is chosen.
    var collected: [UInt8]?
    /// A `multipart/form-data` body checked while it streams (`validate_multipart`), and the
    /// payload bytes it holds back (at most the boundary + 5: what may be the close delimiter)
    /// until it says the body is whole.
    var multipart: MultipartValidator?
    var multipartHeld: [UInt8] = []
    var multipartSent = 0
    /// Upload pacing (`throttle`): body bytes the current packet may still carry, and the timer
    /// that opens the next packet after the route's delay.
    var throttleBudget = 0
    var throttleTimer: Timer?
    /// Set when the request phase refused the request: what its reject record says.
    var requestRejection: RequestRejection?
}

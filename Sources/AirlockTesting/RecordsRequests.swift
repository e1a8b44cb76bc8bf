/// An origin that records the requests it receives: `TestOrigin` (parsed on its own threads)
/// and `TLSTestOrigin` (logged on a child's stderr, read by a reader thread). Either records a
/// request a little after Airlock sent it, so "no request yet" read right after the client's
/// answer proves nothing; `receivesNoRequest` waits for the request that must not come.
public protocol RecordsRequests: AnyObject {
    /// Requests recorded so far.
    var requestCount: Int { get }
    /// Waits until at least `n` requests have been recorded. False if `timeout` seconds pass first.
    func waitForRequests(_ n: Int, timeout: Double) -> Bool
}

extension RecordsRequests {
    /// Waits up to `seconds` for a request beyond the first `count`: true if none came.
    public func receivesNoRequest(beyond count: Int = 0, within seconds: Double = 0.5) -> Bool {
        !waitForRequests(count + 1, timeout: seconds)
    }
}

import AirlockSerialization

/// The fields a rejected response adds to the client's JSON error body:
/// `{"error":"rejected-response","reason":...,"code":...,"message":...,"upstream_status":...,
/// "content_type":...,"url":...,"request_id":...}`.
struct ResponseRejection: Sendable {
    let reason: String
    let code: Int
    let message: String
    let upstreamStatus: Int
    let contentType: String?
    let url: String

    init(_ error: ValidationError, facts: ResponseFacts) {
        reason = error.reason.rawValue
        code = error.code
        message = error.message
        upstreamStatus = facts.status
        contentType = facts.contentType
        url = facts.url
    }

    /// `,"reason":...,"url":...` (everything between `error` and `request_id`).
    func appendFields(to s: inout String) {
        s += ",\"reason\":"
        JSON.appendString(reason, to: &s)
        s += ",\"code\":\(code),\"message\":"
        JSON.appendString(message, to: &s)
        s += ",\"upstream_status\":\(upstreamStatus),\"content_type\":"
        if let contentType { JSON.appendString(contentType, to: &s) } else { s += "null" }
        s += ",\"url\":"
        JSON.appendString(url, to: &s)
    }
}

extension GatewayError {
    /// A response refused by the route's `response:` block, answered with its `reject_status`.
    init(rejected error: ValidationError, status: Int, facts: ResponseFacts) {
        self.init(.rejectedResponse, status: status, message: error.message, source: .upstream)
        rejection = ResponseRejection(error, facts: facts)
    }
}

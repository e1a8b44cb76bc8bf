/// Parses a complete request head (RFC 9112 sections 2–3, 5, 6) as measured by `HeadScanner`.
///
///     request-line = method SP request-target SP HTTP-version CRLF
///
/// Exactly one leading empty line is tolerated. Every rule failure throws a `WireError` whose
/// `status` is what the client should be told.
public enum RequestParser {
    /// Parses exactly the bytes `HeadScanner` measured: the head must end with its empty line and
    /// hold nothing after it (`incompleteHead` otherwise).
    ///
    /// `reusing` donates its storage to the new head's headers (pass the previous head's
    /// headers, not otherwise kept, to parse without allocating); its fields are discarded.
    public static func parse(_ head: UnsafeRawBufferPointer, limits: WireLimits,
                             reusing: consuming HTTPHeaders = HTTPHeaders()) throws(WireError) -> RequestHead {
        guard head.count <= limits.headerBytes else {
            throw WireError(.headersTooLarge, "head longer than \(limits.headerBytes) bytes")
        }
        var start = 0
        if head.count >= 2 && head[0] == ByteClass.cr && head[1] == ByteClass.lf {
            start = 2
        }
        guard let lf = try FieldLine.lineEnd(head, from: start) else {
            if head.count - start > limits.requestLineBytes {
                throw WireError(.requestLineTooLong, "request line longer than \(limits.requestLineBytes) bytes")
            }
            throw WireError(.incompleteHead, "request line without CRLF")
        }
        let line = UnsafeRawBufferPointer(rebasing: head[start..<(lf - 1)])
        guard line.count <= limits.requestLineBytes else {
            throw WireError(.requestLineTooLong, "request line longer than \(limits.requestLineBytes) bytes")
        }
        guard !line.isEmpty else {
            throw WireError(.badRequestLine, start == 0 ? "empty request line" : "more than one leading empty line")
        }

        let (method, target, version) = try parseRequestLine(line)
        let section = try FieldSection.parse(head, from: lf + 1, maxCount: limits.headerCount, reusing: consume reusing)
        let framing = try section.declaredFraming(version: version, head: head) ?? .none
        let authority = try effectiveAuthority(target: target, version: version, section: section, head: head)

        return RequestHead(
            method: method, target: target, version: version, headers: section.headers, framing: framing,
            host: authority.host, port: authority.port, keepAlive: section.keepAlive(version: version),
            expectsContinue: version == .http11 && section.expectContinue
        )
    }

    /// Splits on exactly two SPs. Tabs, control bytes, leading, doubled or trailing spaces → 400.
    static func parseRequestLine(
        _ line: UnsafeRawBufferPointer
    ) throws(WireError) -> (Method, RequestTarget, HTTPVersion) {
        var firstSpace = -1
        var secondSpace = -1
        for i in 0..<line.count {
            let b = line[i]
            if b == ByteClass.sp {
                if firstSpace < 0 {
                    firstSpace = i
                } else if secondSpace < 0 {
                    secondSpace = i
                } else {
                    throw WireError.quoting(.badRequestLine, "extra space: ", line)
                }
            } else if b < 0x20 || b == 0x7F {
                if b == ByteClass.cr { throw WireError.quoting(.bareCR, "CR in request line: ", line) }
                throw WireError.quoting(.badRequestLine, "control byte in request line: ", line)
            }
        }
        guard firstSpace >= 0, secondSpace >= 0 else {
            throw WireError.quoting(.badRequestLine, "expected 'method SP target SP version': ", line)
        }
        guard firstSpace > 0 else { throw WireError.quoting(.badRequestLine, "leading space: ", line) }
        guard secondSpace > firstSpace + 1 else { throw WireError.quoting(.badRequestLine, "double space: ", line) }
        guard secondSpace + 1 < line.count else { throw WireError.quoting(.badRequestLine, "missing version: ", line) }

        let method = try Method.parse(UnsafeRawBufferPointer(rebasing: line[..<firstSpace]))
        let version = try HTTPVersion.parse(UnsafeRawBufferPointer(rebasing: line[(secondSpace + 1)...]))
        let targetBytes = UnsafeRawBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        let target = try RequestTarget.parse(targetBytes, method: method)
        return (method, target, version)
    }

    /// The authority the request is for (RFC 9112 3.2–3.3). Host is required once in HTTP/1.1
    /// and always validated when present; the target's authority, if it has one, wins.
    static func effectiveAuthority(
        target: RequestTarget, version: HTTPVersion, section: FieldSection, head: UnsafeRawBufferPointer
    ) throws(WireError) -> Authority {
        guard section.hostFields <= 1 else {
            throw WireError(.duplicateHost, "\(section.hostFields) Host fields")
        }
        if section.hostFields == 0 && version == .http11 {
            throw WireError(.missingHost, "HTTP/1.1 request without Host")
        }
        var fromHost = Authority(host: "", port: nil)
        if section.hostFields == 1 {
            let value = UnsafeRawBufferPointer(rebasing: head[section.hostValue])
            if !value.isEmpty {
                fromHost = try Authority.parse(value, requirePort: false, code: .badHost)
            }
        }
        switch target {
        case .absolute(_, let host, let port, _):
            return Authority(host: host, port: port)
        case .authority(let host, let port):
            return Authority(host: host, port: port)
        case .origin, .asterisk:
            if version == .http11 && fromHost.host.isEmpty {
                throw WireError(.badHost, "empty Host")
            }
            return fromHost
        }
    }
}

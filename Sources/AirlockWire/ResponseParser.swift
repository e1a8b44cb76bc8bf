/// Parses a complete response head from an upstream (RFC 9112 sections 4–6).
///
///     status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF
///
/// A missing "SP reason" is accepted too. Errors are the upstream's fault: the gateway reports
/// them to its client as 502, whatever `WireError.status` says.
public enum ResponseParser {
    /// Parses exactly the bytes `HeadScanner(kind: .response)` measured.
    /// `reusing` donates its storage to the new head's headers (see `RequestParser.parse`).
    public static func parse(_ head: UnsafeRawBufferPointer,
                             reusing: consuming HTTPHeaders = HTTPHeaders()) throws(WireError) -> ResponseHead {
        try parse(head, maxFields: Int.max, reusing: consume reusing)
    }

    /// Parses a response head, also enforcing the size and field-count limits of `limits`.
    public static func parse(_ head: UnsafeRawBufferPointer, limits: WireLimits) throws(WireError) -> ResponseHead {
        guard head.count <= limits.headerBytes else {
            throw WireError(.headersTooLarge, "head longer than \(limits.headerBytes) bytes")
        }
        return try parse(head, maxFields: limits.headerCount, reusing: HTTPHeaders())
    }

    private static func parse(_ head: UnsafeRawBufferPointer, maxFields: Int,
                              reusing: consuming HTTPHeaders) throws(WireError) -> ResponseHead {
        guard let lf = try FieldLine.lineEnd(head, from: 0) else {
            throw WireError(.incompleteHead, "status line without CRLF")
        }
        let line = UnsafeRawBufferPointer(rebasing: head[..<(lf - 1)])
        let (version, status, reason) = try parseStatusLine(line)
        let section = try FieldSection.parse(head, from: lf + 1, maxCount: maxFields, reusing: consume reusing)
        let framing = try section.declaredFraming(version: version, head: head) ?? .closeDelimited
        return ResponseHead(
            version: version, status: status, reason: reason, headers: section.headers,
            keepAlive: section.keepAlive(version: version), declaredFraming: framing
        )
    }

    static func parseStatusLine(_ line: UnsafeRawBufferPointer) throws(WireError) -> (HTTPVersion, Int, String) {
        guard let space = line.firstIndex(of: ByteClass.sp) else {
            throw WireError.quoting(.badStatusLine, "status line: ", line)
        }
        let version = try HTTPVersion.parse(UnsafeRawBufferPointer(rebasing: line[..<space]))
        let codeStart = space + 1
        guard line.count >= codeStart + 3,
              ByteClass.isDigit(line[codeStart]), ByteClass.isDigit(line[codeStart + 1]),
              ByteClass.isDigit(line[codeStart + 2]),
              line.count == codeStart + 3 || line[codeStart + 3] == ByteClass.sp
        else {
            throw WireError.quoting(.badStatusLine, "status code: ", line)
        }
        let status = Int(line[codeStart] &- 0x30) * 100 + Int(line[codeStart + 1] &- 0x30) * 10
            + Int(line[codeStart + 2] &- 0x30)
        guard status >= 100 else { throw WireError.quoting(.badStatusLine, "status code: ", line) }

        let reasonStart = min(codeStart + 4, line.count)
        let reasonBytes = UnsafeRawBufferPointer(rebasing: line[reasonStart...])
        for b in reasonBytes where !ByteClass.isFieldValueByte(b) {
            if b == ByteClass.cr { throw WireError.quoting(.bareCR, "CR in reason: ", line) }
            throw WireError.quoting(.badStatusLine, "control byte in reason: ", line)
        }
        return (version, status, String(decoding: reasonBytes, as: UTF8.self))
    }
}

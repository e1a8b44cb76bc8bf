/// A parsed HTTP/1.1 head (request or status line plus fields), shared by the origin and `RawClient`.
/// Lenient where a test wants to see what arrived (bare LF, obs-fold), strict where framing is concerned.
struct HTTPHead: Sendable {
    var startLine: String
    var headers: [(name: String, value: String)]
    var raw: [UInt8]

    static func parse(_ raw: [UInt8]) throws -> HTTPHead {
        var lines: [String] = []
        var lineStart = 0
        for index in raw.indices where raw[index] == UInt8(ascii: "\n") {
            var end = index
            if end > lineStart, raw[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            lines.append(String(decoding: raw[lineStart..<end], as: UTF8.self))
            lineStart = index + 1
        }
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let startLine = lines.first, !startLine.isEmpty else {
            throw AirlockTestingError(.malformed, "empty start line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if line.first == " " || line.first == "\t" {
                guard !headers.isEmpty else { throw AirlockTestingError(.malformed, "continuation line before any field") }
                headers[headers.count - 1].value += " " + trimmed(line)
                continue
            }
            guard let colon = line.firstIndex(of: ":") else {
                throw AirlockTestingError(.malformed, "field line without colon: \(line.debugDescription)")
            }
            let name = String(line[..<colon])
            guard !name.isEmpty, !name.contains(" "), !name.contains("\t") else {
                throw AirlockTestingError(.malformed, "bad field name: \(name.debugDescription)")
            }
            headers.append((name, trimmed(line[line.index(after: colon)...])))
        }
        return HTTPHead(startLine: startLine, headers: headers, raw: raw)
    }

    /// "METHOD target VERSION".
    func requestLine() throws -> (method: String, target: String, version: String) {
        let parts = startLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, parts[2].hasPrefix("HTTP/") else {
            throw AirlockTestingError(.malformed, "bad request line: \(startLine.debugDescription)")
        }
        return (String(parts[0]), String(parts[1]), String(parts[2]))
    }

    /// "VERSION status reason"; the reason may be empty or hold spaces.
    func statusLine() throws -> (version: String, status: Int, reason: String) {
        let parts = startLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), parts[1].count == 3, let status = Int(parts[1]) else {
            throw AirlockTestingError(.malformed, "bad status line: \(startLine.debugDescription)")
        }
        return (String(parts[0]), status, parts.count == 3 ? String(parts[2]) : "")
    }

    func header(_ name: String) -> String? {
        Self.first(name, in: headers)
    }

    func values(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// Comma-separated tokens of every field called `name`, lowercased.
    func tokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }.map { trimmed($0).lowercased() }.filter { !$0.isEmpty }
    }

    var hasTransferEncoding: Bool { !values("Transfer-Encoding").isEmpty }
    var isChunked: Bool { tokens("Transfer-Encoding").last == "chunked" }

    /// The Content-Length, if any. Differing or non-numeric values are malformed.
    func contentLength() throws -> Int? {
        let values = values("Content-Length").flatMap { $0.split(separator: ",") }.map { trimmed($0) }
        guard let first = values.first else { return nil }
        guard values.allSatisfy({ $0 == first }), !first.isEmpty, first.allSatisfy(\.isASCIIDigitCharacter),
              let length = Int(first) else {
            throw AirlockTestingError(.malformed, "bad Content-Length: \(values)")
        }
        return length
    }

    static func first(_ name: String, in headers: [(name: String, value: String)]) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

func trimmed(_ text: some StringProtocol) -> String {
    var slice = Substring(text)
    while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
    while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
    return String(slice)
}

extension Character {
    var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}

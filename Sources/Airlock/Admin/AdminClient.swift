#if canImport(FoundationEssentials)
public import AirlockConfig
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain blocking HTTP/1.1 client for the admin listener, for `airlock rejects`: the CLI,
/// not the gateway, so one socket and blocking calls are all it needs.
public enum AdminClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// `/rejects`, `/rejects?since=10m&route=api&side=request`. Refuses a `since` that is not a
    /// duration, a route name that is not one, and a side other than request or response (so
    /// nothing needs escaping).
    public static func rejectsPath(since: String?, route: String?, side: String? = nil) throws(Failure) -> String {
        var query: [String] = []
        if let since {
            guard ConfigSyntax.parseDuration(since) != nil else {
                throw Failure("--since: expected a duration such as 30s, 10m or 1h, got \"\(since)\"")
            }
            query.append("since=\(since)")
        }
        if let route {
            guard AirlockConfig.isValidRouteName(route) else {
                throw Failure("--route: \"\(route)\" is not a route name (A-Z a-z 0-9 . _ -)")
            }
            query.append("route=\(route)")
        }
        if let side {
            guard side == "request" || side == "response" else {
                throw Failure("--side: expected request or response, got \"\(side)\"")
            }
            query.append("side=\(side)")
        }
        return "/rejects" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// GETs `path` from the admin listener at `address` and returns the status and body.
    public static func get(_ address: ListenAddress, path: String, timeoutSeconds: Int = 5) throws(Failure) -> (status: Int, body: [UInt8]) {
        try request("GET", address, path: path, timeoutSeconds: timeoutSeconds)
    }

    /// `method path` (no body) to the admin listener at `address`: the status and body.
    public static func request(_ method: String, _ address: ListenAddress, path: String,
                               timeoutSeconds: Int = 5) throws(Failure) -> (status: Int, body: [UInt8]) {
        let fd = try connect(address, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        // AIRLOCK_ADMIN_TOKEN: the listener's admin_token, sent as a bearer token when set.
        let token = getenv("AIRLOCK_ADMIN_TOKEN").map { String(cString: $0) }
            .flatMap { !$0.isEmpty && $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } ? $0 : nil }
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        let length = method == "POST" ? "Content-Length: 0\r\n" : ""
        let request = Array("\(method) \(path) HTTP/1.1\r\nHost: \(address)\r\nConnection: close\r\nAccept: application/json\r\n\(length)\(auth)\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure("cannot send to the admin listener at \(address): \(String(cString: strerror(errno)))") }
            sent += n
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw Failure("cannot read from the admin listener at \(address): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            response += buffer[0..<n]
        }
        guard let end = headEnd(response), response.count >= 12,
              let status = Int(String(decoding: response[9..<12], as: UTF8.self))
        else {
            throw Failure("the admin listener at \(address) sent no HTTP response")
        }
        return (status, Array(response[end...]))
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    private static func connect(_ address: ListenAddress, timeoutSeconds: Int) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(address.host, String(address.port), &hints, &list)
        guard rc == 0, let first = list else {
            throw Failure("cannot resolve admin host \(address.host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let ai = entry {
            entry = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 { return fd }
            lastError = String(cString: strerror(errno))
            close(fd)
        }
        throw Failure("""
            cannot reach the admin listener at \(address): \(lastError). Is airlock running, with `admin:` \
            at that address (default 127.0.0.1:9090)? Use --admin HOST:PORT to name another.
            """)
    }
}

/// `airlock rejects` output: one line per reject record, oldest first.
public enum RejectTable {
    private struct Page: Decodable { let rejects: [Row] }
    private struct Row: Decodable {
        let time: String
        let route: String
        let status: Int
        let reason: String
        let url: String
        let request_id: String
    }

    /// A table of `time route status reason url request-id` from a `/rejects` body.
    public static func render(_ body: [UInt8]) throws(AdminClient.Failure) -> String {
        let page: Page
        do {
            page = try JSONDecoder().decode(Page.self, from: Data(body))
        } catch {
            throw AdminClient.Failure("the admin listener's /rejects answer is not the expected JSON: \(error)")
        }
        guard !page.rejects.isEmpty else { return "no rejects\n" }
        let header = ["TIME", "ROUTE", "STATUS", "REASON", "URL", "REQUEST ID"]
        let rows = page.rejects.map { [$0.time, $0.route, String($0.status), $0.reason, $0.url, $0.request_id] }
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n") + "\n"
    }
}

import Glibc

/// Writes one `TestResponse` to a connection: head, then the body in 64 KiB writes (as chunks if chunked).
struct ResponseWriter {
    let fd: Int32
    let waker: Waker

    static let blockSize = 64 << 10

    func write(_ response: TestResponse, method: String, keepAlive: Bool) throws {
        let bodyLength = try length(of: response.body)
        let sendsBody = method != "HEAD" && !(100..<200).contains(response.status)
            && response.status != 204 && response.status != 304
        let mayFrame = !(100..<200).contains(response.status) && response.status != 204
        let names = Set(response.headers.map { $0.0.lowercased() })
        let userFrames = names.contains("content-length") || names.contains("transfer-encoding")

        var head = "HTTP/1.1 \(response.status) \(response.reason)\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if mayFrame, !userFrames {
            head += response.chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(bodyLength)\r\n"
        }
        if !keepAlive, !names.contains("connection") { head += "Connection: close\r\n" }
        head += "\r\n"

        guard sendsBody else {
            try send(Array(head.utf8))
            return
        }
        if case .bytes(let bytes) = response.body, !response.chunked, bytes.count <= Self.blockSize {
            try send(Array(head.utf8) + bytes)  // one write, so small answers arrive in one segment
            return
        }
        try send(Array(head.utf8))
        try forEachBlock(of: response.body) { block in
            if response.chunked {
                guard !block.isEmpty else { return }
                try send(Array((String(block.count, radix: 16) + "\r\n").utf8) + block + [13, 10])
            } else {
                try send(block)
            }
        }
        if response.chunked { try send(Array("0\r\n\r\n".utf8)) }
    }

    private func send(_ bytes: [UInt8]) throws {
        try Socket.sendAll(fd, bytes, waker: waker, deadline: nil)
    }

    private func length(of body: TestResponse.Body) throws -> Int {
        switch body {
        case .bytes(let bytes): return bytes.count
        case .pattern(let count): return max(0, count)
        case .file(let path):
            var info = stat()
            guard stat(path, &info) == 0 else { throw Descriptors.systemError("stat \(path)") }
            return Int(info.st_size)
        }
    }

    private func forEachBlock(of body: TestResponse.Body, _ write: ([UInt8]) throws -> Void) throws {
        switch body {
        case .bytes(let bytes):
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + Self.blockSize)
                try write(Array(bytes[offset..<end]))
                offset = end
            }
        case .pattern(let count):
            var offset = 0
            while offset < count {
                let size = min(Self.blockSize, count - offset)
                try write(patternBytes(count: size, offset: offset))
                offset += size
            }
        case .file(let path):
            let file = try Descriptors.make("open \(path)") {
                let fd = open(path, O_RDONLY)
                return fd >= 0 ? [fd] : nil
            }[0]
            defer { close(file) }
            var block = [UInt8](repeating: 0, count: Self.blockSize)
            while true {
                let n = block.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress!, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n < 0 { throw Descriptors.systemError("read \(path)") }
                if n == 0 { return }
                try write(Array(block[0..<n]))
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// write(2), named apart from `JSONLogSink.write(line:)`.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, buffer, count)
    #elseif canImport(Musl)
    return Musl.write(fd, buffer, count)
    #else
    return Darwin.write(fd, buffer, count)
    #endif
}

/// Where JSON log lines go: a file descriptor, written with one write(2) per
/// line, or a closure (tests). Every handler writing to the same place must
/// share one sink: its lock is what keeps lines from different threads whole.
public final class JSONLogSink: @unchecked Sendable {
    private enum Target {
        case fileDescriptor(Int32)
        case closure(@Sendable (String) -> Void)
    }

    private let target: Target
    private let lock = LogLock()

    /// Standard output, shared by every handler `AirlockLogging.bootstrap` makes.
    public static let standardOutput = JSONLogSink(fileDescriptor: 1)

    /// Writes each line plus "\n" to `fileDescriptor`. The sink does not own
    /// or close the descriptor.
    public init(fileDescriptor: Int32) {
        self.target = .fileDescriptor(fileDescriptor)
    }

    /// Hands each line, without its trailing newline, to `write`; calls are serialised.
    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.target = .closure(write)
    }

    /// `line` is one JSON object ending in "\n".
    func write(line: [UInt8]) {
        lock.withLock {
            switch target {
            case .fileDescriptor(let fd):
                line.withUnsafeBytes { Self.writeFully(fd, $0) }
            case .closure(let write):
                write(String(decoding: line.dropLast(), as: UTF8.self))
            }
        }
    }

    /// One write(2) in the normal case; loops only on a short write or EINTR.
    /// Other errors (EPIPE, a closed descriptor) drop the line: logging must
    /// never take the process down.
    private static func writeFully(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}

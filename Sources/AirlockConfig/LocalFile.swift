#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files and the environment through the C library, so that reading a config needs no
/// Foundation in the process (bench/README.md, "Footprint").
public enum LocalFile {
    /// Why a file could not be read: the C library's text for errno ("No such file or directory").
    public struct ReadError: Error, Sendable, CustomStringConvertible {
        public var code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    /// The whole file.
    public static func read(_ path: String) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(code: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { readSome(fd, $0) }
            if n > 0 {
                bytes += chunk[0..<n]
            } else if n == 0 {
                return bytes
            } else if errno != EINTR {
                throw ReadError(code: errno)
            }
        }
    }

    /// The file as UTF-8 text; nil (and no error) when its bytes are not UTF-8.
    public static func readText(_ path: String) throws(ReadError) -> String? {
        String(validating: try read(path), as: UTF8.self)
    }

    /// True if something (a file, a directory) is at `path`.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The names in a directory (without `.` and `..`), unsorted; nil if `path` is not a
    /// directory that can be listed.
    public static func directoryEntries(_ path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The process's environment variables (from `environ`).
    public static var environment: [String: String] {
        var variables: [String: String] = [:]
        let first: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = first else { return variables }
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return variables
    }
}

/// One read(2) (at file scope, where `read` is the C library's, not `LocalFile.read`).
private func readSome(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
    read(fd, buffer.baseAddress, buffer.count)
}

import Foundation

/// SHA-256 of `bytes` as lowercase hex, via /usr/bin/sha256sum (coreutils) so tests need no crypto library.
public func sha256Hex(_ bytes: [UInt8]) throws -> String {
    let directory = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/bytes"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return try sha256Hex(file: path)
}

/// SHA-256 of the file at `file` as lowercase hex, via /usr/bin/sha256sum.
public func sha256Hex(file: String) throws -> String {
    let result = try runProcess("/usr/bin/sha256sum", ["--", file], timeout: 60)
    let digest = String(result.stdoutString.prefix { !$0.isWhitespace })
    guard result.exitCode == 0, digest.count == 64, digest.allSatisfy(\.isHexDigit) else {
        throw AirlockTestingError(.process, "sha256sum \(file) exited \(result.exitCode): \(result.stderr)")
    }
    return digest.lowercased()
}

/// A new empty directory under the system temporary directory. The caller removes it.
public func makeTemporaryDirectory(prefix: String = "airlock-testing") throws -> String {
    let path = FileManager.default.temporaryDirectory.path + "/\(prefix)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

import Foundation

/// The integers of a kernel setting, read from `/proc/sys/<path>`: `net/core/somaxconn` gives
/// `[4096]`, `net/ipv4/ip_local_port_range` `[32768, 60999]`. Nil when it cannot be read.
public func kernelSetting(_ path: String) -> [Int]? {
    guard let text = try? String(contentsOfFile: "/proc/sys/" + path, encoding: .utf8) else { return nil }
    let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    return numbers.isEmpty ? nil : numbers
}

extension JSONValidation {
    /// Removes every null-valued object member, recursively, and every null array element
    /// (AFNetworking's `removesKeysWithNullValues`). Everything else is copied byte for byte;
    /// insignificant whitespace is dropped. A top-level `null` stays. Input that is not valid
    /// JSON is returned unchanged.
    public static func removingNulls(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.withUnsafeBytes({ scan($0).failure == nil }) else { return bytes }
        return removingNullsFromValid(bytes)
    }

    /// `removingNulls` for bytes that `scan` has accepted (so nesting is bounded and every
    /// token is well-formed).
    static func removingNullsFromValid(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBufferPointer { buffer in
            var stripper = NullStripper(p: buffer, output: [])
            stripper.output.reserveCapacity(buffer.count)
            stripper.skipWhitespace()
            stripper.copyValue()
            return stripper.output
        }
    }

    /// Copies one value at a time; bounds are checked so that no input can crash it.
    private struct NullStripper {
        let p: UnsafeBufferPointer<UInt8>
        var output: [UInt8]
        var i = 0

        @inline(__always) func peek() -> UInt8 { i < p.count ? p[i] : 0 }

        mutating func skipWhitespace() {
            while i < p.count, p[i] == 0x20 || p[i] == 0x0A || p[i] == 0x0D || p[i] == 0x09 { i += 1 }
        }

        func isNull() -> Bool {
            p.count - i >= 4 && p[i] == UInt8(ascii: "n") && p[i + 1] == UInt8(ascii: "u")
                && p[i + 2] == UInt8(ascii: "l") && p[i + 3] == UInt8(ascii: "l")
        }

        mutating func copyValue() {
            switch peek() {
            case UInt8(ascii: "{"): copyContainer(close: UInt8(ascii: "}"), keyed: true)
            case UInt8(ascii: "["): copyContainer(close: UInt8(ascii: "]"), keyed: false)
            case UInt8(ascii: "\""): output.append(contentsOf: p[stringRange()])
            default:
                let start = i
                while i < p.count {
                    let b = p[i]
                    if b == UInt8(ascii: ",") || b == UInt8(ascii: "]") || b == UInt8(ascii: "}") || b == 0x20
                        || b == 0x0A || b == 0x0D || b == 0x09 { break }
                    i += 1
                }
                output.append(contentsOf: p[start..<i])
            }
        }

        /// The range of the string token at `i` including its quotes; moves past it.
        mutating func stringRange() -> Range<Int> {
            let start = i
            i += 1
            while i < p.count {
                let b = p[i]
                if b == UInt8(ascii: "\\") {
                    i += 2
                } else {
                    i += 1
                    if b == UInt8(ascii: "\"") { break }
                }
            }
            i = min(i, p.count)
            return start..<i
        }

        mutating func copyContainer(close: UInt8, keyed: Bool) {
            output.append(p[i])
            i += 1
            var first = true
            while true {
                skipWhitespace()
                guard i < p.count, p[i] != close else { break }
                var key = 0..<0
                if keyed {
                    guard p[i] == UInt8(ascii: "\"") else { break }
                    key = stringRange()
                    skipWhitespace()
                    guard peek() == UInt8(ascii: ":") else { break }
                    i += 1
                    skipWhitespace()
                }
                if isNull() {
                    i += 4
                } else {
                    if !first { output.append(UInt8(ascii: ",")) }
                    first = false
                    if keyed {
                        output.append(contentsOf: p[key])
                        output.append(UInt8(ascii: ":"))
                    }
                    let before = i
                    copyValue()
                    if i == before { break }
                }
                skipWhitespace()
                guard peek() == UInt8(ascii: ",") else { break }
                i += 1
            }
            if peek() == close { i += 1 }
            output.append(close)
        }
    }
}

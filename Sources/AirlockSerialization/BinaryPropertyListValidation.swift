/// The structure of a binary property list (`bplist00`, CoreFoundation's `CFBinaryPList.c`):
///
///     "bplist00" | objects | offset table | trailer (32 bytes)
///
/// The trailer holds 6 unused bytes, the offset integer size and the object reference size
/// (each 1...8), then three big-endian 64-bit integers: the object count, the top object's index
/// and the offset table's position. Checked: the trailer's fields, that the offset table lies
/// between the header and the trailer, that every offset points into the object area, then the
/// object graph from the top object: each reachable object once (a container met again on its
/// own path is a cycle), its marker, that it ends before the offset table, that every reference
/// names an existing object and that dictionary keys are strings. Unreachable objects are
/// checked only for their offset; string contents are not decoded.
enum BinaryPropertyListValidation {
    static let headerCount = 8
    static let trailerCount = 32

    static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 6 && bytes.prefix(6).elementsEqual("bplist".utf8)
    }

    /// Nil when `bytes` is a consistent binary property list, otherwise what is wrong.
    static func check(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let base = bytes.baseAddress else { return "empty document" }
        var reader = Reader(p: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        do {
            try reader.trailer()
            try reader.offsets()
            try reader.walk()
            return nil
        } catch {
            return error.message
        }
    }

    struct Failure: Error {
        let message: String
    }

    private struct Reader {
        let p: UnsafePointer<UInt8>
        let count: Int
        var offsetIntSize = 0
        var objectRefSize = 0
        var objectCount = 0
        var topObject = 0
        /// Where the offset table starts: every object lies in `headerCount..<tableStart`.
        var tableStart = 0

        init(p: UnsafePointer<UInt8>, count: Int) {
            self.p = p
            self.count = count
        }

        // MARK: Header, trailer and offset table

        mutating func trailer() throws(Failure) {
            guard count >= headerCount + trailerCount else {
                throw Failure(message: "\(count) bytes cannot hold the 8-byte header and the 32-byte trailer")
            }
            guard p[6] == UInt8(ascii: "0"), p[7] == UInt8(ascii: "0") else {
                throw Failure(message: "unsupported version '\(String(decoding: [p[6], p[7]], as: UTF8.self))' (expected bplist00)")
            }
            let t = count - trailerCount
            offsetIntSize = Int(p[t + 6])
            objectRefSize = Int(p[t + 7])
            let objects = uint(at: t + 8, size: 8)
            let top = uint(at: t + 16, size: 8)
            let table = uint(at: t + 24, size: 8)
            guard (1...8).contains(offsetIntSize) else {
                throw Failure(message: "offset integer size \(offsetIntSize) in the trailer is not within 1...8")
            }
            guard (1...8).contains(objectRefSize) else {
                throw Failure(message: "object reference size \(objectRefSize) in the trailer is not within 1...8")
            }
            guard objects > 0 else { throw Failure(message: "the trailer counts no objects") }
            guard top < objects else {
                throw Failure(message: "top object \(top) is not below the object count \(objects)")
            }
            guard table > UInt64(headerCount) else {
                throw Failure(message: "offset table at byte \(table) leaves no room for objects after the header")
            }
            let (tableBytes, overflow) = objects.multipliedReportingOverflow(by: UInt64(offsetIntSize))
            guard !overflow, table <= UInt64(t), tableBytes <= UInt64(t) - table else {
                throw Failure(message: "offset table at byte \(table) (\(objects) offsets of \(offsetIntSize) bytes) "
                    + "does not end before the trailer at byte \(t)")
            }
            if objectRefSize < 8, objects >= UInt64(1) << (8 * objectRefSize) {
                throw Failure(message: "object reference size \(objectRefSize) cannot name \(objects) objects "
                    + "(at most \((UInt64(1) << (8 * objectRefSize)) - 1))")
            }
            objectCount = Int(objects)
            topObject = Int(top)
            tableStart = Int(table)
        }

        /// Every offset points past the header and before the offset table.
        func offsets() throws(Failure) {
            for object in 0..<objectCount {
                let offset = uint(at: tableStart + object * offsetIntSize, size: offsetIntSize)
                guard offset >= UInt64(headerCount), offset < UInt64(tableStart) else {
                    throw Failure(message: "object \(object)'s offset \(offset) is outside the object area "
                        + "(bytes \(headerCount)..<\(tableStart))")
                }
            }
        }

        func offset(of object: Int) -> Int {
            Int(uint(at: tableStart + object * offsetIntSize, size: offsetIntSize))
        }

        // MARK: Object graph

        /// A container being walked: the position of its next reference and how many remain.
        private struct Frame {
            let object: Int
            var next: Int
            var remaining: Int
        }

        private enum Mark: UInt8 {
            case unvisited, onPath, done
        }

        /// Depth-first from the top object, without recursion; each object is read once.
        func walk() throws(Failure) {
            var marks = [Mark](repeating: .unvisited, count: objectCount)
            var path: [Frame] = []
            var pending: Int? = topObject
            while true {
                if let object = pending {
                    pending = nil
                    switch marks[object] {
                    case .done: break
                    case .onPath: throw Failure(message: "object \(object) contains itself")
                    case .unvisited:
                        let refs = try read(object)
                        marks[object] = .onPath
                        path.append(Frame(object: object, next: refs.start, remaining: refs.count))
                    }
                }
                guard let frame = path.last else { return }
                if frame.remaining == 0 {
                    marks[frame.object] = .done
                    path.removeLast()
                    continue
                }
                pending = Int(uint(at: frame.next, size: objectRefSize))
                path[path.count - 1].next += objectRefSize
                path[path.count - 1].remaining -= 1
            }
        }

        /// Checks one object's marker and extent; returns where its references start and how many
        /// there are (none for a scalar). References are checked to name existing objects.
        func read(_ object: Int) throws(Failure) -> (start: Int, count: Int) {
            let at = offset(of: object)
            let marker = p[at]
            let low = Int(marker & 0x0F)
            func fail(_ why: String) -> Failure {
                Failure(message: "object \(object) (marker 0x\(hex(marker)) at byte \(at)) \(why)")
            }
            var start = at + 1
            let size: UInt64
            var refs: UInt64 = 0
            switch marker >> 4 {
            case 0x0:
                guard [0x0, 0x8, 0x9, 0xF].contains(low) else { throw fail("is not a known object type") }
                size = 0
            case 0x1:
                guard low <= 4 else { throw fail("is an integer wider than 16 bytes") }
                size = 1 << low
            case 0x2:
                guard low == 2 || low == 3 else { throw fail("is a real that is neither 4 nor 8 bytes") }
                size = 1 << low
            case 0x3:
                guard low == 3 else { throw fail("is a date that is not 8 bytes") }
                size = 8
            case 0x8:
                size = UInt64(low) + 1
            case 0x4, 0x5, 0x6, 0xA, 0xC, 0xD:
                var length = UInt64(low)
                if low == 0xF { (length, start) = try extendedLength(at: start, fail: fail) }
                // UTF-16 strings hold two bytes a character, dictionaries a key and a value reference.
                let perUnit: UInt64 = marker >> 4 == 0x6 || marker >> 4 == 0xD ? 2 : 1
                let (units, overflow) = length.multipliedReportingOverflow(by: perUnit)
                guard !overflow else { throw fail("has a length that overflows") }
                if marker >> 4 >= 0xA { refs = units; size = 0 } else { size = units }
            default:
                throw fail("is not a known object type")
            }
            let (refBytes, overflow) = refs.multipliedReportingOverflow(by: UInt64(objectRefSize))
            guard !overflow else { throw fail("has a length that overflows") }
            let total = refs > 0 ? refBytes : size
            guard total <= UInt64(tableStart - start) else {
                throw fail("runs into the offset table at byte \(tableStart)")
            }
            for k in 0..<Int(refs) {
                let target = uint(at: start + k * objectRefSize, size: objectRefSize)
                guard target < UInt64(objectCount) else {
                    throw fail("refers to object \(target), beyond the object count \(objectCount)")
                }
                if marker >> 4 == 0xD, k < Int(refs) / 2 {
                    let keyMarker = p[offset(of: Int(target))] >> 4
                    guard keyMarker == 0x5 || keyMarker == 0x6 else {
                        throw fail("has a key (object \(target)) that is not a string")
                    }
                }
            }
            return (start, Int(refs))
        }

        /// The length after a `0xF` count nibble: an integer object of 1, 2, 4 or 8 bytes.
        func extendedLength(at i: Int, fail: (String) -> Failure) throws(Failure) -> (UInt64, Int) {
            guard i < tableStart, p[i] >> 4 == 0x1, p[i] & 0x0F <= 3 else {
                throw fail("has a malformed length")
            }
            let width = 1 << Int(p[i] & 0x0F)
            guard width <= tableStart - (i + 1) else { throw fail("has a length that runs into the offset table") }
            return (uint(at: i + 1, size: width), i + 1 + width)
        }

        // MARK: Bytes

        /// The big-endian unsigned integer of `size` (1...8) bytes at `i`; the caller checked the bounds.
        func uint(at i: Int, size: Int) -> UInt64 {
            var value: UInt64 = 0
            for k in 0..<size { value = value << 8 | UInt64(p[i + k]) }
            return value
        }

        func hex(_ b: UInt8) -> String {
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 0xF)]], as: UTF8.self)
        }
    }
}

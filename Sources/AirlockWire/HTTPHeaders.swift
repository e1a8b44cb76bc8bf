/// Header fields stored compactly: one byte buffer holding every name and value (for a parsed
/// head, a copy of its field block, separators included), and one small entry of offsets per
/// field. Order and duplicates are kept exactly as received.
///
/// Names keep the case they arrived in; values are stored with surrounding SP/HTAB trimmed.
/// Fields added with `append` are not validated here: the parsers validate what comes off the
/// wire, and `HeadWriter` defends what goes onto it.
public struct HTTPHeaders: Sendable, Equatable {
    @usableFromInline
    struct Entry: Sendable {
        var nameStart: UInt32
        var nameCount: UInt32
        var valueStart: UInt32
        var valueCount: UInt32
        @usableFromInline var known: KnownField
    }

    private(set) var storage: [UInt8] = []
    @usableFromInline private(set) var entries: [Entry] = []
    /// The known fields held, one bit each (`KnownField.bit`): whether a head has a field is
    /// one test, and most look-ups of a field it lacks end there.
    @usableFromInline private(set) var knownFields: UInt32 = 0

    public init() {}

    public var count: Int { entries.count }

    public var isEmpty: Bool { entries.isEmpty }

    /// Bytes of storage these headers hold on to (capacity, not just what is used).
    public var retainedBytes: Int {
        storage.capacity + entries.capacity * MemoryLayout<Entry>.stride
    }

    /// The name as received (case kept).
    public func name(at i: Int) -> String {
        withNameBytes(at: i) { String(decoding: $0, as: UTF8.self) }
    }

    /// The value with leading and trailing SP/HTAB trimmed. obs-text bytes that are not UTF-8
    /// become U+FFFD; use `withValueBytes` for the exact bytes.
    public func value(at i: Int) -> String {
        withValueBytes(at: i) { String(decoding: $0, as: UTF8.self) }
    }

    /// Inlinable: the serializers ask it of every field they relay.
    @inlinable
    public func known(at i: Int) -> KnownField { entries[i].known }

    public func withNameBytes<R>(at i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let e = entries[i]
        return try storage.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[Int(e.nameStart)..<Int(e.nameStart + e.nameCount)]))
        }
    }

    public func withValueBytes<R>(at i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let e = entries[i]
        return try storage.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[Int(e.valueStart)..<Int(e.valueStart + e.valueCount)]))
        }
    }

    /// Bytes of field `i`'s name and value together.
    @inline(__always)
    public func fieldBytes(at i: Int) -> Int { Int(entries[i].nameCount + entries[i].valueCount) }

    /// Name and value bytes of field `i`, in one access to the storage.
    @inline(__always)
    public func withFieldBytes<R>(at i: Int, _ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let e = entries[i]
        return try storage.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[Int(e.nameStart)..<Int(e.nameStart + e.nameCount)]),
                     UnsafeRawBufferPointer(rebasing: all[Int(e.valueStart)..<Int(e.valueStart + e.valueCount)]))
        }
    }

    /// The first value of a known field, if any.
    public func first(_ field: KnownField) -> String? {
        guard let i = firstIndex(field) else { return nil }
        return value(at: i)
    }

    /// Index of the first field of this kind: none at once when the head has none.
    public func firstIndex(_ field: KnownField) -> Int? {
        guard knownFields & field.bit != 0 else { return nil }
        return entries.withUnsafeBufferPointer { fields in
            for i in 0..<fields.count where fields[i].known == field { return i }
            return nil
        }
    }

    /// Index of the last field of this kind, and how many there are.
    public func lastIndex(_ field: KnownField) -> (index: Int, count: Int)? {
        guard knownFields & field.bit != 0 else { return nil }
        return entries.withUnsafeBufferPointer { fields in
            var last = 0, count = 0
            for i in 0..<fields.count where fields[i].known == field {
                last = i
                count += 1
            }
            return count == 0 ? nil : (last, count)
        }
    }

    /// The first value of the field with this name, compared ignoring ASCII case.
    public func first(name: String) -> String? {
        guard let i = firstIndex(name: name) else { return nil }
        return value(at: i)
    }

    /// The first value of this field read as an HTTP-date (RFC 9110 5.6.7), seconds since the
    /// epoch, parsed where it lies (no String); nil when the field is absent or not a date.
    public func firstDate(_ field: KnownField) -> Int64? {
        guard let i = firstIndex(field) else { return nil }
        return withValueBytes(at: i) { HTTPDate.parse($0) }
    }

    /// `firstDate(_:)` through `memo` (the same answer; a text it holds is not parsed again).
    public func firstDate(_ field: KnownField, memo: inout HTTPDateMemo) -> Int64? {
        guard let i = firstIndex(field) else { return nil }
        return withValueBytes(at: i) { memo.parse($0) }
    }

    /// `firstDate(_:)` for a field found by name, compared ignoring ASCII case.
    public func firstDate(name: String) -> Int64? {
        guard let i = firstIndex(name: name) else { return nil }
        return withValueBytes(at: i) { HTTPDate.parse($0) }
    }

    /// Index of the first field with this name, compared ignoring ASCII case (by its kind when
    /// the name is a `KnownField`'s: every field's kind is its name's).
    public func firstIndex(name: String) -> Int? {
        var name = name
        return name.withUTF8 { wanted in
            let wanted = UnsafeRawBufferPointer(wanted)
            let known = KnownField.classify(wanted)
            if known != .other { return firstIndex(known) }
            return entries.indices.first { i in
                withNameBytes(at: i) { ByteClass.equalsIgnoringCase($0, wanted) }
            }
        }
    }

    @inlinable
    public func contains(_ field: KnownField) -> Bool { knownFields & field.bit != 0 }

    /// Every value of a known field, in order.
    public func values(_ field: KnownField) -> [String] {
        entries.indices.filter { entries[$0].known == field }.map { value(at: $0) }
    }

    /// Comma-separated tokens of all fields of this kind, lowercased, OWS trimmed, empty elements
    /// dropped: `Connection: close, X-Foo` gives `["close", "x-foo"]`.
    public func tokens(_ field: KnownField) -> [String] {
        var out: [String] = []
        for i in entries.indices where entries[i].known == field {
            withValueBytes(at: i) { value in
                _ = ByteClass.forEachListElement(value) { element in
                    if !element.isEmpty {
                        out.append(ByteClass.lowercasedString(element))
                    }
                    return true
                }
            }
        }
        return out
    }

    /// True if any field of this kind lists `token` (lower-case ASCII), ignoring case. No allocation.
    public func containsToken(_ field: KnownField, _ token: StaticString) -> Bool {
        guard contains(field) else { return false }
        for i in entries.indices where entries[i].known == field {
            let found = withValueBytes(at: i) { value in
                !ByteClass.forEachListElement(value) { !ByteClass.equalsLowercased($0, token) }
            }
            if found { return true }
        }
        return false
    }

    /// `body` over the first non-empty comma-separated element of the fields of this kind,
    /// OWS-trimmed, where it lies (no String); nil when there is none.
    public func withFirstListElement<R>(_ field: KnownField, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        guard contains(field) else { return nil }
        var found: R?
        for i in entries.indices where found == nil && entries[i].known == field {
            withValueBytes(at: i) { value in
                _ = ByteClass.forEachListElement(value) { element in
                    guard !element.isEmpty else { return true }
                    found = body(element)
                    return false
                }
            }
        }
        return found
    }

    /// Appends a field, classifying its name as a `KnownField`. The value is stored OWS-trimmed.
    /// Appends a known field (e.g. `Content-Length`) with a non-negative decimal value, its
    /// digits written straight into the storage (no String made for name or number).
    public mutating func append(_ field: KnownField, decimal: Int) {
        precondition(decimal >= 0 && field != .other, "append(_:decimal:) takes a known field and a non-negative number")
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for Int.max's 19 digits
        let count = withUnsafeMutableBytes(of: &digits) { buf -> Int in
            var n = decimal
            var end = buf.count
            repeat {
                end -= 1
                buf[end] = UInt8(truncatingIfNeeded: 0x30 + n % 10)
                n /= 10
            } while n > 0
            return buf.count - end
        }
        var name = field.canonicalName
        name.withUTF8 { n in
            withUnsafeBytes(of: &digits) { buf in
                append(nameBytes: UnsafeRawBufferPointer(n), valueBytes: UnsafeRawBufferPointer(rebasing: buf[(buf.count - count)...]),
                       known: field)
            }
        }
    }

    /// Appends a field whose value is given as bytes (already valid field-value text, no
    /// leading or trailing whitespace): no String made for it.
    public mutating func append(name: StaticString, valueBytes: UnsafeRawBufferPointer) {
        let n = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        append(nameBytes: n, valueBytes: valueBytes, known: KnownField.classify(n))
    }

    public mutating func append(name: String, value: String) {
        var name = name
        var value = value
        name.withUTF8 { n in
            value.withUTF8 { v in
                let v = UnsafeRawBufferPointer(v)
                let r = ByteClass.trimmed(v, 0, v.count)
                let n = UnsafeRawBufferPointer(n)
                append(nameBytes: n, valueBytes: UnsafeRawBufferPointer(rebasing: v[r]), known: KnownField.classify(n))
            }
        }
    }

    /// Appends raw bytes; the caller has validated and trimmed them.
    mutating func append(nameBytes: UnsafeRawBufferPointer, valueBytes: UnsafeRawBufferPointer, known: KnownField) {
        precondition(storage.count + nameBytes.count + valueBytes.count < Int(UInt32.max), "HTTPHeaders storage overflow")
        let nameStart = UInt32(storage.count)
        storage.append(contentsOf: ByteClass.typed(nameBytes))
        let valueStart = UInt32(storage.count)
        storage.append(contentsOf: ByteClass.typed(valueBytes))
        entries.append(Entry(
            nameStart: nameStart, nameCount: UInt32(nameBytes.count),
            valueStart: valueStart, valueCount: UInt32(valueBytes.count),
            known: known
        ))
        knownFields |= known.bit
    }

    /// Empties these headers and starts them over from a copy of a parsed field block (one
    /// copy for every field), in the storage they already have when nothing else shares it.
    /// The parser then records each field with `appendParsed`, by its offsets in `block`.
    mutating func refill(parsedBlock block: UnsafeRawBufferPointer, fields: Int) {
        storage.removeAll(keepingCapacity: true)
        storage.append(contentsOf: block)
        entries.removeAll(keepingCapacity: true)
        entries.reserveCapacity(fields)
        knownFields = 0
    }

    /// Records a field of the block given to `refill(parsedBlock:fields:)`: name and value are
    /// ranges of that block, already validated and trimmed by the parser.
    mutating func appendParsed(name: Range<Int>, value: Range<Int>, known: KnownField) {
        entries.append(Entry(
            nameStart: UInt32(name.lowerBound), nameCount: UInt32(name.count),
            valueStart: UInt32(value.lowerBound), valueCount: UInt32(value.count),
            known: known
        ))
        knownFields |= known.bit
    }

    /// Reserves room for about `bytes` bytes of names and values and `fields` fields.
    mutating func reserve(bytes: Int, fields: Int) {
        storage.reserveCapacity(bytes)
        entries.reserveCapacity(fields)
    }

    /// A copy holding only the fields `keep` accepts (by index), in order, their bytes copied as
    /// they are (no String per field): e.g. the fields a cache stores.
    /// `reserving`: room for that many more bytes (and one more field), for a field the caller
    /// appends next without the storage growing again.
    public func filtered(reserving extra: Int = 0, _ keep: (Int) -> Bool) -> HTTPHeaders {
        filtered(reserving: extra) { i, _ in keep(i) }
    }

    /// `filtered` keeping every field whose kind is not in `dropped`: no call per field.
    public func filtered(reserving extra: Int = 0, dropping dropped: KnownField.Set) -> HTTPHeaders {
        filtered(reserving: extra) { _, e in dropped.bits & e.known.bit == 0 }
    }

    /// The entries `keep` accepts, in order (room for `moreEntries` beyond them), the known-field
    /// bits they hold and their name and value bytes: what `filtered` copies and what
    /// `removeAll(keepingStorage:)` keeps.
    @inline(__always)
    private func keptEntries(room moreEntries: Int, _ keep: (Int, Entry) -> Bool) -> (entries: [Entry], known: UInt32, bytes: Int) {
        entries.withUnsafeBufferPointer { Self.kept(from: $0, room: moreEntries, keep) }
    }

    /// `keptEntries` of any run of entries (these headers' own, or a compact form's).
    @inline(__always)
    private static func kept(from fields: UnsafeBufferPointer<Entry>, room moreEntries: Int,
                             _ keep: (Int, Entry) -> Bool) -> (entries: [Entry], known: UInt32, bytes: Int) {
        var bytes = 0
        var known: UInt32 = 0
        // (`reserveCapacity`, not `Array(unsafeUninitializedCapacity:)`, which goes through the
        // unspecialised array allocator: it looks up the storage's type metadata at run time,
        // ~500 instructions. The same for `filtered`'s storage.)
        var kept: [Entry] = []
        kept.reserveCapacity(fields.count + moreEntries)
        for i in 0..<fields.count where keep(i, fields[i]) {
            kept.append(fields[i])
            bytes += Int(fields[i].nameCount + fields[i].valueCount)
            known |= fields[i].known.bit
        }
        return (kept, known, bytes)
    }

    @inline(__always)
    private func filtered(reserving extra: Int, keeping keep: (Int, Entry) -> Bool) -> HTTPHeaders {
        var out = HTTPHeaders()
        // Room for one more entry when the caller appends a field next.
        var (kept, known, bytes) = keptEntries(room: extra > 0 ? 1 : 0, keep)
        out.knownFields = known
        // One allocation of the kept bytes (and `extra`), reserved as above: each field's name
        // and value copied once into scratch memory (on the stack when small), then all of them
        // appended at once (one append, where an append a name and a value cost ~90 each).
        out.storage.reserveCapacity(bytes + extra)
        storage.withUnsafeBytes { all in
            guard let from = all.baseAddress, bytes > 0 else { return }
            withUnsafeTemporaryAllocation(byteCount: bytes, alignment: 1) { scratch in
                guard let to = scratch.baseAddress else { return }
                var at = 0
                for j in kept.indices {
                    let e = kept[j]
                    kept[j].nameStart = UInt32(at)
                    (to + at).copyMemory(from: from + Int(e.nameStart), byteCount: Int(e.nameCount))
                    at += Int(e.nameCount)
                    kept[j].valueStart = UInt32(at)
                    (to + at).copyMemory(from: from + Int(e.valueStart), byteCount: Int(e.valueCount))
                    at += Int(e.valueCount)
                }
                out.storage.append(contentsOf: ByteClass.typed(UnsafeRawBufferPointer(scratch)))
            }
        }
        out.entries = kept
        return out
    }

    /// Whether field `i`'s name is `lowered` (an all-lower-case name), ignoring ASCII case.
    public func nameIs(_ lowered: StaticString, at i: Int) -> Bool {
        withNameBytes(at: i) { ByteClass.equalsLowercased($0, lowered) }
    }

    /// Removes every field whose kind is in `dropped`, keeping the storage: the entries are
    /// rebuilt (exactly as many as are kept) and the storage is left as it is (the dropped
    /// fields' bytes stay in it, unreferenced), so the storage is not copied when it is shared.
    /// (`init(compact:dropping:)` drops the same way while it copies a compact form.)
    public mutating func removeAll(keepingStorage dropped: KnownField.Set) {
        guard knownFields & dropped.bits != 0 else { return }
        (entries, knownFields, _) = keptEntries(room: 0) { _, e in dropped.bits & e.known.bit == 0 }
    }

    /// Bytes the storage holds (a parsed head's: its field lines as they came) and has room for.
    public var storageCount: Int { storage.count }
    public var storageCapacity: Int { storage.capacity }

    /// Whether there is exactly one field of this kind and its value is `n` in plain decimal
    /// (no sign, no leading zero, no list).
    public func hasSoleDecimal(_ field: KnownField, _ n: Int) -> Bool {
        guard contains(field), n >= 0 else { return false }
        var found: Entry?
        for e in entries where e.known == field {
            guard found == nil else { return false }
            found = e
        }
        guard let e = found, e.valueCount > 0, e.valueCount <= 19 else { return false }
        return storage.withUnsafeBufferPointer { all in
            var rest = n
            var i = Int(e.valueStart + e.valueCount)
            let start = Int(e.valueStart)
            while i > start {
                i -= 1
                guard all[i] == UInt8(ascii: "0") &+ UInt8(rest % 10) else { return false }
                rest /= 10
                if rest == 0 { return i == start }
            }
            return false
        }
    }

    /// Removes every field of this kind. Use `removeAll(name:)` for `.other` fields.
    public mutating func removeAll(_ field: KnownField) {
        guard contains(field) else { return }
        remove(entries.map { $0.known == field })
    }

    /// Removes every field with this name, compared ignoring ASCII case.
    public mutating func removeAll(name: String) {
        var name = name
        let drop = name.withUTF8 { wanted in
            let wanted = UnsafeRawBufferPointer(wanted)
            let known = KnownField.classify(wanted)
            if known != .other { return entries.map { $0.known == known } }
            return entries.indices.map { i in withNameBytes(at: i) { ByteClass.equalsIgnoringCase($0, wanted) } }
        }
        remove(drop)
    }

    /// Removes entry `i` where `drop[i]`, and compacts the storage so it never holds dead bytes.
    private mutating func remove(_ drop: [Bool]) {
        guard drop.contains(true) else { return }
        var kept = HTTPHeaders()
        kept.reserve(bytes: storage.count, fields: entries.count)
        storage.withUnsafeBytes { all in
            for (i, e) in entries.enumerated() where !drop[i] {
                kept.append(
                    nameBytes: UnsafeRawBufferPointer(rebasing: all[Int(e.nameStart)..<Int(e.nameStart + e.nameCount)]),
                    valueBytes: UnsafeRawBufferPointer(rebasing: all[Int(e.valueStart)..<Int(e.valueStart + e.valueCount)]),
                    known: e.known
                )
            }
        }
        self = kept
    }

    /// Equal when both hold the same fields (names byte-for-byte, values byte-for-byte) in the same order.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.entries.count == rhs.entries.count else { return false }
        for i in lhs.entries.indices {
            let same = lhs.withNameBytes(at: i) { a in rhs.withNameBytes(at: i) { b in a.elementsEqual(b) } }
                && lhs.withValueBytes(at: i) { a in rhs.withValueBytes(at: i) { b in a.elementsEqual(b) } }
            if !same { return false }
        }
        return true
    }
}

// MARK: compact form

extension HTTPHeaders {
    /// The size of the compact form's fixed part: the field count, the known-field bits and
    /// the storage's byte count (a `UInt32` each, padded to 16).
    private static let compactPrefix = 16

    /// Bytes `writeCompact(to:)` writes: these fields as one flat run of bytes (their entries,
    /// then their storage), for a store that keeps many heads (AirlockSession's `ResponseCache`
    /// keeps each entry in one block instead of this value's two arrays).
    public var compactCount: Int {
        Self.compactPrefix + entries.count * MemoryLayout<Entry>.stride + storage.count
    }

    /// The `compactCount` of the fields whose compact form is at `compact`.
    public static func compactCount(at compact: UnsafeRawPointer) -> Int {
        compactPrefix + Int(compact.load(as: UInt32.self)) * MemoryLayout<Entry>.stride
            + Int(compact.load(fromByteOffset: 8, as: UInt32.self))
    }

    /// Writes the compact form to `out`: `compactCount` bytes, `out` aligned to 4.
    public func writeCompact(to out: UnsafeMutableRawPointer) {
        precondition(Int(bitPattern: out) % MemoryLayout<Entry>.alignment == 0, "HTTPHeaders.writeCompact: misaligned")
        precondition(storage.count <= Int(UInt32.max), "HTTPHeaders.writeCompact: storage too large")
        out.storeBytes(of: UInt32(entries.count), as: UInt32.self)
        out.storeBytes(of: knownFields, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: UInt32(storage.count), toByteOffset: 8, as: UInt32.self)
        out.storeBytes(of: 0, toByteOffset: 12, as: UInt32.self)
        var at = Self.compactPrefix
        entries.withUnsafeBytes { e in
            if let from = e.baseAddress { (out + at).copyMemory(from: from, byteCount: e.count) }
            at += e.count
        }
        storage.withUnsafeBytes { s in
            if let from = s.baseAddress { (out + at).copyMemory(from: from, byteCount: s.count) }
        }
    }

    /// The fields `writeCompact(to:)` wrote at `compact` (in this process: the form is this
    /// type's own layout, not a wire format), but those whose kind is in `dropped` (left
    /// unreferenced in the storage, as `removeAll(keepingStorage:)` leaves them), copied into
    /// new storage with room for `reservingBytes` more bytes and `reservingEntries` more fields,
    /// so a caller that appends next does not grow them again.
    public init(compact: UnsafeRawPointer, dropping dropped: KnownField.Set = KnownField.Set(),
                reservingBytes: Int = 0, reservingEntries: Int = 0) {
        let count = Int(compact.load(as: UInt32.self))
        var known = compact.load(fromByteOffset: 4, as: UInt32.self)
        let bytes = Int(compact.load(fromByteOffset: 8, as: UInt32.self))
        let entriesAt = compact + Self.compactPrefix
        var entries: [Entry] = []
        entriesAt.withMemoryRebound(to: Entry.self, capacity: count) {
            let fields = UnsafeBufferPointer(start: $0, count: count)
            if known & dropped.bits == 0 {
                entries.reserveCapacity(count + reservingEntries)
                entries.append(contentsOf: fields)
            } else {
                (entries, known, _) = Self.kept(from: fields, room: reservingEntries) { _, e in dropped.bits & e.known.bit == 0 }
            }
        }
        var storage: [UInt8] = []
        storage.reserveCapacity(bytes + reservingBytes)
        storage.append(contentsOf: UnsafeRawBufferPointer(start: entriesAt + count * MemoryLayout<Entry>.stride, count: bytes))
        self.init()
        self.entries = entries
        self.storage = storage
        self.knownFields = known
    }
}

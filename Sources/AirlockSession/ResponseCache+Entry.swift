public import AirlockWire
import Glibc

extension ResponseCache {
    /// What an entry knows besides its bytes (`Entry`'s header). In this order: what a purge
    /// reads (`bytes`, `variantCount`) and a lookup's first comparisons and freshness share the
    /// object's first cache line with its reference count, so purging a long-unused entry
    /// reads one line of it, not two.
    public struct EntryHeader {
        /// Its key's hash (`CacheKey.hash`): a lookup's first comparison.
        let hash: Int
        /// Bytes counted against `memory`.
        let bytes: Int
        let textCount: Int32
        let variantCount: Int32
        let reasonCount: Int32
        /// Where the head's fields (`HTTPHeaders`' compact form) begin in the block, 8-aligned.
        let fieldsAt: Int32
        /// Freshness lifetime (4.2.1), computed when stored or freshened.
        let lifetime: Int64
        let responseTime: Int64
        /// `corrected_initial_age` (RFC 9111 4.2.3) when received.
        let initialAge: Int64
        /// The response said `no-cache`: never served without revalidation.
        let alwaysRevalidate: Bool
        var hits: Int
        let status: Int
        let version: HTTPVersion
        let declaredFraming: BodyFraming
        /// The body when it is larger than `Entry.inlineBodyLimit` (empty otherwise: it is in
        /// the block, after the fields).
        let largeBody: [UInt8]
        let bodyCount: Int
        let requestTime: Int64
    }

    /// One stored response in one block: the key's text, the variant, the reason phrase, the
    /// head's fields in `HTTPHeaders`' compact form and the body, copied in when stored. A body
    /// over `inlineBodyLimit` stays its own array beside the block, shared with the hits that
    /// serve it (by reference, uncopied).
    ///
    /// One block, because an entry's cost is its memory more than its instructions: with the
    /// head and key kept as they came (the parse's two arrays, the key's text: four objects
    /// beside the entry and the body), a store kept ~16 cache lines in five blocks written
    /// cold, each purge released six objects (a locked instruction each, stalled behind the
    /// store's cold writes) and freed five blocks, and every miss's next parse allocated new
    /// arrays because the stored head held the recycled ones. The head is made again when a
    /// hit or a revalidation reads it (a hit copied the stored head for its `Age` anyway).
    ///
    /// Immutable once made but for its hit count (a 304 makes a new entry); used on the loop
    /// of the worker that owns the cache.
    public final class Entry: ManagedBuffer<EntryHeader, UInt8> {
        /// Bodies up to this size are copied into the block (a hit copies one that small into
        /// its output anyway); larger ones are kept as they are and written by reference.
        public static let inlineBodyLimit = 16 * 1024

        /// An entry of `key`'s response (`head`, `body`) with these facts; its `bytes` are the
        /// block's, the body's and `entryOverhead`.
        static func make(key: CacheKey, head: ResponseHead, body: [UInt8], requestTime: Int64, responseTime: Int64,
                         initialAge: Int64, lifetime: Int64, alwaysRevalidate: Bool, hits: Int = 0) -> Entry {
            make(key: key, version: head.version, status: head.status, reason: head.reason, headers: head.headers,
                 declaredFraming: head.declaredFraming, body: body, requestTime: requestTime, responseTime: responseTime,
                 initialAge: initialAge, lifetime: lifetime, alwaysRevalidate: alwaysRevalidate, hits: hits)
        }

        /// The entry of a head given by its parts, read where they lie (a store's fields are
        /// the response's own, or the ones it replaced them with: no head is put together).
        static func make(key: CacheKey, version: HTTPVersion, status: Int, reason: borrowing String, headers: borrowing HTTPHeaders,
                         declaredFraming: BodyFraming, body: borrowing [UInt8], requestTime: Int64,
                         responseTime: Int64, initialAge: Int64, lifetime: Int64, alwaysRevalidate: Bool, hits: Int = 0) -> Entry {
            let text = key.text.count
            let variant = key.variant.utf8.count
            let reasonCount = reason.utf8.count
            let fieldsAt = fieldsOffset(text: text, variant: variant, reason: reasonCount)
            let inline = body.count <= inlineBodyLimit
            let bodyAt = fieldsAt + headers.compactCount   // `blockBytes`
            let capacity = bodyAt + (inline ? body.count : 0)
            let made = unsafeDowncast(Entry.create(minimumCapacity: capacity) { block in
                EntryHeader(hash: key.hash, bytes: ResponseCache.cost(blockBytes: bodyAt, body: body.count), textCount: Int32(text),
                            variantCount: Int32(variant), reasonCount: Int32(reasonCount), fieldsAt: Int32(fieldsAt),
                            lifetime: lifetime, responseTime: responseTime, initialAge: initialAge,
                            alwaysRevalidate: alwaysRevalidate, hits: hits, status: status, version: version,
                            declaredFraming: declaredFraming, largeBody: inline ? [] : copy body, bodyCount: body.count,
                            requestTime: requestTime)
            }, to: Entry.self)
            made.withUnsafeMutablePointerToElements { p in
                let raw = UnsafeMutableRawPointer(p)
                key.text.copyBytes(to: raw)
                var variantText = key.variant
                variantText.withUTF8 { if let from = $0.baseAddress { (raw + text).copyMemory(from: from, byteCount: variant) } }
                var reasonText = copy reason
                reasonText.withUTF8 { if let from = $0.baseAddress { (raw + text + variant).copyMemory(from: from, byteCount: reasonCount) } }
                headers.writeCompact(to: raw + fieldsAt)
                if inline { body.withUnsafeBytes { if let from = $0.baseAddress { (raw + bodyAt).copyMemory(from: from, byteCount: $0.count) } } }
            }
            return made
        }

        /// Where the head's fields begin in the block: after the key's text, the variant and
        /// the reason phrase (their byte counts), 8-aligned.
        private static func fieldsOffset(text: Int, variant: Int, reason: Int) -> Int {
            (text + variant + reason + 7) & ~7
        }

        /// The block's bytes for `key`'s entry of a head with this reason phrase and these
        /// fields, before the body (asked of the allocator; its rounding is part of `entryOverhead`).
        static func blockBytes(key: CacheKey, reason: borrowing String, headers: borrowing HTTPHeaders) -> Int {
            fieldsOffset(text: key.text.count, variant: key.variant.utf8.count, reason: reason.utf8.count) + headers.compactCount
        }

        /// The body (a copy when it is in the block).
        public var body: [UInt8] { largeBody ?? withBody { Array($0) } }

        public var bodyCount: Int { header.bodyCount }

        /// The body when it is not in the block (over `inlineBodyLimit`), to write by reference.
        public var largeBody: [UInt8]? { header.bodyCount > Self.inlineBodyLimit ? header.largeBody : nil }

        /// Calls `body` with the body's bytes, in place.
        public func withBody<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
            if let large = largeBody { return large.withUnsafeBytes(body) }
            return withUnsafeMutablePointers { h, p in
                let fieldsAt = Int(h.pointee.fieldsAt)
                return body(UnsafeRawBufferPointer(start: UnsafeRawPointer(p) + fieldsAt + HTTPHeaders.compactCount(at: UnsafeRawPointer(p) + fieldsAt),
                                                   count: h.pointee.bodyCount))
            }
        }
        public var status: Int { header.status }
        public var requestTime: Int64 { header.requestTime }
        public var responseTime: Int64 { header.responseTime }
        public var initialAge: Int64 { header.initialAge }
        public var lifetime: Int64 { header.lifetime }
        public var alwaysRevalidate: Bool { header.alwaysRevalidate }
        public var hits: Int { header.hits }
        public var bytes: Int { header.bytes }

        func countHit() { header.hits += 1 }

        /// The stored head (made anew from the block).
        public var head: ResponseHead { head() }

        /// The stored head without the fields whose kind is in `dropped`, its fields with room
        /// for `reservingBytes` more bytes and `reservingEntries` more fields (a served head's `Age`).
        func head(dropping dropped: KnownField.Set = KnownField.Set(), reservingBytes: Int = 0,
                  reservingEntries: Int = 0) -> ResponseHead {
            withUnsafeMutablePointers { h, p in
                let raw = UnsafeRawPointer(p)
                let h = h.pointee
                let reason = String(decoding: UnsafeRawBufferPointer(start: raw + Int(h.textCount + h.variantCount),
                                                                     count: Int(h.reasonCount)), as: UTF8.self)
                return ResponseHead(version: h.version, status: h.status, reason: reason,
                                    headers: HTTPHeaders(compact: raw + Int(h.fieldsAt), dropping: dropped,
                                                         reservingBytes: reservingBytes, reservingEntries: reservingEntries),
                                    keepAlive: true, declaredFraming: h.declaredFraming)
            }
        }

        /// `current_age` at `now`.
        public func age(now: Int64) -> Int64 { initialAge + max(0, now - responseTime) }

        /// Whether this is `key`'s entry: the table is indexed by the keys' 64-bit hashes
        /// (`EntryTable`), so a lookup confirms the text (two keys share a hash once in 2^64, or
        /// when a test makes them).
        func matches(_ key: CacheKey) -> Bool {
            guard header.hash == key.hash, Int(header.textCount) == key.text.count,
                  Int(header.variantCount) == key.variant.utf8.count else { return false }
            return withUnsafeMutablePointerToElements { p in
                key.text.bytesEqual(UnsafeRawPointer(p)) && (header.variantCount == 0 || {
                    var v = key.variant
                    return v.withUTF8 { memcmp(p + Int(header.textCount), $0.baseAddress!, $0.count) == 0 }
                }())
            }
        }

        /// It was stored for a request whose response varied (`Vary`).
        var hasVariant: Bool { header.variantCount > 0 }

        /// The stored key's URL.
        public var url: String {
            withUnsafeMutablePointerToElements { String(decoding: UnsafeBufferPointer(start: $0, count: Int(header.textCount)), as: UTF8.self) }
        }

        /// The stored key's variant ("" without `Vary`).
        public var variant: String {
            withUnsafeMutablePointerToElements {
                String(decoding: UnsafeBufferPointer(start: $0 + Int(header.textCount), count: Int(header.variantCount)), as: UTF8.self)
            }
        }

        /// The stored key (made anew: its text copied out of the block).
        var key: CacheKey { CacheKey(url: url, variant: variant) }
    }
}

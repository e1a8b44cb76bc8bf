import CLibevent
import Synchronization

/// The storage a referenced write keeps alive until libevent has sent it.
final class ReferencedBytes {
    /// Referenced writes not yet released by libevent (tests read it: none may leak).
    static let live = Atomic<Int>(0)
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        Self.live.add(1, ordering: .relaxed)
    }
    deinit { Self.live.subtract(1, ordering: .relaxed) }
}

extension Stream {
    /// Queues `bytes` without copying them: the output refers to the array's storage, which
    /// stays alive (retained here, released by libevent's cleanup) until the last of it was
    /// written. For large immutable bodies served from memory (the response cache's hits),
    /// where `write` would copy every byte into the output first.
    public func writeReference(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let box = Unmanaged.passRetained(ReferencedBytes(bytes))
        let added = box.takeUnretainedValue().bytes.withUnsafeBytes { p in
            // The array is never mutated and the box holds it: its storage does not move.
            evbuffer_add_reference(writableOutput(), p.baseAddress, p.count, { _, _, extra in
                if let extra { Unmanaged<ReferencedBytes>.fromOpaque(extra).release() }
            }, box.toOpaque())
        }
        if added != 0 {   // not queued (out of memory): release the box, copy instead
            box.release()
            write(bytes)
            return
        }
        markDirty()
    }
}

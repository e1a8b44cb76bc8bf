/// A worker's log records, as bytes of whole JSON lines, handed to the sink in batches: when
/// `flushBytes` have gathered and when the worker's loop iteration ends (`flush()`), never
/// one write(2) per record. The sink writes batches on its own thread; when it cannot keep
/// up, whole batches are dropped and counted there. Records of one worker (and so of one
/// connection) stay in the order they were logged.
///
/// Bound to one thread (its worker's loop), like everything else the worker owns.
final class LogBuffer: @unchecked Sendable {
    let sink: JSONLogSink
    private var bytes: [UInt8] = []
    private var records = 0
    private var timestamps = TimestampCache()
    let flushBytes: Int

    /// `reserve`: what this buffer adds to the sink's queue bound.
    init(sink: JSONLogSink, flushBytes: Int = JSONLogSink.flushBytes, reserve: Int = JSONLogSink.capacityPerBuffer) {
        self.sink = sink
        self.flushBytes = flushBytes
        sink.reserve(reserve)
        bytes.reserveCapacity(4096)
    }

    var isEmpty: Bool { bytes.isEmpty }
    var pendingBytes: Int { bytes.count }
    var pendingRecords: Int { records }

    /// `line`: one JSON object ending in "\n".
    func append(line: [UInt8]) {
        bytes.append(contentsOf: line)
        recordAppended()
    }

    /// Appends one record that `encode` writes straight into the buffer's bytes (a whole
    /// line ending in "\n"): no line of its own to allocate and copy.
    func append(encoding encode: (inout JSONLineEncoder) -> Void) {
        var encoder = JSONLineEncoder(appendingTo: [])
        swap(&encoder.bytes, &bytes)
        swap(&encoder.timestamps, &timestamps)
        encode(&encoder)
        swap(&encoder.bytes, &bytes)
        swap(&encoder.timestamps, &timestamps)
        recordAppended()
    }

    private func recordAppended() {
        records += 1
        if bytes.count >= flushBytes { flush() }
    }

    /// Hands what gathered to the sink (nothing to do when empty).
    func flush() {
        guard !bytes.isEmpty else { return }
        let batch = bytes
        let n = records
        bytes = []
        bytes.reserveCapacity(min(batch.count, flushBytes))
        records = 0
        sink.submit(batch, records: n)
    }
}

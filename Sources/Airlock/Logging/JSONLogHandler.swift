public import Logging

/// A swift-log handler that writes one JSON object per line:
///
///     {"time":"2026-11-22T10:00:00.123Z","level":"info","event":"listening","port":8080}
///
/// Metadata is flattened into top-level keys, sorted; precedence is handler
/// metadata < metadata provider < the log call's own metadata. A metadata key
/// that collides with `time`, `level` or `event` is written as `meta.<key>`.
/// An error attached to the log event is written as `error` unless metadata
/// already has that key.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let sink: JSONLogSink
    /// A worker's buffer: records go there (and to `sink` in batches) instead of one
    /// write each. Set only on handlers used on that worker's loop.
    private var buffer: LogBuffer?

    /// Writes to `sink` (standard output by default). Handlers that share an
    /// output must share the sink.
    public init(
        label: String,
        level: Logger.Level = .info,
        sink: JSONLogSink = .standardOutput,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.logLevel = level
        self.sink = sink
        self.metadataProvider = metadataProvider
    }

    /// Hands each line, without its newline, to `write` (for tests).
    public init(
        label: String,
        level: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        sink write: @escaping @Sendable (String) -> Void
    ) {
        self.init(label: label, level: level, sink: JSONLogSink(write), metadataProvider: metadataProvider)
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, new in new }
        }
        if let own = event.metadata, !own.isEmpty {
            merged.merge(own) { _, new in new }
        }
        if let error = event.error, merged["error"] == nil {
            merged["error"] = .string(String(describing: error))
        }
        let line = Self.encode(level: event.level, message: event.message.description, metadata: merged)
        if let buffer { buffer.append(line: line) } else { sink.write(line: line) }
    }

    /// This handler writing into `buffer` (a worker's, over this handler's sink).
    func buffered(into buffer: LogBuffer) -> JSONLogHandler {
        var h = self
        h.buffer = buffer
        return h
    }

    /// The line's bytes, ending in "\n", timestamped now.
    static func encode(level: Logger.Level, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var encoder = JSONLineEncoder()
        encoder.append("{\"time\":")
        encoder.appendTimestamp()
        encoder.append(",\"level\":")
        encoder.appendString(level.rawValue)
        encoder.append(",\"event\":")
        encoder.appendString(message)
        for key in metadata.keys.sorted() {
            encoder.append(",")
            encoder.appendString(reservedKeys.contains(key) ? "meta." + key : key)
            encoder.append(":")
            encoder.appendValue(metadata[key]!)
        }
        encoder.append("}\n")
        return encoder.bytes
    }

    private static let reservedKeys: Set<String> = ["time", "level", "event"]
}

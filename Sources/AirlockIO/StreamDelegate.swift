/// Receives a stream's callbacks on the stream's loop.
public protocol StreamDelegate: AnyObject {
    func streamReadable(_ stream: Stream)
    /// The output buffer drained to the write low watermark.
    func streamWritable(_ stream: Stream)
    func stream(_ stream: Stream, event: StreamEvent)
}

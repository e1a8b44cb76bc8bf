/// Property-list well-formedness over raw bytes, without building the objects: a body that starts
/// with `bplist` is read as a binary property list, anything else as an XML one.
///
/// Not accepted: the OpenStep (ASCII) format and XML in encodings other than UTF-8, which
/// `NSPropertyListSerialization` also reads.
public enum PropertyListValidation {
    /// Nil when `bytes` is a well-formed property list, otherwise a description that starts with
    /// the format it was read as ("binary: …" or "XML: …").
    public static func check(_ bytes: UnsafeRawBufferPointer) -> String? {
        if BinaryPropertyListValidation.hasMagic(bytes) {
            return BinaryPropertyListValidation.check(bytes).map { "binary: \($0)" }
        }
        return XMLPropertyListValidation.check(bytes).map { "XML: \($0)" }
    }
}

import XCTest
import AirlockYAML

/// The node tree libyaml's events compose into, and the errors, as the config reader needs
/// them (the config tests check the same through `AirlockConfig.load`).
final class YAMLComposerTests: XCTestCase {
    private func compose(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) throws -> Node {
        guard let node = try YAMLComposer.compose(yaml: yaml) else {
            XCTFail("no document", file: file, line: line)
            throw YAMLError(kind: .composer, problem: "no document", mark: Mark(line: 0, column: 0))
        }
        return node
    }

    private func error(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) -> YAMLError? {
        do {
            _ = try YAMLComposer.compose(yaml: yaml)
            XCTFail("composed without an error: \(yaml.debugDescription)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// `[(key text, value)]` of a mapping, in document order.
    private func pairs(_ node: Node) -> [(String, Node)] {
        guard case .mapping(let pairs) = node else { return [] }
        return pairs.map { ($0.key.scalar?.string ?? "<not a scalar>", $0.value) }
    }

    func testScalarsKeepTheirTextStyleTagAndPosition() throws {
        let root = try compose("""
            a: off
            b: "off"
            c: 'it''s'
            d: !!str 8080
            e: |
              two
              lines
            f: >
              folded
              text
            g: 1.5
            """)
        let values = pairs(root)
        XCTAssertEqual(values.map(\.0), ["a", "b", "c", "d", "e", "f", "g"])
        let scalars = values.map { $0.1.scalar }
        XCTAssertEqual(scalars[0], Scalar("off", style: .plain, mark: Mark(line: 1, column: 4)))
        XCTAssertEqual(scalars[1], Scalar("off", style: .doubleQuoted, mark: Mark(line: 2, column: 4)))
        XCTAssertEqual(scalars[2], Scalar("it's", style: .singleQuoted, mark: Mark(line: 3, column: 4)))
        XCTAssertEqual(scalars[3], Scalar("8080", style: .plain, tag: "tag:yaml.org,2002:str", mark: Mark(line: 4, column: 4)))
        XCTAssertEqual(scalars[4], Scalar("two\nlines\n", style: .literal, mark: Mark(line: 5, column: 4)))
        XCTAssertEqual(scalars[5], Scalar("folded text\n", style: .folded, mark: Mark(line: 8, column: 4)))
        XCTAssertEqual(scalars[6]?.string, "1.5")
        XCTAssertEqual(scalars.map { $0?.resolvedTag }, [
            "tag:yaml.org,2002:bool", "tag:yaml.org,2002:str", "tag:yaml.org,2002:str", "tag:yaml.org,2002:str",
            "tag:yaml.org,2002:str", "tag:yaml.org,2002:str", "tag:yaml.org,2002:float",
        ])
    }

    func testNullIsAPlainScalarOnly() throws {
        let root = try compose("a:\nb: ~\nc: null\nd: NULL\ne: ''\nf: \"null\"\ng: nil\n")
        XCTAssertEqual(pairs(root).map { $0.1.isNull }, [true, true, true, true, false, false, false])
        XCTAssertFalse(root.isNull)
    }

    func testMappingsKeepDocumentOrderAndNest() throws {
        let root = try compose("z: 1\na: { y: [x, w], b: {} }\nm:\n  - k: v\n  - - inner\n")
        XCTAssertEqual(pairs(root).map(\.0), ["z", "a", "m"])
        let a = pairs(pairs(root)[1].1)
        XCTAssertEqual(a.map(\.0), ["y", "b"])
        guard case .sequence(let ys) = a[0].1 else { return XCTFail("y is not a list") }
        XCTAssertEqual(ys.map { $0.scalar?.string }, ["x", "w"])
        guard case .mapping(let empty) = a[1].1 else { return XCTFail("b is not a mapping") }
        XCTAssertTrue(empty.isEmpty)
        guard case .sequence(let ms) = pairs(root)[2].1 else { return XCTFail("m is not a list") }
        XCTAssertEqual(ms.count, 2)
        XCTAssertEqual(pairs(ms[0]).map(\.0), ["k"])
        guard case .sequence(let inner) = ms[1] else { return XCTFail("m[1] is not a list") }
        XCTAssertEqual(inner.map { $0.scalar?.string }, ["inner"])
    }

    func testAliasesAreTheAnchoredNode() throws {
        let root = try compose("base: &b { host: example.org, port: 8080 }\ncopy: *b\nlist: [&x one, *x]\n")
        let values = pairs(root)
        XCTAssertEqual(pairs(values[1].1).map { $0.0 }, ["host", "port"])
        XCTAssertEqual(pairs(values[1].1).map { $0.1.scalar?.string }, ["example.org", "8080"])
        guard case .sequence(let list) = values[2].1 else { return XCTFail("list is not a list") }
        XCTAssertEqual(list.map { $0.scalar?.string }, ["one", "one"])
    }

    func testUndefinedAliasIsAComposerError() {
        let e = error("a: 1\nb: *nope\n")
        XCTAssertEqual(e?.kind, .composer)
        XCTAssertEqual(e?.description, "line 2, column 4: found undefined alias")
    }

    func testSyntaxErrorsNameLineColumnAndContext() {
        let e = error("routes:\n  - name: x\n    match: { host: * }\n")
        XCTAssertEqual(e?.kind, .scanner)
        XCTAssertEqual(e?.description, "line 3, column 21: did not find expected alphabetic or numeric character"
                                       + " (while scanning an alias at line 3, column 20)")
        XCTAssertEqual(e?.context?.text, "while scanning an alias")
        let flow = error("a: [1, 2\n")
        XCTAssertEqual(flow?.kind, .parser)
        XCTAssertEqual(flow?.mark.line, 2)
        XCTAssertEqual(flow?.context?.text, "while parsing a flow sequence")
        XCTAssertEqual(flow?.context?.mark, Mark(line: 1, column: 4))
    }

    func testReaderErrorsNameTheLine() {
        let e = error("a: 1\nb: \u{01}\n")
        XCTAssertEqual(e?.kind, .reader)
        XCTAssertEqual(e?.description, "line 2, column 4: control characters are not allowed")
    }

    func testDuplicateKeysAreRefusedSortedWithTheFirstLine() {
        let e = error("x: 1\nworkers: 2\nb: 1\n\"workers\": 3\nb: 2\n")
        XCTAssertEqual(e?.kind, .duplicateKeys)
        XCTAssertEqual(e?.duplicateKeys, ["b", "workers"])
        XCTAssertEqual(e?.description, "duplicate key \"b\", \"workers\" in the mapping at line 3")
        let nested = error("a:\n  k: 1\n  k: 2\n")
        XCTAssertEqual(nested?.description, "duplicate key \"k\" in the mapping at line 2")
    }

    func testKeysOfDifferentResolvedTagsAreDistinct() throws {
        let root = try compose("1: int\n'1': str\ntrue: bool\n\"true\": str\n")
        XCTAssertEqual(pairs(root).map(\.0), ["1", "1", "true", "true"])
    }

    func testEmptyStreamsHaveNoDocumentAndOneDocumentOnly() throws {
        XCTAssertNil(try YAMLComposer.compose(yaml: ""))
        XCTAssertNil(try YAMLComposer.compose(yaml: "# only a comment\n"))
        XCTAssertTrue(try compose("---\n").isNull)
        let e = error("a: 1\n---\nb: 2\n")
        XCTAssertEqual(e?.kind, .composer)
        XCTAssertEqual(e?.description, "line 2, column 1: but found another document"
                                       + " (expected a single document in the stream at line 1, column 1)")
    }

    func testTextIsDecodedAsUTF8() throws {
        let root = try compose("name: \"caf\u{e9} \u{1F600}\"\n")
        XCTAssertEqual(pairs(root).first?.1.scalar?.string, "caf\u{e9} \u{1F600}")
    }
}

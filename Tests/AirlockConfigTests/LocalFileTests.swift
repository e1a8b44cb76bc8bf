import XCTest
@testable import AirlockConfig

/// Files and the environment through the C library (what replaced Foundation's Data,
/// FileManager and ProcessInfo in the config path), checked against Foundation here.
final class LocalFileTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-localfile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testReadReturnsEveryByteOfFilesLargerThanOneChunk() throws {
        let bytes = (0..<200_003).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let path = dir + "/big.bin"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try LocalFile.read(path), bytes)
        try Data().write(to: URL(fileURLWithPath: dir + "/empty"))
        XCTAssertEqual(try LocalFile.read(dir + "/empty"), [])
    }

    func testReadErrorsCarryTheCLibrarysReason() {
        XCTAssertThrowsError(try LocalFile.read(dir + "/missing")) { error in
            XCTAssertEqual((error as? LocalFile.ReadError)?.code, ENOENT)
            XCTAssertEqual("\(error)", "No such file or directory")
        }
        XCTAssertThrowsError(try LocalFile.read(dir)) { error in
            XCTAssertEqual("\(error)", "Is a directory")
        }
    }

    func testReadTextRefusesBytesThatAreNotUTF8() throws {
        try Data([0x61, 0x3A, 0x20, 0xFF, 0x0A]).write(to: URL(fileURLWithPath: dir + "/latin1"))
        XCTAssertNil(try LocalFile.readText(dir + "/latin1"))
        try Data("a: caf\u{e9}\n".utf8).write(to: URL(fileURLWithPath: dir + "/utf8"))
        XCTAssertEqual(try LocalFile.readText(dir + "/utf8"), "a: caf\u{e9}\n")
    }

    func testDirectoryEntriesListNamesOnly() throws {
        for name in ["b.pem", "a.crt", ".hidden"] {
            try Data().write(to: URL(fileURLWithPath: dir + "/" + name))
        }
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: false)
        XCTAssertEqual(LocalFile.directoryEntries(dir)?.sorted(), [".hidden", "a.crt", "b.pem", "sub"])
        XCTAssertEqual(LocalFile.directoryEntries(dir)?.sorted(),
                       try FileManager.default.contentsOfDirectory(atPath: dir).sorted())
        XCTAssertNil(LocalFile.directoryEntries(dir + "/a.crt"))
        XCTAssertNil(LocalFile.directoryEntries(dir + "/missing"))
        XCTAssertTrue(LocalFile.exists(dir + "/a.crt"))
        XCTAssertTrue(LocalFile.exists(dir + "/sub"))
        XCTAssertFalse(LocalFile.exists(dir + "/missing"))
    }

    func testEnvironmentIsTheProcesssEnvironment() {
        let name = "AIRLOCK_LOCALFILE_TEST_\(getpid())"
        setenv(name, "a=b=c", 1)
        defer { unsetenv(name) }
        let environment = LocalFile.environment
        XCTAssertEqual(environment[name], "a=b=c")
        XCTAssertEqual(environment, ProcessInfo.processInfo.environment)
    }
}

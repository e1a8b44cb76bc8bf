import XCTest
import AirlockTesting

/// The built binary links neither Foundation nor ICU (issue #23, "a smaller process": they were
/// ~10 MiB of the process's RSS at start, for YAML through Yams and a few conveniences). The
/// debug build links the Swift libraries dynamically, so its DT_NEEDED entries show every Swift
/// module any linked target imports; the release build links the same modules statically.
final class LinkedLibrariesTests: XCTestCase {
    private func neededLibraries() throws -> [String] {
        try Requirement.tool("/usr/bin/readelf")
        let binary = AirlockProcess.builtExecutable()
        let result = try runProcess("/usr/bin/readelf", ["-d", "-W", binary], timeout: 30)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        // ` 0x0000000000000001 (NEEDED)             Shared library: [libyaml-0.so.2]`
        return result.stdoutString.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }

    func testNoFoundationNorICUIsLinked() throws {
        let needed = try neededLibraries()
        XCTAssertTrue(needed.contains("libswiftCore.so"), "not the dynamically linked debug build? \(needed)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so",
                        "libFoundationNetworking.so", "libFoundationXML.so", "libswiftDispatch.so"] {
            XCTAssertFalse(needed.contains(library), "\(library) is linked: \(needed)")
        }
    }

    func testTheConfigIsReadWithDebiansLibyaml() throws {
        XCTAssertTrue(try neededLibraries().contains("libyaml-0.so.2"))
    }
}

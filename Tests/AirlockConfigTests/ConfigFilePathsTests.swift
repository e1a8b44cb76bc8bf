import Foundation
import XCTest
@testable import AirlockConfig

/// Loading a configuration reads the paths of the files it names and opens none of them: no
/// OpenSSL at load. A CA or a pinned certificate that cannot be opened is reported when the
/// gateway opens the files at start (`OpenedConfigTests`).
final class ConfigFilePathsTests: XCTestCase {
    func testLoadingReadsFilePathsAndOpensNoFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-paths-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // It exists (the loader checks that), but is no certificate.
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: dir + "/pinned.pem"))
        let yaml = """
            routes:
              - name: api
                match: { host: api.test }
                upstream: https://127.0.0.1:9443
                security: { pinning: certificate, certificates: [\(dir)/pinned.pem] }
            ca:
              certificate: \(dir)/none.pem
              key: \(dir)/none.key
            """
        let config = try AirlockConfig.load(yaml: yaml)
        XCTAssertEqual(config.ca?.certificate, dir + "/none.pem")
        XCTAssertEqual(config.ca?.key, dir + "/none.key")
        XCTAssertEqual(config.routes.first?.security.certificatePaths, [dir + "/pinned.pem"])
        XCTAssertTrue(config.renderYAML().contains("  certificate: \(dir)/none.pem\n"), config.renderYAML())
    }
}

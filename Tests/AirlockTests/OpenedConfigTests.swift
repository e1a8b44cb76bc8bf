import AirlockConfig
import AirlockSecurity
import AirlockTesting
import Foundation
import XCTest
@testable import Airlock

/// The gateway's step after loading: the files the configuration names are opened, each
/// problem reported at the key path that named the file, and the routes that pin certificates
/// get their complete policy.
final class OpenedConfigTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-opened-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: dir + "/pinned.pem"))
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func issues(_ config: AirlockConfig) -> [ConfigError.Issue] {
        do {
            _ = try OpenedConfig(opening: config)
            XCTFail("expected a ConfigError")
            return []
        } catch {
            return error.issues
        }
    }

    func testUnopenableFilesAreIssuesAtTheirKeyPaths() throws {
        let config = try AirlockConfig.load(yaml: """
            routes:
              - name: api
                match: { host: api.test }
                upstream: https://127.0.0.1:9443
                security: { pinning: certificate, certificates: [\(dir)/pinned.pem] }
              - name: other
                match: { host: "*" }
                upstream: origin
                security: { ca: \(dir)/pinned.pem }
            ca:
              certificate: \(dir)/none.pem
              key: \(dir)/none.key
            """)
        XCTAssertTrue(config.routes[0].security.needsCertificates)
        XCTAssertFalse(config.routes[1].security.needsCertificates)
        let found = issues(config)
        XCTAssertEqual(found.map(\.keyPath), ["routes[0].security.certificates[0]", "routes[1].security.ca", "ca.key"],
                       "\(found)")
        XCTAssertTrue(found.last?.message.hasPrefix("cannot read \(dir)/none.key") == true, "\(found)")
    }

    /// A policy refusal that needs the certificates (pinning: none, yet certificates named) is
    /// found when they are opened, at the key the loader used to report it at.
    func testAPolicyRefusalNamesTheRouteKey() throws {
        let pki = try TLSTestPKI.generate()
        defer { pki.remove() }
        let config = try AirlockConfig.load(yaml: """
            routes:
              - name: api
                match: { host: api.test }
                upstream: https://127.0.0.1:9443
                security: { pinning: none, certificates: [\(pki.path("leaf.pem"))] }
            """)
        let found = issues(config)
        XCTAssertEqual(found.map(\.keyPath), ["routes[0].security.pinning"], "\(found)")
        XCTAssertTrue(found.first?.message.contains("pinning is none") == true, "\(found)")
    }

    /// With a real certificate, the route's policy is complete: its DER is pinned, and the
    /// public-key pin derived from it is the one `TLSTestPKI` computed.
    func testPinnedCertificatesCompleteThePolicy() throws {
        let pki = try TLSTestPKI.generate()
        defer { pki.remove() }
        let config = try AirlockConfig.load(yaml: """
            routes:
              - name: api
                match: { host: api.test }
                upstream: https://127.0.0.1:9443
                security: { pinning: public-key, certificates: [\(pki.path("leaf.pem"))] }
            """)
        let opened = try OpenedConfig(opening: config)
        let security = opened.config.routes[0].security
        XCTAssertFalse(security.needsCertificates)
        XCTAssertEqual(security.policy.mode, .publicKey)
        XCTAssertEqual(security.policy.pinnedCertificates.count, 1)
        XCTAssertEqual(security.policy.pins.map(\.description), [pki.pin("leaf")])
        XCTAssertNil(opened.ca)
    }
}

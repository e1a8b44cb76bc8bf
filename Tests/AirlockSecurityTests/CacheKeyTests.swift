import AirlockSecurity
import XCTest

/// `cacheKey`: equal exactly when two policies trust the same servers.
final class CacheKeyTests: XCTestCase {
    typealias F = Fixtures

    func testPoliciesThatTrustDifferentlyHaveDifferentKeys() throws {
        let policies: [(String, SecurityPolicy)] = [
            ("default", .default),
            ("none, no name check", try SecurityPolicy(mode: .none, validatesDomainName: false)),
            ("pin leaf", try F.publicKeyPolicy([F.leafA.pin])),
            ("pin root", try F.publicKeyPolicy([F.rootA.pin])),
            ("pin leaf + root", try F.publicKeyPolicy([F.leafA.pin, F.rootA.pin])),
            ("pin root, leaf scope", try F.publicKeyPolicy([F.rootA.pin], scope: .leaf)),
            ("pin leaf, allow invalid", try F.publicKeyPolicy([F.leafA.pin], allowInvalid: true)),
            ("pin leaf, no name check", try F.publicKeyPolicy([F.leafA.pin], validatesDomainName: false)),
            ("certificate root A", try F.certificatePolicy([F.rootA])),
            ("certificate root B", try F.certificatePolicy([F.rootB])),
            ("certificate root A, allow invalid", try F.certificatePolicy([F.rootA], allowInvalid: true)),
        ]
        for (i, (name, policy)) in policies.enumerated() {
            for (otherName, other) in policies[(i + 1)...] {
                XCTAssertNotEqual(policy.cacheKey, other.cacheKey, "\(name) vs \(otherName)")
            }
        }
    }

    func testKeyIgnoresOrderAndDuplicatesOfPins() throws {
        let ab = try F.publicKeyPolicy([F.leafA.pin, F.rootA.pin])
        XCTAssertEqual(ab.cacheKey, try F.publicKeyPolicy([F.rootA.pin, F.leafA.pin, F.rootA.pin]).cacheKey)
        // A pin given directly or derived from a certificate trusts the same servers.
        let viaCertificate = try SecurityPolicy(
            mode: .publicKey, pins: [F.leafA.pin], pinnedCertificates: [F.rootA.der], certificatePins: [F.rootA.pin]
        )
        XCTAssertEqual(ab.cacheKey, viaCertificate.cacheKey)
        XCTAssertEqual(try F.certificatePolicy([F.rootA, F.rootB]).cacheKey, try F.certificatePolicy([F.rootB, F.rootA]).cacheKey)
    }

    func testKeyIsStableAndReadable() throws {
        XCTAssertEqual(SecurityPolicy.default.cacheKey, "pinning=none;scope=chain;allow-invalid=0;validate-name=1")
        let pin = try Pin(digest: (0..<32).map(UInt8.init))
        XCTAssertEqual(
            try F.publicKeyPolicy([pin], scope: .leaf, allowInvalid: true).cacheKey,
            "pinning=public-key;scope=leaf;allow-invalid=1;validate-name=1;pins=sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        )
    }

    func testCertificatesAreNamedByTheSHA256OfTheirDER() throws {
        // FIPS 180-4 test vectors, one and two blocks, plus padding edge cases and a long input.
        let vectors: [([UInt8], String)] = [
            (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
            (Array(repeating: 0, count: 55), "02779466cdec163811d078815c633f21901413081449002f24aa3e80f0b88ef7"),
            (Array(repeating: 0, count: 56), "d4817aa5497628e7c77e6b606107042bbba3130888c5f47a375e6179be789fbb"),
            (Array(repeating: 0, count: 64), "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b"),
            ((0..<1000).map { UInt8($0 % 251) }, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"),
        ]
        for (der, hex) in vectors {
            let policy = try SecurityPolicy(mode: .certificate, pinnedCertificates: [der], certificatePins: [F.rootA.pin])
            XCTAssertEqual(policy.cacheKey, "pinning=certificate;scope=chain;allow-invalid=0;validate-name=1;certificates=\(hex)",
                           "\(der.count) bytes")
        }
    }
}

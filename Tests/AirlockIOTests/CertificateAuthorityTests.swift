@testable import AirlockIO
import AirlockTesting
import Foundation
import XCTest

/// The local CA: load checks that name the offending file, leaves that `openssl verify`
/// accepts with the SAN/EKU/validity specified, refused names, and the leaf cache.
/// CAs are generated into a temporary folder per test (no key is committed).
final class CertificateAuthorityTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-ca-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func makeCA(_ sub: String = "ca") throws -> CertificateAuthority {
        try CertificateAuthority.create(inDirectory: dir + "/" + sub, overwrite: .refuse)
    }

    private func openssl(_ args: [String]) throws -> ProcessResult {
        try Requirement.tool("/usr/bin/openssl")
        return try runProcess("/usr/bin/openssl", args)
    }

    private func loadError(certificate: String, key: String) -> IOError? {
        do {
            _ = try CertificateAuthority(certificateFile: certificate, keyFile: key)
            return nil
        } catch {
            return error
        }
    }

    // MARK: load

    func testLoadsAGeneratedCAAndReportsItsFacts() throws {
        let ca = try makeCA()
        let loaded = try CertificateAuthority(certificateFile: ca.certificatePath, keyFile: ca.keyPath)
        XCTAssertTrue(loaded.subject.hasPrefix("CN=Airlock Local CA "), loaded.subject)
        let printed = try openssl(["x509", "-in", ca.certificatePath, "-noout", "-fingerprint", "-sha256"])
        XCTAssertEqual(printed.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "sha256 Fingerprint=\(loaded.fingerprint)")
        let days = (loaded.expirySeconds - Int64(Date().timeIntervalSince1970)) / 86_400
        XCTAssertTrue((3648...3650).contains(days), "\(days) days, expiry \(loaded.expiry)")
    }

    func testGroupReadableKeyIsRefusedNamingItsPathAndMode() throws {
        let ca = try makeCA()
        XCTAssertEqual(chmod(ca.keyPath, 0o640), 0)
        let error = try XCTUnwrap(loadError(certificate: ca.certificatePath, key: ca.keyPath))
        XCTAssertEqual(error.code, .caKey)
        XCTAssertTrue(error.detail.contains(ca.keyPath) && error.detail.contains("0640"), error.detail)
        XCTAssertEqual(chmod(ca.keyPath, 0o604), 0)
        XCTAssertEqual(loadError(certificate: ca.certificatePath, key: ca.keyPath)?.code, .caKey, "readable by others")
    }

    func testNonCACertificateIsRefused() throws {
        let key = dir + "/leaf.key", cert = dir + "/leaf.pem"
        let made = try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                "-keyout", key, "-out", cert, "-subj", "/CN=not a ca", "-days", "2",
                                "-addext", "basicConstraints=critical,CA:FALSE"])
        XCTAssertEqual(made.exitCode, 0, made.stderr)
        XCTAssertEqual(chmod(key, 0o600), 0)
        let error = try XCTUnwrap(loadError(certificate: cert, key: key))
        XCTAssertEqual(error.code, .caCertificate)
        XCTAssertTrue(error.detail.contains(cert) && error.detail.contains("CA:TRUE"), error.detail)
    }

    func testCAWithoutKeyCertSignIsRefused() throws {
        let key = dir + "/ku.key", cert = dir + "/ku.pem"
        let made = try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                "-keyout", key, "-out", cert, "-subj", "/CN=crl only", "-days", "2",
                                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,cRLSign"])
        XCTAssertEqual(made.exitCode, 0, made.stderr)
        XCTAssertEqual(chmod(key, 0o600), 0)
        let error = try XCTUnwrap(loadError(certificate: cert, key: key))
        XCTAssertEqual(error.code, .caCertificate)
        XCTAssertTrue(error.detail.contains("keyCertSign"), error.detail)
    }

    func testKeyOfAnotherCAIsRefused() throws {
        let a = try makeCA("a"), b = try makeCA("b")
        let error = try XCTUnwrap(loadError(certificate: a.certificatePath, key: b.keyPath))
        XCTAssertEqual(error.code, .caKey)
        XCTAssertTrue(error.detail.contains(b.keyPath) && error.detail.contains("does not match"), error.detail)
    }

    func testGarbageAndMissingFilesAreRefusedNamingThem() throws {
        let ca = try makeCA()
        let garbage = dir + "/garbage.pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: garbage))
        XCTAssertEqual(chmod(garbage, 0o600), 0)
        let badCert = try XCTUnwrap(loadError(certificate: garbage, key: ca.keyPath))
        XCTAssertEqual(badCert.code, .caCertificate)
        XCTAssertTrue(badCert.detail.contains(garbage), badCert.detail)
        let badKey = try XCTUnwrap(loadError(certificate: ca.certificatePath, key: garbage))
        XCTAssertEqual(badKey.code, .caKey)
        XCTAssertTrue(badKey.detail.contains(garbage), badKey.detail)
        let missing = try XCTUnwrap(loadError(certificate: dir + "/nope.pem", key: ca.keyPath))
        XCTAssertEqual(missing.code, .caCertificate)
        XCTAssertTrue(missing.detail.contains(dir + "/nope.pem"), missing.detail)
        XCTAssertEqual(loadError(certificate: ca.certificatePath, key: dir + "/nope.key")?.code, .caKey)
    }

    func testCreateRefusesExistingFilesUnlessReplacing() throws {
        let first = try makeCA()
        XCTAssertThrowsError(try makeCA()) { error in
            XCTAssertEqual((error as? IOError)?.code, .exists)
        }
        XCTAssertEqual(chmod(first.keyPath, 0o644), 0)
        let second = try CertificateAuthority.create(inDirectory: dir + "/ca", overwrite: .replace)
        XCTAssertNotEqual(first.fingerprint, second.fingerprint)
        var st = stat()
        XCTAssertEqual(stat(second.keyPath, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600, "a replaced key is created anew with 0600")
    }

    // MARK: minting

    private func write(_ leaf: LeafCertificate) throws -> String {
        let path = dir + "/leaf-\(UUID().uuidString).pem"
        try Data(leaf.pem.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func testMintedLeafVerifiesAgainstTheCAWithTheSpecifiedExtensions() throws {
        let ca = try makeCA()
        let leaf = try ca.mintLeaf(for: "Example.COM.")
        XCTAssertEqual(leaf.name, "example.com")
        let path = try write(leaf)
        let verify = try openssl(["verify", "-CAfile", ca.certificatePath, "-purpose", "sslserver", path])
        XCTAssertEqual(verify.exitCode, 0, verify.stdoutString + verify.stderr)
        let hostCheck = try openssl(["verify", "-CAfile", ca.certificatePath, "-verify_hostname", "example.com", path])
        XCTAssertEqual(hostCheck.exitCode, 0, hostCheck.stdoutString + hostCheck.stderr)
        let text = try openssl(["x509", "-in", path, "-noout", "-text"]).stdoutString
        XCTAssertTrue(text.contains("DNS:example.com"), text)
        XCTAssertTrue(text.contains("Subject: CN = example.com"), text)
        XCTAssertTrue(text.contains("TLS Web Server Authentication"), text)
        XCTAssertTrue(text.contains("CA:FALSE"), text)
        XCTAssertTrue(text.contains("X509v3 Subject Key Identifier"), text)
        XCTAssertTrue(text.contains("X509v3 Authority Key Identifier"), text)
        XCTAssertTrue(text.contains("ecdsa-with-SHA256") && text.contains("prime256v1"), text)
        XCTAssertTrue(text.contains("Issuer: O = Airlock, CN = Airlock Local CA"), text)
        // Validity: from an hour ago to 7 days from now.
        let dates = try openssl(["x509", "-in", path, "-noout", "-startdate", "-enddate", "-dateopt", "iso_8601"]).stdoutString
        let now = Date().timeIntervalSince1970
        let parsed = dates.split(separator: "\n").map { line -> Double in
            let value = String(line.split(separator: "=", maxSplits: 1)[1])
            return ISO8601DateFormatter().date(from: value.replacingOccurrences(of: " ", with: "T"))?.timeIntervalSince1970 ?? 0
        }
        XCTAssertEqual(parsed.count, 2, dates)
        XCTAssertEqual(parsed[0], now - 3600, accuracy: 60, dates)
        XCTAssertEqual(parsed[1], now + 7 * 86_400, accuracy: 60, dates)
        let serial = try openssl(["x509", "-in", path, "-noout", "-serial"]).stdoutString
        XCTAssertEqual(serial.trimmingCharacters(in: .whitespacesAndNewlines).count, "serial=".count + 32, serial)
    }

    /// `permitted`: a critical name constraint. Leaves inside it verify (and openssl checks the
    /// constraint); a name outside is never minted; the constraint is read back from the file.
    func testNameConstraintsLimitWhatTheCAMints() throws {
        let ca = try CertificateAuthority.create(inDirectory: dir + "/nc", overwrite: .refuse,
                                                 permitted: ["example.test", "127.0.0.1"])
        XCTAssertEqual(ca.permittedNames, ["DNS:example.test", "IP:127.0.0.1/255.255.255.255"])
        let text = try openssl(["x509", "-in", ca.certificatePath, "-noout", "-ext", "nameConstraints"]).stdoutString
        XCTAssertTrue(text.contains("X509v3 Name Constraints: critical"), text)
        for name in ["example.test", "api.example.test", "127.0.0.1"] {
            let path = try write(try ca.mintLeaf(for: name))
            let verify = try openssl(["verify", "-CAfile", ca.certificatePath, "-purpose", "sslserver", path])
            XCTAssertEqual(verify.exitCode, 0, "\(name): \(verify.stdoutString) \(verify.stderr)")
        }
        for name in ["other.test", "example.test.evil", "localhost", "127.0.0.2"] {
            XCTAssertThrowsError(try ca.mintLeaf(for: name), name) { error in
                let e = error as? IOError
                XCTAssertEqual(e?.code, .leafName, name)
                XCTAssertTrue(e?.detail.contains("do not permit \(name)") == true, "\(e?.detail ?? "")")
            }
        }
        // Loaded again from its files, it keeps the limit.
        let loaded = try CertificateAuthority(certificateFile: ca.certificatePath, keyFile: ca.keyPath)
        XCTAssertThrowsError(try loaded.mintLeaf(for: "other.test"))
        XCTAssertNoThrow(try loaded.mintLeaf(for: "www.example.test"))
        // Without `permitted`, no constraint and any name.
        XCTAssertEqual(try makeCA("plain").permittedNames, [])
        XCTAssertThrowsError(try CertificateAuthority.create(inDirectory: dir + "/bad", overwrite: .refuse, permitted: ["a b"]))
    }

    func testLeafNeverOutlivesTheCA() throws {
        let ca = try CertificateAuthority.create(inDirectory: dir + "/short", overwrite: .refuse, validityDays: 2)
        let leaf = try ca.mintLeaf(for: "short.test")
        XCTAssertEqual(leaf.expirySeconds, ca.expirySeconds)
    }

    func testIPLiteralsGetAnIPAddressSAN() throws {
        let ca = try makeCA()
        for (name, san, check) in [("127.0.0.1", "IP Address:127.0.0.1", "127.0.0.1"),
                                   ("[::1]", "IP Address:0:0:0:0:0:0:0:1", "::1")] {
            let path = try write(ca.mintLeaf(for: name))
            let text = try openssl(["x509", "-in", path, "-noout", "-ext", "subjectAltName"]).stdoutString
            XCTAssertTrue(text.contains(san), text)
            XCTAssertFalse(text.contains("DNS:"), text)
            // No subject (the address is in the SAN alone), so the SAN is critical (RFC 5280 4.2.1.6).
            XCTAssertTrue(text.contains("X509v3 Subject Alternative Name: critical"), text)
            let verify = try openssl(["verify", "-CAfile", ca.certificatePath, "-verify_ip", check, path])
            XCTAssertEqual(verify.exitCode, 0, verify.stdoutString + verify.stderr)
        }
    }

    func testHostileNamesAreRefused() throws {
        let ca = try makeCA()
        let long = String(repeating: "a", count: 64) + ".test"
        let tooLong = Array(repeating: String(repeating: "b", count: 60), count: 5).joined(separator: ".")
        for name in ["", ".", "example.com,DNS:evil.test", "evil.test, IP:1.2.3.4", "a..b", "-lead.test", "trail-.test",
                     "sp ace.test", "new\nline.test", "nul\0.test", "*.wild.test", "critical,DNS:x", "ünïcode.test",
                     long, tooLong, "[not-ip]", "1.2.3", "[127.0.0.1]"] {
            XCTAssertThrowsError(try ca.mintLeaf(for: name), "minted for \(name.debugDescription)") { error in
                XCTAssertEqual((error as? IOError)?.code, .leafName, "\(name.debugDescription): \(error)")
            }
        }
        // At the limits: a 63-byte label, a 253-byte name (no CN then, SAN only).
        XCTAssertNoThrow(try ca.mintLeaf(for: String(repeating: "c", count: 63) + ".test"))
        let longest = Array(repeating: String(repeating: "d", count: 62), count: 4).joined(separator: ".") + ".x"
        XCTAssertEqual(longest.utf8.count, 253)
        let path = try write(ca.mintLeaf(for: longest))
        let verify = try openssl(["verify", "-CAfile", ca.certificatePath, "-verify_hostname", longest, path])
        XCTAssertEqual(verify.exitCode, 0, verify.stdoutString + verify.stderr)
    }

    // MARK: cache

    func testServerContextCachesLeavesPerNameAndEvictsTheLeastRecentlyUsed() throws {
        let ctx = try TLSServerContext(authority: try makeCA(), leafCacheSize: 2)
        let a = try ctx.leaf(for: "a.test")
        XCTAssertTrue(try ctx.leaf(for: "A.test.") === a, "the same name (canonically) gets the same certificate")
        let b = try ctx.leaf(for: "b.test")
        XCTAssertEqual(ctx.cachedLeafCount, 2)
        XCTAssertTrue(try ctx.leaf(for: "a.test") === a)   // a is now the most recent
        _ = try ctx.leaf(for: "c.test")                   // evicts b
        XCTAssertEqual(ctx.cachedLeafCount, 2)
        XCTAssertTrue(try ctx.leaf(for: "a.test") === a, "a was used more recently than b")
        XCTAssertFalse(try ctx.leaf(for: "b.test") === b, "b was evicted and minted again")
        XCTAssertThrowsError(try ctx.leaf(for: "bad name"))
        XCTAssertEqual(ctx.cachedLeafCount, 2)
    }

    func testLeafCacheTreatsAnExpiringLeafAsAbsent() throws {
        let ca = try makeCA()
        let name = try LeafName(validating: "soon.test")
        var cache = LeafCache(capacity: 4)
        let leaf = try ca.mint(name)
        cache.insert(leaf, for: name)
        XCTAssertTrue(cache.get(name, now: leaf.expirySeconds - 7200) === leaf)
        XCTAssertNil(cache.get(name, now: leaf.expirySeconds - 60))
        XCTAssertEqual(cache.count, 0)
    }
}

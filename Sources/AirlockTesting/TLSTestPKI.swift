import Foundation

/// A throwaway PKI made at test time by `Tests/Fixtures/tls/make_pki.py` (EC P-256, nothing committed).
///
/// Names (each with `<name>.pem`, `<name>.der`, `<name>.key`; leaves also `<name>-chain.pem`, leaf then
/// intermediate, which is what a server sends):
/// `root` → `intermediate` → `leaf` (localhost, 127.0.0.1), `wrongname` (other.example only),
/// `expired` (2020-01-01...02), `cn-only` (CN=localhost, no SAN); `other-root` → `other-leaf`;
/// `selfsigned` (localhost, 127.0.0.1, not a CA). CAs are valid now-1d ... now+365d, leaves now-1d ... now+30d.
public struct TLSTestPKI: Sendable {
    /// Absolute path of the directory holding every file and `manifest.json`.
    public let directory: String
    private let pins: [String: String]

    /// Runs make_pki.py (bounded: 60 s) into a fresh temporary directory. The caller calls `remove()`.
    /// Throws `.process` with the script's stderr if it fails (e.g. `cryptography` missing).
    /// `weak`: also the chains OpenSSL security level 2 refuses (make_pki.py --weak): `sha1-leaf`, `md5-leaf`
    /// (under `rsa-intermediate`, which also issues the good `rsa-leaf`), `rsa1024-leaf`, `sha1-ca-leaf` (under
    /// `sha1-intermediate`) and `rsa1024-ca-leaf` (under `rsa1024-intermediate`), all for localhost, 127.0.0.1.
    /// `notYetValid`: also `not-yet-valid` (make_pki.py --not-yet-valid), a localhost leaf valid from tomorrow.
    public static func generate(weak: Bool = false, notYetValid: Bool = false) throws -> TLSTestPKI {
        let directory = try makeTemporaryDirectory(prefix: "airlock-tls-pki")
        do {
            let python = TLSFixtureScripts.python()
            let flags = (weak ? ["--weak"] : []) + (notYetValid ? ["--not-yet-valid"] : [])
            let result = try runProcess(python, [TLSFixtureScripts.makePKI, directory] + flags,
                                        timeout: 60)
            guard result.exitCode == 0 else {
                throw AirlockTestingError(.process, """
                    \(python) \(TLSFixtureScripts.makePKI) exited \(result.exitCode): \(result.stderr)
                    """)
            }
            return TLSTestPKI(directory: directory, pins: try readPins(directory + "/manifest.json"))
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private init(directory: String, pins: [String: String]) {
        self.directory = directory
        self.pins = pins
    }

    private static func readPins(_ manifest: String) throws -> [String: String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: manifest))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let certificates = object["certificates"] as? [String: [String: Any]] else {
            throw AirlockTestingError(.malformed, "\(manifest) has no \"certificates\" object")
        }
        var pins: [String: String] = [:]
        for (name, entry) in certificates {
            guard let pin = entry["pin"] as? String, pin.hasPrefix("sha256/") else {
                throw AirlockTestingError(.malformed, "\(manifest): certificate \(name) has no sha256/ pin")
            }
            pins[name] = pin
        }
        return pins
    }

    /// The absolute path of `file` in the PKI directory, e.g. `path("root.pem")`, `path("leaf-chain.pem")`.
    public func path(_ file: String) -> String {
        directory + "/" + file
    }

    /// The certificate names in the manifest, sorted.
    public var names: [String] { pins.keys.sorted() }

    /// The `sha256/<base64>` SPKI pin of certificate `name` (e.g. "leaf", "root", "other-root").
    /// An unknown name gives "sha256/unknown-certificate-<name>", which no pin parser accepts, so a typo
    /// fails the test that uses it instead of crashing the test process.
    public func pin(_ name: String) -> String {
        pins[name] ?? "sha256/unknown-certificate-\(name)"
    }

    /// Deletes the directory and every key in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

import Foundation

/// Runs Debian's headless Chromium the way a user would point it at a proxy: its own certificate
/// verifier (not OpenSSL's), trusting CAs through an NSS database in a throw-away home directory.
public enum Chromium {
    public static let executable = "/usr/bin/chromium"
    public static let certutil = "/usr/bin/certutil"

    /// Fetches `url` through the HTTP proxy on 127.0.0.1:`proxyPort` (loopback targets included)
    /// and returns the page's DOM on stdout (`--dump-dom`); a certificate Chromium refuses leaves its
    /// error page there and `net_error` lines in stderr. `trusting`: PEM CA certificates added to the
    /// NSS database as trusted for TLS servers. Bounded by `timeout` seconds (the process group is killed).
    public static func dumpDOM(_ url: String, proxyPort: UInt16, trusting caPEMs: [String],
                               timeout: Double = 40) throws -> ProcessResult {
        try Requirement.tool(executable)
        try Requirement.tool(certutil)
        let home = NSTemporaryDirectory() + "airlock-chromium-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: home) }
        let nssdb = home + "/.pki/nssdb"
        try FileManager.default.createDirectory(atPath: nssdb, withIntermediateDirectories: true)
        try certutilRun(["-N", "--empty-password", "-d", "sql:" + nssdb])
        for (i, pem) in caPEMs.enumerated() {
            try certutilRun(["-A", "-d", "sql:" + nssdb, "-n", "test-ca-\(i)", "-t", "C,,", "-i", pem])
        }
        let seconds = String(Int(timeout.rounded(.up)))
        return try runProcess("/usr/bin/env", [
            "HOME=\(home)", "/usr/bin/timeout", "-k", "5", seconds, executable,
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            // Less traffic of Chromium's own beside the page (what is left, e.g. a CONNECT to an
            // update host, meets the test's proxy, which has no route for it: nothing leaves loopback).
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
            "--user-data-dir=\(home)/profile", "--proxy-server=http://127.0.0.1:\(proxyPort)",
            "--proxy-bypass-list=<-loopback>", "--enable-logging=stderr", "--v=0", "--dump-dom", url,
        ], timeout: timeout + 15)
    }

    private static func certutilRun(_ args: [String]) throws {
        let r = try runProcess(certutil, args, timeout: 20)
        guard r.exitCode == 0 else { throw AirlockTestingError(.process, "certutil \(args.joined(separator: " ")): \(r.stderr)") }
    }
}

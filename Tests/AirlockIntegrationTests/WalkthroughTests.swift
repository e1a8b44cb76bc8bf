import AirlockTesting
import Foundation
import XCTest

/// The README's walkthroughs, run exactly as printed: every fenced block whose info string is
/// `sh walkthrough`, in order, in one `bash` started in the repository root, with the built
/// `airlock` first on `PATH`. The one line changed is the README's own ports line (the
/// ports it says to change when taken), so the run cannot collide with anything else on this
/// machine. Each block must finish (the script runs under `set -eu`) and print its key output;
/// every process the blocks start is stopped when the script ends.
final class WalkthroughTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The README's line that sets the ports, as printed.
    static let portsLine = "export DEMO_PORT=8081 TLS_PORT=8443 AIRLOCK_LISTEN=127.0.0.1:8080 AIRLOCK_ADMIN=127.0.0.1:9090"

    /// What each block must print, in README order. A block added or removed in the README
    /// fails the count below until it is listed here.
    static let expected: [[String]] = [
        ["hello from airlock demo-upstream"],                                   // the demo origin, directly
        ["hello from airlock demo-upstream\n{\"message\":\"hello from airlock demo-upstream\",\"items\":[1,2,3]",
         "\"note\":null}\n\nhello from airlock demo-upstream"],                // curl, Python, Node through the proxy
        ["1.1 airlock-", " hello from airlock demo-upstream"],                 // URLSession on Linux, via http_proxy (Via)
        ["X-Airlock-Error: connect-denied"],                                    // CONNECT refused, reason in the header
        ["Ciphers supported\n200\n"],                                           // curl and Python through a tunnel
        ["{\"message\":\"hello from airlock demo-upstream\"",                   // the gateway: JSON passes,
         "{\"error\":\"rejected-response\",\"reason\":\"unacceptable-content-type\",\"code\":-1016"],  // HTML rejected
        ["REQUEST ID\n", "  api    200     unacceptable-content-type  http://127.0.0.1:",
         "\"reason\": \"unacceptable-content-type\""],                          // airlock rejects, GET /rejects
        ["verification: ok", "pin:      sha256/", "\n200\n"],                   // airlock pin, then a pinned route
        ["permits: DNS:localhost", "Ciphers supported\n"],                       // ca init, then an intercepted request
        [],                                                                     // stopping the origins
    ]

    static func walkthroughBlocks(_ readme: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil {
                if line == "```sh walkthrough" { current = [] }
            } else if line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current!.append(line)
            }
        }
        return blocks
    }

    /// The README is a guide (issue #20): at most 300 lines; the reference lives in docs/.
    func testTheREADMEIsAtMost300Lines() throws {
        let readme = try String(contentsOf: Self.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).count - (readme.hasSuffix("\n") ? 1 : 0)
        XCTAssertLessThanOrEqual(lines, 300, "README.md has \(lines) lines")
    }

    func testTheREADMEWalkthroughsRunAsPrinted() throws {
        for tool in ["/bin/bash", Curl.executable, "/usr/bin/openssl", "/usr/bin/node", "/usr/bin/timeout"] {
            try Requirement.tool(tool)
        }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        for name in ["python3", "swift"] {
            try Requirement.check(path.contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") },
                                  "no \(name) on PATH")
        }
        let readme = try String(contentsOf: Self.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks = Self.walkthroughBlocks(readme)
        XCTAssertEqual(blocks.count, Self.expected.count, "marked walkthrough blocks in README.md")
        XCTAssertEqual(blocks.first?.components(separatedBy: Self.portsLine).count, 2,
                       "the first block sets the ports with exactly this line: \(Self.portsLine)")
        guard blocks.count == Self.expected.count else { return }

        let ports = (0..<4).map { _ in unusedLoopbackPort() }
        blocks[0] = blocks[0].replacingOccurrences(of: Self.portsLine, with:
            "export DEMO_PORT=\(ports[0]) TLS_PORT=\(ports[1]) AIRLOCK_LISTEN=127.0.0.1:\(ports[2]) AIRLOCK_ADMIN=127.0.0.1:\(ports[3])")

        let binDir = URL(fileURLWithPath: AirlockProcess.builtExecutable()).deletingLastPathComponent().path
        var script = """
            set -eu
            trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
            export PATH='\(binDir)':"$PATH"
            cd '\(Self.packageRoot.path)'

            """
        for (i, block) in blocks.enumerated() {
            script += "echo '@@ block \(i) begins'\n\(block)echo '@@ block \(i) ends'\n"
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-walkthrough-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let driver = scratch.appendingPathComponent("walkthrough.sh")
        try script.write(to: driver, atomically: true, encoding: .utf8)

        let r = try runProcess("/bin/bash", [driver.path], timeout: 240)
        let out = r.stdoutString
        XCTAssertEqual(r.exitCode, 0, "walkthrough script failed; stdout:\n\(out)\nstderr:\n\(r.stderr)")

        for (i, wanted) in Self.expected.enumerated() {
            guard let begin = out.range(of: "@@ block \(i) begins\n"),
                  let end = out.range(of: "@@ block \(i) ends\n", range: begin.upperBound..<out.endIndex) else {
                XCTFail("block \(i) did not run to its end:\n\(blocks[min(i, blocks.count - 1)])\nstdout:\n\(out)\nstderr:\n\(r.stderr)")
                continue
            }
            let printed = String(out[begin.upperBound..<end.lowerBound])
            for text in wanted {
                XCTAssertTrue(printed.contains(text), "block \(i) did not print \(text.debugDescription); it printed:\n\(printed)")
            }
        }

        // The origins and every Airlock the blocks started are gone: nothing answers on their ports.
        for port in [ports[0], ports[1], ports[2]] {
            let probe = try runProcess(Curl.executable, ["-s", "-o", "/dev/null", "--max-time", "5", "http://127.0.0.1:\(port)/"])
            XCTAssertEqual(probe.exitCode, 7, "something still listens on 127.0.0.1:\(port) after the walkthroughs")
        }
    }
}

import AirlockSecurity
import AirlockTesting
import Foundation
import XCTest

/// `certs/gen-dev-pki.sh`: runs, prints pins this module parses, and is idempotent.
final class DevPKIScriptTests: XCTestCase {
    private let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("certs/gen-dev-pki.sh")
    private let names = ["root-ca", "intermediate-ca", "localhost", "other-root-ca", "other-localhost"]

    private func run(_ outDir: URL) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["bash", script.path, outDir.path]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// "name sha256/..." lines, parsed with `Pin(parsing:)`.
    private func pins(_ stdout: String) throws -> [String: Pin] {
        var pins: [String: Pin] = [:]
        for line in stdout.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            XCTAssertEqual(fields.count, 2, String(line))
            pins[String(fields[0])] = try Pin(parsing: String(fields[1]))
        }
        return pins
    }

    func testGeneratesBothChainsAndPrintsParseablePins() throws {
        try Requirement.tool("/usr/bin/openssl")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-pki-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }

        let first = try run(dir)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stderr.contains("generated root-ca -> intermediate-ca -> localhost"), first.stderr)
        XCTAssertTrue(first.stderr.contains("generated other-root-ca -> other-localhost"), first.stderr)
        let firstPins = try pins(first.stdout)
        XCTAssertEqual(Set(firstPins.keys), Set(names))
        XCTAssertEqual(Set(firstPins.values).count, names.count, "every key is distinct")

        for name in names {
            let key = dir.appendingPathComponent("\(name).key").path
            let mode = try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int
            XCTAssertEqual(mode, 0o600, "\(name).key is private")
            XCTAssertTrue(FileManager.default.fileExists(atPath: dir.appendingPathComponent("\(name).pem").path))
        }
        let pinsFile = try String(contentsOf: dir.appendingPathComponent("pins.txt"), encoding: .utf8)
        XCTAssertEqual(pinsFile, first.stdout)
        let chain = try String(contentsOf: dir.appendingPathComponent("localhost-chain.pem"), encoding: .utf8)
        XCTAssertEqual(chain.components(separatedBy: "BEGIN CERTIFICATE").count - 1, 2, "leaf and intermediate")

        // Second run: both chains still verify (script's own check), so nothing is regenerated.
        let second = try run(dir)
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertTrue(second.stderr.contains("keeping root-ca -> intermediate-ca -> localhost"), second.stderr)
        XCTAssertTrue(second.stderr.contains("keeping other-root-ca -> other-localhost"), second.stderr)
        XCTAssertEqual(try pins(second.stdout), firstPins)

        // A missing file regenerates only its chain.
        try FileManager.default.removeItem(at: dir.appendingPathComponent("other-localhost.pem"))
        let third = try run(dir)
        XCTAssertEqual(third.status, 0, third.stderr)
        XCTAssertTrue(third.stderr.contains("keeping root-ca -> intermediate-ca -> localhost"), third.stderr)
        XCTAssertTrue(third.stderr.contains("generated other-root-ca -> other-localhost"), third.stderr)
        let thirdPins = try pins(third.stdout)
        XCTAssertEqual(thirdPins["localhost"], firstPins["localhost"])
        XCTAssertNotEqual(thirdPins["other-localhost"], firstPins["other-localhost"])
    }
}

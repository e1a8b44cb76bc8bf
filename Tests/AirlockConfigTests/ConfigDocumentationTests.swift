import Foundation
import XCTest
@testable import AirlockConfig

/// docs/configuration.md against the reader: every key `ConfigReader` accepts has a row in the
/// reference table, and every key the table documents is one the reader accepts. The reader's
/// keys come from its own allowed-key lists, so a key added to a list without a row (or a row
/// for a key no list has) fails here.
final class ConfigDocumentationTests: XCTestCase {
    /// Each block of the YAML tree and the keys the reader allows in it, by full key path
    /// (`routes[]` for each route, `NAME` for a header name the user chooses).
    static let readerBlocks: [(path: String, keys: [String])] = [
        ("", ConfigReader.topLevelKeys),
        ("limits", ConfigReader.limitKeys),
        ("rejects", ConfigReader.rejectsKeys),
        ("reachability", ConfigReader.reachabilityKeys),
        ("ca", ConfigReader.caKeys),
        ("routes[]", ConfigReader.routeKeys),
        ("routes[].match", ConfigReader.matchKeys),
        ("routes[].egress", ConfigReader.egressKeys),
        ("routes[].security", ConfigReader.securityKeys),
        ("routes[].request", ConfigReader.requestKeys),
        ("routes[].request.authorization", ConfigReader.authorizationKeys),
        ("routes[].request.authorization.basic", ConfigReader.basicKeys),
        ("routes[].request.throttle", ConfigReader.throttleKeys),
        ("routes[].request.headers.NAME", ConfigReader.secretHeaderKeys),
        ("routes[].request.override_headers.NAME", ConfigReader.secretHeaderKeys),
        ("routes[].response", ConfigReader.responseKeys),
        ("routes[].resume", ConfigReader.resumeKeys),
        ("routes[].cache", ConfigReader.cacheKeys),
    ]

    /// Every key path the reader accepts.
    static var acceptedPaths: Set<String> {
        var paths: Set<String> = []
        for (block, keys) in readerBlocks {
            for key in keys { paths.insert(block.isEmpty ? key : "\(block).\(key)") }
        }
        return paths
    }

    /// The paths that name a block of fixed keys (`limits`, `routes[].match`, …): their keys
    /// must be documented; a row for the block itself is optional.
    static var blockPaths: Set<String> {
        Set(readerBlocks.map(\.path)).union(["routes"])
    }

    static let documentURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/configuration.md")

    /// The key paths in the first cell of each row of the reference table (the table whose
    /// header is `| Key | Default | Meaning |`); a cell may name several (`ca.certificate`, `ca.key`).
    static func documentedPaths(in text: String) -> [String] {
        var paths: [String] = []
        var inTable = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("| Key | Default | Meaning |") { inTable = true; continue }
            guard inTable else { continue }
            guard line.hasPrefix("|") else { if !paths.isEmpty { break } else { continue } }
            if line.hasPrefix("|---") { continue }
            let cell = line.dropFirst().prefix { $0 != "|" }
            for piece in cell.split(separator: "`", omittingEmptySubsequences: false).enumerated() where piece.offset % 2 == 1 {
                paths.append(String(piece.element))
            }
        }
        return paths
    }

    func testEveryAcceptedKeyIsDocumentedAndEveryDocumentedKeyIsAccepted() throws {
        let text = try String(contentsOf: Self.documentURL, encoding: .utf8)
        let documented = Self.documentedPaths(in: text)
        XCTAssertGreaterThan(documented.count, 50, "the reference table was not found in \(Self.documentURL.path)")
        let documentedSet = Set(documented)

        let accepted = Self.acceptedPaths
        let undocumented = accepted.subtracting(documentedSet).subtracting(Self.blockPaths).sorted()
        XCTAssertEqual(undocumented, [], "keys the reader accepts with no row in docs/configuration.md")

        let unknown = documentedSet.subtracting(accepted).subtracting(Self.blockPaths).sorted()
        XCTAssertEqual(unknown, [], "rows in docs/configuration.md for keys the reader does not accept")

        let twice = Dictionary(grouping: documented, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        XCTAssertEqual(twice, [], "keys with more than one row")
    }

    /// The comparison itself: a key missing from the table and a row for a key that does not
    /// exist are both seen, so the test above cannot pass by reading nothing.
    func testTheComparisonSeesAMissingAndAnInventedKey() {
        let table = """
            | Key | Default | Meaning |
            |---|---|---|
            | `listen` | x | y |
            | `limits.no_such_limit`, `ca.key` | x | y |

            | `workers` | not in the table | |
            """
        XCTAssertEqual(Self.documentedPaths(in: table), ["listen", "limits.no_such_limit", "ca.key"])
        let documented = Set(Self.documentedPaths(in: table))
        XCTAssertTrue(Self.acceptedPaths.subtracting(documented).contains("workers"))
        XCTAssertEqual(documented.subtracting(Self.acceptedPaths), ["limits.no_such_limit"])
    }
}

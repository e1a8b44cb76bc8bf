import Airlock
import ArgumentParser

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Print the sha256/… public-key pins of a server's chain or of certificate files."
    )

    @Argument(help: "HOST[:PORT] to connect to (port 443 by default).")
    var target: String?

    @Option(name: .long, help: "Certificate file(s), PEM or DER, bundles too, instead of a server.")
    var file: [String] = []

    @Option(name: .long, help: "Extra CA bundle for the verification line.")
    var ca: String?

    @Option(name: .long, help: "TLS server name (SNI and the name checked); defaults to HOST.")
    var servername: String?

    func validate() throws {
        if target == nil && file.isEmpty { throw ValidationError("give HOST[:PORT] or --file CERT") }
        if target != nil && !file.isEmpty { throw ValidationError("give either HOST[:PORT] or --file, not both") }
    }

    func run() throws {
        do {
            if !file.isEmpty {
                print(try PinReport.forFiles(file), terminator: "")
                return
            }
            let (host, port) = try Self.split(target ?? "")
            print(try PinReport.forServer(host: host, port: port, serverName: servername, caFile: ca), terminator: "")
        } catch let e as ValidationError {
            throw e
        } catch {
            printError("airlock pin: \(error)")
            throw ExitCode(1)
        }
    }

    static func split(_ text: String) throws -> (String, UInt16) {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (host, 443) }
            guard rest.hasPrefix(":"), let p = UInt16(rest.dropFirst()) else { throw ValidationError("bad port in \(text)") }
            return (host, p)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 1 { return (text, 443) }
        guard parts.count == 2, let p = UInt16(parts[1]), !parts[0].isEmpty else { throw ValidationError("expected HOST[:PORT], got \(text)") }
        return (String(parts[0]), p)
    }
}

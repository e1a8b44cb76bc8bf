import Airlock
import AirlockConfig
import ArgumentParser

/// `airlock rejects`: the last rejected responses, from a running gateway's admin listener.
struct RejectsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rejects",
        abstract: "Show the responses a running Airlock rejected (from its admin listener's GET /rejects)."
    )

    @Option(name: .long, help: ArgumentHelp("The admin listener.", valueName: "host:port"))
    var admin: String = "127.0.0.1:9090"

    @Option(name: .long, help: ArgumentHelp("Only rejects this recent, e.g. 30s, 10m, 1h.", valueName: "duration"))
    var since: String?

    @Option(name: .long, help: ArgumentHelp("Only rejects on this route.", valueName: "name"))
    var route: String?

    @Option(name: .long, help: ArgumentHelp("Only requests Airlock refused (request) or responses it rejected (response).",
                                            valueName: "side"))
    var side: String?

    @Flag(name: .long, help: "Print the raw JSON answer instead of a table.")
    var json = false

    func run() throws {
        guard let address = ListenAddress(admin) else {
            printError("airlock rejects: --admin: expected HOST:PORT, e.g. 127.0.0.1:9090, got \"\(admin)\"")
            throw ExitCode.failure
        }
        do {
            let path = try AdminClient.rejectsPath(since: since, route: route, side: side)
            let (status, body) = try AdminClient.get(address, path: path)
            guard status == 200 else {
                printError("airlock rejects: the admin listener answered \(status): \(String(decoding: body, as: UTF8.self))")
                throw ExitCode.failure
            }
            print(json ? String(decoding: body, as: UTF8.self) : try RejectTable.render(body), terminator: "")
        } catch let failure as AdminClient.Failure {
            printError("airlock rejects: \(failure)")
            throw ExitCode.failure
        }
    }
}

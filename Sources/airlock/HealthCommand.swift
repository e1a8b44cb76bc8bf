import Airlock
import AirlockConfig
import ArgumentParser

/// `airlock health`: exit 0 only if a running Airlock's admin listener answers `GET /healthz`
/// with 200. For container health checks, where the runtime image has no HTTP client.
struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check a running Airlock: exit 0 if its admin listener answers GET /healthz with 200.",
        discussion: """
            Exits 1, with the reason on standard error, if the admin listener cannot be reached, \
            does not answer within --timeout seconds, or answers anything but 200.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The admin listener.", valueName: "host:port"))
    var admin: String = "127.0.0.1:9090"

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the connection and for each read or write (1...60).",
                                            valueName: "seconds"))
    var timeout: Int = 5

    func validate() throws {
        guard ListenAddress(admin) != nil else {
            throw ValidationError("--admin: expected HOST:PORT, e.g. 127.0.0.1:9090, got \"\(admin)\"")
        }
        guard (1...60).contains(timeout) else {
            throw ValidationError("--timeout: expected 1...60 seconds, got \(timeout)")
        }
    }

    func run() throws {
        guard let address = ListenAddress(admin) else { throw ExitCode.failure }
        do {
            let (status, body) = try AdminClient.get(address, path: "/healthz", timeoutSeconds: timeout)
            guard status == 200 else {
                printError("airlock health: the admin listener at \(address) answered \(status): \(String(decoding: body.prefix(200), as: UTF8.self))")
                throw ExitCode.failure
            }
            print("airlock health: ok (\(address) /healthz 200)")
        } catch let failure as AdminClient.Failure {
            printError("airlock health: \(failure)")
            throw ExitCode.failure
        }
    }
}

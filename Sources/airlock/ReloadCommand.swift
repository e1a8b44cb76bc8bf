import Airlock
import AirlockConfig
import ArgumentParser

/// `airlock reload`: asks a running Airlock to reload its configuration (`POST /reload` on its
/// admin listener; `kill -HUP` does the same without the answer).
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Reload a running Airlock's configuration (POST /reload on its admin listener).",
        discussion: """
            The process reads the file it started with (and the AIRLOCK_* environment it started \
            with) again, validates it as check-config does and swaps it in without dropping a \
            connection. Exits 0 and prints what changed, or exits 1 and prints every reason the \
            new configuration was refused (the running one stays). AIRLOCK_ADMIN_TOKEN is sent \
            as the bearer token when set.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The admin listener.", valueName: "host:port"))
    var admin: String = "127.0.0.1:9090"

    func validate() throws {
        guard ListenAddress(admin) != nil else {
            throw ValidationError("--admin: expected HOST:PORT, e.g. 127.0.0.1:9090, got \"\(admin)\"")
        }
    }

    func run() throws {
        guard let address = ListenAddress(admin) else { throw ExitCode.failure }
        do {
            let (status, body) = try AdminClient.request("POST", address, path: "/reload", timeoutSeconds: 30)
            let text = String(decoding: body, as: UTF8.self)
            guard status == 200 else {
                printError("airlock reload: refused (\(status)): \(text)")
                throw ExitCode.failure
            }
            print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
        } catch let failure as AdminClient.Failure {
            printError("airlock reload: \(failure)")
            throw ExitCode.failure
        }
    }
}

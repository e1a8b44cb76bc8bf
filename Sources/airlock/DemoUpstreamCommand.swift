import Airlock
import AirlockConfig
import ArgumentParser

/// `airlock demo-upstream`: a small local HTTP/1.1 origin for the README's walkthroughs.
struct DemoUpstreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-upstream",
        abstract: "Serve a few demo documents over HTTP/1.1 (for the README's walkthroughs).",
        discussion: """
            GET /hello (text), /json (JSON), /not-json (HTML labelled text/html), /status/NNN \
            (that status, 200-599), /bytes/N (N bytes). Logs one JSON line when listening; \
            stops on SIGTERM or SIGINT.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Where to listen (port 0: a free one, named in the listening line).",
                                            valueName: "host:port"))
    var listen: String = "127.0.0.1:8081"

    func validate() throws {
        guard ListenAddress(listen) != nil else {
            throw ValidationError("--listen: expected HOST:PORT, e.g. 127.0.0.1:8081, got \"\(listen)\"")
        }
    }

    func run() throws {
        guard let address = ListenAddress(listen) else { throw ExitCode.failure }
        let origin: DemoUpstream
        do {
            origin = try DemoUpstream(listen: address)
        } catch {
            printError("airlock demo-upstream: cannot listen on \(address): \(error)")
            throw ExitCode.failure
        }
        origin.run()
    }
}

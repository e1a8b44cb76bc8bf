import Airlock
import ArgumentParser

/// `airlock ca init|show`: the local CA for intercepted CONNECT tunnels.
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Create or show the local CA that signs the certificates of intercepted HTTPS tunnels.",
        subcommands: [Init.self, Show.self]
    )

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Write a new CA: airlock-ca.pem (give it to clients) and airlock-ca.key (mode 0600).",
            discussion: "Refuses to overwrite existing files unless --force is given."
        )

        @Option(name: .long, help: "The folder for the files.")
        var dir: String = "certs"

        @Flag(name: .long, help: "Replace an existing CA (clients that trusted it must trust the new one).")
        var force = false

        @Option(name: .long, help: ArgumentHelp(
            "Limit the CA to this DNS name (and every name below it) or IP address: a critical name constraint, so a stolen key cannot impersonate other sites. Repeat for more; none: any name.",
            valueName: "name"))
        var permit: [String] = []

        func run() throws {
            do {
                print(try LocalCA.initialize(directory: dir, force: force, permit: permit), terminator: "")
            } catch {
                printError("airlock ca init: \(error)")
                throw ExitCode.failure
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print the CA's subject, SHA-256 fingerprint, expiry and the certificate file for clients."
        )

        @Option(name: .long, help: "The folder holding airlock-ca.pem and airlock-ca.key.")
        var dir: String = "certs"

        func run() throws {
            do {
                print(try LocalCA.show(directory: dir), terminator: "")
            } catch {
                printError("airlock ca show: \(error)")
                throw ExitCode.failure
            }
        }
    }
}

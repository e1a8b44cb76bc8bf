/// Runs the system curl the way a user would.
public enum Curl {
    public static let executable = "/usr/bin/curl"

    /// Runs /usr/bin/curl with `args` and returns when it exits. Always adds `-q` (ignore ~/.curlrc),
    /// `--silent --show-error --max-time <timeout>`; proxy variables are removed from its environment,
    /// so pass `--proxy` explicitly to go through Airlock as a forward proxy.
    /// The exit code is curl's: 0 ok, 7 connection refused, 28 timeout, 52 empty reply, 56 receive error.
    public static func run(_ args: [String], timeout: Double = 30) throws -> ProcessResult {
        let common = ["-q", "--silent", "--show-error", "--max-time", String(timeout)]
        return try runProcess(executable, common + args, timeout: timeout + 15)
    }
}

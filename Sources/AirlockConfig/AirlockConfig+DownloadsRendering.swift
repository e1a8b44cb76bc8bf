extension AirlockConfig {
    /// A route's `resume:` (always: it is on by default) and `cache:` (when on) for `renderYAML`.
    static func renderDownloadsYAML(_ route: RouteConfig) -> [String] {
        var lines = ["    resume: { enabled: \(route.resume.enabled), max_attempts: \(route.resume.maxAttempts) }"]
        if let cache = route.cache {
            lines.append("    cache: { memory: \(renderSize(cache.memory)), purge_to: \(renderSize(cache.purgeTo)), "
                         + "max_object: \(renderSize(cache.maxObject))"
                         + (cache.heuristicPercent.map { ", heuristic: \($0)%" } ?? "") + " }")
        } else {
            lines.append("    # cache: off")
        }
        return lines
    }

    /// `100MiB` when whole MiB (or KiB, GiB), else the bytes; `parseSize` reads it back.
    static func renderSize(_ bytes: Int64) -> String {
        for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)"
    }
}

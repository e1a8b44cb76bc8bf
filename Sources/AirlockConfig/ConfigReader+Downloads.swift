import AirlockYAML

/// A route's `resume:` and `cache:` blocks (issue #21).
extension ConfigReader {
    static let resumeKeys = ["enabled", "max_attempts"]
    static let cacheKeys = ["memory", "purge_to", "max_object", "heuristic"]

    /// `resume: { enabled, max_attempts }`; nil (and issues at `routes[i].resume.<key>`) when a key fails.
    mutating func readResume(_ node: Node, at path: String) -> ResumeConfig? {
        guard let fields = mapping(node, at: path, allowed: Self.resumeKeys) else { return nil }
        var resume = ResumeConfig()
        var parsedAll = true
        if let node = fields["enabled"] {
            if let flag = readBool(node, at: path + ".enabled") { resume.enabled = flag } else { parsedAll = false }
        }
        if let node = fields["max_attempts"] {
            let key = path + ".max_attempts"
            if let text = scalar(node, at: key) {
                if let n = ConfigSyntax.parseCount(text), (1...ResumeConfig.maxAttemptsLimit).contains(n) {
                    resume.maxAttempts = n
                } else {
                    fail(key, "expected an integer 1...\(ResumeConfig.maxAttemptsLimit), got \"\(text)\" (enabled: false turns resume off)")
                    parsedAll = false
                }
            } else {
                parsedAll = false
            }
        }
        return parsedAll ? resume : nil
    }

    /// `cache: { memory, purge_to, max_object, heuristic }` (`cache: {}` for every default), sizes
    /// as the `limits` sizes are written (`100MiB`); `purge_to` < `memory` and `max_object` ≤
    /// `memory`; `heuristic` a percentage (`10%`). Nil (and issues) when anything fails.
    mutating func readCache(_ node: Node, at path: String) -> CacheConfig? {
        var cache = CacheConfig()
        guard let fields = mapping(node, at: path, allowed: Self.cacheKeys) else { return nil }
        var parsedAll = true
        func size(_ name: String, _ store: (Int64) -> Void) {
            guard let node = fields[name] else { return }
            let key = path + "." + name
            guard let text = scalar(node, at: key) else {
                parsedAll = false
                return
            }
            if let bytes = ConfigSyntax.parseSize(text), bytes > 0 {
                store(bytes)
            } else {
                fail(key, "expected a size in bytes above 0, e.g. 4194304, 64KiB, 100MiB or 1GiB, got \"\(text)\"")
                parsedAll = false
            }
        }
        size("memory") { cache.memory = $0 }
        size("purge_to") { cache.purgeTo = $0 }
        size("max_object") { cache.maxObject = $0 }
        if let node = fields["heuristic"] {
            let key = path + ".heuristic"
            if let text = scalar(node, at: key) {
                let range = CacheConfig.heuristicPercentRange
                if text.hasSuffix("%"), let n = ConfigSyntax.parseCount(String(text.dropLast())), range.contains(n) {
                    cache.heuristicPercent = n
                } else {
                    fail(key, "expected a percentage \(range.lowerBound)%...\(range.upperBound)% of Date minus Last-Modified, "
                         + "e.g. 10%, got \"\(text)\" (leave it out for no heuristic freshness)")
                    parsedAll = false
                }
            } else {
                parsedAll = false
            }
        }
        guard parsedAll else { return nil }
        if cache.purgeTo >= cache.memory {
            let given = fields["purge_to"] == nil ? " (the \(AirlockConfig.renderSize(CacheConfig.defaultPurgeTo)) default)" : ""
            fail(path + ".purge_to", "(\(cache.purgeTo)\(given)) must be less than memory (\(cache.memory)): a purge goes below memory")
            parsedAll = false
        }
        if cache.maxObject > cache.memory {
            fail(path + ".max_object", "(\(cache.maxObject)) must be at most memory (\(cache.memory))")
            parsedAll = false
        }
        return parsedAll ? cache : nil
    }
}

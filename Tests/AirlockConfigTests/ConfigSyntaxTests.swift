import XCTest
@testable import AirlockConfig

final class ConfigSyntaxTests: XCTestCase {
    func testDurationParsing() {
        XCTAssertEqual(ConfigSyntax.parseDuration("500ms"), .milliseconds(500))
        XCTAssertEqual(ConfigSyntax.parseDuration("10s"), .seconds(10))
        XCTAssertEqual(ConfigSyntax.parseDuration("2m"), .seconds(120))
        XCTAssertEqual(ConfigSyntax.parseDuration("1h"), .seconds(3600))
        XCTAssertEqual(ConfigSyntax.parseDuration("30"), .seconds(30), "a bare integer is seconds")
        XCTAssertEqual(ConfigSyntax.parseDuration("0"), .zero, "syntax only; > 0 is a validation rule")
        for bad in ["", "s", "ms", "1.5s", "-1s", "+1s", "1d", "1 s", " 1s", "1sms", "1MS", "9223372036854775807h"] {
            XCTAssertNil(ConfigSyntax.parseDuration(bad), bad)
        }
    }

    func testDurationFormatting() {
        XCTAssertEqual(ConfigSyntax.formatDuration(.milliseconds(500)), "500ms")
        XCTAssertEqual(ConfigSyntax.formatDuration(.milliseconds(1500)), "1500ms")
        XCTAssertEqual(ConfigSyntax.formatDuration(.seconds(10)), "10s")
        XCTAssertEqual(ConfigSyntax.formatDuration(.seconds(60)), "60s")
        XCTAssertEqual(ConfigSyntax.formatDuration(.seconds(300)), "5m")
        XCTAssertEqual(ConfigSyntax.formatDuration(.seconds(7200)), "2h")
        XCTAssertEqual(ConfigSyntax.formatDuration(.microseconds(1500)), "2ms", "sub-millisecond rounds up")
        for text in ["500ms", "10s", "75s", "5m", "90m", "1h"] {
            XCTAssertEqual(ConfigSyntax.parseDuration(text).map(ConfigSyntax.formatDuration), text)
        }
    }

    func testSizeParsing() {
        XCTAssertEqual(ConfigSyntax.parseSize("65536"), 65536)
        XCTAssertEqual(ConfigSyntax.parseSize("64KiB"), 65536)
        XCTAssertEqual(ConfigSyntax.parseSize("1MiB"), 1 << 20)
        XCTAssertEqual(ConfigSyntax.parseSize("1GiB"), 1 << 30)
        for bad in ["", "KiB", "64kib", "64KB", "64 KiB", "-1", "1.5MiB", "99999999999GiB"] {
            XCTAssertNil(ConfigSyntax.parseSize(bad), bad)
        }
    }

    func testListenAddressParsing() {
        XCTAssertEqual(ListenAddress("127.0.0.1:8080"), ListenAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(ListenAddress("[::1]:8080"), ListenAddress(host: "::1", port: 8080))
        XCTAssertEqual(ListenAddress("localhost:0"), ListenAddress(host: "localhost", port: 0))
        for text in ["127.0.0.1:8080", "[::1]:8080", "localhost:0"] {
            XCTAssertEqual(ListenAddress(text)?.description, text)
        }
        for bad in ["", "127.0.0.1", ":80", "[::1]", "[::1]8080", "::1:8080", "host:65536", "host:08x"] {
            XCTAssertNil(ListenAddress(bad), bad)
        }
    }

    func testLoopbackDetection() {
        for host in ["127.0.0.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "localhost", "LocalHost"] {
            XCTAssertTrue(ListenAddress(host: host, port: 1).isLoopback, host)
        }
        for host in ["0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "::2", "localhost.example.com", "example.com"] {
            XCTAssertFalse(ListenAddress(host: host, port: 1).isLoopback, host)
        }
    }

    func testUpstreamTargetDefaultsAndAuthority() {
        XCTAssertEqual(UpstreamTarget(scheme: "http", host: "a.test").port, 80)
        XCTAssertEqual(UpstreamTarget(scheme: "https", host: "a.test").port, 443)
        XCTAssertEqual(UpstreamTarget(scheme: "https", host: "a.test").authority, "a.test")
        XCTAssertEqual(UpstreamTarget(scheme: "http", host: "a.test", port: 8080).authority, "a.test:8080")
        XCTAssertEqual(UpstreamTarget(scheme: "http", host: "::1", port: 80).authority, "[::1]")
        XCTAssertEqual(UpstreamTarget(url: "http://[::1]:81/")?.description, "http://[::1]:81")
        XCTAssertEqual(Upstream.origin.description, "origin")
    }

    func testEditDistanceForSuggestions() {
        XCTAssertEqual(ConfigReader.editDistance("", "abc"), 3)
        XCTAssertEqual(ConfigReader.editDistance("listn", "listen"), 1)
        XCTAssertEqual(ConfigReader.suggestion(for: "wrokers", among: ConfigReader.topLevelKeys), "; did you mean \"workers\"?")
        XCTAssertEqual(ConfigReader.suggestion(for: "totally_else", among: ConfigReader.topLevelKeys), "")
    }
}

import AirlockTesting
import Foundation
import XCTest

/// The dashboard (issue #22): `GET /` on the admin listener, driven in headless Chromium over the
/// DevTools protocol (`Chromium.Page`) against the built `airlock`, real traffic from curl through
/// it to an origin on 127.0.0.1:0 that sends a download slowly.
final class DashboardTests: XCTestCase {
    private var airlock: AirlockProcess?
    private var origin: TCPTestServer?
    private var page: Chromium.Page?
    private var caDir: String?

    override func tearDown() {
        page?.close()
        airlock?.stop()
        origin?.stop()
        if let caDir { try? FileManager.default.removeItem(atPath: caDir) }
    }

    static let token = "dashboard-test-token-0123456789"
    /// The slow download: 8 MiB, 32 KiB every 50 ms (about 13 s unless cancelled).
    static let slowBytes = 8 * 1024 * 1024

    /// An origin: `/slow` trickles `slowBytes`; anything else answers 200 with an HTML body (which the
    /// `json` route rejects: `unacceptable-content-type`).
    private func startOrigin() throws -> TCPTestServer {
        let s = try TCPTestServer { c in
            guard let head = try? c.read(through: "\r\n\r\n", timeout: 10) else { return }
            if String(decoding: head, as: UTF8.self).hasPrefix("GET /slow ") {
                try? c.write("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(Self.slowBytes)\r\n\r\n")
                let chunk = [UInt8](repeating: 0x61, count: 32 * 1024)
                for _ in 0..<(Self.slowBytes / chunk.count) {
                    guard (try? c.write(chunk, timeout: 10)) != nil else { return }
                    usleep(50_000)
                }
            } else {
                let body = "<h1>not json</h1>"
                try? c.write("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
        }
        origin = s
        return s
    }

    /// A gateway in front of `o` (route `json` for `/j/`, responses must be JSON; route `api` for the
    /// rest) with its admin listener on a free port; `extra` adds top-level lines.
    private func startGateway(_ o: TCPTestServer, extra: String = "") throws -> (AirlockProcess, UInt16) {
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 2
            \(Fixture.limitsYAML(["upstream_timeout": "30s"]))
            admin: 127.0.0.1:0
            \(extra)
            routes:
              - name: json
                match: { host: "*", path_prefix: /j/ }
                upstream: http://127.0.0.1:\(o.port)
                response: { serializer: json }
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
            """)
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return (a, UInt16(try XCTUnwrap(record["port"] as? Int)))
    }

    /// curl downloading `/slow` through the gateway in the background, as request id `id`.
    private func startDownload(_ a: AirlockProcess, id: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Curl.executable)
        p.arguments = ["-s", "-o", "/dev/null", "-w", "%{size_download}", "--max-time", "40", "--noproxy", "*",
                       "-H", "X-Request-Id: \(id)", "http://127.0.0.1:\(a.port)/slow"]
        p.standardOutput = Pipe()
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    private func admin(_ port: UInt16, _ method: String, _ path: String, token: String? = nil) throws -> RawResponse {
        let c = try RawClient(port: port)
        defer { c.close() }
        let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        return try c.exchange("\(method) \(path) HTTP/1.1\r\nHost: admin\r\n\(auth)\r\n", method: method)
    }

    private func taskIDs(_ port: UInt16, token: String? = nil) throws -> [String] {
        let json = Fixture.json(try admin(port, "GET", "/tasks", token: token).body)
        return (json["tasks"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    /// Where the tests keep their screenshots: `<package>/.build/dashboard/`.
    static let screenshots: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/dashboard").path

    private static func progressOf(_ id: String) -> String {
        "(document.querySelector('tr.task[data-id=\"\(id)\"] progress.down') || {value: -1}).value"
    }

    // MARK: the page itself

    /// `GET /` is the page: HTML with its script and style inline (nothing from another origin),
    /// a policy that keeps it so, valid for an offline validator (tidy); served without the token,
    /// which it holds no data for, while every data path still needs it.
    func testPageIsServedSelfContainedAndValid() throws {
        try Requirement.tool("/usr/bin/tidy")
        let (_, port) = try startGateway(try startOrigin(), extra: "admin_token: \(Self.token)")
        let r = try admin(port, "GET", "/")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("content-type"), "text/html; charset=utf-8")
        let csp = try XCTUnwrap(r.header("content-security-policy"))
        XCTAssertTrue(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"), csp)
        let html = String(decoding: r.body, as: UTF8.self)
        XCTAssertTrue(html.hasPrefix("<!DOCTYPE html>"))
        XCTAssertTrue(html.contains("data-token=\"required\""), "the page knows to ask for the token")
        XCTAssertFalse(html.contains(Self.token), "the page never carries the token")
        for remote in ["://", "src=", "url(", "@import", "import("] {
            XCTAssertFalse(html.contains(remote), "nothing loaded from elsewhere: \(remote)")
        }
        XCTAssertEqual(try admin(port, "GET", "/tasks").status, 401, "data still needs the token")
        XCTAssertEqual(try admin(port, "POST", "/").status, 405)
        XCTAssertEqual(try admin(port, "GET", "/?from=bookmark").body, r.body, "a query string still gets the page")
        XCTAssertEqual(Fixture.json(try admin(port, "GET", "/ca", token: Self.token).body)["configured"] as? Bool, false)

        let file = Fixture.tempFile("dashboard.html")
        try Data(r.body).write(to: URL(fileURLWithPath: file))
        let tidy = try runProcess("/usr/bin/tidy", ["-errors", "-quiet", file], timeout: 20)
        XCTAssertEqual(tidy.exitCode, 0, "tidy: \(tidy.stderr)\(tidy.stdoutString)")
        XCTAssertEqual(tidy.stderr + tidy.stdoutString, "")
    }

    // MARK: live, in Chromium

    /// With curl downloading slowly through the gateway, the page lists the task with a download
    /// bar that moves; a rejected response shows up with its reason within a second; the cancel
    /// button cancels the download (curl sees it cut short, `/tasks` drops it); and the page logs
    /// no console error meanwhile. The screenshot stays in `.build/dashboard/live.png`.
    func testLivePageShowsProgressRejectsAndCancels() throws {
        let (a, port) = try startGateway(try startOrigin())
        let p = try Chromium.Page(url: "http://127.0.0.1:\(port)/")
        page = p
        XCTAssertTrue(try p.wait(until: "document.getElementById('conn').textContent === 'live'", timeout: 10),
                      "the event stream is open")
        let download = try startDownload(a, id: "dash-slow-1")
        defer { if download.isRunning { download.terminate() } }

        // In flight, with a bar that moves.
        XCTAssertTrue(try p.wait(until: "\(Self.progressOf("dash-slow-1")) > 0", timeout: 10), "the download is shown")
        let first = try XCTUnwrap(try p.evaluate(Self.progressOf("dash-slow-1")) as? Double)
        XCTAssertTrue(try p.wait(until: "\(Self.progressOf("dash-slow-1")) > \(first)", timeout: 5),
                      "the progress bar moves past \(first)")
        let row = try XCTUnwrap(try p.evaluate("document.querySelector('tr.task[data-id=\"dash-slow-1\"]').textContent") as? String)
        XCTAssertTrue(row.contains("/slow") && row.contains("GET") && row.contains("api") && row.contains("of 8.0 MiB"), row)
        XCTAssertTrue(try p.wait(until: "/ of 8\\.0 MiB · [0-9.]+ [KM]iB\\/s/.test(document.querySelector('tr.task[data-id=\"dash-slow-1\"]').textContent)",
                                 timeout: 5), "the download's rate is shown")

        // A reject, with its reason, within a second of the client's answer.
        let rejected = try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                                     "http://127.0.0.1:\(a.port)/j/bad"], timeout: 10)
        XCTAssertEqual(rejected.stdoutString, "502")
        let seenAt = Date()
        XCTAssertTrue(try p.wait(until: "[...document.querySelectorAll('#rejects li.reject .reason')]"
                                 + ".some(e => e.textContent === 'unacceptable-content-type')", timeout: 1),
                      "the reject is shown within a second")
        XCTAssertLessThan(Date().timeIntervalSince(seenAt), 1.5)
        // Expanded, the full record: the body sample as text, the command to read it again.
        let details = try XCTUnwrap(try p.evaluate("""
            (() => { const d = document.querySelector('#rejects li.reject details'); d.open = true;
              return d.querySelector('pre.sample').textContent + '|' + d.querySelector('code.command').textContent
                + '|' + d.textContent; })()
            """) as? String)
        XCTAssertTrue(details.hasPrefix("<h1>not json</h1>|airlock rejects --admin 127.0.0.1:\(port) --since "), details)
        XCTAssertTrue(details.contains("--route json --side response"), details)
        for field in ["content typetext/html", "status200", "request id", "reasonunacceptable-content-type", "modeenforce"] {
            XCTAssertTrue(details.contains(field), "\(field) in \(details)")
        }
        // Filtered by side and by route: the request side has none; route json has it.
        func shownWith(_ id: String, _ value: String) throws -> Int? {
            try p.evaluate("""
                (() => { const s = document.getElementById('\(id)'); s.value = '\(value)'; s.dispatchEvent(new Event('change'));
                  return new Promise(r => requestAnimationFrame(() => r(document.querySelectorAll('#rejects li.reject').length))); })()
                """) as? Int
        }
        XCTAssertEqual(try shownWith("f-side", "request"), 0)
        XCTAssertEqual(try shownWith("f-side", "response"), 1)
        XCTAssertEqual(try p.evaluate("[...document.getElementById('f-route').options].map(o => o.value)") as? [String],
                       ["", "json"], "the route filter offers the routes that have rejects")
        XCTAssertEqual(try shownWith("f-route", "json"), 1)
        // The command is copied (or, where the clipboard is refused, selected for Ctrl+C).
        try p.evaluate("document.querySelector('#rejects button.copy').click()")
        XCTAssertTrue(try p.wait(until: "document.querySelector('#rejects button.copy').textContent !== 'Copy command'", timeout: 3))
        let copied = try XCTUnwrap(try p.evaluate("""
            (async () => { const b = document.querySelector('#rejects button.copy');
              return b.textContent === 'Copied' ? await navigator.clipboard.readText() : getSelection().toString(); })()
            """) as? String)
        XCTAssertEqual(copied, String(details.split(separator: "|")[1]))

        // A second reject comes first, and the first one stays open as it was.
        XCTAssertEqual(try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                                     "http://127.0.0.1:\(a.port)/j/second"], timeout: 10).stdoutString, "502")
        XCTAssertTrue(try p.wait(until: "document.querySelectorAll('#rejects li.reject').length === 2", timeout: 1))
        let order = try XCTUnwrap(try p.evaluate("[...document.querySelectorAll('#rejects li.reject summary')].map(s => s.textContent)")
            as? [String])
        XCTAssertTrue(order[0].hasSuffix("/j/second") && order[1].hasSuffix("/j/bad"), "most recent first: \(order)")
        XCTAssertEqual(try p.evaluate("[...document.querySelectorAll('#rejects li.reject details')].map(d => d.open)") as? [Bool],
                       [false, true])

        try FileManager.default.createDirectory(atPath: Self.screenshots, withIntermediateDirectories: true)
        try p.evaluate("(() => { const s = document.getElementById('f-side'); s.value = ''; s.dispatchEvent(new Event('change')); })()")
        try p.screenshot(to: Self.screenshots + "/live.png")

        // Cancel from the page.
        XCTAssertTrue(try taskIDs(port).contains("dash-slow-1"))
        try p.evaluate("document.querySelector('tr.task[data-id=\"dash-slow-1\"] button.cancel').click()")
        let deadline = Date().addingTimeInterval(10)
        while download.isRunning, Date() < deadline { usleep(20_000) }
        guard !download.isRunning else { return XCTFail("curl's download goes on: the cancel did not reach it") }
        XCTAssertEqual(download.terminationStatus, 18, "curl saw the body cut short (CURLE_PARTIAL_FILE)")
        let got = Int(String(decoding: (download.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(),
                             as: UTF8.self)) ?? -1
        XCTAssertGreaterThan(got, 0)
        XCTAssertLessThan(got, Self.slowBytes)
        XCTAssertFalse(try taskIDs(port).contains("dash-slow-1"), "/tasks no longer lists it")
        XCTAssertTrue(try p.wait(until: "!document.querySelector('tr.task[data-id=\"dash-slow-1\"]')", timeout: 3),
                      "the page drops the row")

        XCTAssertEqual(try p.consoleErrors(), [], "no console errors")
    }

    /// With `admin_token` set the page shows nothing and asks for data nowhere until the token is
    /// given; a wrong one is refused; the right one shows the data, travels only in a header, and is
    /// kept for the tab: a reload does not ask again.
    func testTokenPromptGatesEverything() throws {
        let (a, port) = try startGateway(try startOrigin(), extra: "admin_token: \(Self.token)")
        let download = try startDownload(a, id: "dash-gated-1")
        defer { if download.isRunning { download.terminate() } }
        XCTAssertEqual(try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                                     "http://127.0.0.1:\(a.port)/j/bad"], timeout: 10).stdoutString, "502")
        let deadline = Date().addingTimeInterval(10)
        while try !taskIDs(port, token: Self.token).contains("dash-gated-1"), Date() < deadline { usleep(50_000) }

        let p = try Chromium.Page(url: "http://127.0.0.1:\(port)/")
        page = p
        let dataPaths = "performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)"
        XCTAssertEqual(try p.evaluate("document.getElementById('login').hidden") as? Bool, false, "the prompt is shown")
        XCTAssertEqual(try p.evaluate("document.getElementById('main').hidden") as? Bool, true)
        usleep(1_000_000)   // what the page would have fetched by now without a gate
        XCTAssertEqual(try p.evaluate("document.querySelectorAll('tr.task, li.reject, tr.upstream').length") as? Int, 0)
        XCTAssertEqual(try p.evaluate(dataPaths) as? [String], [], "no request before the token")

        // A wrong token: refused, still nothing shown.
        try p.evaluate("document.getElementById('token').value = 'wrong-token-0123456789'; document.getElementById('login').requestSubmit()")
        XCTAssertTrue(try p.wait(until: "document.getElementById('login-error').textContent === 'the token was refused'", timeout: 5))
        XCTAssertEqual(try p.evaluate("document.getElementById('main').hidden") as? Bool, true)

        // The right one: the data appears.
        try p.evaluate("document.getElementById('token').value = '\(Self.token)'; document.getElementById('login').requestSubmit()")
        XCTAssertTrue(try p.wait(until: "document.querySelector('tr.task[data-id=\"dash-gated-1\"]')", timeout: 5))
        XCTAssertTrue(try p.wait(until: "document.querySelector('#rejects li.reject')", timeout: 5))
        XCTAssertTrue(try p.wait(until: "document.getElementById('conn').textContent === 'live'", timeout: 5))
        let urls = try XCTUnwrap(try p.evaluate("performance.getEntriesByType('resource').map(e => e.name)") as? [String])
        XCTAssertTrue(urls.contains { $0.hasSuffix("/tasks") } && urls.contains { $0.hasSuffix("/rejects") }, "\(urls)")
        for u in urls { XCTAssertFalse(u.contains(Self.token) || u.contains("not json"), "no token or sample in a URL: \(u)") }

        // Kept for the tab: a reload shows the data without asking.
        try p.evaluate("location.reload()")
        XCTAssertTrue(try p.wait(until: "performance.getEntriesByType('navigation')[0].type === 'reload'"
                                 + " && document.querySelector('tr.task[data-id=\"dash-gated-1\"]')", timeout: 10))
        XCTAssertEqual(try p.evaluate("document.getElementById('login').hidden") as? Bool, true)
    }

    /// Traffic and tunnels: after requests through the gateway the page counts them by status
    /// class and draws them (2xx-green pixels on the canvas); an open CONNECT tunnel is listed with
    /// the bytes it carried each way. The screenshot stays in `.build/dashboard/traffic.png`.
    func testTrafficChartAndTunnelsAreShown() throws {
        let o = try startOrigin()
        let echo = try TCPTestServer { c in
            guard (try? c.read(exactly: 3000, timeout: 10)) != nil else { return }
            try? c.write([UInt8](repeating: 0x62, count: 5000))
            _ = try? c.readToEnd(timeout: 20)
        }
        defer { echo.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 2
            \(Fixture.limitsYAML([:]))
            admin: 127.0.0.1:0
            routes:
              - name: tun
                match: { host: "127.0.0.1" }
                connect: tunnel
                connect_ports: [\(echo.port)]
                upstream: origin
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
            """)
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let port = UInt16(try XCTUnwrap(record["port"] as? Int))
        let p = try Chromium.Page(url: "http://127.0.0.1:\(port)/")
        page = p
        XCTAssertTrue(try p.wait(until: "document.getElementById('traffic-totals').textContent.includes('2xx 0')", timeout: 10))

        let greenPixels = """
            (() => { const c = document.getElementById('chart'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
              let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 200 && Math.abs(d[i] - 46) < 12 && Math.abs(d[i + 1] - 157) < 12 && Math.abs(d[i + 2] - 91) < 12) n++;
              return n; })()
            """
        XCTAssertEqual(try p.evaluate(greenPixels) as? Int, 0, "no 2xx bar before any request")
        for i in 0..<12 {
            XCTAssertEqual(try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: app.test",
                                         "http://127.0.0.1:\(a.port)/page/\(i)"], timeout: 10).stdoutString, "200")
        }
        XCTAssertTrue(try p.wait(until: "document.getElementById('traffic-totals').textContent.includes('2xx 12,')", timeout: 6),
                      "the totals count the 12 requests")
        XCTAssertTrue(try p.wait(until: "\(greenPixels) > 0", timeout: 6), "the 2xx bar is drawn")

        let tunnel = try TCPTestConnection.connect(port: a.port)
        defer { tunnel.close() }
        try tunnel.write("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\n")
        XCTAssertEqual(String(decoding: try tunnel.read(through: "\r\n\r\n", timeout: 10), as: UTF8.self),
                       "HTTP/1.1 200 Connection established\r\n\r\n")
        try tunnel.write([UInt8](repeating: 0x61, count: 3000))
        XCTAssertEqual(try tunnel.read(exactly: 5000, timeout: 10).count, 5000)
        XCTAssertTrue(try p.wait(until: "[...document.querySelectorAll('#tunnels tr.tunnel')].some(r => r.textContent"
                                 + ".includes('127.0.0.1:\(echo.port)') && r.textContent.includes('2.9 KiB') && r.textContent.includes('4.9 KiB'))",
                                 timeout: 5), "the tunnel with 3000 bytes up and 5000 down")
        XCTAssertEqual(try p.evaluate("document.getElementById('tunnels-count').textContent") as? String, "1")
        try FileManager.default.createDirectory(atPath: Self.screenshots, withIntermediateDirectories: true)
        try p.screenshot(to: Self.screenshots + "/traffic.png")
        XCTAssertEqual(try p.consoleErrors(), [])
    }

    /// The test helper itself: a page whose driver died answers the next command with an error
    /// (EPIPE on its command socket), never a SIGPIPE that would end the whole test process.
    func testChromiumPageWhoseDriverDiedThrows() throws {
        let (_, port) = try startGateway(try startOrigin())
        let p = try Chromium.Page(url: "http://127.0.0.1:\(port)/")
        page = p
        XCTAssertEqual(try p.evaluate("1 + 1") as? Int, 2)
        kill(p.driverPID, SIGKILL)
        let deadline = Date().addingTimeInterval(5)
        while kill(p.driverPID, 0) == 0, Date() < deadline { usleep(20_000) }   // gone (reaped) once its socket end is closed
        XCTAssertThrowsError(try p.evaluate("1 + 1"))
        XCTAssertThrowsError(try p.evaluate("2 + 2"), "and again, once its socket is closed")
    }

    /// `GET /events?kinds=rejected,cancelled` (what the page asks for) streams only those kinds:
    /// a completed request posts nothing to it (the gateway builds no event for a kind nobody
    /// takes), a rejected one arrives; an unknown kind is refused.
    func testEventsStreamOnlyTheKindsAsked() throws {
        let (a, port) = try startGateway(try startOrigin())
        XCTAssertEqual(try admin(port, "GET", "/events?kinds=rejected,finished").status, 400)
        XCTAssertEqual(try admin(port, "GET", "/events?kinds=").status, 400)
        XCTAssertEqual(try admin(port, "GET", "/tasks?kinds=rejected").status, 400)

        let s = try RawClient(port: port)
        defer { s.close() }
        try s.send("GET /events?kinds=rejected,cancelled HTTP/1.1\r\nHost: admin\r\n\r\n")
        var text = ""
        func read(until marker: String) throws {
            let deadline = Date().addingTimeInterval(5)
            while !text.contains(marker), Date() < deadline {
                text += String(decoding: try s.read(upTo: 65_536, timeout: 1), as: UTF8.self)
            }
        }
        try read(until: ": airlock task events")   // subscribed: the head is written when it is
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        let first = try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Request-Id: ev-first",
                               "http://127.0.0.1:\(a.port)/j/nothing-wrong"], timeout: 10)
        XCTAssertEqual(first.stdoutString, "502")
        XCTAssertEqual(try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Request-Id: ev-fine",
                                     "http://127.0.0.1:\(a.port)/fine"], timeout: 10).stdoutString, "200")
        XCTAssertEqual(try Curl.run(["-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Request-Id: ev-last",
                                     "http://127.0.0.1:\(a.port)/j/bad"], timeout: 10).stdoutString, "502")
        try read(until: "\"id\":\"ev-last\"")
        XCTAssertTrue(text.contains("event: rejected\ndata: {\"event\":\"rejected\",\"id\":\"ev-first\""), text)
        XCTAssertTrue(text.contains("event: rejected\ndata: {\"event\":\"rejected\",\"id\":\"ev-last\""), text)
        XCTAssertFalse(text.contains("ev-fine"), "the completed request posts nothing: \(text)")
        XCTAssertFalse(text.contains("event: resumed") || text.contains("event: completed"), text)
    }

    /// `GET /upstreams` gives an https upstream's pinning (mode, scope, pins) and, once a request
    /// went through, its last handshake: the leaf's subject, issuer and expiry and the certificate
    /// whose pin matched — here the root, which the server does not send (the validated chain
    /// counts, as in the policy). The page shows them.
    func testUpstreamTLSDetailsAreServedAndShown() throws {
        let pki = try TLSTestPKI.generate()
        defer { pki.remove() }
        let o = try TLSTestOrigin(pki: pki)
        defer { o.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:0
            routes:
              - name: tls
                match: { host: "*" }
                upstream: https://localhost:\(o.port)
                security:
                  ca: "\(pki.path("root.pem"))"
                  pinning: public-key
                  pins: ["\(pki.pin("root"))"]
            """)
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let port = UInt16(try XCTUnwrap(record["port"] as? Int))
        func security() throws -> [String: Any] {
            let json = Fixture.json(try admin(port, "GET", "/upstreams").body)
            let upstream = (json["upstreams"] as? [[String: Any]])?.first { $0["route"] as? String == "tls" }
            return try XCTUnwrap(upstream?["security"] as? [String: Any], "\(json)")
        }
        let before = try security()
        XCTAssertEqual(before["pinning"] as? String, "public-key")
        XCTAssertEqual(before["pin_scope"] as? String, "chain")
        XCTAssertEqual(before["pins"] as? [String], [pki.pin("root")])
        XCTAssertTrue(before["last_handshake"] is NSNull, "no handshake yet: \(before)")

        let c = try RawClient(port: a.port)
        defer { c.close() }
        XCTAssertEqual(try c.exchange("GET /tls HTTP/1.1\r\nHost: app.example.test\r\n\r\n").status, 200)
        let handshake = try XCTUnwrap(try security()["last_handshake"] as? [String: Any])
        XCTAssertTrue((handshake["subject"] as? String ?? "").contains("localhost"), "\(handshake)")
        XCTAssertTrue((handshake["issuer"] as? String ?? "").contains("Intermediate"), "\(handshake)")
        XCTAssertFalse((handshake["expires"] as? String ?? "").isEmpty)
        XCTAssertEqual(handshake["resumed"] as? Bool, false)
        let matched = try XCTUnwrap(handshake["pin_matched"] as? [String: Any], "\(handshake)")
        XCTAssertEqual(matched["pin"] as? String, pki.pin("root"))
        XCTAssertTrue((matched["subject"] as? String ?? "").contains("Root"), "\(matched)")

        let p = try Chromium.Page(url: "http://127.0.0.1:\(port)/")
        page = p
        XCTAssertTrue(try p.wait(until: "document.getElementById('upstream-security').textContent.includes('\(pki.pin("root"))')",
                                 timeout: 10))
        let row = try XCTUnwrap(try p.evaluate("document.querySelector('#upstreams tr.upstream').textContent") as? String)
        XCTAssertTrue(row.hasPrefix("tls") && row.contains("https://localhost:\(o.port)"), row)
        let shown = try XCTUnwrap(try p.evaluate("document.getElementById('upstream-security').textContent") as? String)
        XCTAssertTrue(shown.contains("public-key") && shown.contains("localhost") && shown.contains("pin matched"), shown)
        XCTAssertEqual(try p.consoleErrors(), [])
    }

    /// `GET /ca` gives the local CA's facts (what `airlock ca show` prints), and the page shows
    /// its fingerprint and how to trust it; without `ca:` it says there is none.
    func testCAFactsAreServedAndShown() throws {
        let dir = NSTemporaryDirectory() + "airlock-dashboard-ca-\(UUID().uuidString)"
        caDir = dir
        let made = try runProcess(AirlockProcess.builtExecutable(), ["ca", "init", "--dir", dir])
        XCTAssertEqual(made.exitCode, 0, made.stderr)
        let shown = try runProcess(AirlockProcess.builtExecutable(), ["ca", "show", "--dir", dir])
        let fingerprint = try XCTUnwrap(shown.stdoutString.split(separator: "\n")
            .first { $0.hasPrefix("sha256 fingerprint: ") }.map { String($0.dropFirst("sha256 fingerprint: ".count)) })
        let (_, port) = try startGateway(try startOrigin(), extra: """
            ca:
              certificate: "\(dir)/airlock-ca.pem"
              key: "\(dir)/airlock-ca.key"
            """)
        let json = Fixture.json(try admin(port, "GET", "/ca").body)
        XCTAssertEqual(json["configured"] as? Bool, true)
        XCTAssertEqual(json["sha256_fingerprint"] as? String, fingerprint)
        XCTAssertEqual(json["certificate"] as? String, "\(dir)/airlock-ca.pem")
        XCTAssertGreaterThan(json["expires_unix"] as? Int ?? 0, Int(Date().timeIntervalSince1970))
        XCTAssertTrue(shown.stdoutString.contains("expires: \(json["expires"] as? String ?? "?")"), shown.stdoutString)

        let p = try Chromium.Page(url: "http://127.0.0.1:\(port)/")
        page = p
        XCTAssertTrue(try p.wait(until: "document.querySelector('#ca .fingerprint')", timeout: 10))
        XCTAssertEqual(try p.evaluate("document.querySelector('#ca .fingerprint').textContent") as? String, fingerprint)
        let how = try XCTUnwrap(try p.evaluate("document.querySelector('#ca pre.trust').textContent") as? String)
        XCTAssertTrue(how.contains("curl --cacert \(dir)/airlock-ca.pem --proxy"), how)
        XCTAssertEqual(try p.consoleErrors(), [])
    }
}

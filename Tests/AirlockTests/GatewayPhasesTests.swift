import AirlockConfig
import AirlockIO
import AirlockSerialization
import AirlockSession
import AirlockWire
import Foundation
import Logging
import XCTest
@testable import Airlock

/// Records logged through a `Logger`, kept in memory (the phases' log sink in these tests).
private final class Records: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [(message: String, metadata: Logger.Metadata)] = []
    var all: [(message: String, metadata: Logger.Metadata)] { lock.withLock { kept } }
    func messages(_ m: String) -> [Logger.Metadata] { all.filter { $0.message == m }.map(\.metadata) }
    func append(_ m: String, _ md: Logger.Metadata) { lock.withLock { kept.append((m, md)) } }
}

private struct RecordingHandler: LogHandler {
    let records: Records
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        records.append(event.message.description, metadata.merging(event.metadata ?? [:]) { $1 })
    }
}

/// Each of the gateway's phases (`GatewayPhases`) asked directly over a `PhaseContext` made
/// here: no event loop, no socket, no process. Each test asserts one phase's decision.
final class GatewayPhasesTests: XCTestCase {
    private let records = Records()
    private static let via = "airlock-test-via"
    private static let ownListener = SocketAddress(ipLiteral: "127.0.0.1", port: 3128)!

    private func phases(_ yaml: String, bodyBytes: Int64 = 1000) throws -> GatewayPhases {
        let config = try AirlockConfig.load(yaml: yaml)
        let records = self.records
        let metrics = GatewayMetrics(config: config)
        return GatewayPhases(PhaseContext(
            routes: Route.table(config, metrics: metrics), bodyBytes: bodyBytes, viaToken: Self.via, via11: "1.1 \(Self.via)",
            idPrefix: HeadWriter.FieldPrefix(name: "X-Request-Id", valuePrefix: "t-0-"),
            ownListeners: OwnListeners([Self.ownListener], interfaces: []), metrics: metrics,
            rejects: RejectLog(capacity: 10), logger: Logger(label: "phases") { _ in RecordingHandler(records: records) },
            logsAccess: true, accessLog: nil, taskEvents: nil))
    }

    private static let originRoute = """
        routes:
          - name: any
            match: { host: "*" }
            upstream: origin
        """

    private func head(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestParser.parse($0, limits: WireLimits()) }
    }

    private func exchange(_ p: GatewayPhases, _ text: String) throws -> Exchange {
        let req = try head(text)
        let peer = try p.upstreamPeer(req).get()
        let ex = Exchange(client: nil, id: RequestID(prefix: "t", worker: 0, serial: 1), request: req, limits: WireLimits())
        ex.routed(peer)
        return ex
    }

    private func error<T>(_ r: Result<T, GatewayError>, file: StaticString = #filePath, line: UInt = #line) -> GatewayError? {
        if case .failure(let e) = r { return e }
        XCTFail("expected a refusal", file: file, line: line)
        return nil
    }

    // MARK: request filter

    func testRequestFilterRefusesACONNECTThatDeclaresABody() throws {
        let p = try phases(Self.originRoute)
        let e = p.requestFilter(try head("CONNECT x.test:443 HTTP/1.1\r\nHost: x.test:443\r\nContent-Length: 5\r\n\r\n"))
        XCTAssertEqual(e?.status, 400)
        XCTAssertEqual(e?.code, .connectWithBody)
        XCTAssertEqual(e?.mustClose, true)
        XCTAssertNil(p.requestFilter(try head("CONNECT x.test:443 HTTP/1.1\r\nHost: x.test:443\r\nContent-Length: 0\r\n\r\n")),
                     "an empty declared body is no body")
    }

    func testRequestFilterRefusesADeclaredBodyOverTheLimit() throws {
        let p = try phases(Self.originRoute, bodyBytes: 100)
        let e = p.requestFilter(try head("POST /up HTTP/1.1\r\nHost: a.test\r\nContent-Length: 101\r\n\r\n"))
        XCTAssertEqual(e?.status, 413)
        XCTAssertEqual(e?.code, .bodyTooLarge)
        XCTAssertEqual(e?.mustClose, true)
    }

    func testRequestFilterAnswersALoopThroughThisGateway() throws {
        let p = try phases(Self.originRoute)
        let e = p.requestFilter(try head("GET / HTTP/1.1\r\nHost: a.test\r\nVia: 1.1 other, 1.1 \(Self.via)\r\n\r\n"))
        XCTAssertEqual(e?.status, 508)
        XCTAssertEqual(e?.code, .loopDetected)
    }

    func testRequestFilterPassesACleanRequest() throws {
        let p = try phases(Self.originRoute, bodyBytes: 100)
        XCTAssertNil(p.requestFilter(try head("POST /up HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\nVia: 1.1 other\r\n\r\n")),
                     "a body at the limit and another proxy's Via pass")
        XCTAssertNil(p.requestFilter(try head("CONNECT x.test:443 HTTP/1.1\r\nHost: x.test:443\r\n\r\n")))
    }

    // MARK: upstream peer

    private static let fixedRoutes = """
        routes:
          - name: api-v1
            match: { host: api.example.test, path_prefix: /v1 }
            upstream: http://127.0.0.1:9001
          - name: api
            match: { host: api.example.test }
            upstream: https://backend.test:8443
          - name: open
            match: { host: "*.open.test" }
            upstream: origin
        """

    func testUpstreamPeerTakesTheFirstMatchingRoute() throws {
        let p = try phases(Self.fixedRoutes)
        let v1 = try p.upstreamPeer(head("GET /v1/users HTTP/1.1\r\nHost: api.example.test\r\n\r\n")).get()
        XCTAssertEqual(v1.route.config.name, "api-v1")
        let other = try p.upstreamPeer(head("GET /v2/users HTTP/1.1\r\nHost: api.example.test\r\n\r\n")).get()
        XCTAssertEqual(other.route.config.name, "api")
    }

    func testUpstreamPeerOfAFixedRouteIsItsUpstreamWhateverTheRequestNames() throws {
        let p = try phases(Self.fixedRoutes)
        let peer = try p.upstreamPeer(head("GET http://api.example.test:7000/x HTTP/1.1\r\nHost: api.example.test:7000\r\n\r\n")).get()
        XCTAssertEqual(peer.route.config.name, "api")
        XCTAssertEqual(peer.key.scheme, "https")
        XCTAssertEqual(peer.key.host, "backend.test")
        XCTAssertEqual(peer.key.port, 8443)
        XCTAssertEqual(peer.key, peer.route.fixedKey)
    }

    func testUpstreamPeerOfAnOriginRouteIsWhatTheRequestNames() throws {
        let p = try phases(Self.fixedRoutes)
        let plain = try p.upstreamPeer(head("GET http://a.open.test/x HTTP/1.1\r\nHost: a.open.test\r\n\r\n")).get()
        XCTAssertEqual(plain.route.config.name, "open")
        XCTAssertEqual(plain.key, UpstreamKey(scheme: "http", host: "a.open.test", port: 80, trust: ""),
                       "plain http carries no trust identity")
        let tls = try p.upstreamPeer(head("GET https://a.open.test:8443/x HTTP/1.1\r\nHost: a.open.test:8443\r\n\r\n")).get()
        XCTAssertEqual(tls.key.scheme, "https")
        XCTAssertEqual(tls.key.port, 8443)
        XCTAssertEqual(tls.key.trust, tls.route.config.security.trustIdentity, "https is keyed by the route's trust")
        XCTAssertFalse(tls.key.trust.isEmpty)
    }

    func testUpstreamPeerRefusesARequestNoRouteMatches() throws {
        let p = try phases(Self.fixedRoutes)
        let e = error(p.upstreamPeer(try head("GET / HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")))
        XCTAssertEqual(e?.status, 403)
        XCTAssertEqual(e?.code, .noRoute)
    }

    // MARK: connect peer

    private static let connectRoutes = """
        routes:
          - name: closed
            match: { host: closed.test }
            upstream: origin
            connect: deny
          - name: pinned
            match: { host: pinned.test }
            upstream: https://real.test:9443
            connect: tunnel
          - name: open
            match: { host: "*" }
            upstream: origin
            connect: tunnel
            connect_ports: [443, 8443]
        """

    func testConnectPeerRefusesARouteThatDeniesCONNECT() throws {
        let p = try phases(Self.connectRoutes)
        let e = error(p.connectPeer(try head("CONNECT closed.test:443 HTTP/1.1\r\nHost: closed.test:443\r\n\r\n")))
        XCTAssertEqual(e?.status, 403)
        XCTAssertEqual(e?.code, .connectDenied)
        XCTAssertEqual(e?.mustClose, true)
    }

    func testConnectPeerRefusesAPortTheRouteDoesNotAllow() throws {
        let p = try phases(Self.connectRoutes)
        let e = error(p.connectPeer(try head("CONNECT a.test:22 HTTP/1.1\r\nHost: a.test:22\r\n\r\n")))
        XCTAssertEqual(e?.status, 403)
        XCTAssertEqual(e?.code, .connectPortDenied)
        let ok = try p.connectPeer(head("CONNECT a.test:8443 HTTP/1.1\r\nHost: a.test:8443\r\n\r\n")).get()
        XCTAssertEqual(ok.route.config.name, "open")
        XCTAssertEqual(ok.host, "a.test")
        XCTAssertEqual(ok.port, 8443)
    }

    func testConnectPeerOfAFixedUpstreamTunnelsToItWhateverTheClientNamed() throws {
        let p = try phases(Self.connectRoutes)
        let peer = try p.connectPeer(head("CONNECT pinned.test:443 HTTP/1.1\r\nHost: pinned.test:443\r\n\r\n")).get()
        XCTAssertEqual(peer.route.config.name, "pinned")
        XCTAssertEqual(peer.host, "real.test")
        XCTAssertEqual(peer.port, 9443)
        XCTAssertEqual(peer.target, "pinned.test:443", "logs name what the client asked for")
    }

    func testConnectPeerOfAnIPv6AuthorityDialsItWithoutBrackets() throws {
        let p = try phases(Self.connectRoutes)
        let peer = try p.connectPeer(head("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n")).get()
        XCTAssertEqual(peer.host, "::1")
        XCTAssertEqual(peer.port, 443)
    }

    func testConnectPeerRefusesAnAuthorityNoRouteMatches() throws {
        let p = try phases("""
            routes:
              - name: only
                match: { host: only.test }
                upstream: origin
                connect: tunnel
            """)
        let e = error(p.connectPeer(try head("CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")))
        XCTAssertEqual(e?.status, 403)
        XCTAssertEqual(e?.code, .noRoute)
        XCTAssertEqual(e?.mustClose, true)
    }

    // MARK: egress filter

    private static let egressRoute = """
        routes:
          - name: guarded
            match: { host: "*" }
            upstream: origin
            egress:
              deny: [127.0.0.0/8]
        """

    private func address(_ ip: String, _ port: UInt16 = 80) -> SocketAddress { SocketAddress(ipLiteral: ip, port: port)! }

    func testEgressFilterRefusesWhenEveryAddressIsDenied() throws {
        let p = try phases(Self.egressRoute)
        let route = p.context.routes[0]
        let e = error(p.egressFilter([address("127.0.0.2")], host: "in.test", port: 80, route: route,
                                     id: RequestID(prefix: "t", worker: 0, serial: 1)))
        XCTAssertEqual(e?.status, 403)
        XCTAssertEqual(e?.code, .egressDenied)
        XCTAssertEqual(records.messages("egress.denied").count, 1, "one record names the denied addresses")
        XCTAssertEqual(records.messages("egress.denied").first?["refused"]?.description, "true")
    }

    func testEgressFilterKeepsTheAllowedAddressesOnly() throws {
        let p = try phases(Self.egressRoute)
        let route = p.context.routes[0]
        let kept = try p.egressFilter([address("127.0.0.2"), address("192.0.2.1")], host: "mixed.test", port: 80, route: route,
                                      id: RequestID(prefix: "t", worker: 0, serial: 1)).get()
        XCTAssertEqual(kept, [address("192.0.2.1")])
        XCTAssertEqual(records.messages("egress.denied").first?["refused"]?.description, "false")
        let all = try p.egressFilter([address("192.0.2.1")], host: "ok.test", port: 80, route: route,
                                     id: RequestID(prefix: "t", worker: 0, serial: 2)).get()
        XCTAssertEqual(all, [address("192.0.2.1")])
        XCTAssertEqual(records.messages("egress.denied").count, 1, "nothing denied, nothing recorded")
    }

    func testEgressFilterLetsOurOwnListenerThroughForTheLoopCheck() throws {
        let p = try phases(Self.egressRoute)
        let route = p.context.routes[0]
        let kept = try p.egressFilter([Self.ownListener], host: "self.test", port: 3128, route: route,
                                      id: RequestID(prefix: "t", worker: 0, serial: 1)).get()
        XCTAssertEqual(kept, [Self.ownListener], "508 is the loop check's answer, not 403")
        XCTAssertTrue(records.messages("egress.denied").isEmpty)
        XCTAssertFalse(p.egressAllows(address("127.0.0.2"), route: route), "a pooled connection is checked too")
        XCTAssertTrue(p.egressAllows(address("192.0.2.1"), route: route))
    }

    // MARK: fail to connect

    private static let key = UpstreamKey(scheme: "http", host: "up.test", port: 8080)

    func testFailToConnectRetriesARefusedAddressAndKeepsTheCircuitsRetryAfter() throws {
        let p = try phases(Self.originRoute)
        guard case .retry(let e) = p.failToConnect(.refused(address("192.0.2.1", 8080), "Connection refused", retryAfter: 7),
                                                   .upstream(Self.key)) else {
            return XCTFail("another address may answer")
        }
        XCTAssertEqual(e.status, 502, "the answer after the last address")
        XCTAssertEqual(e.code, .upstreamRefused)
        XCTAssertEqual(e.retryAfter, 7)
        XCTAssertEqual(e.message, "upstream 192.0.2.1:8080 refused the connection: Connection refused")
    }

    func testFailToConnectRetriesAnAddressThatCouldNotBeDialled() throws {
        let p = try phases(Self.originRoute)
        guard case .retry(let e) = p.failToConnect(.notDialled("Too many open files"), .upstream(Self.key)) else {
            return XCTFail("no socket for one address is no reason to skip the next")
        }
        XCTAssertEqual(e.code, .upstreamRefused)
        XCTAssertEqual(e.message, "cannot connect to upstream up.test:8080 (Too many open files)")
        XCTAssertNil(e.retryAfter)
    }

    func testFailToConnectAnswersWhatNoOtherAddressCanChange() throws {
        let p = try phases(Self.originRoute)
        guard case .answer(let unresolvable) = p.failToConnect(.unresolvable("NXDOMAIN"), .upstream(Self.key)) else {
            return XCTFail("no address to try")
        }
        XCTAssertEqual(unresolvable.status, 502)
        XCTAssertEqual(unresolvable.code, .upstreamUnresolvable)
        guard case .answer(let loop) = p.failToConnect(.ownListener(Self.ownListener), .upstream(Self.key)) else {
            return XCTFail("our own listener is a loop, whatever comes next")
        }
        XCTAssertEqual(loop.status, 508)
        XCTAssertEqual(loop.code, .loopDetected)
        let denied = GatewayError(.egressDenied, status: 403, message: "egress", source: .client)
        guard case .answer(let egress) = p.failToConnect(.egressRefused(denied), .upstream(Self.key)) else {
            return XCTFail("every address was already refused")
        }
        XCTAssertEqual(egress.code, .egressDenied)
        XCTAssertEqual(egress.status, 403)
    }

    func testFailToConnectNamesACONNECTTargetAndLetsTheTunnelMachineDecideItsTimeout() throws {
        let p = try phases(Self.originRoute)
        let tunnel = ConnectSubject.tunnel(host: "t.test", port: 443)
        guard case .retry(let refused) = p.failToConnect(.refused(address("192.0.2.1", 443), nil, retryAfter: nil), tunnel) else {
            return XCTFail("another address may answer")
        }
        XCTAssertEqual(refused.status, 502)
        XCTAssertEqual(refused.message, "192.0.2.1:443 refused the connection", "no socket error: nothing after the address")
        guard case .retry(let timedOut) = p.failToConnect(.timedOut(address("192.0.2.1", 443), .seconds(5)), tunnel) else {
            return XCTFail("the tunnel machine decides whether a timeout ends the attempts")
        }
        XCTAssertEqual(timedOut.status, 504)
        XCTAssertEqual(timedOut.code, .upstreamTimeout)
        XCTAssertEqual(timedOut.message, "connect to 192.0.2.1:443 timed out after 5.0 seconds")
        guard case .answer(let unresolvable) = p.failToConnect(.unresolvable("NXDOMAIN"), tunnel),
              case .answer(let loop) = p.failToConnect(.ownListener(Self.ownListener), tunnel),
              case .retry(let notDialled) = p.failToConnect(.notDialled("Too many open files"), tunnel) else {
            return XCTFail("the same verdicts as an exchange's")
        }
        XCTAssertEqual(unresolvable.message, "cannot resolve t.test: NXDOMAIN")
        XCTAssertEqual(loop.status, 508)
        XCTAssertEqual(loop.message, "CONNECT target \(Self.ownListener) is this gateway's own listener")
        XCTAssertEqual(notDialled.message, "cannot connect to t.test:443 (Too many open files)")
    }

    // MARK: upstream request filter

    func testUpstreamRequestFilterProceedsWithoutASerializer() throws {
        let p = try phases(Self.originRoute)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\n")
        guard case .proceed = p.upstreamRequestFilter(ex) else { return XCTFail("no serializer, nothing to refuse") }
        XCTAssertNil(ex.replacementBody)
        XCTAssertNil(ex.collected)
    }

    func testUpstreamRequestFilterReadsABodyWholeForAJSONSerializer() throws {
        let p = try phases("""
            routes:
              - name: json
                match: { host: "*" }
                upstream: origin
                request: { serializer: json }
            """)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\n")
        guard case .proceed = p.upstreamRequestFilter(ex) else { return XCTFail("a form body is rebuilt, not refused") }
        XCTAssertEqual(ex.collected, [], "the body is read whole before an upstream is chosen")
    }

    func testUpstreamRequestFilterReplacesTheBodyWithTheRouteParameters() throws {
        let p = try phases("""
            routes:
              - name: params
                match: { host: "*" }
                upstream: origin
                request: { serializer: json, parameters: { a: "1" } }
            """)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        guard case .proceed = p.upstreamRequestFilter(ex) else { return XCTFail("parameters make a body") }
        XCTAssertEqual(ex.replacementBody.map { String(decoding: $0.bytes, as: UTF8.self) }, #"{"a":"1"}"#)
        XCTAssertNil(ex.collected)
    }

    func testUpstreamRequestFilterRefusesAMultipartBodyWithoutBoundary() throws {
        let p = try phases("""
            routes:
              - name: uploads
                match: { host: "*" }
                upstream: origin
                request: { serializer: passthrough, validate_multipart: true }
            """)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Type: multipart/form-data\r\nContent-Length: 3\r\n\r\n")
        guard case .refuse(let e, let reason, _) = p.upstreamRequestFilter(ex) else { return XCTFail("no boundary") }
        XCTAssertEqual(e.status, 400)
        XCTAssertEqual(e.code, .requestSerializationFailed)
        XCTAssertEqual(e.reason, "request-serialization-failed")
        XCTAssertFalse(reason.isEmpty)
        let ok = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Type: multipart/form-data; boundary=xyz\r\nContent-Length: 3\r\n\r\n")
        guard case .proceed = p.upstreamRequestFilter(ok) else { return XCTFail("a boundary is enough to start") }
        XCTAssertNotNil(ok.multipart, "the body is checked while it streams")
    }

    private func upstreamHead(_ p: GatewayPhases, _ ex: Exchange) -> String {
        var w = HeadWriter(capacity: 1024)
        p.upstreamRequestHead(ex, into: &w)
        return w.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    func testUpstreamRequestHeadWithoutASerializerIsTheCanonicalReencoding() throws {
        let p = try phases(Self.originRoute)
        let ex = try exchange(p, "GET http://a.test:8080/x?q=1 HTTP/1.1\r\nHost: a.test:8080\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n")
        let head = upstreamHead(p, ex)
        XCTAssertTrue(head.hasPrefix("GET /x?q=1 HTTP/1.1\r\nHost: a.test:8080\r\n"), head)
        XCTAssertTrue(head.contains("\r\nVia: 1.1 \(Self.via)\r\n"), head)
        XCTAssertTrue(head.contains("\r\nX-Request-Id: t-0-"), head)
        XCTAssertTrue(head.contains("\r\nAccept: */*\r\n"), head)
        XCTAssertFalse(head.contains("X-Hop"), "hop-by-hop fields named in Connection stay here: \(head)")
        XCTAssertTrue(head.hasSuffix("\r\n\r\n"))
    }

    func testUpstreamRequestHeadOfASerializerRouteDescribesItsBody() throws {
        let p = try phases("""
            routes:
              - name: params
                match: { host: "*" }
                upstream: origin
                request: { serializer: json, parameters: { a: "1" }, headers: { X-Api: v2 } }
            """)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Type: text/plain\r\n\r\n")
        guard case .proceed = p.upstreamRequestFilter(ex) else { return XCTFail("parameters make a body") }
        let head = upstreamHead(p, ex)
        XCTAssertTrue(head.hasPrefix("POST / HTTP/1.1\r\nHost: a.test\r\n"), head)
        XCTAssertTrue(head.contains("\r\nContent-Type: application/json\r\n"), head)
        XCTAssertTrue(head.contains("\r\nContent-Length: 9\r\n"), head)
        XCTAssertTrue(head.contains("\r\nX-Api: v2\r\n"), head)
        XCTAssertFalse(head.contains("text/plain"), "the rebuilt body's type replaces the client's: \(head)")
        XCTAssertTrue(head.contains("\r\nVia: 1.1 \(Self.via)\r\n"), head)
    }

    private static let jsonRoute = """
        routes:
          - name: json
            match: { host: "*" }
            upstream: origin
            request: { serializer: json }
        """

    func testUpstreamRequestBodyFilterRebuildsACollectedForm() throws {
        let p = try phases(Self.jsonRoute)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\n")
        guard case .proceed = p.upstreamRequestBodyFilter(ex, collected: Array("a=1&b=x".utf8)) else {
            return XCTFail("a well-formed form is rebuilt")
        }
        XCTAssertEqual(ex.replacementBody.map { String(decoding: $0.bytes, as: UTF8.self) }, #"{"a":"1","b":"x"}"#)
    }

    func testUpstreamRequestBodyFilterRefusesAFormItCannotRebuild() throws {
        let p = try phases(Self.jsonRoute)
        let ex = try exchange(p, "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 12\r\n\r\n")
        guard case .refuse(let e, let reason, _) = p.upstreamRequestBodyFilter(ex, collected: Array("a=1&a[b]=2".utf8)) else {
            return XCTFail("a key both plain and nested cannot become JSON")
        }
        XCTAssertEqual(e.status, 400)
        XCTAssertEqual(e.code, .requestSerializationFailed)
        XCTAssertEqual(reason, "conflicting-form-keys")
        XCTAssertNil(ex.replacementBody)
    }

    // MARK: response filter

    private func validating(_ response: String) throws -> GatewayPhases {
        try phases("""
            routes:
              - name: checked
                match: { host: "*" }
                upstream: origin
                response: \(response)
            """)
    }

    private func responseHead(_ status: Int, _ type: String) -> ResponseHead {
        var h = HTTPHeaders()
        h.append(name: "Content-Type", value: type)
        return ResponseHead(version: .http11, status: status, reason: "", headers: h)
    }

    func testResponseFilterRelaysWhenTheRouteValidatesNothing() throws {
        let p = try phases(Self.originRoute)
        let ex = try exchange(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let v = p.upstreamResponseFilter(ex, responseHead(500, "text/html"), framing: .length(3))
        XCTAssertEqual(v.head, .accepted)
        XCTAssertNil(v.validation)
    }

    func testResponseFilterRejectsAnUnacceptableStatusOnTheHead() throws {
        let p = try validating("{ serializer: json }")
        let ex = try exchange(p, "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let v = p.upstreamResponseFilter(ex, responseHead(500, "application/json"), framing: .chunked)
        XCTAssertEqual(v.head, .rejected, "the status alone fails: no body is read, whatever it holds")
        XCTAssertEqual(v.validation?.rejection?.reason, .unacceptableStatus)
        XCTAssertEqual(v.enforcement, .enforce)
        XCTAssertEqual(v.validation?.facts.url, "http://a.test/x")
    }

    func testResponseFilterBuffersTheBodyForABodyValidator() throws {
        let p = try validating("{ serializer: json, max_body_bytes: 100 }")
        let ex = try exchange(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let v = p.upstreamResponseFilter(ex, responseHead(200, "application/json"), framing: .length(10))
        XCTAssertEqual(v.head, .needsBody(overLimit: false))
        XCTAssertNil(v.validation?.rejection)
        let big = p.upstreamResponseFilter(ex, responseHead(200, "application/json"), framing: .length(101))
        XCTAssertEqual(big.head, .needsBody(overLimit: true), "declared too large: rejected for its size, unread")
        XCTAssertEqual(big.validation?.rejection?.reason, .bodyTooLarge)
    }

    func testResponseFilterInReportOnlyModeSaysSo() throws {
        let p = try validating("{ serializer: http, mode: report-only }")
        let ex = try exchange(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let v = p.upstreamResponseFilter(ex, responseHead(404, "text/html"), framing: .length(3))
        XCTAssertEqual(v.head, .rejected)
        XCTAssertEqual(v.enforcement, .reportOnly, "the machine relays it untouched; the reject is still recorded")
        let fine = p.upstreamResponseFilter(ex, responseHead(200, "text/html"), framing: .length(3))
        XCTAssertEqual(fine.head, .accepted)
        XCTAssertNil(fine.validation, "the http serializer decides on the head and streams the body")
    }

    // MARK: response body filter

    /// The body validation state the head filter made for a 200 JSON response, holding `body`.
    private func bufferedJSON(_ p: GatewayPhases, _ body: String) throws -> (Exchange, ResponseValidation) {
        let ex = try exchange(p, "GET http://a.test/j HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let head = p.upstreamResponseFilter(ex, responseHead(200, "application/json"), framing: .chunked)
        XCTAssertEqual(head.head, .needsBody(overLimit: false))
        let v = try XCTUnwrap(head.validation)
        v.body = Array(body.utf8)
        return (ex, v)
    }

    func testResponseBodyFilterAcceptsAWellFormedBody() throws {
        let p = try validating("{ serializer: json }")
        let (ex, v) = try bufferedJSON(p, #"{"ok": [1, 2]}"#)
        XCTAssertEqual(p.upstreamResponseBodyFilter(ex, v), .accepted)
        XCTAssertNil(v.rejection)
    }

    func testResponseBodyFilterRejectsAMalformedBodyAndKeepsWhy() throws {
        let p = try validating("{ serializer: json }")
        let (ex, v) = try bufferedJSON(p, #"{"ok": "#)
        XCTAssertEqual(p.upstreamResponseBodyFilter(ex, v), .rejected)
        XCTAssertEqual(v.rejection?.reason, .invalidJSON)
    }

    func testResponseBodyFilterJudgesTheSameInReportOnlyMode() throws {
        let p = try validating("{ serializer: json, mode: report-only }")
        let (ex, v) = try bufferedJSON(p, "not json")
        XCTAssertEqual(p.upstreamResponseBodyFilter(ex, v), .rejected,
                       "the verdict is the validator's; relaying it anyway is the machine's report-only decision")
        XCTAssertEqual(v.rejection?.reason, .invalidJSON, "recorded all the same")
        XCTAssertEqual(v.config.mode, .reportOnly)
    }

    // MARK: the cache filters (issue #21)

    private static let cacheRoute = """
        routes:
          - name: cached
            match: { host: "*" }
            upstream: origin
            cache: {}
        """

    private func responseHead(_ text: String) throws -> ResponseHead {
        try Array(text.utf8).withUnsafeBytes { try ResponseParser.parse($0) }
    }

    func testRequestCacheFilterKeysByTheAbsoluteURLOnlyOnRoutesWithACache() throws {
        let cached = try phases(Self.cacheRoute)
        let get = try exchange(cached, "GET http://A.test:80/p?q=1 HTTP/1.1\r\nHost: a.test\r\n\r\n")
        XCTAssertEqual(cached.requestCacheFilter(get)?.url, "http://a.test/p?q=1", "scheme and host lower-cased, default port dropped")
        let plain = try phases(Self.originRoute)
        XCTAssertNil(plain.requestCacheFilter(try exchange(plain, "GET http://a.test/p HTTP/1.1\r\nHost: a.test\r\n\r\n")),
                     "no cache: block, no part")
        let unrouted = Exchange(client: nil, id: RequestID(prefix: "t", worker: 0, serial: 2),
                                request: try head("GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n"), limits: WireLimits())
        XCTAssertNil(cached.requestCacheFilter(unrouted), "before the route is known")
    }

    func testResponseCacheFilterCopiesOnlyBodiesTheHeadAllowsToStore() throws {
        let p = try phases(Self.cacheRoute)
        let ex = try exchange(p, "GET http://a.test/p HTTP/1.1\r\nHost: a.test\r\n\r\n")
        func copies(_ fields: String, max: Int = 1000) throws -> Bool {
            p.responseCacheFilter(ex, try responseHead("HTTP/1.1 200 OK\r\n\(fields)\r\n"), maxObject: max)
        }
        XCTAssertTrue(try copies("Cache-Control: max-age=60\r\nContent-Length: 10\r\n"))
        XCTAssertFalse(try copies("Cache-Control: no-store, max-age=60\r\nContent-Length: 10\r\n"))
        XCTAssertFalse(try copies("Cache-Control: private, max-age=60\r\nContent-Length: 10\r\n"))
        XCTAssertFalse(try copies("Cache-Control: max-age=60\r\nSet-Cookie: a=1\r\nContent-Length: 10\r\n"))
        XCTAssertFalse(try copies("Cache-Control: max-age=60\r\nContent-Length: 1001\r\n"), "declared over max_object")
        XCTAssertTrue(try copies("Cache-Control: max-age=60\r\nTransfer-Encoding: chunked\r\n"), "unknown length: copied, checked as it comes")
        let post = try exchange(p, "POST http://a.test/p HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0\r\n\r\n")
        XCTAssertFalse(p.responseCacheFilter(post, try responseHead("HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 1\r\n\r\n"),
                                             maxObject: 1000), "only a GET's response is stored")
    }

    // MARK: logging

    func testLoggingWritesOneAccessRecordPerExchangeEvenIfCalledTwice() throws {
        let p = try phases(Self.originRoute)
        let ex = try exchange(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        ex.responseStatus = 200
        let summary = RequestSummary(id: ex.id, request: ex.request, client: address("127.0.0.1", 5000))
        p.logging(ex, summary, .completed(upstreamReusable: true))
        p.logging(ex, summary, .completed(upstreamReusable: true))
        XCTAssertEqual(records.messages("request.access").count, 1)
        XCTAssertEqual(records.messages("request.access").first?["status"]?.description, "200")
        XCTAssertTrue(records.messages("request.error").isEmpty)
    }

    func testLoggingOfAnAnsweredExchangeWritesItsErrorThenItsAccessRecord() throws {
        let p = try phases(Self.originRoute)
        let ex = try exchange(p, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let summary = RequestSummary(id: ex.id, request: ex.request, client: address("127.0.0.1", 5000))
        let e = GatewayError(.upstreamRefused, status: 502, message: "refused", source: .upstream)
        p.logging(ex, summary, .answered(e, keepAlive: true))
        XCTAssertEqual(records.all.map(\.message), ["request.error", "request.access"])
        XCTAssertEqual(records.messages("request.access").first?["status"]?.description, "502")
        XCTAssertEqual(ex.failure, e.reason)
    }

    /// The context exists before the first phase: a request refused before it had a route is
    /// logged from it like any other, once, with the request's own fields.
    func testLoggingOfARequestRefusedBeforeItHadARoute() throws {
        let p = try phases(Self.originRoute)
        let req = try head("GET / HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")
        let ex = Exchange(client: nil, id: RequestID(prefix: "t", worker: 0, serial: 9), request: req, limits: WireLimits())
        XCTAssertFalse(ex.isRouted)
        let summary = RequestSummary(id: ex.id, request: req, client: address("127.0.0.1", 5000))
        let refusal = ExchangeEnd.answered(GatewayError(.noRoute, status: 403, message: "no route", source: .client), keepAlive: true)
        p.logging(ex, summary, refusal)
        p.logging(ex, summary, refusal)
        XCTAssertEqual(records.all.map(\.message), ["request.error", "request.access"], "once")
        XCTAssertEqual(records.messages("request.access").first?["status"]?.description, "403")
        XCTAssertNil(records.messages("request.access").first?["route"])
    }

    /// A head that never parsed has no request and no exchange: its own logging phase.
    func testLoggingOfAHeadThatNeverParsed() throws {
        let p = try phases(Self.originRoute)
        let summary = RequestSummary(id: RequestID(prefix: "t", worker: 0, serial: 10), request: nil,
                                     client: address("127.0.0.1", 5000))
        p.logging(unparsed: summary, .answered(GatewayError(.headerTimeout, status: 408, message: "slow", source: .client,
                                                            mustClose: true), keepAlive: false))
        XCTAssertEqual(records.all.map(\.message), ["request.error", "request.access"])
        XCTAssertEqual(records.messages("request.access").first?["status"]?.description, "408")
    }
}

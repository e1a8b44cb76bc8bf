import XCTest
@testable import AirlockSession
import AirlockWire

/// `SipHash`, which keys the response cache's tables, against published values.
final class SipHashTests: XCTestCase {
    /// The reference implementation's SipHash-2-4 vectors (`vectors_sip64` in the authors'
    /// `test.c`): key 00 01 … 0f, message 00 01 … n-1, for n = 0…17, and n = 32.
    func testSipHash24MatchesTheReferenceVectors() {
        let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908)
        let expected: [UInt64] = [
            0x726f_db47_dd0e_0e31, 0x74f8_39c5_93dc_67fd, 0x0d6c_8009_d9a9_4f5a, 0x8567_6696_d7fb_7e2d,
            0xcf27_94e0_2771_87b7, 0x1876_5564_cd99_a68d, 0xcbc9_466e_58fe_e3ce, 0xab02_00f5_8b01_d137,
            0x93f5_f579_9a93_2462, 0x9e00_82df_0ba9_e4b0, 0x7a5d_bbc5_94dd_b9f3, 0xf4b3_2f46_226b_ada7,
            0x751e_8fbc_860e_e5fb, 0x14ea_5627_c084_3d90, 0xf723_ca90_8e7a_f2ee, 0xa129_ca61_49be_45e5,
            0x3f2a_cc7f_57c2_9bdb, 0x699a_e9f5_2cbe_4794,
        ]
        for (n, want) in expected.enumerated() {
            let got = (0..<UInt8(n)).map { $0 }.withUnsafeBytes { SipHash.hash($0, key: key, compression: 2, finalization: 4) }
            XCTAssertEqual(got, want, "SipHash-2-4 of \(n) bytes")
        }
        let got32 = (0..<UInt8(32)).map { $0 }.withUnsafeBytes { SipHash.hash($0, key: key, compression: 2, finalization: 4) }
        XCTAssertEqual(got32, 0x7127_512f_72f2_7cce, "SipHash-2-4 of 32 bytes")
    }

    /// SipHash-1-3, the rounds the cache uses, against CPython's `hash` of bytes, which is
    /// SipHash-1-3 under a zero key when `PYTHONHASHSEED=0` (values taken with Python 3.11:
    /// `PYTHONHASHSEED=0 python3 -c 'print(hex(hash(b"...") & (2**64 - 1)))'`).
    func testSipHash13MatchesCPython() {
        let zero: (UInt64, UInt64) = (0, 0)
        let cases: [([UInt8], UInt64)] = [
            ([0], 0x68a9_1412_8e01_e473),
            (Array(0..<7), 0x2f09_8ab0_c751_325a),
            (Array(0..<8), 0xead4_11e6_7ebe_2eea),
            (Array(0..<15), 0xf30e_b725_bb91_c9ea),
            (Array(0..<63), 0x385d_3e39_e5f3_7359),
            (Array("http://127.0.0.1:18632/small?r=x&t=1&n=12345".utf8), 0xeeb6_e446_e51a_d1b4),
        ]
        for (bytes, want) in cases {
            XCTAssertEqual(bytes.withUnsafeBytes { SipHash.hash($0, key: zero) }, want, "SipHash-1-3 of \(bytes.count) bytes")
            XCTAssertEqual(bytes.withUnsafeBytes { SipHash.hash13($0, key: zero) }, want, "hash13 of \(bytes.count) bytes")
        }
        XCTAssertEqual(SipHash.hash("http://127.0.0.1:18632/small?r=x&t=1&n=12345", key: zero), 0xeeb6_e446_e51a_d1b4,
                       "a String's UTF-8, hashed in place")
    }

    /// `hash13` (its rounds unrolled) against the general function with the same rounds, for
    /// every length from 0 to 80 bytes (each tail length, each word count) under random keys.
    func testTheUnrolledSipHash13IsTheGeneralOne() {
        var rng = SystemRandomNumberGenerator()
        for n in 0...80 {
            for _ in 0..<8 {
                let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let key = (rng.next() as UInt64, rng.next() as UInt64)
                bytes.withUnsafeBytes { b in
                    XCTAssertEqual(SipHash.hash13(b, key: key), SipHash.hash(b, key: key, compression: 1, finalization: 3), "\(n) bytes")
                }
            }
        }
    }

    /// The process's key is drawn, not fixed: the same URL hashes differently under it than
    /// under the zero key.
    func testTheProcessKeyIsRandom() {
        XCTAssertFalse(SipHash.processKey == (0, 0))
        XCTAssertNotEqual(SipHash.hash("http://o.test/"), SipHash.hash("http://o.test/", key: (0, 0)))
    }
}

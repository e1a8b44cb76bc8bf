import AirlockIO
import Glibc
import XCTest

/// mimalloc is the process's malloc wherever AirlockIO is linked (this test process too):
/// every caller's blocks, the Swift runtime's, libevent's and OpenSSL's, come from it.
final class AllocatorTests: XCTestCase {
    func testMallocIsMimalloc() {
        XCTAssertTrue(Allocator.isMimalloc, "glibc's malloc (or a preloaded one) came first in symbol resolution")
        XCTAssertTrue(Allocator.description.hasPrefix("mimalloc 2."), Allocator.description)
    }

    /// Blocks move between Swift, C and realloc without a mismatch of allocators: a buffer
    /// grown by realloc and freed by free, and Swift arrays whose capacity the runtime asks of
    /// malloc_usable_size (mimalloc's, or a wrong capacity would write past the block).
    func testBlocksCrossCallersIntact() {
        var p = malloc(24)!.assumingMemoryBound(to: UInt8.self)
        for i in 0..<24 { p[i] = UInt8(i) }
        p = realloc(p, 1 << 20)!.assumingMemoryBound(to: UInt8.self)
        XCTAssertEqual((0..<24).map { p[$0] }, (0..<24).map { UInt8($0) })
        free(p)
        var arrays: [[UInt8]] = []
        for n in [1, 15, 16, 17, 1000, 70_000] {
            var a = [UInt8](repeating: 7, count: n)
            XCTAssertGreaterThanOrEqual(a.capacity, n)
            a.append(contentsOf: repeatElement(9, count: a.capacity - n + 1))   // one past the capacity: a regrowth
            XCTAssertEqual(a.count, a.capacity == n ? n + 1 : a.count)
            XCTAssertEqual(a.first, 7)
            XCTAssertEqual(a.last, 9)
            arrays.append(a)
        }
        XCTAssertEqual(arrays.map { $0.filter { $0 == 7 }.count }, [1, 15, 16, 17, 1000, 70_000])
    }

    /// The process keeps freed memory committed for a second (mimalloc's own default is 25 ms),
    /// unless the operator set `MIMALLOC_DECOMMIT_DELAY`.
    func testFreedMemoryIsKeptForASecondUnlessTheOperatorSaidOtherwise() {
        let before = Allocator.decommitDelay
        setenv("MIMALLOC_DECOMMIT_DELAY", "7", 1)
        Allocator.configure()
        XCTAssertEqual(Allocator.decommitDelay, before, "an operator's MIMALLOC_DECOMMIT_DELAY is left as set")
        unsetenv("MIMALLOC_DECOMMIT_DELAY")
        Allocator.configure()
        XCTAssertEqual(Allocator.decommitDelay, 1000)
        XCTAssertEqual(Allocator.decommitDelayMillis, 1000)
    }
}

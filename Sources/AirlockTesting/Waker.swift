import Foundation
import Glibc
import Synchronization

/// A self-pipe that interrupts every `poll` in this library that was handed it.
/// Once woken it stays readable, so every later wait returns at once.
/// Close it only after every thread that polls it has finished.
final class Waker: Sendable {
    let readFD: Int32
    private let writeFD: Int32
    private let state = Mutex(State())

    private struct State {
        var woken = false
        var closed = false
    }

    init() throws {
        let fds = try Descriptors.make("pipe") {
            var fds: [Int32] = [-1, -1]
            return pipe(&fds) == 0 ? fds : nil
        }
        readFD = fds[0]
        writeFD = fds[1]
        Descriptors.setNonBlocking(writeFD, true)
    }

    var isWoken: Bool { state.withLock { $0.woken } }

    func wake() {
        state.withLock { state in
            guard !state.woken, !state.closed else { return }
            state.woken = true
            var byte: UInt8 = 1
            while Glibc.write(writeFD, &byte, 1) < 0, errno == EINTR {}
        }
    }

    func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            _ = Glibc.close(readFD)
            _ = Glibc.close(writeFD)
        }
    }
}

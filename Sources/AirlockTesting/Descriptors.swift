import Foundation
import Glibc
import Synchronization

/// Glibc as Swift imports it has neither `accept4` nor `pipe2`, so a new descriptor is marked
/// close-on-exec in a second step. Making descriptors and spawning children share this lock, so no child
/// started by this library inherits a descriptor in between (an origin socket held open by an `airlock`
/// child would keep a connection alive after the origin closed it).
enum Descriptors {
    /// Guards no value: the critical section is the creation or the spawn itself.
    private static let lock = Mutex(())

    /// Runs `create` under the lock and marks every descriptor it returns close-on-exec.
    /// `create` returns nil on failure; errno is captured before the lock is released.
    static func make(_ what: String, _ create: () -> [Int32]?) throws -> [Int32] {
        let result: Result<[Int32], AirlockTestingError> = lock.withLock { _ in
            guard let fds = create() else { return .failure(systemError(what)) }
            for fd in fds { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
            return .success(fds)
        }
        return try result.get()
    }

    /// Runs a spawn under the same lock.
    static func spawning<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock { _ in try body() }
    }

    static func setNonBlocking(_ fd: Int32, _ on: Bool) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    static func systemError(_ what: String, _ code: Int32 = errno) -> AirlockTestingError {
        AirlockTestingError(.system(errno: code), "\(what): \(String(cString: strerror(code))) (errno \(code))")
    }
}

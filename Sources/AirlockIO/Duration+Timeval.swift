import Glibc

extension Duration {
    var timeval: timeval {
        let (s, atto) = components
        return Glibc.timeval(tv_sec: Int(s), tv_usec: Int(atto / 1_000_000_000_000))
    }
}

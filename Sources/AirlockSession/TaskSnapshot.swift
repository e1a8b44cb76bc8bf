/// One in-flight task as `GET /tasks` lists it: a copy taken on the task's worker loop, safe
/// to carry to another thread.
public struct TaskSnapshot: Sendable, Equatable {
    public var id: String
    public var worker: Int
    public var route: String
    public var method: String
    public var url: String
    public var state: TaskState
    public var upload: TaskProgress
    public var download: TaskProgress
    /// Since the request head was parsed, in milliseconds.
    public var ageMillis: Double

    public init(id: String, worker: Int, route: String, method: String, url: String, state: TaskState,
                upload: TaskProgress, download: TaskProgress, ageMillis: Double) {
        self.id = id
        self.worker = worker
        self.route = route
        self.method = method
        self.url = url
        self.state = state
        self.upload = upload
        self.download = download
        self.ageMillis = ageMillis
    }
}

/// A task lifecycle notification, as AFNetworking posts them
/// (`AFNetworkingTaskDidResumeNotification`, `…DidSuspend…`, `…DidComplete…`), plus Airlock's
/// own `rejected` (the response validator refused the response) and `cancelled`.
public struct TaskEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case resumed, suspended, completed, rejected, cancelled
    }

    public var kind: Kind
    public var id: String
    public var route: String
    public var method: String
    public var url: String
    /// completed / rejected / cancelled: the status the client got (0: none).
    public var status: Int
    public var bytesIn: UInt64
    public var bytesOut: UInt64
    public var durationMillis: Double
    /// rejected / cancelled: why.
    public var reason: String?

    public init(kind: Kind, id: String, route: String, method: String, url: String, status: Int = 0,
                bytesIn: UInt64 = 0, bytesOut: UInt64 = 0, durationMillis: Double = 0, reason: String? = nil) {
        self.kind = kind
        self.id = id
        self.route = route
        self.method = method
        self.url = url
        self.status = status
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.durationMillis = durationMillis
        self.reason = reason
    }
}

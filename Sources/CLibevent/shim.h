#ifndef AIRLOCK_CLIBEVENT_SHIM_H
#define AIRLOCK_CLIBEVENT_SHIM_H
/* <features.h> first: otherwise this module and COpenSSL clash over fd_set. */
#include <features.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <event2/thread.h>
#include <sys/eventfd.h>

/* splice(2) for the zero-copy relay (AirlockIO's Stream+Splice, PipePool): glibc declares splice,
 * pipe2 and F_SETPIPE_SZ only under _GNU_SOURCE, which this module does not define; the system
 * calls are made directly. -1 with errno set on failure. */
#include <unistd.h>
#include <fcntl.h>
#include <sys/syscall.h>
static inline long airlock_splice(int fd_in, int fd_out, size_t len, unsigned int flags) {
    return syscall(SYS_splice, fd_in, (void *)0, fd_out, (void *)0, len, flags);
}
static inline int airlock_pipe(int fds[2]) { return (int)syscall(SYS_pipe2, fds, O_NONBLOCK | O_CLOEXEC); }
static inline int airlock_set_pipe_size(int fd, int size) { return fcntl(fd, 1031 /* F_SETPIPE_SZ */, size); }
static inline unsigned int airlock_splice_flags(void) { return 1 | 2; /* SPLICE_F_MOVE | SPLICE_F_NONBLOCK */ }

static inline short airlock_ev_read(void) { return EV_READ; }
static inline int airlock_EVENT_BASE_FLAG_NOLOCK(void) { return EVENT_BASE_FLAG_NOLOCK; }
static inline int airlock_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
static inline short airlock_ev_write(void) { return EV_WRITE; }
static inline short airlock_ev_persist(void) { return EV_PERSIST; }
static inline short airlock_ev_timeout(void) { return EV_TIMEOUT; }
static inline short airlock_bev_event_eof(void) { return BEV_EVENT_EOF; }
static inline short airlock_bev_event_error(void) { return BEV_EVENT_ERROR; }
static inline short airlock_bev_event_timeout(void) { return BEV_EVENT_TIMEOUT; }
static inline short airlock_bev_event_connected(void) { return BEV_EVENT_CONNECTED; }
static inline short airlock_bev_event_reading(void) { return BEV_EVENT_READING; }
static inline short airlock_bev_event_writing(void) { return BEV_EVENT_WRITING; }

/* libevent's own logger (log-internal.h, not a public header); exported by libevent_core.
 * Only the wrapper below is used, so that a test can make libevent log a line. */
void event_warnx(const char *fmt, ...);
static inline void airlock_event_warnx(const char *msg) { event_warnx("%s", msg); }

#endif

#ifndef AIRLOCK_CLIBURING_SHIM_H
#define AIRLOCK_CLIBURING_SHIM_H
/* io_uring, used for one thing: a loop iteration's socket writes, submitted in one
 * io_uring_enter instead of one send() each (see AirlockIO's SendRing). */
#include <features.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <liburing.h>

/* A ring of `entries` submission slots, or NULL with *err set (ENOSYS, EPERM under a
 * seccomp profile that forbids io_uring, ENOMEM...). SUBMIT_ALL (Linux 5.18) is required:
 * the kernel takes every queued send even when one fails. COOP_TASKRUN is dropped on a
 * kernel without it. (Not SINGLE_ISSUER: the ring is made on the thread that builds the
 * loop, then used by the loop's own thread.) */
static inline struct io_uring *airlock_ring_new(unsigned entries, int *err) {
    struct io_uring *r = calloc(1, sizeof *r);
    if (!r) { *err = ENOMEM; return NULL; }
    const unsigned wanted[] = {
        IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
        IORING_SETUP_SUBMIT_ALL,
    };
    int rc = -EINVAL;
    for (unsigned i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        rc = io_uring_queue_init(entries, r, wanted[i]);
        if (rc != -EINVAL) break;
    }
    if (rc < 0) { free(r); *err = -rc; return NULL; }
    return r;
}

static inline void airlock_ring_free(struct io_uring *r) {
    io_uring_queue_exit(r);
    free(r);
}

/* What results[i] holds for a send the kernel never took. */
#define AIRLOCK_RING_NOT_SENT LONG_MIN
static inline long airlock_ring_not_sent(void) { return AIRLOCK_RING_NOT_SENT; }

/* Sends entry i (i < n, n <= the ring's entries) on fds[i]: the counts[i] buffers from
 * iovs[firsts[i]] on, in order (one buffer: a send; more: a sendmsg over msgs[i], which
 * must stay valid until this returns), as non-blocking sends
 * (MSG_DONTWAIT: a full socket buffer completes with -EAGAIN instead of parking the
 * request in the kernel), all submitted with one io_uring_enter. results[i] receives
 * the byte count or -errno; AIRLOCK_RING_NOT_SENT for a send the kernel did not take;
 * -EIO for one it took but whose outcome could not be read (so the caller fails that
 * connection rather than risk sending its bytes twice). Returns 0 when every send was
 * taken and accounted for, else -errno (the caller should stop using the ring). */
static inline int airlock_ring_send_all(struct io_uring *r, unsigned n, const int *fds,
                                        const struct iovec *iovs, const unsigned *firsts,
                                        const unsigned *counts, struct msghdr *msgs, long *results) {
    unsigned queued = 0;
    for (unsigned i = 0; i < n; i++) {
        results[i] = AIRLOCK_RING_NOT_SENT;
        struct io_uring_sqe *sqe = io_uring_get_sqe(r);
        if (!sqe) continue;   /* cannot happen: n <= entries, and the ring starts empty */
        const struct iovec *v = &iovs[firsts[i]];
        if (counts[i] == 1) {
            io_uring_prep_send(sqe, fds[i], v->iov_base, v->iov_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else {
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_iov = (struct iovec *)v;
            msgs[i].msg_iovlen = counts[i];
            io_uring_prep_sendmsg(sqe, fds[i], &msgs[i], MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        io_uring_sqe_set_data64(sqe, i);
        queued++;
    }
    int submitted;
    do { submitted = io_uring_submit(r); } while (submitted == -EINTR);
    if (submitted < 0) return submitted;
    /* Non-blocking sends complete during the submit, so their completions are already
     * posted; any that is not is waited for (a send with MSG_DONTWAIT cannot wait on
     * the peer, so this does not stall the loop). */
    int failure = (unsigned)submitted == queued && queued == n ? 0 : -EBUSY;
    unsigned seen = 0;
    while (seen < (unsigned)submitted) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_peek_cqe(r, &cqe);
        if (rc == -EAGAIN) rc = io_uring_wait_cqe(r, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) {
            /* Taken, outcome unknown. SQEs are consumed in order, so the taken ones are
             * the first `submitted` that were queued. */
            for (unsigned i = 0; i < (unsigned)submitted && i < n; i++)
                if (results[i] == AIRLOCK_RING_NOT_SENT) results[i] = -EIO;
            return rc;
        }
        unsigned long long i = io_uring_cqe_get_data64(cqe);
        if (i < n) results[i] = cqe->res;
        io_uring_cqe_seen(r, cqe);
        seen++;
    }
    return failure;
}

#endif

/*
 * bench/proxyload.c: a small load client for what wrk cannot do: requests through an HTTP
 * proxy's CONNECT tunnel, over TLS end to end (a tunnel or an intercepting proxy), and new
 * TLS handshakes per second. Also speaks plain HTTP to a gateway, so one client measures
 * both sides of a comparison.
 *
 *   cc -O2 -o proxyload bench/proxyload.c -lssl -lcrypto -lpthread
 *   proxyload --connect HOST:PORT [--proxy IP:PORT] [--tls] [--cafile F] [--sni NAME]
 *             [--path /small] [--conns 64] [--duration 10] [--new-conn] [--max-requests N]
 *
 * --connect: the authority of the CONNECT request (with --proxy), or the address to connect to.
 * --proxy: send `CONNECT <connect> HTTP/1.1` to this address first and require a 2xx.
 * --tls: a TLS client handshake (SNI = --sni or the host of --connect, verified against
 *   --cafile; no --cafile: not verified) after the tunnel is up, or directly.
 * --new-conn: every request on a new connection (and a new handshake): setups per second.
 * --connect-only: with --proxy, each "request" is a new connection, the CONNECT and its 2xx,
 *   then a close: tunnel setups per second (no TLS, no request inside).
 * Requests are `GET <path>` keep-alive; a response must be HTTP/1.x 200 with Content-Length
 * (anything else counts as an error and ends that connection).
 * Prints one line: requests, errors, seconds, req/s, MiB/s of bodies.
 * Each of --conns threads runs blocking I/O; every socket has 10 s send/receive timeouts,
 * and the run stops after --duration seconds (or --max-requests) whatever happens.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char connect_host[256];
static int connect_port;
static char proxy_ip[64];
static int proxy_port;
static int use_proxy, use_tls, new_conn, connect_only;
static const char *cafile, *sni, *path = "/small";
static int conns = 64;
static double duration = 10;
static long max_requests = 0;
static SSL_CTX *ctx;
static atomic_long requests, errors, body_bytes;
static atomic_int stop;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct {
    int fd;
    SSL *ssl;
    char buf[65536];
    size_t len;      /* bytes in buf */
} conn_t;

static int conn_read(conn_t *c, char *dst, size_t n) {
    if (c->ssl) {
        int r = SSL_read(c->ssl, dst, (int)n);
        return r > 0 ? r : -1;
    }
    ssize_t r = recv(c->fd, dst, n, 0);
    return r > 0 ? (int)r : -1;
}

static int conn_write(conn_t *c, const char *src, size_t n) {
    while (n > 0) {
        int w = c->ssl ? SSL_write(c->ssl, src, (int)n) : (int)send(c->fd, src, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        src += w;
        n -= (size_t)w;
    }
    return 0;
}

static void conn_close(conn_t *c) {
    if (c->ssl) { SSL_free(c->ssl); c->ssl = NULL; }
    if (c->fd >= 0) { close(c->fd); c->fd = -1; }
    c->len = 0;
}

/* Reads a head into c->buf (through TLS once c->ssl is set); returns its length (through the
   blank line) or -1. */
static int read_head(conn_t *c) {
    for (;;) {
        char *end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        if (end) return (int)(end - c->buf) + 4;
        if (c->len == sizeof c->buf) return -1;
        int r = conn_read(c, c->buf + c->len, sizeof c->buf - c->len);
        if (r < 0) return -1;
        c->len += (size_t)r;
    }
}

static void consume(conn_t *c, size_t n) {
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

static int open_conn(conn_t *c) {
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    c->ssl = NULL;
    c->len = 0;
    if (c->fd < 0) return -1;
    struct timeval tv = {10, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET};
    const char *ip = use_proxy ? proxy_ip : connect_host;
    a.sin_port = htons(use_proxy ? proxy_port : connect_port);
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) return -1;
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
    if (use_proxy) {
        char req[600];
        int n = snprintf(req, sizeof req, "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n",
                         connect_host, connect_port, connect_host, connect_port);
        if (conn_write(c, req, (size_t)n) != 0) return -1;
        int h = read_head(c);
        if (h < 0 || strncmp(c->buf, "HTTP/1.", 7) != 0 || c->buf[9] != '2') return -1;
        consume(c, (size_t)h);
        if (c->len) return -1;   /* nothing may follow the 200 before we speak */
    }
    if (use_tls) {
        c->ssl = SSL_new(ctx);
        if (!c->ssl) return -1;
        SSL_set_fd(c->ssl, c->fd);
        const char *name = sni ? sni : connect_host;
        SSL_set_tlsext_host_name(c->ssl, name);
        if (cafile) SSL_set1_host(c->ssl, name);
        if (SSL_connect(c->ssl) != 1) return -1;
    }
    return 0;
}

/* One request and its whole response on c. 0 on success. */
static int one_request(conn_t *c, const char *req, size_t reqlen) {
    if (conn_write(c, req, reqlen) != 0) return -1;
    int h = read_head(c);
    if (h < 0 || strncmp(c->buf, "HTTP/1.1 200", 12) != 0) return -1;
    long length = -1;
    for (char *p = c->buf; p < c->buf + h;) {
        char *eol = memmem(p, (size_t)(c->buf + h - p), "\r\n", 2);
        if (!eol) break;
        if (eol - p > 15 && strncasecmp(p, "content-length:", 15) == 0) length = strtol(p + 15, NULL, 10);
        p = eol + 2;
    }
    if (length < 0) return -1;
    consume(c, (size_t)h);
    long left = length;
    size_t take = c->len < (size_t)left ? c->len : (size_t)left;
    consume(c, take);
    left -= (long)take;
    char sink[65536];
    while (left > 0) {
        int r = conn_read(c, sink, sizeof sink < (size_t)left ? sizeof sink : (size_t)left);
        if (r < 0) return -1;
        left -= r;
    }
    atomic_fetch_add(&body_bytes, length);
    return 0;
}

static void *worker(void *arg) {
    (void)arg;
    conn_t *c = calloc(1, sizeof *c);
    c->fd = -1;
    char req[600];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: proxyload\r\n%s\r\n",
                     path, connect_host, connect_port, new_conn ? "Connection: close\r\n" : "");
    while (!atomic_load(&stop)) {
        if (connect_only) {
            int ok = open_conn(c) == 0;
            conn_close(c);
            if (!ok) { if (!atomic_load(&stop)) atomic_fetch_add(&errors, 1); continue; }
            long done = atomic_fetch_add(&requests, 1) + 1;
            if (max_requests && done >= max_requests) atomic_store(&stop, 1);
            continue;
        }
        if (c->fd < 0 && open_conn(c) != 0) {
            atomic_fetch_add(&errors, 1);
            conn_close(c);
            usleep(1000);
            continue;
        }
        if (one_request(c, req, (size_t)n) != 0) {
            if (!atomic_load(&stop)) atomic_fetch_add(&errors, 1);
            conn_close(c);
            continue;
        }
        long done = atomic_fetch_add(&requests, 1) + 1;
        if (max_requests && done >= max_requests) atomic_store(&stop, 1);
        if (new_conn) conn_close(c);
    }
    conn_close(c);
    free(c);
    return NULL;
}

static int split_hostport(const char *s, char *host, size_t hostlen, int *port) {
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= hostlen) return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    *port = atoi(colon + 1);
    return *port > 0 && *port < 65536 ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *target = NULL, *proxy = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--connect") && v) { target = v; i++; }
        else if (!strcmp(a, "--proxy") && v) { proxy = v; i++; }
        else if (!strcmp(a, "--tls")) use_tls = 1;
        else if (!strcmp(a, "--new-conn")) new_conn = 1;
        else if (!strcmp(a, "--connect-only")) connect_only = 1;
        else if (!strcmp(a, "--cafile") && v) { cafile = v; i++; }
        else if (!strcmp(a, "--sni") && v) { sni = v; i++; }
        else if (!strcmp(a, "--path") && v) { path = v; i++; }
        else if (!strcmp(a, "--conns") && v) { conns = atoi(v); i++; }
        else if (!strcmp(a, "--duration") && v) { duration = atof(v); i++; }
        else if (!strcmp(a, "--max-requests") && v) { max_requests = atol(v); i++; }
        else { fprintf(stderr, "proxyload: bad argument %s (see the comment at the top of proxyload.c)\n", a); return 2; }
    }
    if (!target || split_hostport(target, connect_host, sizeof connect_host, &connect_port) != 0) {
        fprintf(stderr, "proxyload: --connect HOST:PORT is required\n");
        return 2;
    }
    if (connect_only && (!proxy || use_tls)) {
        fprintf(stderr, "proxyload: --connect-only needs --proxy and no --tls\n");
        return 2;
    }
    if (proxy) {
        use_proxy = 1;
        if (split_hostport(proxy, proxy_ip, sizeof proxy_ip, &proxy_port) != 0) {
            fprintf(stderr, "proxyload: --proxy IP:PORT\n");
            return 2;
        }
    }
    if (conns < 1 || conns > 1024 || duration <= 0 || duration > 600) {
        fprintf(stderr, "proxyload: --conns 1..1024, --duration (0, 600]\n");
        return 2;
    }
    if (use_tls) {
        ctx = SSL_CTX_new(TLS_client_method());
        if (cafile) {
            if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
                fprintf(stderr, "proxyload: cannot read %s\n", cafile);
                return 2;
            }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        }
        /* Every handshake is a full one: no session cache, no tickets (new TLS handshakes
           per second means that). */
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn);
    }
    pthread_t *t = calloc((size_t)conns, sizeof *t);
    double start = now();
    for (int i = 0; i < conns; i++) pthread_create(&t[i], NULL, worker, NULL);
    while (!atomic_load(&stop) && now() - start < duration) usleep(20000);
    atomic_store(&stop, 1);
    double elapsed = now() - start;
    /* Threads blocked in I/O end within their 10 s socket timeouts. */
    for (int i = 0; i < conns; i++) pthread_join(t[i], NULL);
    long r = atomic_load(&requests), e = atomic_load(&errors);
    printf("requests %ld errors %ld seconds %.2f req_s %.0f body_MiB_s %.1f\n", r, e, elapsed,
           r / elapsed, atomic_load(&body_bytes) / elapsed / 1048576.0);
    return r > 0 ? 0 : 1;
}

#ifndef AIRLOCK_COPENSSL_SHIM_H
#define AIRLOCK_COPENSSL_SHIM_H
#include <features.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/bn.h>
#include <openssl/ec.h>

/* Macros Swift cannot import. */
static inline long airlock_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long airlock_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline void airlock_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline int airlock_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) {
    return (int)SSL_CTX_set_min_proto_version(ctx, v);
}
static inline long airlock_SSL_CTX_set_client_session_cache(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}
static inline long airlock_SSL_MODE_partial_moving(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
}
/* TLS 1.2 renegotiation refused (a server's HelloRequest gets a no_renegotiation alert):
 * TLS 1.3 and HTTP/2 removed it, and a write never has to wait for handshake reads. */
static inline void airlock_SSL_CTX_refuse_renegotiation(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
}
static inline int airlock_SSL_set_app_data(SSL *s, void *arg) { return SSL_set_app_data(s, arg); }
static inline void *airlock_SSL_get_app_data(const SSL *s) { return SSL_get_app_data(s); }
static inline int airlock_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline void airlock_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) { SSL_CTX_set_read_ahead(ctx, yes); }
static inline unsigned long airlock_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }

/* STACK_OF(X509) accessors are macros. */
static inline int airlock_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *airlock_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline STACK_OF(X509) *airlock_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int airlock_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void airlock_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline void airlock_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

/* Server side (the local CA's interception): no session resumption, so every handshake
 * runs the certificate callback for its own server name. */
static inline void airlock_SSL_CTX_server_no_resumption(SSL_CTX *ctx) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
}
static inline int airlock_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
static inline int airlock_SSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }
static inline int airlock_TLSEXT_NAMETYPE_host_name(void) { return TLSEXT_NAMETYPE_host_name; }

/* BIO retry flags are macros. */
static inline void airlock_BIO_set_retry_read(BIO *b) { BIO_set_retry_read(b); }
static inline void airlock_BIO_clear_retry_flags(BIO *b) { BIO_clear_retry_flags(b); }

/* EVP_EC_gen is a macro over a variadic function. */
static inline EVP_PKEY *airlock_EVP_EC_gen_P256(void) { return EVP_EC_gen("P-256"); }

/* X509V3_set_ctx_nodb is a macro. */
static inline void airlock_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }
static inline uint32_t airlock_EXFLAG_CA(void) { return EXFLAG_CA; }
static inline uint32_t airlock_EXFLAG_BCONS(void) { return EXFLAG_BCONS; }
static inline uint32_t airlock_EXFLAG_KUSAGE(void) { return EXFLAG_KUSAGE; }
static inline uint32_t airlock_KU_KEY_CERT_SIGN(void) { return KU_KEY_CERT_SIGN; }

#endif

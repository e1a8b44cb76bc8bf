#ifndef AIRLOCK_COPENSSL_SHIM_H
#define AIRLOCK_COPENSSL_SHIM_H
#include <features.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

/* Macros Swift cannot import. */
static inline long airlock_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long airlock_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline void airlock_OPENSSL_free(void *p) { OPENSSL_free(p); }

#endif

#!/usr/bin/env bash
# Generates a local development PKI for TLS routes and pinning tests:
#
#   root-ca -> intermediate-ca -> localhost   (SAN DNS:localhost, IP:127.0.0.1)
#   other-root-ca -> other-localhost          (an unrelated chain, same names: a pin mismatch)
#
# EC P-256 keys. Writes into OUTDIR (default certs/dev/, which .gitignore excludes) and prints
# each certificate's SPKI pin, "sha256/<base64>", as `pins:` expects it.
#
# Idempotent: a chain whose files are all present and that still verifies (dates included) is
# kept; otherwise that chain is generated afresh. Keys are created mode 600 and never leave OUTDIR.
#
# Usage: certs/gen-dev-pki.sh [OUTDIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/dev}"
ca_days=3650
leaf_days=825

command -v openssl >/dev/null || { echo "gen-dev-pki: openssl not found" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# Warn (do not refuse) when OUTDIR is inside a git work tree and not ignored: keys must not be committed.
if git -C "$out" rev-parse --is-inside-work-tree >/dev/null 2>&1 && ! git -C "$out" check-ignore -q "$out/x.key"; then
    echo "gen-dev-pki: warning: $out is not git-ignored; do not commit the *.key files" >&2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n' >"$work/req.cnf"
cat >"$work/ext.cnf" <<'EXT'
[root]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[intermediate]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
EXT

# new_key NAME
new_key() {
    (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -pkeyopt ec_param_enc:named_curve -out "$out/$1.key")
}

# csr NAME CN
csr() {
    openssl req -new -config "$work/req.cnf" -key "$out/$1.key" -subj "/CN=$2/O=Airlock development" -out "$work/$1.csr"
}

# self_signed NAME CN
self_signed() {
    new_key "$1"
    csr "$1" "$2"
    openssl x509 -req -in "$work/$1.csr" -key "$out/$1.key" -days "$ca_days" -sha256 \
        -set_serial "0x$(openssl rand -hex 16)" -extfile "$work/ext.cnf" -extensions root -out "$out/$1.pem" 2>/dev/null
}

# issued NAME CN ISSUER SECTION DAYS
issued() {
    new_key "$1"
    csr "$1" "$2"
    openssl x509 -req -in "$work/$1.csr" -CA "$out/$3.pem" -CAkey "$out/$3.key" -days "$5" -sha256 \
        -set_serial "0x$(openssl rand -hex 16)" -extfile "$work/ext.cnf" -extensions "$4" -out "$out/$1.pem" 2>/dev/null
}

# chain_ok ROOT LEAF [INTERMEDIATE]: every file present and the leaf verifies for localhost.
chain_ok() {
    local f
    for f in "$1" "$2" ${3:+"$3"}; do
        [[ -s "$out/$f.key" && -s "$out/$f.pem" ]] || return 1
    done
    openssl verify -CAfile "$out/$1.pem" ${3:+-untrusted "$out/$3.pem"} \
        -purpose sslserver -verify_hostname localhost -verify_ip 127.0.0.1 "$out/$2.pem" >/dev/null 2>&1
}

if chain_ok root-ca localhost intermediate-ca; then
    echo "gen-dev-pki: keeping root-ca -> intermediate-ca -> localhost in $out" >&2
else
    self_signed root-ca "Airlock Dev Root CA"
    issued intermediate-ca "Airlock Dev Intermediate CA" root-ca intermediate "$ca_days"
    issued localhost localhost intermediate-ca leaf "$leaf_days"
    echo "gen-dev-pki: generated root-ca -> intermediate-ca -> localhost in $out" >&2
fi
# What a server sends: leaf then intermediate.
cat "$out/localhost.pem" "$out/intermediate-ca.pem" >"$out/localhost-chain.pem"

if chain_ok other-root-ca other-localhost; then
    echo "gen-dev-pki: keeping other-root-ca -> other-localhost in $out" >&2
else
    self_signed other-root-ca "Airlock Dev Other Root CA"
    issued other-localhost localhost other-root-ca leaf "$leaf_days"
    echo "gen-dev-pki: generated other-root-ca -> other-localhost in $out" >&2
fi

# pin PEM: base64 SHA-256 of the DER SubjectPublicKeyInfo.
pin() {
    openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64
}

: >"$out/pins.txt"
for name in root-ca intermediate-ca localhost other-root-ca other-localhost; do
    printf '%-16s sha256/%s\n' "$name" "$(pin "$out/$name.pem")" | tee -a "$out/pins.txt"
done

#!/usr/bin/env python3
"""Generates a throwaway test PKI for Airlock's TLS integration tests.

Usage: make_pki.py OUTDIR [--weak] [--not-yet-valid]

EC P-256 keys, SHA-256 signatures (except the --weak set). Everything is made fresh on every run; nothing here is
meant to be committed. Writes into OUTDIR (created if missing):

    root            CA, self-signed                          root.pem root.der root.key
    intermediate    CA, issued by root (pathlen 0)           intermediate.pem .der .key
    leaf            localhost + 127.0.0.1, by intermediate   leaf.pem .der .key, leaf-chain.pem
    wrongname       other.example only, by intermediate      wrongname.pem .key, wrongname-chain.pem
    expired         localhost + 127.0.0.1, 2020-01-01..02    expired.pem .key, expired-chain.pem
    cn-only         CN=localhost and no SAN, by intermediate cn-only.pem .key, cn-only-chain.pem
    other-root      CA, self-signed, unrelated               other-root.pem .der .key
    other-leaf      localhost + 127.0.0.1, by other-root     other-leaf.pem .key, other-leaf-chain.pem
    selfsigned      localhost + 127.0.0.1, self-signed, not a CA   selfsigned.pem .key, selfsigned-chain.pem

With --not-yet-valid, also:

    not-yet-valid   localhost + 127.0.0.1, valid from tomorrow   not-yet-valid.pem .key, -chain.pem

With --weak, also certificates that OpenSSL security level 2 refuses (and their controls), all
for localhost + 127.0.0.1 under the same root:

    rsa-intermediate  CA, RSA-2048, by root                       rsa-intermediate.pem .der .key
    rsa-leaf          RSA-2048, SHA-256 by rsa-intermediate (good) rsa-leaf.pem .key, rsa-leaf-chain.pem
    sha1-leaf         SHA-1 signature by rsa-intermediate          sha1-leaf.pem .key, sha1-leaf-chain.pem
    md5-leaf          MD5 signature by rsa-intermediate            md5-leaf.pem .key, md5-leaf-chain.pem
    rsa1024-leaf      RSA-1024 key, SHA-256 by intermediate        rsa1024-leaf.pem .key, -chain.pem
    sha1-intermediate CA, SHA-1 signature (ecdsa-with-SHA1) by root
    sha1-ca-leaf      SHA-256 by sha1-intermediate                 sha1-ca-leaf.pem .key, -chain.pem
    rsa1024-intermediate  CA, RSA-1024 key, SHA-256 by root
    rsa1024-ca-leaf   SHA-256 by rsa1024-intermediate              rsa1024-ca-leaf.pem .key, -chain.pem
    sha1-selfsigned   self-signed with SHA-1, P-256, not a CA: a legacy host's certificate, weak only
                      where its own signature counts (it never does for an anchor)

`cryptography` refuses to sign with SHA-1 or MD5, so those three are signed by the `openssl` CLI
(`openssl x509 -req -sha1|-md5`, `-signkey` for the self-signed one) from a CSR; the others by `cryptography`. --weak also writes
dh1536.pem, DH parameters of the RFC 3526 1536-bit MODP group (below level 2's 2048 bits), for a
legacy DHE-only origin (tls_origin.py --dhe-only).

A "-chain.pem" file is what a server sends: the leaf, then its intermediate if it has one.
Every certificate also gets a ".der" copy. Keys are PKCS#8 PEM, mode 600.

manifest.json maps each name to its files (relative to OUTDIR) and its pin:
    {"directory": "/abs/OUTDIR",
     "certificates": {"leaf": {"cert": "leaf.pem", "der": "leaf.der", "key": "leaf.key",
                               "chain": "leaf-chain.pem", "issuer": "intermediate",
                               "pin": "sha256/<base64 of SHA-256 over DER SubjectPublicKeyInfo>"}, ...}}

Requires the `cryptography` package (pip install cryptography).
"""

import base64
import datetime
import hashlib
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
except ImportError as error:  # pragma: no cover - environment problem, reported plainly
    sys.stderr.write(f"make_pki: the Python package 'cryptography' is missing ({error}); "
                     "run: python3 -m pip install cryptography\n")
    sys.exit(3)

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
DAY = datetime.timedelta(days=1)
LOCAL_NAMES = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
EXPIRED_FROM = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
EXPIRED_UNTIL = datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc)


class Issued:
    """A certificate, its key, and the issuer it hangs off (None for a self-signed one)."""

    def __init__(self, name, cert, key, issuer):
        self.name = name
        self.cert = cert
        self.key = key
        self.issuer = issuer


def spki_pin(cert):
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256/" + base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


def subject(common_name):
    return x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Airlock tests"),
    ])


def make(name, common_name, issuer, *, ca, sans=None, path_length=None,
         not_before=None, not_after=None, key=None):
    """Issues `name` from `issuer` (an Issued, or None for self-signed); `key` defaults to a new P-256 key."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    public = key.public_key()
    signer_key = issuer.key if issuer else key
    issuer_name = issuer.cert.subject if issuer else subject(common_name)
    builder = (x509.CertificateBuilder()
               .subject_name(subject(common_name))
               .issuer_name(issuer_name)
               .public_key(public)
               .serial_number(x509.random_serial_number())
               .not_valid_before(not_before or NOW - DAY)
               .not_valid_after(not_after or NOW + (365 * DAY if ca else 30 * DAY))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
            encipher_only=False, decipher_only=False), critical=True)
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                                        critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if issuer:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()), critical=False)
    cert = builder.sign(signer_key, hashes.SHA256())
    return Issued(name, cert, key, issuer)


def key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_with_openssl(name, common_name, issuer, digest, *, ca, key=None):
    """Issues `name` from `issuer` (None: self-signed) signed with `digest` ("sha1", "md5"), which
    `cryptography` refuses: a CSR from `cryptography`, signed by `openssl x509 -req -<digest>` with the
    usual extensions."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder().subject_name(subject(common_name))
           .sign(key, hashes.SHA256()))
    if ca:
        extensions = ["basicConstraints=critical,CA:TRUE,pathlen:0", "keyUsage=critical,keyCertSign,cRLSign"]
    else:
        extensions = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature",
                      "extendedKeyUsage=serverAuth", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
    extensions += ["subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid"]
    with tempfile.TemporaryDirectory(prefix="make_pki-") as work:
        paths = {part: os.path.join(work, part) for part in ("csr", "ca.pem", "ca.key", "ext.cnf", "out.pem")}
        write(paths["csr"], csr.public_bytes(serialization.Encoding.PEM))
        write(paths["ca.key"], key_pem(issuer.key if issuer else key), private=True)
        write(paths["ext.cnf"], ("\n".join(extensions) + "\n").encode())
        if issuer:
            write(paths["ca.pem"], pem(issuer.cert))
            signer = ["-CA", paths["ca.pem"], "-CAkey", paths["ca.key"]]
        else:
            signer = ["-signkey", paths["ca.key"]]
        command = [os.environ.get("OPENSSL", "openssl"), "x509", "-req", "-in", paths["csr"], *signer, f"-{digest}",
                   "-days", "365" if ca else "30", "-set_serial", str(x509.random_serial_number()),
                   "-extfile", paths["ext.cnf"], "-out", paths["out.pem"]]
        result = subprocess.run(command, capture_output=True, timeout=30, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: "
                               f"{result.stderr.decode(errors='replace')}")
        with open(paths["out.pem"], "rb") as handle:
            cert = x509.load_pem_x509_certificate(handle.read())
    return Issued(name, cert, key, issuer)


def weak_set(root, intermediate):
    """The --weak certificates (see the module docstring), issuers first."""
    rsa_intermediate = make("rsa-intermediate", "Airlock Test RSA Intermediate CA", root, ca=True,
                            path_length=0, key=rsa.generate_private_key(65537, 2048))
    sha1_intermediate = make_with_openssl("sha1-intermediate", "Airlock Test SHA-1 Intermediate CA", root,
                                          "sha1", ca=True)
    rsa1024_intermediate = make("rsa1024-intermediate", "Airlock Test RSA-1024 Intermediate CA", root, ca=True,
                                path_length=0, key=rsa.generate_private_key(65537, 1024))
    return [
        rsa_intermediate,
        make("rsa-leaf", "localhost", rsa_intermediate, ca=False, sans=LOCAL_NAMES,
             key=rsa.generate_private_key(65537, 2048)),
        make_with_openssl("sha1-leaf", "localhost", rsa_intermediate, "sha1", ca=False),
        make_with_openssl("md5-leaf", "localhost", rsa_intermediate, "md5", ca=False),
        make("rsa1024-leaf", "localhost", intermediate, ca=False, sans=LOCAL_NAMES,
             key=rsa.generate_private_key(65537, 1024)),
        sha1_intermediate,
        make("sha1-ca-leaf", "localhost", sha1_intermediate, ca=False, sans=LOCAL_NAMES),
        rsa1024_intermediate,
        make("rsa1024-ca-leaf", "localhost", rsa1024_intermediate, ca=False, sans=LOCAL_NAMES),
        make_with_openssl("sha1-selfsigned", "localhost", None, "sha1", ca=False),
    ]


def write(path, data, private=False):
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(path, flags, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def main(argv):
    weak = "--weak" in argv[1:]
    future = "--not-yet-valid" in argv[1:]
    rest = [a for a in argv[1:] if a not in ("--weak", "--not-yet-valid")]
    if len(rest) != 1 or rest[0].startswith("-"):
        sys.stderr.write("usage: make_pki.py OUTDIR [--weak] [--not-yet-valid]\n")
        return 2
    out = os.path.abspath(rest[0])
    os.makedirs(out, exist_ok=True)

    root = make("root", "Airlock Test Root CA", None, ca=True, path_length=1)
    intermediate = make("intermediate", "Airlock Test Intermediate CA", root, ca=True, path_length=0)
    other_root = make("other-root", "Airlock Test Other Root CA", None, ca=True, path_length=0)
    everything = [
        root,
        intermediate,
        make("leaf", "localhost", intermediate, ca=False, sans=LOCAL_NAMES),
        make("wrongname", "other.example", intermediate, ca=False, sans=[x509.DNSName("other.example")]),
        make("expired", "localhost", intermediate, ca=False, sans=LOCAL_NAMES,
             not_before=EXPIRED_FROM, not_after=EXPIRED_UNTIL),
        make("cn-only", "localhost", intermediate, ca=False),
        other_root,
        make("other-leaf", "localhost", other_root, ca=False, sans=LOCAL_NAMES),
        make("selfsigned", "localhost", None, ca=False, sans=LOCAL_NAMES),
    ]
    if future:
        everything.append(make("not-yet-valid", "localhost", intermediate, ca=False, sans=LOCAL_NAMES,
                               not_before=NOW + DAY, not_after=NOW + 30 * DAY))
    if weak:
        everything += weak_set(root, intermediate)
        command = [os.environ.get("OPENSSL", "openssl"), "genpkey", "-genparam", "-algorithm", "DH",
                   "-pkeyopt", "group:modp_1536", "-out", os.path.join(out, "dh1536.pem")]
        result = subprocess.run(command, capture_output=True, timeout=30, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: "
                               f"{result.stderr.decode(errors='replace')}")

    manifest = {"directory": out, "certificates": {}}
    for item in everything:
        name = item.name
        entry = {"cert": f"{name}.pem", "der": f"{name}.der", "key": f"{name}.key",
                 "issuer": item.issuer.name if item.issuer else None, "pin": spki_pin(item.cert)}
        write(os.path.join(out, entry["cert"]), pem(item.cert))
        write(os.path.join(out, entry["der"]), item.cert.public_bytes(serialization.Encoding.DER))
        write(os.path.join(out, entry["key"]), key_pem(item.key), private=True)
        is_ca = item.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        if not is_ca:
            # What a server sends: the leaf, then the intermediate (never the root).
            chain = pem(item.cert)
            if item.issuer is not None and item.issuer.issuer is not None:
                chain += pem(item.issuer.cert)
            entry["chain"] = f"{name}-chain.pem"
            write(os.path.join(out, entry["chain"]), chain)
        manifest["certificates"][name] = entry

    write(os.path.join(out, "manifest.json"), (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    for item in everything:
        print(f"{item.name} {manifest['certificates'][item.name]['pin']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

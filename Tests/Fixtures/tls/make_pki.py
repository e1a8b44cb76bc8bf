#!/usr/bin/env python3
"""Generates a throwaway test PKI for Airlock's TLS integration tests.

Usage: make_pki.py OUTDIR

EC P-256 keys, SHA-256 signatures. Everything is made fresh on every run; nothing here is
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
import sys

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
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
         not_before=None, not_after=None):
    """Issues `name` from `issuer` (an Issued, or None for self-signed)."""
    key = ec.generate_private_key(ec.SECP256R1())
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


def write(path, data, private=False):
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(path, flags, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_pki.py OUTDIR\n")
        return 2
    out = os.path.abspath(argv[1])
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

    manifest = {"directory": out, "certificates": {}}
    for item in everything:
        name = item.name
        entry = {"cert": f"{name}.pem", "der": f"{name}.der", "key": f"{name}.key",
                 "issuer": item.issuer.name if item.issuer else None, "pin": spki_pin(item.cert)}
        write(os.path.join(out, entry["cert"]), pem(item.cert))
        write(os.path.join(out, entry["der"]), item.cert.public_bytes(serialization.Encoding.DER))
        write(os.path.join(out, entry["key"]), item.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
            private=True)
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

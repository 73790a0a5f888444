"""Certificates for the local control plane: one CA, a serving cert, an admin client cert and
the service-account signing key pair. Everything is generated fresh for every cluster."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=30)
SERVING_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
SERVING_IPS = ("127.0.0.1", "10.0.0.1")


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common_name: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _leaf(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: x509.SubjectAlternativeName | None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(subject, ca.subject, key.public_key())
    builder = builder.add_extension(
        x509.BasicConstraints(ca=False, path_length=None), critical=True
    )
    builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans is not None:
        builder = builder.add_extension(sans, critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def generate(directory: Path) -> Pki:
    """Write a complete PKI into ``directory`` and return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("fabricfit-local-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    sans = x509.SubjectAlternativeName(
        [x509.DNSName(d) for d in SERVING_DNS]
        + [x509.IPAddress(ipaddress.ip_address(i)) for i in SERVING_IPS]
    )
    serving, serving_key = _leaf(
        ca, ca_key, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans
    )
    admin, admin_key = _leaf(
        ca, ca_key, _name("admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH, None
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pki = Pki(
        *(
            directory / n
            for n in (
                "ca.crt",
                "ca.key",
                "apiserver.crt",
                "apiserver.key",
                "admin.crt",
                "admin.key",
                "sa.key",
                "sa.pub",
            )
        )
    )
    for path, cert in ((pki.ca_cert, ca), (pki.serving_cert, serving), (pki.admin_cert, admin)):
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    for path, key in (
        (pki.ca_key, ca_key),
        (pki.serving_key, serving_key),
        (pki.admin_key, admin_key),
        (pki.sa_key, sa_key),
    ):
        _write_key(path, key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki

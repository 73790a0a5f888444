"""Certificates for the local control plane: one CA, a serving cert, an admin client cert and
the service-account signing key pair. Everything is generated fresh for every cluster."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
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


def issue_serving_cert(pki_dir: Path, directory: Path, common_name: str) -> tuple[Path, Path]:
    """A loopback serving cert (127.0.0.1, localhost) signed by the cluster CA in ``pki_dir``,
    written as ``tls.crt``/``tls.key`` in ``directory`` (the names controller-runtime's webhook
    server reads from its cert dir). Returns (cert, key)."""
    ca = x509.load_pem_x509_certificate((pki_dir / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{pki_dir / 'ca.key'} is not the EC key this harness writes")
    sans = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    )
    cert, key = _leaf(ca, ca_key, _name(common_name), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key_path, key)
    return cert_path, key_path


def self_signed_serving_cert(directory: Path, common_name: str) -> tuple[Path, Path]:
    """A self-signed loopback serving cert, for servers nothing verifies (metrics endpoints);
    written atomically so a process watching ``directory`` never reads half a file."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    sans = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    )
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(sans, critical=False)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    for path, data in (
        (key_path, key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )),
        (cert_path, cert.public_bytes(serialization.Encoding.PEM)),
    ):  # fmt: skip
        partial = path.with_suffix(".partial")
        partial.write_bytes(data)
        partial.chmod(0o600)
        partial.replace(path)
    return cert_path, key_path


def still_valid(
    cert_path: Path, key_path: Path, margin: dt.timedelta = dt.timedelta(days=1)
) -> bool:
    """True if both files exist, parse, and the cert is valid for at least ``margin`` more."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        serialization.load_pem_private_key(key_path.read_bytes(), None)
    except (OSError, ValueError):
        return False
    return cert.not_valid_after_utc - dt.datetime.now(dt.UTC) > margin


def write_kubeconfig(path: Path, server: str, pki: Pki) -> None:
    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "fabricfit-local",
                "cluster": {"server": server, "certificate-authority-data": b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": b64(pki.admin_cert),
                    "client-key-data": b64(pki.admin_key),
                },
            }
        ],
        "contexts": [
            {"name": "fabricfit-local", "context": {"cluster": "fabricfit-local", "user": "admin"}}
        ],
        "current-context": "fabricfit-local",
    }
    path.write_text(json.dumps(doc, indent=2))
    path.chmod(0o600)

"""``weir certs``: a certificate authority and the certificates of one cluster, as PEM files.

Turning TLS on takes two steps: ``weir certs --out DIR --hosts HOST,...`` writes the files
and prints the lines for ``weir-conf.yaml``; copy DIR to the same path on every host (the
master and each Spark worker) and add the lines. Every certificate is signed by the new CA
(ECDSA P-256), names every given host (DNS names and IP addresses), ``localhost``,
``127.0.0.1`` and ``weir-cluster`` (what is checked when ``security.ssl.verify-hostname``
is off), and serves as both server and client certificate:

=================  ==========================================================
``ca.pem``         the CA's certificate: the trust-cert of every side
``ca-key.pem``     the CA's key, to sign more later; keep it off the cluster
``internal.pem``   ``security.ssl.internal.cert`` (+ ``internal-key.pem``)
``rest.pem``       ``security.ssl.rest.cert`` (+ ``rest-key.pem``), Dispatcher and clients
=================  ==========================================================

Keys are written readable by their owner only.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from weir.core.security import CLUSTER_NAME

_ALWAYS_NAMED = ("localhost", "127.0.0.1", CLUSTER_NAME)


@dataclass(frozen=True, slots=True)
class ClusterCertificates:
    """The paths ``write_cluster_certificates`` wrote."""

    ca_cert: Path
    ca_key: Path
    internal_cert: Path
    internal_key: Path
    rest_cert: Path
    rest_key: Path

    def config_lines(self) -> list[str]:
        """The ``weir-conf.yaml`` lines that turn mutual TLS on with these files."""
        return [
            "security.ssl.internal.enabled: true",
            f"security.ssl.internal.cert: {self.internal_cert}",
            f"security.ssl.internal.key: {self.internal_key}",
            f"security.ssl.internal.trust-cert: {self.ca_cert}",
            "security.ssl.rest.enabled: true",
            f"security.ssl.rest.cert: {self.rest_cert}",
            f"security.ssl.rest.key: {self.rest_key}",
            f"security.ssl.rest.trust-cert: {self.ca_cert}",
        ]


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Weir"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _subject_alternative_names(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    seen: set[str] = set()
    for given in (*hosts, *_ALWAYS_NAMED):
        host = given.strip()
        if not host or host in seen:
            continue
        seen.add(host)
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def write_cluster_certificates(
    out: str | os.PathLike[str], hosts: Sequence[str], *, days: int = 365
) -> ClusterCertificates:
    """Write a new CA and the internal and REST certificates into ``out`` (created if
    missing; existing files there are replaced). Returns their paths, absolute."""
    directory = Path(out).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    # A minute back: clocks of the hosts of one cluster differ by a little.
    not_before, not_after = now - datetime.timedelta(minutes=1), now + datetime.timedelta(days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Weir cluster CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = ClusterCertificates(
        ca_cert=directory / "ca.pem",
        ca_key=directory / "ca-key.pem",
        internal_cert=directory / "internal.pem",
        internal_key=directory / "internal-key.pem",
        rest_cert=directory / "rest.pem",
        rest_key=directory / "rest-key.pem",
    )
    _write_key(paths.ca_key, ca_key)
    _write_cert(paths.ca_cert, ca_cert)
    alternative_names = _subject_alternative_names(hosts)
    for common_name, cert_path, key_path in (
        ("weir internal", paths.internal_cert, paths.internal_key),
        ("weir rest", paths.rest_cert, paths.rest_key),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(alternative_names, critical=False)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_key(key_path, key)
        _write_cert(cert_path, cert)
    return paths

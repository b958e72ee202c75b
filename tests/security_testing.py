"""Certificates and configurations for tests of TLS and tokens: a cluster CA with its
certificates, and a second CA whose certificates the cluster must refuse."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from weir.client.certificates import ClusterCertificates, write_cluster_certificates

TOKEN = "the-cluster-token"


def tls_config(certs: ClusterCertificates, token: str = TOKEN) -> dict[str, str]:
    """Mutual TLS inside the cluster and for clients, and a token, with ``certs``."""
    conf = dict(line.split(": ", 1) for line in certs.config_lines())
    if token:
        conf["security.auth.token"] = token
    return conf


@dataclass(frozen=True)
class ClusterTestCertificates:
    cluster: ClusterCertificates
    other: ClusterCertificates
    """Of another CA: well-formed, trusted by nobody in the cluster."""

    def config(self, token: str = TOKEN) -> dict[str, str]:
        return tls_config(self.cluster, token)

    def other_ca_config(self, token: str = TOKEN) -> dict[str, str]:
        return tls_config(self.other, token)


def make_test_certificates(
    root: Path, hosts: tuple[str, ...] = ("127.0.0.1",)
) -> ClusterTestCertificates:
    return ClusterTestCertificates(
        write_cluster_certificates(root / "cluster", hosts),
        write_cluster_certificates(root / "other", hosts),
    )

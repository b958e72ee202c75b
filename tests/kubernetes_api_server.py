"""A real Kubernetes API server for the high-availability tests: etcd and kube-apiserver
(Kubernetes 1.34, the binaries ``tests/kubernetes_build.py`` builds into
``~/.cache/weir/kubernetes-<version>/bin``) on free ports of 127.0.0.1, with a fresh CA,
RBAC, and a ServiceAccount whose Role has exactly the rules ``weir kubernetes-session``
and the chart give a master (``ROLE_RULES``): the tests talk to it as a master pod would,
with that ServiceAccount's token.

No kubelet, no controllers, no pods: what Kubernetes high availability needs is ConfigMaps,
and this starts in seconds beside the full single-node cluster of the Kubernetes suites
(which holds the fixed ports 6443 and 2379-2380; nothing here uses them). Processes are
started and stopped by their pids; the API server alone can be stopped and started again
(``restart_api_server``) on the same etcd, as when a control plane is upgraded.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

KUBERNETES_VERSION = "1.34.4"
WEIR_CACHE = Path(os.environ.get("WEIR_CACHE", Path.home() / ".cache" / "weir"))
try:  # the harness of the full cluster builds the binaries (make kubernetes)
    from kubernetes_build import BIN as _BUILT_BIN
except ImportError:
    _BUILT_BIN = WEIR_CACHE / f"kubernetes-{KUBERNETES_VERSION}" / "bin"
BIN = Path(os.environ.get("WEIR_KUBERNETES_BIN") or _BUILT_BIN)
NEEDED = ("etcd", "kube-apiserver")
# etcd answers in about a second; kube-apiserver is ready (RBAC's bootstrap roles written)
# in 5-15 s here; a loaded CI machine gets far more.
READY_TIMEOUT_S = 180.0
STOP_GRACE_S = 15.0
NAMESPACE = "weir-ha"
SERVICE_ACCOUNT = "weir-master"


def missing_binaries() -> list[str]:
    return [name for name in NEEDED if not os.access(BIN / name, os.X_OK)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_pki(pki: Path) -> None:
    """A CA, the API server's certificate (127.0.0.1, localhost), an admin client
    certificate (system:masters) and the ServiceAccount token signing key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pki.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    later = now + datetime.timedelta(days=7)

    def save(name: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate | None) -> None:
        (pki / f"{name}.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        if cert is not None:
            (pki / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def name(common: str, organization: str = "") -> x509.Name:
        parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
        if organization:
            parts.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        return x509.Name(parts)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("weir-test-api-server-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(later)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    save("ca", ca_key, ca)

    def issue(file: str, subject: x509.Name, server: bool) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(later)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if server:
            import ipaddress

            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
                ),
                critical=False,
            )
        save(file, key, builder.sign(ca_key, hashes.SHA256()))

    issue("apiserver", name("kube-apiserver"), server=True)
    issue("admin", name("weir-test-admin", "system:masters"), server=False)
    signing = ec.generate_private_key(ec.SECP256R1())
    save("sa", signing, None)
    (pki / "sa.pub").write_bytes(
        signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


@dataclass
class KubeApiServer:
    root: Path
    etcd_port: int = field(default_factory=free_port)
    etcd_peer_port: int = field(default_factory=free_port)
    port: int = field(default_factory=free_port)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    kubeconfig: Path | None = None
    """A kubeconfig of the ServiceAccount ``weir-master`` in namespace ``weir-ha``, whose
    Role has the master's rules."""
    token: str = ""

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> KubeApiServer:
        missing = missing_binaries()
        if missing:
            msg = (
                f"{', '.join(missing)} not in {BIN}: the Kubernetes binaries are built by "
                "`make kubernetes` (tests/kubernetes_build.py, Go and the Go module proxy); "
                "WEIR_KUBERNETES_BIN may name another directory holding them"
            )
            raise FileNotFoundError(msg)
        self.root.mkdir(parents=True, exist_ok=True)
        _write_pki(self.pki)
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        self._spawn(
            "etcd",
            [
                str(BIN / "etcd"),
                "--name=weir-ha-test",
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=weir-ha-test={peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._await("etcd", lambda: _http_ok(f"{client}/health"))
        self.start_api_server()
        self._setup_service_account()
        return self

    def start_api_server(self) -> None:
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(BIN / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={self.root / 'apiserver-certs'}",
                "--service-cluster-ip-range=10.254.0.0/24",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--authorization-mode=RBAC",
                # No node to publish: the kubernetes Service's endpoints stay empty.
                "--endpoint-reconciler-type=none",
                "--profiling=false",
            ],
        )
        self._await("kube-apiserver", lambda: self.admin("GET", "/readyz", raw=True) == "ok")

    def stop_api_server(self, signum: int = signal.SIGTERM) -> None:
        self._stop("kube-apiserver", signum)

    def restart_api_server(self) -> None:
        self.stop_api_server()
        self.start_api_server()

    def stop(self) -> None:
        self._stop("kube-apiserver")
        self._stop("etcd")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.root / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
        log.close()

    def _stop(self, name: str, signum: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signum)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _await(self, name: str, ready: Any) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            with contextlib.suppress(Exception):
                if ready():
                    return
            process = self.processes[name]
            if process.poll() is not None:
                tail = (self.root / f"{name}.log").read_text(errors="replace").splitlines()[-20:]
                msg = f"{name} exited with {process.returncode}:\n" + "\n".join(tail)
                raise RuntimeError(msg)
            if time.monotonic() > deadline:
                msg = f"{name} not ready within {READY_TIMEOUT_S:.0f} s (log: {self.root})"
                raise RuntimeError(msg)
            time.sleep(0.1)  # polling interval; readiness decides

    # -- requests as the cluster's administrator ---------------------------------------
    def admin(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, raw: bool = False
    ) -> Any:
        pki = self.pki
        response = requests.request(
            method,
            self.server + path,
            json=body,
            cert=(str(pki / "admin.crt"), str(pki / "admin.key")),
            verify=str(pki / "ca.crt"),
            timeout=30,
        )
        if raw:
            return response.text
        if response.status_code >= 400 and response.status_code != 409:
            msg = f"{method} {path}: {response.status_code} {response.text}"
            raise RuntimeError(msg)
        return response.json()

    def create_namespace(self, name: str) -> None:
        self.admin("POST", "/api/v1/namespaces", {"metadata": {"name": name}})

    def service_account_kubeconfig(
        self, namespace: str, account: str, rules: list[dict[str, Any]]
    ) -> tuple[Path, str]:
        """A ServiceAccount bound to a Role of ``rules``, and a kubeconfig with its token."""
        base = f"/api/v1/namespaces/{namespace}"
        rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
        self.admin("POST", f"{base}/serviceaccounts", {"metadata": {"name": account}})
        self.admin("POST", f"{rbac}/roles", {"metadata": {"name": account}, "rules": rules})
        self.admin(
            "POST",
            f"{rbac}/rolebindings",
            {
                "metadata": {"name": account},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": account,
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            },
        )
        answer = self.admin(
            "POST",
            f"{base}/serviceaccounts/{account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 7 * 86400},
            },
        )
        token = str(answer["status"]["token"])
        path = self.root / f"kubeconfig-{namespace}-{account}"
        ca = base64.b64encode((self.pki / "ca.crt").read_bytes()).decode()
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "test",
                            "cluster": {"server": self.server, "certificate-authority-data": ca},
                        }
                    ],
                    "users": [{"name": account, "user": {"token": token}}],
                    "contexts": [
                        {
                            "name": "test",
                            "context": {"cluster": "test", "user": account, "namespace": namespace},
                        }
                    ],
                    "current-context": "test",
                }
            )
        )
        return path, token

    def _setup_service_account(self) -> None:
        from weir.client.kubernetes_manifests import ROLE_RULES

        self.create_namespace(NAMESPACE)
        self.kubeconfig, self.token = self.service_account_kubeconfig(
            NAMESPACE, SERVICE_ACCOUNT, ROLE_RULES
        )

    def ha_config(self, cluster_id: str, storage_dir: str, **overrides: str) -> dict[str, str]:
        """Weir keys for Kubernetes HA on this API server as the ServiceAccount."""
        return {
            "high-availability.type": "kubernetes",
            "kubernetes.config.file": str(self.kubeconfig),
            "kubernetes.namespace": NAMESPACE,
            "kubernetes.cluster-id": cluster_id,
            "high-availability.storageDir": storage_dir,
            **overrides,
        }


def _http_ok(url: str) -> bool:
    return requests.get(url, timeout=5).status_code == 200

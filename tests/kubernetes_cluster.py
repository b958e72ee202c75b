"""A real single-node Kubernetes cluster for the tests, started from what
``tests/kubernetes_build.py`` built: containerd (runc, a CNI bridge), etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kube-proxy (iptables) and a kubelet, then
CoreDNS. Images come from podman's store (no registry); pods use them with
``imagePullPolicy: Never`` or ``IfNotPresent``.

One cluster per machine at a time (its ports are fixed: 6443, 2379-2380, 10248-10259):
a supervisor process (``python tests/kubernetes_cluster.py serve``) starts it, and stops it
once none of the processes registered in ``RUN/users`` is alive. pytest-xdist's workers
share it as they share the Hadoop minicluster (``SharedKubernetes``): the first that needs
it starts it, the others join, and it goes when the last one lets it go or dies.

What it changes on the host, and undoes when it stops (also after a supervisor that was
killed, at the next start): three sysctls (IP forwarding, bridge netfilter) and the ones
the kubelet sets (overcommit and panic settings, key quotas), the bridge ``weirk8s0``,
iptables chains (``KUBE-*``, and the guard chains ``WEIR-K8S-*``), mounts under the run
directory, the kubelet's ``kubepods`` cgroups, and the directories the kubelet and
containerd create at fixed paths. Every process is started and stopped by its pid.

Nothing listens beyond loopback and the node's address, ``10.224.0.1``, which sits on the
cluster's own bridge: etcd, the controllers' and kube-proxy's ports on 127.0.0.1, the API
server, the kubelet and NodePorts on the node address. Guard chains drop any packet of the
pod or Service ranges that would leave through another interface and anything that comes
in for them from one, and pods' DNS answers only for cluster.local: nothing reaches beyond
this machine.

By hand (as root)::

    python tests/kubernetes_cluster.py up      # prints export KUBECONFIG=... ; stays up
    python tests/kubernetes_cluster.py down    # stops it, undoes the host changes
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kubernetes_build import (
    BIN,
    CACHE,
    COREDNS_IMAGE,
    HELM,
    PAUSE_IMAGE,
    SOURCES,
    BuildError,
    locked,
    podman_has,
    toolchain_ready,
)

RUN = Path(os.environ.get("WEIR_KUBERNETES_RUN", "/tmp/weir-kubernetes"))
BRIDGE = "weirk8s0"
POD_CIDR = "10.224.0.0/16"
NODE_IP = "10.224.0.1"
SERVICE_CIDR = "10.225.0.0/16"
API_SERVICE_IP = "10.225.0.1"
DNS_IP = "10.225.0.10"
API_PORT = 6443
ETCD_PORT = 2379
NODE_NAME = "weir-node"
GUARD_OUT = "WEIR-K8S-GUARD-OUT"
GUARD_IN = "WEIR-K8S-GUARD-IN"
# The cluster's own sysctls, and those the kubelet sets for itself (it would leave them).
SYSCTLS = {
    "net.ipv4.ip_forward": "1",
    "net.bridge.bridge-nf-call-iptables": "1",
    "net.bridge.bridge-nf-call-ip6tables": "1",
}
KUBELET_SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
)
# Fixed paths the kubelet, containerd and the CNI library create whatever they are told;
# removed at the stop when they did not exist before the start.
FIXED_PATHS = (
    "/var/lib/kubelet",
    "/var/log/containers",
    "/var/log/pods",
    "/run/containerd",
)
# The CNI library's cache of results, shared with other CNI users (podman's networks):
# only this network's entries are removed, then whatever directories that left empty.
CNI_CACHE = Path("/var/lib/cni")
CNI_NETWORK = "weir-k8s"
COMPONENTS = (
    "containerd",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "kubelet",
)
# From nothing to a Ready node with DNS takes 15-30 s here; a loaded CI machine gets more.
READY_TIMEOUT_S = 300
# Each component gets this long to stop after SIGTERM before SIGKILL.
STOP_GRACE_S = 15
KUBECTL_TIMEOUT_S = 120


class ClusterError(Exception):
    """The cluster could not start, or a command against it failed."""


# --- processes ---------------------------------------------------------------------------
def process_start_time(pid: int) -> str | None:
    """The start time of a live (not zombie) process, to tell it from a later one with the
    same pid; None when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def alive(pid: int) -> bool:
    return process_start_time(pid) is not None


def _executable(pid: int) -> str:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return ""


# Started through a short-lived child, so that the component is nobody's child (no
# zombie waits for a parent that may be gone) and outlives whoever started it.
_DETACH = """
import os, subprocess, sys
log = open(sys.argv[1], "ab")
process = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                           start_new_session=True)
print(process.pid)
"""


def spawn_detached(argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _DETACH, str(log_path), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        msg = f"could not start {argv[0]}: {done.stderr.strip()}"
        raise ClusterError(msg)
    return int(done.stdout.strip())


@dataclass
class Layout:
    """Where one cluster's state lives: ``RUN/state`` (wiped at each start) and its logs
    ``RUN/logs`` (kept after the stop)."""

    run: Path = RUN

    @property
    def state(self) -> Path:
        return self.run / "state"

    @property
    def logs(self) -> Path:
        return self.run / "logs"

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    @property
    def volumes(self) -> Path:
        return self.state / "volumes"

    def pid_file(self, name: str) -> Path:
        return self.state / "pids" / f"{name}.pid"

    def argv_file(self, name: str) -> Path:
        return self.state / "components" / f"{name}.json"

    def component_pid(self, name: str) -> int | None:
        """The pid of a running component (checked to be that program), or None."""
        try:
            pid = int(self.pid_file(name).read_text())
        except (OSError, ValueError):
            return None
        if alive(pid) and _executable(pid) == name:
            return pid
        return None


def component_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}:/usr/local/sbin:/usr/sbin:/sbin:{os.environ['PATH']}"}


def start_component(layout: Layout, name: str, argv: list[str] | None = None) -> int:
    """Start a component (with the command line it last had when ``argv`` is None)."""
    if argv is None:
        argv = json.loads(layout.argv_file(name).read_text())
    else:
        layout.argv_file(name).write_text(json.dumps(argv))
    pid = spawn_detached(argv, layout.logs / f"{name}.log", component_env())
    layout.pid_file(name).write_text(str(pid))
    return pid


def stop_component(layout: Layout, *names: str, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM each running component, wait for all, then SIGKILL what is left."""
    pids = []
    for name in names:
        pid = layout.component_pid(name)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            pids.append(pid)
    deadline = time.monotonic() + grace_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    for pid in pids:
        while alive(pid):
            time.sleep(0.05)


# --- certificates ------------------------------------------------------------------------
def _write_pki(pki: Path) -> None:
    """A fresh CA, the API server's certificate, client certificates for each component
    and the admin, and the ServiceAccount token signing key (P-256 throughout)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pki.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)

    def write_key(name: str, key: ec.EllipticCurvePrivateKey) -> None:
        (pki / f"{name}.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )

    def subject(common_name: str, organization: str | None = None) -> x509.Name:
        parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            parts.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        return x509.Name(parts)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = subject("weir-test-kubernetes-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
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
        .sign(ca_key, hashes.SHA256())
    )
    write_key("ca", ca_key)
    (pki / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def issue(
        name: str, common_name: str, organization: str | None = None, sans: list[str] | None = None
    ) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject(common_name, organization))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if sans:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            names: list[x509.GeneralName] = []
            for san in sans:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(san)))
                except ValueError:
                    names.append(x509.DNSName(san))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False).sign(
            ca_key, hashes.SHA256()
        )
        write_key(name, key)
        (pki / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    issue(
        "apiserver",
        "kube-apiserver",
        sans=[
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "localhost",
            "127.0.0.1",
            NODE_IP,
            API_SERVICE_IP,
        ],
    )
    issue("admin", "kubernetes-admin", "system:masters")
    issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
    issue("controller-manager", "system:kube-controller-manager")
    issue("scheduler", "system:kube-scheduler")
    issue("kube-proxy", "system:kube-proxy")
    issue("kubelet", f"system:node:{NODE_NAME}", "system:nodes")
    signing = ec.generate_private_key(ec.SECP256R1())
    write_key("sa", signing)
    (pki / "sa.pub").write_bytes(
        signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def _write_kubeconfig(path: Path, pki: Path, user: str, cert: str) -> None:
    import base64

    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "weir-test",
                "cluster": {
                    "certificate-authority-data": b64("ca.crt"),
                    "server": f"https://{NODE_IP}:{API_PORT}",
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": b64(f"{cert}.crt"),
                    "client-key-data": b64(f"{cert}.key"),
                },
            }
        ],
        "contexts": [{"name": "weir-test", "context": {"cluster": "weir-test", "user": user}}],
        "current-context": "weir-test",
    }
    path.write_text(yaml.safe_dump(config))


# --- host changes ------------------------------------------------------------------------
def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if check and done.returncode != 0:
        msg = f"{' '.join(argv)} failed: {done.stderr.strip()}"
        raise ClusterError(msg)
    return done


def _read_sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", name.replace(".", "/")).read_text().strip()
    except OSError:
        return None


def _write_sysctl(name: str, value: str) -> None:
    Path("/proc/sys", name.replace(".", "/")).write_text(value)


def _record_host(layout: Layout) -> None:
    """What the start changes, as it was before."""
    record = {
        "sysctls": {name: _read_sysctl(name) for name in (*SYSCTLS, *KUBELET_SYSCTLS)},
        "paths": {path: os.path.lexists(path) for path in FIXED_PATHS},
        "kubepods": sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/kubepods")),
    }
    (layout.run / "host.json").write_text(json.dumps(record, indent=1))


def _guard() -> None:
    """Packets of the pod and Service ranges stay on this machine: none leaves through an
    interface other than the bridge (mangle/POSTROUTING sees the final destination, after
    kube-proxy's translation), and none comes in for them from outside."""
    for chain, hook in ((GUARD_OUT, "POSTROUTING"), (GUARD_IN, "PREROUTING")):
        _sh("iptables", "-t", "mangle", "-N", chain, check=False)
        _sh("iptables", "-t", "mangle", "-F", chain)
        if _sh("iptables", "-t", "mangle", "-C", hook, "-j", chain, check=False).returncode != 0:
            _sh("iptables", "-t", "mangle", "-A", hook, "-j", chain)
    # This machine's own addresses (the node's is in the pod range) are reached through lo.
    _sh("iptables", "-t", "mangle", "-A", GUARD_OUT, "-o", "lo", "-j", "RETURN")
    for rule in (
        ["-d", SERVICE_CIDR],
        ["-d", POD_CIDR, "!", "-o", BRIDGE],
        ["-s", POD_CIDR, "!", "-o", BRIDGE],
    ):
        _sh("iptables", "-t", "mangle", "-A", GUARD_OUT, *rule, "-j", "DROP")
    for interface in ("lo", BRIDGE):
        _sh("iptables", "-t", "mangle", "-A", GUARD_IN, "-i", interface, "-j", "RETURN")
    for cidr in (POD_CIDR, SERVICE_CIDR):
        _sh("iptables", "-t", "mangle", "-A", GUARD_IN, "-d", cidr, "-j", "DROP")


def _remove_chains() -> None:
    """The guard chains and every KUBE-* chain (kube-proxy's and the kubelet's), with the
    rules that jump to them, in IPv4 and IPv6."""
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        for table in ("filter", "nat", "mangle"):
            rules = _sh(tool, "-t", table, "-S", check=False).stdout.splitlines()
            ours = re.compile(r"^-N ((KUBE|WEIR-K8S)-\S+)$")
            chains = [m.group(1) for line in rules if (m := ours.match(line))]
            for line in rules:
                parts = line.split()
                if (
                    len(parts) > 2
                    and parts[0] == "-A"
                    and parts[1] not in chains
                    and "-j" in parts
                    and parts[parts.index("-j") + 1] in chains
                ):
                    _sh(tool, "-t", table, "-D", *parts[1:], check=False)
            for chain in chains:
                _sh(tool, "-t", table, "-F", chain, check=False)
            for chain in chains:
                _sh(tool, "-t", table, "-X", chain, check=False)


def _remove_cgroups(before: list[str]) -> None:
    """The kubelet's kubepods cgroups (deepest first), where it made them."""
    for top in Path("/sys/fs/cgroup").glob("*/kubepods"):
        if str(top) in before:
            continue
        for directory in sorted(
            (p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
        ):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def _unmount_under(path: Path) -> None:
    prefix = str(path) + "/"
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix):
            mounts.append(point)
    for point in sorted(set(mounts), key=len, reverse=True):
        if _sh("umount", point, check=False).returncode != 0:
            _sh("umount", "-l", point, check=False)


# --- start and stop ----------------------------------------------------------------------
def stop_cluster(layout: Layout) -> None:
    """Stop every component by its pid and undo every host change; safe to repeat and to
    run after a start that failed half-way or a supervisor that was killed."""
    stop_component(layout, "kubelet")
    socket = layout.containerd_socket
    if layout.component_pid("containerd") is not None and (BIN / "crictl").exists():
        # Pod sandboxes removed through the CRI: containerd tears down their network (veth,
        # IP address) and unmounts their namespaces.
        subprocess.run(
            [
                str(BIN / "crictl"),
                "--runtime-endpoint",
                f"unix://{socket}",
                "--timeout",
                "30s",
                "rmp",
                "--all",
                "--force",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
    for shim_pid in (layout.state / "containerd" / "state").glob(
        "io.containerd.runtime.v2.task/*/*/shim.pid"
    ):
        with contextlib.suppress(OSError, ValueError):
            pid = int(shim_pid.read_text())
            if _executable(pid).startswith("containerd-shim"):
                os.kill(pid, signal.SIGKILL)
    stop_component(layout, "containerd", "kube-proxy", "kube-scheduler", "kube-controller-manager")
    if (BIN / "kube-proxy").exists():
        subprocess.run(
            [str(BIN / "kube-proxy"), "--cleanup"], capture_output=True, timeout=120, check=False
        )
    stop_component(layout, "kube-apiserver")
    stop_component(layout, "etcd")
    _unmount_under(layout.state)
    record_path = layout.run / "host.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    containers = Path("/var/log/containers")
    if containers.is_dir():
        for link in containers.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(str(layout.run)):
                    link.unlink()
    _remove_cni_cache()
    _sh("ip", "link", "del", BRIDGE, check=False)
    if record:
        # What only a start of ours made (none is recorded before anything was changed).
        for path, existed in record.get("paths", {}).items():
            if not existed and os.path.lexists(path):
                shutil.rmtree(path, ignore_errors=True)
        _remove_chains()
        _remove_cgroups(record.get("kubepods", []))
        for name, value in record.get("sysctls", {}).items():
            if value is not None and _read_sysctl(name) != value:
                with contextlib.suppress(OSError):
                    _write_sysctl(name, value)
    record_path.unlink(missing_ok=True)
    shutil.rmtree(layout.state, ignore_errors=True)


def _remove_cni_cache() -> None:
    if not CNI_CACHE.is_dir():
        return
    for entry in CNI_CACHE.rglob(f"{CNI_NETWORK}-*"):
        with contextlib.suppress(OSError):
            entry.unlink()
    directories = sorted(
        (p for p in CNI_CACHE.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
    )
    for directory in [*directories, CNI_CACHE]:
        with contextlib.suppress(OSError):
            directory.rmdir()


def _wait(
    layout: Layout, what: str, condition: Callable[[], Any], timeout_s: float = READY_TIMEOUT_S
) -> Any:
    """Poll until ``condition()`` is truthy; fail at once, with its log, when a component
    that was started has died."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(Exception):
            value = condition()
            if value:
                return value
        for name in COMPONENTS:
            if layout.pid_file(name).exists() and layout.component_pid(name) is None:
                tail = (layout.logs / f"{name}.log").read_text(errors="replace").splitlines()[-15:]
                msg = f"{name} exited while waiting for {what}:\n" + "\n".join(tail)
                raise ClusterError(msg)
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout_s:.0f} s waiting for {what} (logs: {layout.logs})"
            raise ClusterError(msg)
        time.sleep(0.25)


def _kubectl(layout: Layout, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(BIN / "kubectl"), "--kubeconfig", str(layout.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=KUBECTL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        msg = f"kubectl {' '.join(args)}: {done.stderr.strip()}"
        raise ClusterError(msg)
    return done.stdout


def containerd_images(layout: Layout) -> set[str]:
    out = subprocess.run(
        ["ctr", "--address", str(layout.containerd_socket), "-n", "k8s.io", "images", "ls", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return set(out.split())


def _ctr(layout: Layout, *args: str) -> list[str]:
    return ["ctr", "--address", str(layout.containerd_socket), "-n", "k8s.io", *args]


def load_image(layout: Layout, ref: str) -> bool:
    """Copy an image from podman's store into the cluster's containerd (whose store is kept
    across clusters) unless it is there; True when it was copied.

    podman writes the image as an OCI archive with uncompressed layers, whose blobs are
    named by their digests: the ones containerd has already (the layers an earlier build
    of the image shares, the base's, the dependencies') are left out of what it imports,
    so a rebuilt image costs containerd only its new layers."""
    if ref in containerd_images(layout):
        return False
    if not podman_has(ref):
        msg = f"{ref} is not in podman's store: build it first (make kubernetes builds Weir's)"
        raise ClusterError(msg)
    have = set(
        subprocess.run(
            _ctr(layout, "content", "ls", "-q"),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.split()
    )
    errors = _import_image(layout, ref, have)
    if errors and "not found" in errors:
        # A blob listed as there was collected meanwhile (containerd collects the layers
        # of images removed earlier when it gets round to it): import every blob.
        errors = _import_image(layout, ref, set())
    if errors:
        msg = f"loading {ref} into containerd failed: {errors}"
        raise ClusterError(msg)
    _forget_old_images(layout, ref)
    return True


def _import_image(layout: Layout, ref: str, have: set[str]) -> str:
    """Stream ``ref`` from podman into containerd, leaving out the blobs in ``have``;
    what the two commands said on failure, else ""."""
    with tempfile.TemporaryFile() as save_err, tempfile.TemporaryFile() as load_err:
        save = subprocess.Popen(
            ["podman", "save", "--format", "oci-archive", "--uncompressed", ref],
            stdout=subprocess.PIPE,
            stderr=save_err,
        )
        load = subprocess.Popen(
            _ctr(layout, "images", "import", "--index-name", ref, "-"),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=load_err,
        )
        assert save.stdout is not None and load.stdin is not None
        try:
            with (
                tarfile.open(fileobj=save.stdout, mode="r|") as archive,
                tarfile.open(fileobj=load.stdin, mode="w|") as kept,
            ):
                for member in archive:
                    blob = member.name.rsplit("/", 1)[-1]
                    if member.name.startswith("blobs/sha256/") and f"sha256:{blob}" in have:
                        continue
                    kept.addfile(member, archive.extractfile(member) if member.isfile() else None)
        finally:
            load.stdin.close()
            save.stdout.close()
            load.wait(timeout=1200)
            save.wait(timeout=60)
        if load.returncode != 0 or save.returncode != 0:
            save_err.seek(0)
            load_err.seek(0)
            return f"{load_err.read().decode()[-1500:]} {save_err.read().decode()[-500:]}"
    return ""


# Images of the same repository kept in containerd's store (which outlives the cluster):
# other runs on this machine may be using theirs; older ones go, with their layers.
IMAGES_KEPT = 4


def _forget_old_images(layout: Layout, loaded: str) -> None:
    """Remember the order images of ``loaded``'s repository were loaded in, and remove all
    but the last few of them that no container runs."""
    repository = loaded.rsplit(":", 1)[0]
    record = CACHE / "containerd" / f"loaded-{repository.replace('/', '_')}.txt"
    order = [r for r in record.read_text().split() if r != loaded] if record.exists() else []
    order.append(loaded)
    present = containerd_images(layout)
    # Ones loaded before there was a record count as the oldest.
    unrecorded = sorted(r for r in present if r.startswith(f"{repository}:") and r not in order)
    order = [r for r in [*unrecorded, *order] if r in present]
    in_use = _images_in_use(layout)
    for old in order[:-IMAGES_KEPT]:
        if old not in in_use:
            # Through the CRI, which drops its own reference (by id) to the image too, so
            # that containerd collects the layers no other image has.
            subprocess.run(
                [
                    str(BIN / "crictl"),
                    "--runtime-endpoint",
                    f"unix://{layout.containerd_socket}",
                    "rmi",
                    old,
                ],
                capture_output=True,
                timeout=120,
                check=False,
            )
            order.remove(old)
    record.write_text("\n".join(order) + "\n")


def _images_in_use(layout: Layout) -> set[str]:
    """The names of the images some container (running or not) was made from."""

    def crictl(*args: str) -> Any:
        done = subprocess.run(
            [
                str(BIN / "crictl"),
                "--runtime-endpoint",
                f"unix://{layout.containerd_socket}",
                *args,
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return json.loads(done.stdout) if done.returncode == 0 else {}

    ids = {c.get("imageRef") for c in crictl("ps", "-a").get("containers", [])}
    return {
        tag
        for image in crictl("images").get("images", [])
        if image.get("id") in ids
        for tag in image.get("repoTags") or []
    }


def _containerd_config(layout: Layout) -> Path:
    state = layout.state / "containerd"
    root = CACHE / "containerd"
    root.mkdir(parents=True, exist_ok=True)
    config = f"""version = 2
root = "{root}"
state = "{state / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{layout.containerd_socket}"
[ttrpc]
  address = "{layout.containerd_socket}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  netns_mounts_under_state_dir = true
  # Root here lacks CAP_SYS_RESOURCE: no oom_score_adj below this process's own (0), or
  # runc fails every pod sandbox ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{state / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{layout.state / "cni" / "net.d"}"
"""
    path = state / "config.toml"
    path.write_text(config)
    return path


def _cni_config(layout: Layout) -> None:
    config = {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                # No masquerading: pods reach this machine and each other, nothing beyond.
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(layout.state / "cni" / "ipam"),
                    "ranges": [[{"subnet": POD_CIDR, "gateway": NODE_IP}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    (layout.state / "cni" / "net.d" / "10-weir.conflist").write_text(json.dumps(config, indent=1))


def _kube_proxy_config(layout: Layout) -> Path:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.state / "kube-proxy.kubeconfig")},
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "hostnameOverride": NODE_NAME,
        "oomScoreAdj": 0,
        "bindAddress": "127.0.0.1",
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        # NodePorts answer on the node's address only.
        "nodePortAddresses": [f"{NODE_IP}/32"],
        # The machine's conntrack settings are left as they are.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }
    path = layout.state / "kube-proxy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _kubelet_config(layout: Layout) -> Path:
    pki = layout.pki
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        # This machine has cgroup v1 only.
        "failCgroupV1": False,
        "failSwapOn": False,
        # No CAP_SYS_RESOURCE: no oom_score_adj below 0.
        "oomScoreAdj": 0,
        "clusterDomain": "cluster.local",
        "clusterDNS": [DNS_IP],
        "podLogsDir": str(layout.state / "pod-logs"),
        "address": NODE_IP,
        "healthzBindAddress": "127.0.0.1",
        "readOnlyPort": 0,
        # Images cannot be pulled back once collected: never collect them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # A shared disk and memory: evict only when nearly nothing is left.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "hairpinMode": "hairpin-veth",
        # Pods' status reaches the API sooner (the default is 10 s between node updates).
        "nodeStatusUpdateFrequency": "4s",
    }
    path = layout.state / "kubelet.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _import_system_images(layout: Layout) -> None:
    for ref in (PAUSE_IMAGE, COREDNS_IMAGE):
        if not podman_has(ref):
            msg = f"{ref} is not in podman's store: run `make kubernetes`"
            raise ClusterError(msg)
        load_image(layout, ref)


def _https_ready(layout: Layout, path: str) -> bool:
    context = ssl.create_default_context(cafile=str(layout.pki / "ca.crt"))
    context.load_cert_chain(str(layout.pki / "admin.crt"), str(layout.pki / "admin.key"))
    url = f"https://{NODE_IP}:{API_PORT}{path}"
    with urllib.request.urlopen(url, context=context, timeout=5) as answer:
        return bool(answer.status == 200)


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return bool(answer.status == 200)


def start_cluster(layout: Layout) -> dict[str, Any]:
    """Start a fresh cluster; returns its record. Undoes everything if it fails."""
    if os.geteuid() != 0:
        msg = "the Kubernetes test cluster needs root (mounts, iptables, cgroups)"
        raise ClusterError(msg)
    if not toolchain_ready():
        msg = f"the Kubernetes binaries or images are missing from {CACHE}: run `make kubernetes`"
        raise ClusterError(msg)
    started = time.monotonic()
    stop_cluster(layout)
    if layout.logs.exists():
        shutil.rmtree(layout.run / "logs.previous", ignore_errors=True)
        layout.logs.rename(layout.run / "logs.previous")
    for sub in (
        "pids",
        "components",
        "cni/net.d",
        "cni/ipam",
        "containerd",
        "kubelet",
        "pod-logs",
        "volumes",
    ):
        (layout.state / sub).mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True)
    _record_host(layout)
    try:
        _start(layout)
    except BaseException:
        stop_cluster(layout)
        raise
    record = {
        "kubeconfig": str(layout.kubeconfig),
        "node_ip": NODE_IP,
        "server": f"https://{NODE_IP}:{API_PORT}",
        "start_seconds": round(time.monotonic() - started, 1),
    }
    return record


def _start(layout: Layout) -> None:
    state, pki = layout.state, layout.pki
    for name, value in SYSCTLS.items():
        _write_sysctl(name, value)
    _sh("ip", "link", "add", BRIDGE, "type", "bridge")
    _sh("ip", "addr", "add", f"{NODE_IP}/16", "dev", BRIDGE)
    _sh("ip", "link", "set", BRIDGE, "up")
    _guard()
    _cni_config(layout)
    containerd = _containerd_config(layout)
    start_component(layout, "containerd", ["containerd", "--config", str(containerd)])
    _wait(
        layout,
        "containerd",
        lambda: _sh("ctr", "--address", str(layout.containerd_socket), "version").returncode == 0,
    )
    _import_system_images(layout)

    _write_pki(pki)
    for name, user, cert in (
        ("kubeconfig", "kubernetes-admin", "admin"),
        ("controller-manager.kubeconfig", "system:kube-controller-manager", "controller-manager"),
        ("scheduler.kubeconfig", "system:kube-scheduler", "scheduler"),
        ("kube-proxy.kubeconfig", "system:kube-proxy", "kube-proxy"),
        ("kubelet.kubeconfig", f"system:node:{NODE_NAME}", "kubelet"),
    ):
        _write_kubeconfig(state / name, pki, user, cert)

    peer = f"http://127.0.0.1:{ETCD_PORT + 1}"
    client = f"http://127.0.0.1:{ETCD_PORT}"
    start_component(
        layout,
        "etcd",
        [
            str(BIN / "etcd"),
            "--name=weir",
            f"--data-dir={state / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=weir={peer}",
            "--listen-metrics-urls=",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )
    _wait(layout, "etcd", lambda: _http_ok(f"{client}/health"))
    start_component(
        layout,
        "kube-apiserver",
        [
            str(BIN / "kube-apiserver"),
            f"--etcd-servers={client}",
            f"--bind-address={NODE_IP}",
            f"--advertise-address={NODE_IP}",
            f"--secure-port={API_PORT}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
            "--kubelet-preferred-address-types=InternalIP",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            "--profiling=false",
            "--endpoint-reconciler-type=lease",
        ],
    )
    _wait(layout, "the API server", lambda: _https_ready(layout, "/readyz"))
    for name in ("controller-manager", "scheduler"):
        kubeconfig = state / f"{name}.kubeconfig"
        common = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            "--leader-elect=false",
        ]
        if name == "controller-manager":
            common += [
                "--use-service-account-credentials=true",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allocate-node-cidrs=false",
            ]
        start_component(layout, f"kube-{name}", [str(BIN / f"kube-{name}"), *common])
    start_component(
        layout, "kube-proxy", [str(BIN / "kube-proxy"), f"--config={_kube_proxy_config(layout)}"]
    )
    start_component(
        layout,
        "kubelet",
        [
            str(BIN / "kubelet"),
            f"--config={_kubelet_config(layout)}",
            f"--kubeconfig={state / 'kubelet.kubeconfig'}",
            f"--root-dir={state / 'kubelet'}",
            f"--cert-dir={state / 'kubelet' / 'pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={NODE_IP}",
        ],
    )

    def node_ready() -> bool:
        node = json.loads(_kubectl(layout, "get", "node", NODE_NAME, "-o", "json"))
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in node["status"].get("conditions", [])
        )

    _wait(layout, "the node to be Ready", node_ready)
    _wait(
        layout,
        "the default ServiceAccount",
        lambda: _kubectl(layout, "-n", "default", "get", "serviceaccount", "default"),
    )
    manifest = (SOURCES / "coredns.yaml").read_text().replace("@DNS_IP@", DNS_IP)
    _kubectl(layout, "apply", "-f", "-", stdin=manifest)

    def dns_ready() -> bool:
        deployment = json.loads(
            _kubectl(layout, "-n", "kube-system", "get", "deployment", "coredns", "-o", "json")
        )
        return bool(deployment["status"].get("readyReplicas"))

    _wait(layout, "CoreDNS", dns_ready)


# --- the supervisor ----------------------------------------------------------------------
def _users(run: Path) -> list[Path]:
    directory = run / "users"
    return list(directory.iterdir()) if directory.is_dir() else []


def _user_alive(entry: Path) -> bool:
    """A registered user: a pid file holding that process's start time, or ``manual``."""
    if entry.name == "manual":
        return True
    try:
        return process_start_time(int(entry.name)) == entry.read_text().strip()
    except (OSError, ValueError):
        return False


def serve(run: Path) -> int:
    """The supervisor: start the cluster, print ``ready <record>``, stop it once no user is
    alive (or on SIGTERM/SIGINT)."""
    layout = Layout(run)
    stopping: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _f: stopping.append(s))
    try:
        record = start_cluster(layout)
    except (ClusterError, BuildError, OSError) as exc:
        print(f"failed {exc}".replace("\n", "\\n"), flush=True)
        return 1
    record["supervisor"] = os.getpid()
    (run / "cluster.json").write_text(json.dumps(record))
    print(f"ready {json.dumps(record)}", flush=True)
    sys.stdout.close()
    try:
        while not stopping:
            time.sleep(1)
            with locked(run / "lock"):
                if not any(_user_alive(u) for u in _users(run)):
                    (run / "cluster.json").unlink(missing_ok=True)
                    stop_cluster(layout)
                    return 0
    finally:
        if stopping:
            with locked(run / "lock"):
                (run / "cluster.json").unlink(missing_ok=True)
                stop_cluster(layout)
    return 0


# --- what tests use ----------------------------------------------------------------------
@dataclass
class KubernetesCluster:
    """A running cluster, as the tests see it: kubectl and helm against it, namespaces,
    volumes, images, and its components by name."""

    run: Path
    record: dict[str, Any]
    _namespaces: int = field(default=0, repr=False)

    @property
    def layout(self) -> Layout:
        return Layout(self.run)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.record["kubeconfig"])

    @property
    def node_ip(self) -> str:
        return str(self.record["node_ip"])

    @property
    def env(self) -> dict[str, str]:
        """An environment whose kubectl and helm talk to this cluster."""
        return {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{BIN}:{HELM.parent}:{os.environ['PATH']}",
        }

    def run_tool(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout: float = KUBECTL_TIMEOUT_S,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            check=False,
        )
        if check and done.returncode != 0:
            output = f"{done.stderr.strip()}\n{done.stdout.strip()[-2000:]}"
            msg = f"{' '.join(argv)} failed ({done.returncode}):\n{output}"
            raise ClusterError(msg)
        return done

    def kubectl(
        self,
        *args: str,
        stdin: str | None = None,
        timeout: float = KUBECTL_TIMEOUT_S,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        return self.run_tool(
            [str(BIN / "kubectl"), *args], stdin=stdin, timeout=timeout, check=check
        )

    def get(self, *args: str) -> Any:
        """``kubectl get ... -o json``, parsed."""
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def helm(
        self, *args: str, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run_tool([str(HELM), *args], timeout=timeout, check=check)

    def apply(
        self, manifests: dict[str, Any] | list[dict[str, Any]], namespace: str | None = None
    ) -> None:
        docs = manifests if isinstance(manifests, list) else [manifests]
        args = ["-n", namespace] if namespace else []
        self.kubectl(*args, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    def create_namespace(self, prefix: str = "weir-test") -> str:
        self._namespaces += 1
        name = f"{prefix}-{os.getpid()}-{self._namespaces}-{secrets.token_hex(2)}"[:63]
        self.kubectl("create", "namespace", name)
        return name

    def delete_namespace(self, name: str, timeout_s: float = 240) -> None:
        """Delete a namespace and wait until it is gone (its pods too: they hold the node's
        CPU until then)."""
        self.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")
        self.kubectl(
            "wait",
            "--for=delete",
            f"namespace/{name}",
            f"--timeout={int(timeout_s)}s",
            timeout=timeout_s + 30,
            check=False,
        )
        for pv in self.get("persistentvolumes")["items"]:
            if (pv["spec"].get("claimRef") or {}).get("namespace") == name:
                self.kubectl(
                    "delete",
                    "persistentvolume",
                    pv["metadata"]["name"],
                    "--wait=false",
                    check=False,
                )

    def make_volume(self, namespace: str, claim: str, size: str = "1Gi") -> Path:
        """A PersistentVolume (a directory on the node, writable by any user) reserved for the
        claim ``namespace/claim``, which binds it when it is created with no storage class
        (this cluster has no default one and no dynamic provisioner). Returns the directory."""
        directory = self.layout.volumes / f"{namespace}-{claim}"
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o777)
        self.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"{namespace}-{claim}"[:63]},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "claimRef": {"namespace": namespace, "name": claim},
                    "hostPath": {"path": str(directory), "type": "Directory"},
                },
            }
        )
        return directory

    def load_image(self, ref: str) -> bool:
        return load_image(self.layout, ref)

    def pods(self, namespace: str, selector: str = "") -> list[dict[str, Any]]:
        args = ["pods", "-n", namespace]
        if selector:
            args += ["-l", selector]
        return list(self.get(*args)["items"])

    def wait_for(
        self, condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.5
    ) -> Any:
        """Poll until ``condition()`` returns something truthy, and return it."""
        deadline = time.monotonic() + timeout_s
        last_error: Exception | None = None
        while True:
            try:
                value = condition()
            except (
                ClusterError,
                KeyError,
                IndexError,
                urllib.error.URLError,
                ConnectionError,
            ) as exc:
                value, last_error = None, exc
            if value:
                return value
            if time.monotonic() > deadline:
                detail = f" (last error: {last_error})" if last_error else ""
                msg = f"timed out after {timeout_s:.0f} s waiting for {what}{detail}"
                raise AssertionError(msg)
            time.sleep(interval_s)

    @contextlib.contextmanager
    def port_forward(self, namespace: str, target: str, *ports: int) -> Iterator[dict[int, int]]:
        """``kubectl port-forward`` to ``target`` (``service/x``, ``pod/y``) on 127.0.0.1;
        yields each remote port's local one."""
        argv = [
            str(BIN / "kubectl"),
            "-n",
            namespace,
            "port-forward",
            "--address",
            "127.0.0.1",
            target,
        ]
        argv += [f":{port}" for port in ports]
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )
        local: dict[int, int] = {}
        try:
            assert process.stdout is not None
            while len(local) < len(ports):
                line = process.stdout.readline()
                if not line:
                    assert process.stderr is not None
                    msg = f"kubectl port-forward {target} ended: {process.stderr.read().strip()}"
                    raise ClusterError(msg)
                found = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
                if found:
                    local[int(found.group(2))] = int(found.group(1))
            yield local
        finally:
            process.terminate()
            process.wait(timeout=30)

    def component_pid(self, name: str) -> int | None:
        return self.layout.component_pid(name)

    def stop_component(self, name: str) -> None:
        stop_component(self.layout, name)

    def start_component(self, name: str) -> int:
        """Start a stopped component again, with the command line it had."""
        return start_component(self.layout, name)

    def logs(self, name: str) -> str:
        return (self.layout.logs / f"{name}.log").read_text(errors="replace")


@dataclass
class SharedKubernetes:
    """One cluster for every process that needs one (pytest-xdist's workers, and any other
    run on this machine meanwhile): ``acquire`` registers this process and starts the
    cluster or joins the running one; ``release`` lets it go. The supervisor stops it once
    no registered process is alive."""

    run: Path = RUN

    def acquire(self, user: str | None = None) -> KubernetesCluster:
        user = user or str(os.getpid())
        entry = self.run / "users" / user
        with locked(self.run / "lock"):
            entry.parent.mkdir(parents=True, exist_ok=True)
            entry.write_text("" if user == "manual" else (process_start_time(int(user)) or ""))
            record_path = self.run / "cluster.json"
            if record_path.exists():
                record = json.loads(record_path.read_text())
                if alive(record["supervisor"]):
                    return KubernetesCluster(self.run, record)
            try:
                record = self._start_supervisor()
            except ClusterError:
                entry.unlink(missing_ok=True)
                raise
            return KubernetesCluster(self.run, record)

    def _start_supervisor(self) -> dict[str, Any]:
        log_path = self.run / "supervisor.log"
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "serve", str(self.run)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_path.open("ab"),
            # Not ended with the process that started it: others may still use the cluster.
            start_new_session=True,
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        process.stdout.close()
        if not line.startswith("ready "):
            process.wait(timeout=READY_TIMEOUT_S)
            reason = line.removeprefix("failed ").replace("\\n", "\n").strip() or f"see {log_path}"
            msg = f"the Kubernetes test cluster did not start: {reason}"
            raise ClusterError(msg)
        return dict(json.loads(line.removeprefix("ready ")))

    def release(self, user: str | None = None) -> None:
        with locked(self.run / "lock"):
            (self.run / "users" / (user or str(os.getpid()))).unlink(missing_ok=True)

    def stop(self) -> None:
        """Stop the cluster now, whoever uses it (``down``), and wait until it is gone."""
        record_path = self.run / "cluster.json"
        supervisor = None
        if record_path.exists():
            supervisor = json.loads(record_path.read_text()).get("supervisor")
        (self.run / "users" / "manual").unlink(missing_ok=True)
        if supervisor and alive(supervisor):
            os.kill(supervisor, signal.SIGTERM)
            while alive(supervisor):
                time.sleep(0.2)
        with locked(self.run / "lock"):
            stop_cluster(Layout(self.run))


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "serve":
        return serve(Path(argv[1]))
    shared = SharedKubernetes()
    if command == "up":
        try:
            cluster = shared.acquire("manual")
        except ClusterError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"export KUBECONFIG={cluster.kubeconfig} PATH={BIN}:{HELM.parent}:$PATH")
        return 0
    if command == "down":
        shared.stop()
        print(f"stopped; logs in {Layout().logs}", file=sys.stderr)
        return 0
    if command == "load-image" and len(argv) == 2:
        print("loaded" if load_image(Layout(), argv[1]) else "present")
        return 0
    print("usage: kubernetes_cluster.py up | down | load-image REF", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

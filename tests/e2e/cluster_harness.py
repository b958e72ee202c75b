"""Driving a Weir cluster through deploy/bin from tests: a conf, log and pid dir per
cluster, the scripts as subprocesses, and process checks with pgrep and /proc.

Everything is a real process on loopback; readiness is polled with deadlines.

``WEIR_E2E_TLS=1`` runs every cluster of the end-to-end suite with mutual TLS and a token
(certificates from ``weir certs``' code, in the cluster's own directory), as
``make test-e2e-tls`` does; a test asks for TLS whatever the switch with ``tls=True``.
Tests that talk to a cluster themselves use ``cluster.security()``."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from weir.client.certificates import write_cluster_certificates
from weir.core.security import SecurityConfig

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "deploy" / "bin"
PYTHON = sys.executable

# Starting a master is a SparkContext (~5 s locally) plus leases; against a standalone
# cluster the executors start first. 120 s is the scripts' own default.
START_TIMEOUT_S = 120
# A job of a few hundred records, including its TaskManager leases.
JOB_TIMEOUT_S = 120
# The ResourceManager's stop budget (10 s stop + 30 s cancel) plus Spark's stop.
STOP_TIMEOUT_S = 120
SPARK_HOME = Path(__import__("pyspark").__file__).parent
# A standalone master is up in a few seconds and a worker registers a few seconds later
# (JVM start-up each); a slow CI machine gets ten times that.
SPARK_READY_TIMEOUT_S = 90


TLS_SWITCH = "WEIR_E2E_TLS"


def tls_by_default() -> bool:
    """Whether the suite runs with TLS (``WEIR_E2E_TLS=1``)."""
    return os.environ.get(TLS_SWITCH) == "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.2
) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` past the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)  # polling interval, the condition decides


def is_alive(pid: int) -> bool:
    """The process exists and is not a zombie (an exited child nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def process_family(pid: int) -> set[int]:
    """``pid``, its descendants and the members of its session, found with pgrep."""
    found = {pid}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        out = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True)
        for child in map(int, out.stdout.split()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    out = subprocess.run(["pgrep", "-s", str(pid)], capture_output=True, text=True)
    found.update(map(int, out.stdout.split()))
    return found


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """The TCP (v4 and v6) addresses process ``pid`` listens on, read from /proc: the
    process's own socket descriptors matched to its network namespace's socket tables.
    Descriptors it shares with another process (inherited over fork) count for both; an
    IPv4 address a dual-stack socket is bound to reads as IPv4 (``127.0.0.2``)."""
    inodes: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found: set[tuple[str, int]] = set()
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            hex_ip, hex_port = local.split(":")
            # The kernel prints each 32-bit word of the address in host (little-endian) order.
            raw = b"".join(
                int(hex_ip[i : i + 8], 16).to_bytes(4, "little") for i in range(0, len(hex_ip), 8)
            )
            address = ipaddress.ip_address(raw)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
                address = address.ipv4_mapped  # a dual-stack socket bound to an IPv4 address
            found.add((str(address), int(hex_port, 16)))
    return found


@dataclass
class WeirCluster:
    """A conf dir, log dir and pid dir of its own, and the deploy/bin scripts to drive it."""

    root: Path
    spark_master: str
    port: int = field(default_factory=free_port)
    extra_conf: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    """The master's address (bound and advertised)."""
    command_prefix: list[str] = field(default_factory=list)
    """Put before every command: ``ip netns exec NAME`` runs it on a host of a HostNetwork."""
    tls: bool = field(default_factory=tls_by_default)
    """Mutual TLS on every endpoint and a token, with certificates made for ``host``."""

    def __post_init__(self) -> None:
        self.conf_dir = self.root / "conf"
        self.log_dir = self.root / "log"
        self.pid_dir = self.root / "pid"
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        self._tls_conf: dict[str, str] = {}
        if self.tls:
            certs = write_cluster_certificates(self.root / "certs", [self.host])
            self._tls_conf = dict(line.split(": ", 1) for line in certs.config_lines())
            self._tls_conf["security.auth.token"] = os.urandom(16).hex()
        self.write_conf()

    def write_conf(self, **overrides: str) -> None:
        conf = {
            "jobmanager.rpc.address": self.host,
            "jobmanager.rpc.port": str(self.port),
            "jobmanager.bind-host": self.host,
            "taskmanager.host": self.host,
            "spark.master": self.spark_master,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "env.log.dir": str(self.log_dir),
            "env.pid.dir": str(self.pid_dir),
            # Any free port: several clusters of tests may run on this host at once.
            "rest.port": "0",
            **self._tls_conf,
            **self.extra_conf,
            **overrides,
        }
        self.conf = conf
        (self.conf_dir / "weir-conf.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))

    def security(self) -> SecurityConfig:
        """How a client of this cluster reaches it (TLS and token as its conf says)."""
        return SecurityConfig.from_config(self.conf)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.pid_dir / "weir-master.pid"

    def env(self) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("WEIR_", "PYSPARK_", "SPARK_"))
        }
        env.update(
            WEIR_CONF_DIR=str(self.conf_dir),
            WEIR_PYTHON=PYTHON,
            WEIR_START_TIMEOUT=str(START_TIMEOUT_S),
        )
        return env

    def script(
        self, name: str, *args: str, timeout_s: float = START_TIMEOUT_S + 30
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.command_prefix, str(BIN / name), *args],
            env=self.env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def start(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.script("start-cluster.sh", *args)

    def stop(self) -> subprocess.CompletedProcess[str]:
        return self.script("stop-cluster.sh", timeout_s=STOP_TIMEOUT_S + 30)

    def weir(
        self, *args: str, timeout_s: float = JOB_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return self.script("weir", *args, timeout_s=timeout_s)

    def master_pid(self) -> int:
        return int(self.pid_file.read_text().strip())

    def log_text(self) -> str:
        logs = sorted(self.log_dir.glob("weir-master-*.log"))
        return "\n".join(p.read_text(errors="replace") for p in logs if p.suffix == ".log")

    def explain(self, result: subprocess.CompletedProcess[str]) -> str:
        """What to show when a command failed: its output and the master's log tail."""
        tail = "\n".join(self.log_text().splitlines()[-60:])
        return (
            f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n"
            f"{result.stderr}\n--- master log (tail)\n{tail}"
        )

"""A real ZooKeeper server for tests: Debian's ``zookeeper`` package (3.8), started without
systemd on 127.0.0.1 with a generated ``zoo.cfg``, a random port and a temporary data dir.

The Makefile installs the package when it is missing (``make setup``); a machine without
it fails the tests that need it with a message saying how to install it (never a skip:
a skipped HA suite would hide a broken failover).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CONF = Path("/etc/zookeeper/conf")
# A server answers in well under a second here; a loaded CI machine gets far more.
READY_TIMEOUT_S = 30.0
# tickTime bounds session timeouts to 2..20 ticks: with 500 ms, sessions of 1 s to 10 s,
# which covers the short timeouts the failover tests use.
TICK_TIME_MS = 500


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    """The server accepts a connection and answers the four-letter ``srvr`` command."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as conn:
            conn.sendall(b"srvr")
            return b"Zookeeper version" in conn.recv(4096)
    except OSError:
        return False


@dataclass
class ZooKeeperServer:
    """One standalone server (or one member of an ensemble) as a child process."""

    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    ensemble: list[tuple[int, int, int]] = field(default_factory=list)
    """(server id, peer port, election port) of every member, for a quorum; empty alone."""
    server_id: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> None:
        if not ZOOKEEPER_JAR.exists():
            pytest.fail(
                f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): run `make setup` "
                "(it installs Debian's zookeeper package) or `apt-get install -y zookeeper`"
            )
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={TICK_TIME_MS}",
            f"dataDir={data}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr,ruok",
            "initLimit=10",
            "syncLimit=5",
            "maxSessionTimeout=20000",
        ]
        if self.ensemble:
            (data / "myid").write_text(f"{self.server_id}\n")
            lines += [
                f"server.{sid}=127.0.0.1:{peer}:{election}" for sid, peer, election in self.ensemble
            ]
        cfg = self.root / "zoo.cfg"
        cfg.write_text("\n".join(lines) + "\n")
        main = (
            "org.apache.zookeeper.server.quorum.QuorumPeerMain"
            if self.ensemble
            else "org.apache.zookeeper.server.ZooKeeperServerMain"
        )
        log = (self.root / "zookeeper.log").open("ab")
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", f"{ZOOKEEPER_CONF}:{ZOOKEEPER_JAR}", main, str(cfg)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not _answers(self.port):
            if self.process is not None and self.process.poll() is not None:
                pytest.fail(f"ZooKeeper exited with {self.process.returncode}; see {self.root}")
            if time.monotonic() > deadline:
                pytest.fail(f"ZooKeeper at {self.address} did not answer in {READY_TIMEOUT_S} s")
            time.sleep(0.05)  # polling interval; the condition decides

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

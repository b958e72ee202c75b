"""A real ZooKeeper server for tests: Debian's ``zookeeper`` package (3.8), started without
systemd on 127.0.0.1 with a generated ``zoo.cfg``, a random port and a temporary data dir
(or on the address of a host of ``tests/e2e/netns.py``, run inside that host);
or an ensemble of such servers (``ZooKeeperEnsemble``: ``server.N`` lines with peer and
election ports of their own on 127.0.0.1, a ``myid`` file per member).

The Makefile installs the package when it is missing (``make setup``); a machine without
it fails the tests that need it with a message saying how to install it (never a skip:
a skipped HA suite would hide a broken failover).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CONF = Path("/etc/zookeeper/conf")
# A server answers in well under a second here; a JVM starting on a loaded CI machine
# (load 40 on 2 cores) took more than 30 s.
READY_TIMEOUT_S = 120.0
# tickTime bounds session timeouts to 2..20 ticks: with 500 ms, sessions of 1 s to 10 s,
# which covers the short timeouts the failover tests use.
TICK_TIME_MS = 500


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(host: str, port: int) -> bool:
    """The server accepts a connection and answers the four-letter ``srvr`` command."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as conn:
            conn.sendall(b"srvr")
            return b"Zookeeper version" in conn.recv(4096)
    except OSError:
        return False


_ANSWERS = """
import sys
sys.path.insert(0, {tests!r})
from zookeeper_server import _answers
sys.exit(0 if _answers({host!r}, {port}) else 1)
"""


@dataclass
class ZooKeeperServer:
    """One standalone server (or one member of an ensemble) as a child process."""

    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    ensemble: list[tuple[int, int, int]] = field(default_factory=list)
    """(server id, peer port, election port) of every member, for a quorum; empty alone."""
    server_id: int = 0
    host: str = "127.0.0.1"
    command_prefix: list[str] = field(default_factory=list)
    """Runs the server (and its readiness probe) elsewhere, e.g. ``ip netns exec <host>``."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def answers(self) -> bool:
        if not self.command_prefix:
            return _answers(self.host, self.port)
        probe = _ANSWERS.format(tests=str(Path(__file__).parent), host=self.host, port=self.port)
        argv = [*self.command_prefix, sys.executable, "-c", probe]
        return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0

    def start(self, wait: bool = True) -> None:
        """Start the server (and wait until it answers). A server of its own whose port
        another process took between ``free_port`` and the bind (an outgoing connection
        given it as its local port, say) exits at once: it starts again on a new port."""
        for _ in range(3):
            self._start()
            if not wait or self.ensemble or self._ready_or_port_free():
                break
            self.port = free_port()
        if wait:
            self.wait_ready()

    def _ready_or_port_free(self) -> bool:
        """False when the server exited before answering and its port is taken."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.answers() and time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                with socket.socket() as probe:
                    try:
                        probe.bind((self.host, self.port))
                    except OSError:
                        return False
                return True
            time.sleep(0.05)  # polling interval; the condition decides
        return True

    def _start(self) -> None:
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
            f"clientPortAddress={self.host}",
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
            [
                *self.command_prefix,
                "java",
                "-Xmx256m",
                "-cp",
                f"{ZOOKEEPER_CONF}:{ZOOKEEPER_JAR}",
                main,
                str(cfg),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.answers():
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


@dataclass
class ZooKeeperEnsemble:
    """``size`` servers forming one quorum on loopback: each has a client, a peer and an
    election port of its own and a data dir under ``root/zk{id}``."""

    root: Path
    size: int = 3
    servers: list[ZooKeeperServer] = field(default_factory=list)

    def __post_init__(self) -> None:
        members = [(sid, free_port(), free_port()) for sid in range(1, self.size + 1)]
        self.servers = [
            ZooKeeperServer(self.root / f"zk{sid}", ensemble=members, server_id=sid)
            for sid, _, _ in members
        ]

    @property
    def address(self) -> str:
        """The quorum, as ``high-availability.zookeeper.quorum`` takes it."""
        return ",".join(server.address for server in self.servers)

    def start(self) -> None:
        """Start every member, then wait until each serves (a quorum has formed)."""
        for server in self.servers:
            server.start(wait=False)
        for server in self.servers:
            server.wait_ready()

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def mode(self, server: ZooKeeperServer) -> str:
        """``leader`` or ``follower`` (the ``srvr`` command's Mode line); "" if it is down."""
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1.0) as conn:
                conn.sendall(b"srvr")
                reply = conn.recv(4096).decode(errors="replace")
        except OSError:
            return ""
        for line in reply.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return ""

    def connected_from(self, pid: int) -> ZooKeeperServer | None:
        """The member that process ``pid`` holds an established connection to (a kazoo
        client keeps one), found through the process's sockets in /proc; None when it
        has none."""
        ports = {server.port: server for server in self.servers}
        for port in _established_remote_ports(pid):
            if port in ports:
                return ports[port]
        return None


def _established_remote_ports(pid: int) -> list[int]:
    """The remote ports of the established IPv4/IPv6 TCP connections of process ``pid``."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            # rem_address is HEXIP:HEXPORT, st 01 is ESTABLISHED, inode is field 9.
            if fields[3] == "01" and fields[9] in inodes:
                ports.append(int(fields[2].rsplit(":", 1)[1], 16))
    return ports

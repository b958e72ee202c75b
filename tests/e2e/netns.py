"""Hosts on this machine: Linux network namespaces joined by veth pairs on a bridge.

Each ``Host`` has its own loopback and one address on a private subnet that exists only on
the bridge (the root namespace gets no address there, so nothing in it can reach the
hosts, and nothing in them can reach beyond the bridge). Processes started in a host
(``host.command(argv)``) see only its interfaces; the file system and process ids stay
shared, as they would be with a shared disk.

    with HostNetwork("ha", 3) as network:
        a, b, c = network.hosts
        subprocess.run(a.command(["ip", "addr"]))

Needs root and iproute2 (``ensure_iproute2`` installs it on Debian). Everything is
removed on exit, processes still running in the namespaces included, even when the
block raised.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType

import pytest

# 10.213.0.0/16 is carved into one /24 per network (by its index) so that two networks of
# one test run never overlap; the addresses live on the bridge only.
_SUBNET = "10.213.{index}.{host}"
# Processes in a namespace get this long after SIGTERM before SIGKILL at cleanup: the
# JVMs of Spark's daemons stop within a second or two.
_TERM_GRACE_S = 10.0


_PROBE_PORT = 9
_ACCEPT = f"""
import socket
s = socket.create_server(("{{address}}", {_PROBE_PORT}))
print("listening", flush=True)
while True:
    s.accept()[0].close()
"""
# Connection attempts retry for a while: a new bridge port may take a moment to forward.
_CONNECT = f"""
import socket, time
deadline = time.monotonic() + 30
while True:
    try:
        socket.create_connection(("{{address}}", {_PROBE_PORT}), timeout=5).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
"""


class NamespaceSetupError(RuntimeError):
    """The namespaces could not be created; the message says which command failed."""


def _run(*argv: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        msg = f"`{' '.join(argv)}` failed ({result.returncode}): {result.stderr.strip()}"
        raise NamespaceSetupError(msg)


def ensure_iproute2() -> None:
    """Install iproute2 (the `ip` command) if this Debian machine lacks it."""
    if shutil.which("ip"):
        return
    for argv in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "iproute2"],
    ):
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        if result.returncode != 0:
            msg = f"cannot install iproute2 (`{' '.join(argv)}`): {result.stderr.strip()}"
            raise NamespaceSetupError(msg)


@dataclass(frozen=True)
class Host:
    name: str
    """The namespace's name (``ip netns``)."""
    address: str

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this host."""
        return ["ip", "netns", "exec", self.name, *argv]

    def pids(self) -> list[int]:
        result = subprocess.run(
            ["ip", "netns", "pids", self.name], capture_output=True, text=True, timeout=30
        )
        return [int(p) for p in result.stdout.split()]


class HostNetwork:
    """``count`` hosts named ``{prefix}0``...; see the module docstring."""

    def __init__(self, prefix: str, count: int, index: int = 0) -> None:
        if len(prefix) > 8:  # interface names are at most 15 characters
            msg = f"prefix {prefix!r} is longer than 8 characters"
            raise ValueError(msg)
        self._prefix = prefix
        self._bridge = f"{prefix}br"
        self.hosts = [
            Host(f"{prefix}{i}", _SUBNET.format(index=index, host=i + 1)) for i in range(count)
        ]

    def __enter__(self) -> HostNetwork:
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _create(self) -> None:
        ensure_iproute2()
        self.close()  # leftovers of an earlier run that was killed
        _run("ip", "link", "add", self._bridge, "type", "bridge")
        _run("ip", "link", "set", self._bridge, "up")
        for i, host in enumerate(self.hosts):
            outside, inside = f"{self._prefix}v{i}", f"{self._prefix}p{i}"
            _run("ip", "netns", "add", host.name)
            _run("ip", "netns", "exec", host.name, "ip", "link", "set", "lo", "up")
            _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            _run("ip", "link", "set", inside, "netns", host.name)
            _run("ip", "link", "set", outside, "master", self._bridge)
            _run("ip", "link", "set", outside, "up")
            _run(*host.command(["ip", "addr", "add", f"{host.address}/24", "dev", inside]))
            _run(*host.command(["ip", "link", "set", inside, "up"]))
        # The bridge forwards once its ports are up: every host must reach the first.
        first = self.hosts[0]
        listener = subprocess.Popen(
            first.command([sys.executable, "-c", _ACCEPT.format(address=first.address)]),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert listener.stdout is not None
            listener.stdout.readline()  # "listening"
            for host in self.hosts[1:]:
                _run(*host.command([sys.executable, "-c", _CONNECT.format(address=first.address)]))
        finally:
            listener.kill()
            listener.wait()

    def close(self) -> None:
        """Stop what runs in the hosts and remove them, their veths and the bridge.
        Idempotent; never raises (what it cannot remove, it reports on stderr)."""
        for host in self.hosts:
            if os.path.exists(f"/run/netns/{host.name}"):
                _stop_all(host)
                subprocess.run(["ip", "netns", "del", host.name], capture_output=True, timeout=30)
        for i in range(len(self.hosts)):
            subprocess.run(
                ["ip", "link", "del", f"{self._prefix}v{i}"], capture_output=True, timeout=30
            )
        subprocess.run(["ip", "link", "del", self._bridge], capture_output=True, timeout=30)


@contextlib.contextmanager
def hosts_for_a_test(prefix: str, count: int, index: int = 0) -> Iterator[list[Host]]:
    """The hosts of a ``HostNetwork`` for a test, removed with whatever still runs in them
    however the test ends. Where namespaces cannot be made the test is skipped, saying
    why; on CI (``CI=true``) it fails instead, so that a broken fixture is never hidden."""
    try:
        network = HostNetwork(prefix, count, index).__enter__()
    except (NamespaceSetupError, OSError) as exc:
        reason = (
            f"cannot build hosts from network namespaces ({exc}); this test needs root and "
            "iproute2 (`ip netns`, veth, bridge)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield network.hosts
    finally:
        network.close()


def _stop_all(host: Host) -> None:
    pids = host.pids()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + _TERM_GRACE_S
    while (pids := host.pids()) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling interval; the condition is the namespace being empty
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue

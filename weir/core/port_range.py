"""Flink's port syntax for servers that may share a host: ``9067``, ``9250-9260``, or a
comma-separated list of both, and binding a gRPC server to the first free one (without
importing gRPC here: the configuration, which the user API reads, validates with it)."""

from __future__ import annotations

from typing import Any

from weir.core.errors import ConfigurationError


def parse_port_range(spec: str, key: str) -> list[int]:
    """The ports of ``spec`` in order; ``key`` names the configuration key for the error."""
    ports: list[int] = []
    for raw in str(spec).split(","):
        part = raw.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            first, last = -1, -1
        if not (0 <= first <= last <= 65535):
            msg = (
                f"bad value {spec!r} for configuration key {key!r}: expected a port, a "
                "range like 9250-9260, or a list of them (0 = any free)"
            )
            raise ConfigurationError(msg)
        ports.extend(range(first, last + 1))
    if not ports:
        msg = f"configuration key {key!r} names no port; give one, a range or a list"
        raise ConfigurationError(msg)
    return ports


def bind_first_free(server: Any, host: str, spec: str, key: str) -> str:
    """Bind ``server`` to the first free port of ``spec`` on ``host``; returns
    ``host:port``. No free port: ConfigurationError naming ``key``, asking for a range
    (several TaskManagers on one host each need a port)."""
    for port in parse_port_range(spec, key):
        try:
            bound = server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:  # grpcio raises where older versions returned 0
            bound = 0
        if bound:
            return f"{host}:{bound}"
    msg = (
        f"no free port in {spec!r} ({key}) on {host}: every port is in use; give {key} a "
        "range such as 9067-9077, one port for each process on the host, or 0 for any"
    )
    raise ConfigurationError(msg)

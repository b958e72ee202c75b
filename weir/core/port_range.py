"""Flink's port syntax for servers that may share a host: ``9067``, ``9250-9260``, or a
comma-separated list of both. Free of gRPC: the configuration, which the user API reads,
validates with it; ``weir.core.rpc.bind_first_free`` binds a server to the first free one
with the server's own security."""

from __future__ import annotations

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

"""Addresses as Flink separates them: the one a server binds and the one it advertises.

A TaskManager by default advertises the address of its host on the interface that routes
to the ResourceManager (``local_address_towards``): on one machine that is 127.0.0.1, on a
cluster the worker's address on the master's network.
"""

from __future__ import annotations

import socket

from weir.core.errors import ConfigurationError


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) as its parts; raises ConfigurationError."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        msg = f"expected an address host:port, got {address!r}"
        raise ConfigurationError(msg)
    return host.strip("[]"), int(port)


def local_address_towards(address: str) -> str:
    """The local address this host would use to reach ``address`` (host:port): the
    source address of a UDP socket connected there, which sends nothing."""
    host, port = split_address(address)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except socket.gaierror as exc:
        msg = f"cannot resolve {host!r} (from {address!r}): {exc}; set taskmanager.host"
        raise ConfigurationError(msg) from exc
    family, _, _, _, sockaddr = infos[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(sockaddr)
        except OSError as exc:
            msg = f"no route from this host to {address!r}: {exc}; set taskmanager.host"
            raise ConfigurationError(msg) from exc
        return str(probe.getsockname()[0])

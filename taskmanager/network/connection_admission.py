"""What a data server allows a connection that has not authenticated yet, and when it
accepts again after ``accept`` failed.

A consumer sends its handshake as its first bytes, so a connection that stays silent, or
a peer that opens connections faster than it authenticates them, only holds file
descriptors: ``ConnectionAdmission`` closes such connections once they pass the handshake
timeout, and closes the oldest unauthenticated ones when a peer host, or all peers
together, hold more than their share. A legitimate consumer's connection is young when a
flood starts (it authenticates within milliseconds), so closing the oldest first takes the
flood's connections, not its own.

``AcceptBackoff`` spaces out accepting while the process is out of file descriptors or
memory, as Netty (one second) and Go's ``net/http`` (5 ms doubling to 1 s) do; retrying at
once would spin the I/O thread on a listening socket that stays readable.

``WarningThrottle`` keeps one WARNING per interval for an event a peer can repeat at will.

All three only decide: no I/O, no lock, no clock of their own. The I/O thread owns them
and passes the time (``time.monotonic()``) in.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

C = TypeVar("C", bound=Hashable)


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """``taskmanager.network.handshake-timeout`` and the caps on unauthenticated
    connections (``taskmanager.network.max-unauthenticated-connections[-per-host]``)."""

    handshake_timeout_s: float = 10.0
    max_per_host: int = 64
    max_total: int = 256


class ConnectionAdmission(Generic[C]):
    """The unauthenticated connections of one data server, oldest first.

    A connection enters with ``admit`` when it is accepted and leaves with ``forget``
    (authenticated, or closed). What ``admit`` and ``expired`` return has already left:
    the caller closes it.
    """

    def __init__(self, limits: AdmissionLimits) -> None:
        self.limits = limits
        self.pending: dict[C, tuple[str, float]] = {}
        """Each unauthenticated connection's host and deadline; read it, never change it.
        Insertion order is acceptance order, and with one timeout for all, deadline
        order: the next to expire and the oldest are both the first."""
        self._by_host: dict[str, dict[C, None]] = {}

    def __len__(self) -> int:
        return len(self.pending)

    def admit(self, conn: C, host: str, now: float) -> list[tuple[C, str]]:
        """Track a just accepted ``conn`` from ``host``. Returns the connections to close
        to stay within the caps, each with the cap it broke (``"host"`` or ``"total"``):
        the oldest of ``host`` first, then the oldest of all. Never ``conn`` itself."""
        self.pending[conn] = (host, now + self.limits.handshake_timeout_s)
        of_host = self._by_host.setdefault(host, {})
        of_host[conn] = None
        evicted: list[tuple[C, str]] = []
        while len(of_host) > self.limits.max_per_host:
            oldest = next(iter(of_host))
            self.forget(oldest)
            evicted.append((oldest, "host"))
        while len(self.pending) > self.limits.max_total:
            oldest = next(iter(self.pending))
            self.forget(oldest)
            evicted.append((oldest, "total"))
        return evicted

    def forget(self, conn: C) -> None:
        """``conn`` authenticated or was closed; unknown connections are ignored."""
        entry = self.pending.pop(conn, None)
        if entry is None:
            return
        host = entry[0]
        of_host = self._by_host[host]
        del of_host[conn]
        if not of_host:
            del self._by_host[host]

    def expired(self, now: float) -> list[C]:
        """The connections whose handshake deadline has passed, oldest first."""
        gone: list[C] = []
        pending = self.pending
        while pending:
            conn, (_host, deadline) = next(iter(pending.items()))
            if deadline > now:
                break
            self.forget(conn)
            gone.append(conn)
        return gone

    def next_deadline(self) -> float | None:
        """When the oldest unauthenticated connection expires; None when there is none."""
        if not self.pending:
            return None
        return next(iter(self.pending.values()))[1]


class AcceptBackoff:
    """How long to stop accepting after ``accept`` failed: ``initial_s``, doubling with
    every failure in a row up to ``max_s``; a successful accept starts over."""

    def __init__(self, initial_s: float = 0.01, max_s: float = 1.0) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self._next_s = initial_s

    def failed(self) -> float:
        """The pause to make now (seconds)."""
        pause = self._next_s
        self._next_s = min(self._next_s * 2, self.max_s)
        return pause

    def succeeded(self) -> None:
        self._next_s = self.initial_s


class WarningThrottle:
    """Lets one event in per ``interval_s`` and counts the others, so that the WARNING
    that is let through can say how many it stands for."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self.interval_s = interval_s
        self._next_at: float | None = None
        self._held_back = 0

    def allow(self, now: float, count: int = 1) -> int | None:
        """``count`` events happened. None: stay silent. Otherwise log them, adding that
        this many more happened since the last WARNING (0 for none)."""
        if self._next_at is not None and now < self._next_at:
            self._held_back += count
            return None
        self._next_at = now + self.interval_s
        held_back, self._held_back = self._held_back, 0
        return held_back

"""The HeartbeatMonitor: notices TaskManagers that stopped heart-beating.

The TaskExecutor sends the heartbeats (every ``heartbeat.interval``); the monitor only
records when each was last heard from and names those silent for ``heartbeat.timeout``.
It owns no thread: the ResourceManager's maintenance loop calls ``expired()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class HeartbeatMonitor(Generic[K]):
    """Tracks the last heartbeat of each monitored target; ``clock`` is monotonic seconds."""

    def __init__(self, timeout_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._timeout_s = timeout_ms / 1000
        self._clock = clock
        self._lock = threading.Lock()
        self._last_seen: dict[K, float] = {}

    def monitor(self, target: K) -> None:
        """Start watching ``target``; registering counts as a heartbeat."""
        with self._lock:
            self._last_seen[target] = self._clock()

    def receive_heartbeat(self, target: K) -> bool:
        """Record a heartbeat; False if ``target`` is not monitored."""
        with self._lock:
            if target not in self._last_seen:
                return False
            self._last_seen[target] = self._clock()
            return True

    def is_monitored(self, target: K) -> bool:
        with self._lock:
            return target in self._last_seen

    def unmonitor(self, target: K) -> None:
        with self._lock:
            self._last_seen.pop(target, None)

    def expired(self) -> list[K]:
        """Targets silent for longer than the timeout. They stop being monitored, so each
        is reported once."""
        now = self._clock()
        with self._lock:
            gone = [t for t, seen in self._last_seen.items() if now - seen > self._timeout_s]
            for target in gone:
                del self._last_seen[target]
        return gone

"""Time for the JobMaster's checkpoint and restart logic: a clock and a scheduled executor,
both injected so that tests drive time by hand (Flink's Clock and ScheduledExecutor)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)

Clock = Callable[[], int]
"""Returns the current time in milliseconds."""


def system_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ScheduledTask(Protocol):
    def cancel(self) -> None:
        """Stop the task from running if it has not started; no effect afterwards."""


class ScheduledExecutor(Protocol):
    def schedule(self, delay_ms: int, action: Callable[[], None]) -> ScheduledTask:
        """Run ``action`` once, ``delay_ms`` from now, on the executor's thread."""


class _Entry:
    __slots__ = ("action", "cancelled")

    def __init__(self, action: Callable[[], None]) -> None:
        self.action = action
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ThreadScheduledExecutor:
    """One daemon thread that runs scheduled actions in time order.

    Actions run one at a time, so a slow one delays the rest: keep them short and hand
    blocking work elsewhere. An action that raises is logged and does not stop the thread.
    """

    def __init__(self, name: str = "checkpoint-timer", clock: Clock = system_clock_ms) -> None:
        self._clock = clock
        self._queue: list[tuple[int, int, _Entry]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(self, delay_ms: int, action: Callable[[], None]) -> ScheduledTask:
        entry = _Entry(action)
        with self._cond:
            if self._closed:
                entry.cancel()
                return entry
            heapq.heappush(self._queue, (self._clock() + max(0, delay_ms), next(self._seq), entry))
            self._cond.notify()
        return entry

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ThreadScheduledExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._queue or self._queue[0][0] > self._clock()):
                    wait_s = (self._queue[0][0] - self._clock()) / 1000 if self._queue else None
                    self._cond.wait(wait_s)
                if self._closed:
                    return
                _, _, entry = heapq.heappop(self._queue)
            if entry.cancelled:
                continue
            try:
                entry.action()
            except Exception:
                # A failing timer action must not take every later timer with it.
                logger.exception("scheduled action %r failed", entry.action)

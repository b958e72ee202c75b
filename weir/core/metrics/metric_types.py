"""The metrics a metric group hands out (Flink's SimpleCounter, MeterView, gauges) and the
rate views the task metrics are read through.

None of them locks: a metric is written by one thread (the task's) and read by others
(a scrape, a ``GetMetrics`` call), and a read of a Python int is atomic. Rates are
computed when they are read, from samples taken at most once a second, so nothing runs
between reads and the writer pays only its own increment.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from weir.metrics.metricbase import Counter, Distribution, Meter, Metric

__all__ = [
    "DistributionImpl",
    "GaugeImpl",
    "MeterView",
    "RateView",
    "SimpleCounter",
]

# A rate's samples are at least this far apart: reads more often than this (a dashboard
# refreshing every second, two scrapers) reuse the newest sample instead of crowding out
# the window's history.
_MIN_SAMPLE_SPACING_S = 1.0


class SimpleCounter(Counter):
    """Flink's SimpleCounter: a plain count, not thread-safe for writers."""

    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        self._count += n

    def dec(self, n: int = 1) -> None:
        self._count -= n

    def get_count(self) -> int:
        return self._count


class GaugeImpl(Metric):
    """A value read from ``obj()`` whenever the gauge is read."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Callable[[], float]) -> None:
        self._obj = obj

    def get_value(self) -> float:
        return self._obj()


class RateView:
    """The per-second rate of a growing total ``source()`` over the last ``time_span_s``
    seconds (Flink's MeterView); 0.0 until two samples exist."""

    __slots__ = ("_clock", "_history", "_source", "_span")

    def __init__(
        self,
        source: Callable[[], float],
        time_span_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._span = time_span_s
        self._clock = clock
        self._history: deque[tuple[float, float]] = deque()

    def get_rate(self) -> float:
        now = self._clock()
        value = float(self._source())
        history = self._history
        if not history or now - history[-1][0] >= _MIN_SAMPLE_SPACING_S:
            history.append((now, value))
        # Keep one sample at or beyond the span's start, so the window is always full.
        while len(history) > 2 and now - history[1][0] >= self._span:
            history.popleft()
        first_t, first_v = history[0]
        elapsed = now - first_t
        if elapsed <= 0:
            return 0.0
        return (value - first_v) / elapsed


class MeterView(Meter):
    """A meter marked by its owner and read as events per second over its time span."""

    __slots__ = ("_count", "_view")

    def __init__(self, time_span_in_seconds: int = 60) -> None:
        self._count = 0
        self._view = RateView(self.get_count, float(time_span_in_seconds))

    def mark_event(self, value: int = 1) -> None:
        self._count += value

    def get_count(self) -> int:
        return self._count

    def get_rate(self) -> float:
        return self._view.get_rate()


class DistributionImpl(Distribution):
    """Count, sum, min, max and mean of the values seen (PyFlink's distribution)."""

    __slots__ = ("count", "max", "min", "sum")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0
        self.min = 0
        self.max = 0

    def update(self, value: int) -> None:
        if self.count == 0 or value < self.min:
            self.min = value
        if self.count == 0 or value > self.max:
            self.max = value
        self.count += 1
        self.sum += value

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else 0.0

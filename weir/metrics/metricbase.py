"""The metric interfaces of ``pyflink.metrics.metricbase``: a ``MetricGroup`` registers
counters, gauges, meters and distributions. A function's group comes from
``runtime_context.get_metrics_group()``; the TaskManager reports what is registered in it
through the REST API and its Prometheus endpoint."""

from __future__ import annotations

import abc
from collections.abc import Callable

__all__ = ["Counter", "Distribution", "Meter", "Metric", "MetricGroup"]


class MetricGroup(abc.ABC):
    """A named container of metrics and of further groups."""

    @abc.abstractmethod
    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """A sub-group; with ``extra``, a key group ``name`` holding a value group ``extra``
        (which is returned)."""

    @abc.abstractmethod
    def counter(self, name: str) -> Counter:
        """Registers a new ``Counter``."""

    @abc.abstractmethod
    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        """Registers a gauge: ``obj()`` is its value whenever it is read."""

    @abc.abstractmethod
    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        """Registers a new ``Meter`` averaging over ``time_span_in_seconds``."""

    @abc.abstractmethod
    def distribution(self, name: str) -> Distribution:
        """Registers a new ``Distribution``."""


class Metric(abc.ABC):  # noqa: B024 - PyFlink's marker base class has no methods
    """The base of every metric."""


class Counter(Metric, abc.ABC):
    """A count that can be incremented and decremented."""

    @abc.abstractmethod
    def inc(self, n: int = 1) -> None:
        """Increments the count by ``n``."""

    @abc.abstractmethod
    def dec(self, n: int = 1) -> None:
        """Decrements the count by ``n``."""

    @abc.abstractmethod
    def get_count(self) -> int:
        """The current count."""


class Meter(Metric, abc.ABC):
    """A throughput: events marked per second."""

    @abc.abstractmethod
    def mark_event(self, value: int = 1) -> None:
        """Marks ``value`` events."""

    @abc.abstractmethod
    def get_count(self) -> int:
        """The number of events marked."""


class Distribution(Metric, abc.ABC):
    """Statistics of a value over time."""

    @abc.abstractmethod
    def update(self, value: int) -> None:
        """Adds one observation of ``value``."""

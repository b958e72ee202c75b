"""Metric groups with Flink's scopes: a group has a logical scope (``taskmanager``,
``taskmanager.job.task``, ``taskmanager.job.task.operator``, ``jobmanager.job``) and
variables (``<job_id>``, ``<task_name>``, ``<subtask_index>`` ...) that reporters turn
into labels, as Flink's PrometheusReporter does.

User functions get an operator's group through ``get_metrics_group()``; its
``add_group(name)`` extends the logical scope, ``add_group(key, value)`` adds the
variable ``<key>`` too (PyFlink's key-value groups).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from weir.core.metrics.metric_types import (
    DistributionImpl,
    GaugeImpl,
    MeterView,
    SimpleCounter,
)
from weir.metrics.metricbase import Counter, Distribution, Meter, Metric, MetricGroup

__all__ = ["MetricRegistry", "MetricSample", "ScopedMetricGroup"]

_M = TypeVar("_M", bound=Metric)

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One value as read at one moment: what ``GetMetrics`` and the reporters carry."""

    scope: tuple[str, ...]
    """The logical scope, e.g. ``("taskmanager", "job", "task")``."""
    name: str
    variables: Mapping[str, str]
    """Scope variables without Flink's angle brackets: ``{"job_id": ..., ...}``."""
    kind: str
    """``counter``, ``gauge`` or ``meter`` (a distribution reads as gauges)."""
    value: float


@dataclass(slots=True)
class _Registered:
    group: ScopedMetricGroup
    name: str
    metric: Metric


class MetricRegistry:
    """Every metric of one process. Updates never lock. Registration and removal (when a
    task starts or ends, or a function is opened) take a lock among themselves and
    replace the table with a new one, so that a read (a scrape, a ``GetMetrics`` call)
    takes no lock at all: it reads the table current when it starts, and the metrics'
    plain values, never waiting for a task thread and never making one wait."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[tuple[int, str], _Registered] = {}
        """Replaced whole, never changed in place: readers iterate it without the lock."""

    def register(self, group: ScopedMetricGroup, name: str, metric: Metric) -> None:
        self.register_all(group, {name: metric})

    def register_all(self, group: ScopedMetricGroup, metrics: Mapping[str, Metric]) -> None:
        """Register several metrics of one group with one copy of the table."""
        added = {(id(group), name): _Registered(group, name, m) for name, m in metrics.items()}
        with self._lock:
            self._metrics = {**self._metrics, **added}

    def unregister(self, group: ScopedMetricGroup) -> None:
        """Remove the group's metrics and those of every group below it."""
        with self._lock:
            self._metrics = {
                key: entry
                for key, entry in self._metrics.items()
                if not entry.group.is_within(group)
            }

    def snapshot(self) -> list[MetricSample]:
        """Every metric's value now; on the reader's thread, without a lock."""
        samples: list[MetricSample] = []
        for entry in self._metrics.values():
            samples.extend(_read(entry))
        return samples

    def __len__(self) -> int:
        return len(self._metrics)


def _read(entry: _Registered) -> Iterator[MetricSample]:
    group, name, metric = entry.group, entry.name, entry.metric
    scope, variables = group.logical_scope, group.all_variables

    def sample(metric_name: str, kind: str, value: float) -> MetricSample:
        return MetricSample(scope, metric_name, variables, kind, value)

    if isinstance(metric, GaugeImpl):
        try:
            value = float(metric.get_value())
        except Exception:
            return
        yield sample(name, "gauge", value)
    elif isinstance(metric, MeterView):
        yield sample(name, "meter", metric.get_rate())
    elif isinstance(metric, Counter):
        yield sample(name, "counter", float(metric.get_count()))
    elif isinstance(metric, DistributionImpl):
        for suffix, value in (
            ("count", metric.count),
            ("sum", metric.sum),
            ("min", metric.min),
            ("max", metric.max),
            ("mean", metric.mean),
        ):
            yield sample(f"{name}_{suffix}", "gauge", float(value))


class ScopedMetricGroup(MetricGroup):
    """A metric group registering into a ``MetricRegistry``; see the module docstring."""

    def __init__(
        self,
        registry: MetricRegistry,
        logical_scope: tuple[str, ...],
        variables: Mapping[str, str],
        parent: ScopedMetricGroup | None = None,
    ) -> None:
        self._registry = registry
        self.logical_scope = logical_scope
        self.variables = dict(variables)
        self._parent = parent
        self.all_variables: Mapping[str, str] = {
            **(parent.all_variables if parent is not None else {}),
            **self.variables,
        }
        self._children: dict[tuple[str, str | None], ScopedMetricGroup] = {}

    def set_variable(self, name: str, value: str) -> None:
        """Set a scope variable of this group (a TaskManager's ``host``, known only once it
        started). Sub-groups copy the variables when they are made, so only groups made
        after this see it."""
        self.variables[name] = value
        self.all_variables = {**self.all_variables, name: value}

    def is_within(self, other: ScopedMetricGroup) -> bool:
        group: ScopedMetricGroup | None = self
        while group is not None:
            if group is other:
                return True
            group = group._parent
        return False

    def child(self, scope_name: str, variables: Mapping[str, str]) -> ScopedMetricGroup:
        """A system sub-scope (``job``, ``task``, ``operator``) with its variables."""
        return ScopedMetricGroup(
            self._registry, (*self.logical_scope, scope_name), variables, parent=self
        )

    def close(self) -> None:
        """Unregister every metric of this group and of its sub-groups."""
        self._registry.unregister(self)

    # -- PyFlink's MetricGroup ------------------------------------------------------------

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        _check_name("group", name)
        key = (name, extra)
        existing = self._children.get(key)
        if existing is not None:
            return existing
        if extra is None:
            group = ScopedMetricGroup(self._registry, (*self.logical_scope, name), {}, parent=self)
        else:
            # The key group extends the scope; the value group adds the variable <name>.
            key_group = ScopedMetricGroup(
                self._registry, (*self.logical_scope, name), {}, parent=self
            )
            group = ScopedMetricGroup(
                self._registry, key_group.logical_scope, {name: str(extra)}, parent=key_group
            )
        self._children[key] = group
        return group

    def counter(self, name: str) -> Counter:
        return self._register(name, SimpleCounter())

    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        self._register(name, GaugeImpl(obj))

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._register(name, MeterView(time_span_in_seconds))

    def distribution(self, name: str) -> Distribution:
        return self._register(name, DistributionImpl())

    def register_metric(self, name: str, metric: _M) -> _M:
        """Register a metric made elsewhere (the system metrics' gauges)."""
        return self._register(name, metric)

    def register_metrics(self, metrics: Mapping[str, Metric]) -> None:
        """Register several metrics made elsewhere at once (a task's or an operator's)."""
        for name in metrics:
            _check_name("metric", name)
        self._registry.register_all(self, metrics)

    def _register(self, name: str, metric: _M) -> _M:
        _check_name("metric", name)
        self._registry.register(self, name, metric)
        return metric


def _check_name(what: str, name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        msg = (
            f"a {what} name of letters, digits, '_', '-' or '.' was expected; got {name!r}; "
            "rename it (reporters turn the name into a Prometheus metric name)"
        )
        raise ValueError(msg)

"""Metrics of the processes: groups with Flink's scopes, a registry per process, and a
Prometheus endpoint reading it."""

from weir.core.metrics.metric_group import MetricRegistry, MetricSample, ScopedMetricGroup
from weir.core.metrics.metric_types import (
    DistributionImpl,
    GaugeImpl,
    MeterView,
    RateView,
    SimpleCounter,
)

__all__ = [
    "DistributionImpl",
    "GaugeImpl",
    "MeterView",
    "MetricRegistry",
    "MetricSample",
    "RateView",
    "ScopedMetricGroup",
    "SimpleCounter",
]

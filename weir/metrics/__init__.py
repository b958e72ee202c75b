"""User metrics, as ``pyflink.metrics``: the interfaces a function's metric group hands out."""

from weir.metrics.metricbase import Counter, Distribution, Meter, Metric, MetricGroup

__all__ = ["Counter", "Distribution", "Meter", "Metric", "MetricGroup"]

"""Metric samples to and from ``MetricsDump`` (TaskExecutor.GetMetrics)."""

from __future__ import annotations

from collections.abc import Iterable

from weir.core.metrics.metric_group import MetricSample
from weir.proto import taskexecutor_pb2

__all__ = ["decode_metrics", "encode_metrics"]


def encode_metrics(
    samples: Iterable[MetricSample], prometheus_address: str = ""
) -> taskexecutor_pb2.MetricsDump:
    dump = taskexecutor_pb2.MetricsDump(prometheus_address=prometheus_address)
    for sample in samples:
        dump.metrics.add(
            scope=list(sample.scope),
            name=sample.name,
            variables=dict(sample.variables),
            kind=sample.kind,
            value=sample.value,
        )
    return dump


def decode_metrics(dump: taskexecutor_pb2.MetricsDump) -> list[MetricSample]:
    return [
        MetricSample(tuple(m.scope), m.name, dict(m.variables), m.kind, m.value)
        for m in dump.metrics
    ]

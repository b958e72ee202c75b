"""Flink's metric queries over the REST API: ``?get=a,b`` on one component's metrics
(``[{"id", "value"}]``), and ``?get=..&agg=..`` aggregated over several components
(``[{"id", "min", "max", "avg", "sum", "skew"}]``). Without ``get``, the names there
are. Flink serves both as bare JSON arrays, and its dashboard reads them so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from weir.rest.errors import RestHandlerError

__all__ = ["AGGREGATIONS", "aggregated_metric_values", "format_value", "metric_values"]

AGGREGATIONS = ("min", "max", "avg", "sum", "skew")


def format_value(value: float) -> str:
    """A metric value as Flink's MetricStore holds it: a string, integral values without
    a fraction."""
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)


def _names(get: str) -> list[str]:
    return [n for n in get.split(",") if n]


def metric_values(values: Mapping[str, float], get: str) -> list[dict[str, Any]]:
    wanted = _names(get)
    if not wanted:
        return [{"id": name} for name in sorted(values)]
    return [{"id": n, "value": format_value(values[n])} for n in wanted if n in values]


def _aggregations(agg: str) -> list[str]:
    asked = [a.strip().lower() for a in agg.split(",") if a.strip()]
    unknown = [a for a in asked if a not in AGGREGATIONS]
    if unknown:
        msg = f"unknown aggregation {unknown[0]!r} in agg=: use {', '.join(AGGREGATIONS)}"
        raise RestHandlerError(msg, 400)
    return asked or list(AGGREGATIONS)


def aggregated_metric_values(
    components: Sequence[Mapping[str, float]], get: str, agg: str = ""
) -> list[dict[str, Any]]:
    """Each wanted metric over the components that have it (Flink's AggregatedMetric;
    skew is how far the largest value is above the mean, in percent of the mean)."""
    wanted = _names(get)
    if not wanted:
        return [{"id": name} for name in sorted({n for c in components for n in c})]
    aggregations = _aggregations(agg)
    result = []
    for name in wanted:
        values = [float(c[name]) for c in components if name in c]
        if not values:
            continue
        avg = sum(values) / len(values)
        stats = {
            "min": min(values),
            "max": max(values),
            "avg": avg,
            "sum": sum(values),
            "skew": (max(values) - avg) / avg * 100 if avg > 0 else 0.0,
        }
        result.append({"id": name, **{a: stats[a] for a in aggregations}})
    return result

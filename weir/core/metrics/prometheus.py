"""A Prometheus endpoint for one process, as Flink's PrometheusReporter serves it.

Names follow Flink's reporter: ``flink_`` + the logical scope + the metric name, every
character Prometheus does not allow replaced by ``_``
(``flink_taskmanager_job_task_numRecordsIn``); scope variables become labels
(``job_id``, ``task_name``, ``subtask_index`` ...). The ``flink_`` prefix is Flink's, kept
so that dashboards and alerts written for Flink read Weir's metrics unchanged.

The values are read when Prometheus scrapes, from the same registry the REST API reads.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from weir.core.errors import ConfigurationError
from weir.core.metrics.metric_group import MetricSample
from weir.core.port_range import parse_port_range

__all__ = ["PROMETHEUS_FACTORY_CLASSES", "PrometheusReporter", "prometheus_name"]

logger = logging.getLogger(__name__)

# metrics.reporter.prom.factory.class values that start this reporter: Flink's own class
# name (so a Flink configuration file works unchanged) and ours.
PROMETHEUS_FACTORY_CLASSES = (
    "org.apache.flink.metrics.prometheus.PrometheusReporterFactory",
    "weir.core.metrics.prometheus.PrometheusReporter",
)

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(scope: Iterable[str], name: str) -> str:
    return _INVALID.sub("_", "_".join(("flink", *scope, name)))


class _SampleCollector(Collector):
    def __init__(self, source: Callable[[], list[MetricSample]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Any]:
        families: dict[str, tuple[GaugeMetricFamily, list[str]]] = {}
        for sample in self._source():
            full = prometheus_name(sample.scope, sample.name)
            labels = {_INVALID.sub("_", k): v for k, v in sample.variables.items()}
            entry = families.get(full)
            if entry is None:
                # Flink's reporter exposes counters as gauges too, under the metric's
                # own name (prometheus_client would append _total to a counter).
                names = sorted(labels)
                entry = (GaugeMetricFamily(full, sample.name, labels=names), names)
                families[full] = entry
            family, names = entry
            if sorted(labels) != names:
                continue  # one family, one label set: a clash of user groups is skipped
            family.add_metric([labels[n] for n in names], sample.value)
        for family, _ in families.values():
            yield family

    def describe(self) -> list[Any]:
        return []  # names are only known at scrape time


def _ports(spec: str) -> list[int]:
    """Flink's port syntax: ``9249``, ``9250-9260``, or a comma-separated list of both."""
    return parse_port_range(spec, "metrics.reporter.prom.port")


class PrometheusReporter:
    """Serves the samples of ``source`` at ``http://host:port/metrics`` on the first free
    port of ``port_spec``. A context manager; ``close`` stops the server."""

    def __init__(self, source: Callable[[], list[MetricSample]]) -> None:
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_SampleCollector(source))
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.address = ""

    def start(self, host: str, port_spec: str) -> str:
        """Bind the first free port of ``port_spec`` on ``host``; returns ``host:port``."""
        last_error: OSError | None = None
        for port in _ports(port_spec):
            try:
                self._server, self._thread = start_http_server(
                    port, addr=host, registry=self._registry
                )
            except OSError as exc:
                last_error = exc
                continue
            bound = self._server.server_address[1]
            self.address = f"{host}:{bound}"
            logger.info("Prometheus endpoint at http://%s/metrics", self.address)
            return self.address
        msg = (
            f"no free port in {port_spec!r} on {host} for the Prometheus endpoint "
            f"({last_error}); give metrics.reporter.prom.port a range such as 9250-9260, "
            "one port for each process on the host"
        )
        raise ConfigurationError(msg)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> PrometheusReporter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

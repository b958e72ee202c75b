"""A Prometheus endpoint for one process, as Flink's PrometheusReporter serves it.

Names follow Flink's reporter: ``flink_`` + the logical scope + the metric name, every
character Prometheus does not allow replaced by ``_``
(``flink_taskmanager_job_task_numRecordsIn``); scope variables become labels
(``job_id``, ``task_name``, ``subtask_index`` ...). The ``flink_`` prefix is Flink's, kept
so that dashboards and alerts written for Flink read Weir's metrics unchanged.

The values are read when Prometheus scrapes, from the same registry the REST API reads.

Flink's reporter serves plain HTTP to anyone who asks. On a cluster with security on
(TLS or ``security.auth.token``), Weir's asks for the token as a bearer token (what
Prometheus sends with ``authorization`` in a scrape configuration) and binds 127.0.0.1
unless ``metrics.reporter.prom.host`` says otherwise; with
``metrics.reporter.prom.ssl.enabled`` it serves HTTPS with the REST endpoint's
certificate. The HTTP server is ours, not prometheus_client's ``start_http_server``: that
one makes the TLS handshake in its accept loop, where a single client that connects and
says nothing stops every scrape, and it has no place for a token check. Ours makes the
handshake on each connection's own thread; the exposition (content negotiation,
OpenMetrics, gzip) is prometheus_client's ``MetricsHandler``.
"""

from __future__ import annotations

import logging
import re
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, MetricsHandler
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.core.metrics.metric_group import MetricSample
from weir.core.port_range import parse_port_range
from weir.core.security import SecurityConfig

__all__ = [
    "PROMETHEUS_FACTORY_CLASSES",
    "PrometheusReporter",
    "PrometheusReporterConfig",
    "prometheus_name",
    "start_prometheus_reporter",
]

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
    return parse_port_range(spec, cfg.PROMETHEUS_PORT.key)


LOOPBACK = "127.0.0.1"
"""Where the endpoint binds by default on a secured cluster when it has no TLS."""

# A scraper's handshake and request take milliseconds; a connection silent for this long
# is closed, so that it holds no thread (Prometheus's own default scrape timeout is 10 s).
_CONNECTION_TIMEOUT_S = 10.0
_JOIN_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class PrometheusReporterConfig:
    """Where and how one process serves Prometheus; see the module docstring."""

    host: str
    port_spec: str
    tls: bool = False
    """HTTPS with ``security``'s REST certificate (``metrics.reporter.prom.ssl.enabled``)."""
    security: SecurityConfig = field(default_factory=SecurityConfig)

    @classmethod
    def from_config(
        cls, entries: Mapping[str, str], security: SecurityConfig, process_host: str
    ) -> PrometheusReporterConfig | None:
        """None when ``metrics.reporter.prom.factory.class`` starts no reporter.
        ``process_host`` is the address the process's other servers bind."""
        factory = cfg.get(entries, cfg.PROMETHEUS_FACTORY_CLASS)
        if not factory:
            return None
        if factory not in PROMETHEUS_FACTORY_CLASSES:
            msg = (
                f"unknown metrics reporter {factory!r} in "
                f"{cfg.PROMETHEUS_FACTORY_CLASS.key}; use one of "
                f"{', '.join(PROMETHEUS_FACTORY_CLASSES)}"
            )
            raise ConfigurationError(msg)
        tls = cfg.get(entries, cfg.PROMETHEUS_SSL_ENABLED)
        if tls and security.rest is None:
            msg = (
                f"{cfg.PROMETHEUS_SSL_ENABLED.key} is true but {cfg.SSL_REST_ENABLED.key} is "
                "not: the Prometheus endpoints serve HTTPS with the REST endpoint's "
                "certificate; turn security.ssl.rest.enabled on with its cert, key and "
                "trust-cert"
            )
            raise ConfigurationError(msg)
        host = cfg.get(entries, cfg.PROMETHEUS_HOST)
        if not host:
            host = LOOPBACK if security.enabled and not tls else process_host
        return cls(host, cfg.get(entries, cfg.PROMETHEUS_PORT), tls, security)


class _ScrapeHandler(MetricsHandler):
    """prometheus_client's exposition behind the token check; one instance a connection.
    ``registry`` and ``security`` are set on a subclass per reporter."""

    security: SecurityConfig = SecurityConfig()
    timeout = _CONNECTION_TIMEOUT_S  # applied to the connection by StreamRequestHandler

    def do_GET(self) -> None:
        if self._authorized():
            super().do_GET()
            return
        body = (
            "this cluster requires security.auth.token: send it as 'Authorization: Bearer "
            "<token>' (in Prometheus, the scrape configuration's authorization "
            "credentials)\n"
        ).encode()
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="weir"')
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        if not self.security.token:
            return True
        scheme, _, presented = (self.headers.get("Authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and self.security.token_matches(presented.strip())


class _MetricsHttpServer(socketserver.ThreadingTCPServer):
    """A thread per connection; with ``ssl_context``, the TLS handshake is made on that
    thread, never in the accept loop."""

    daemon_threads = True
    allow_reuse_address = True  # a restarted process rebinds past TIME_WAIT

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[_ScrapeHandler],
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._ssl_context = ssl_context
        super().__init__(address, handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(_CONNECTION_TIMEOUT_S)
        if self._ssl_context is None:
            super().finish_request(request, client_address)
            return
        try:
            connection = self._ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            logger.debug("refused a Prometheus client at %s: %s", client_address, exc)
            return
        with connection:
            super().finish_request(connection, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A scraper that went away mid-answer, or stayed silent past the timeout: its
        # connection only. socketserver would print the traceback to stderr.
        logger.debug("a Prometheus scrape from %s failed", client_address, exc_info=True)


class PrometheusReporter:
    """Serves the samples of ``source`` at ``http(s)://host:port/metrics`` on the first
    free port of ``config.port_spec``. A context manager; ``close`` stops the server."""

    def __init__(
        self, source: Callable[[], list[MetricSample]], config: PrometheusReporterConfig
    ) -> None:
        self._config = config
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_SampleCollector(source))
        self._server: _MetricsHttpServer | None = None
        self._thread: threading.Thread | None = None
        self.address = ""

    def start(self) -> str:
        """Bind the first free port of the configured ones; returns ``host:port``."""
        config = self._config
        ssl_context = config.security.rest_server_context() if config.tls else None
        handler = type(
            "ScrapeHandler",
            (_ScrapeHandler,),
            {"registry": self._registry, "security": config.security},
        )
        last_error: OSError | None = None
        for port in _ports(config.port_spec):
            try:
                server = _MetricsHttpServer((config.host, port), handler, ssl_context)
            except OSError as exc:
                last_error = exc
                continue
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever, name="weir-prometheus", daemon=True
            )
            self._thread.start()
            self.address = f"{config.host}:{server.server_address[1]}"
            self._log_started()
            return self.address
        msg = (
            f"no free port in {config.port_spec!r} on {config.host} for the Prometheus "
            f"endpoint ({last_error}); give {cfg.PROMETHEUS_PORT.key} a range such as "
            "9250-9260, one port for each process on the host"
        )
        raise ConfigurationError(msg)

    def _log_started(self) -> None:
        config = self._config
        scheme = "https" if config.tls else "http"
        logger.info("Prometheus endpoint at %s://%s/metrics", scheme, self.address)
        if config.security.enabled and not config.tls and not _is_loopback(config.host):
            logger.warning(
                "the Prometheus endpoint at %s serves plain HTTP beyond this host on a "
                "cluster with security on: the token it asks for crosses the network in "
                "clear; set %s: true, or leave %s empty (127.0.0.1)",
                self.address,
                cfg.PROMETHEUS_SSL_ENABLED.key,
                cfg.PROMETHEUS_HOST.key,
            )

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT_S)
            self._thread = None

    def __enter__(self) -> PrometheusReporter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def start_prometheus_reporter(
    entries: Mapping[str, str],
    security: SecurityConfig,
    process_host: str,
    source: Callable[[], list[MetricSample]],
) -> PrometheusReporter | None:
    """The process's Prometheus endpoint, started, if its configuration asks for one
    (``metrics.reporter.prom.*``); None if it does not."""
    config = PrometheusReporterConfig.from_config(entries, security, process_host)
    if config is None:
        return None
    reporter = PrometheusReporter(source, config)
    reporter.start()
    return reporter

"""REST endpoint, metrics and queryable state keys (Flink's RestOptions, PrometheusReporter,
QueryableStateOptions)."""

from __future__ import annotations

from collections.abc import Callable

from weir.core.config_option import (
    _option,
    _parse_bool,
    _port,
    _positive_duration_ms,
)
from weir.core.errors import ConfigurationError
from weir.core.port_range import parse_port_range

# --- REST endpoint and metrics (Flink's RestOptions, PrometheusReporter) --------------
REST_ADDRESS = _option(
    "rest.address",
    "",
    str,
    "The address clients and the dashboard are told to reach the REST endpoint at. "
    "Empty: the bind address.",
)
REST_PORT = _option(
    "rest.port",
    8081,
    _port,
    "The REST endpoint's (and the web dashboard's) port; 0 = any free port. The embedded "
    "MiniCluster starts the endpoint only when this key is set, as Flink's local "
    "environment needs createLocalEnvironmentWithWebUI.",
)
REST_BIND_ADDRESS = _option(
    "rest.bind-address",
    "",
    str,
    "The interface the REST endpoint binds. Empty: jobmanager.bind-host (loopback unless "
    "set: the endpoint accepts jobs, and a job is code).",
)
WEB_LOG_PATH = _option(
    "web.log.path",
    "",
    str,
    "The master's log file, which the REST API serves as the JobManager's log "
    "(/jobmanager/log; the files beside it are /jobmanager/logs). start-cluster.sh sets "
    "it; empty: the master keeps no log file of its own.",
)
WEB_UPLOAD_DIR = _option(
    "web.upload.dir",
    "",
    str,
    "Where job files uploaded through the dashboard (/jars/upload) are kept. Empty: a "
    "temporary directory of the master, removed when it stops.",
)
# Flink's key; Flink's default is 10 s. Ours is short because what it serves (rates) is
# already averaged over seconds on the TaskManager, and a dashboard polling every few
# seconds and a REST client reading several vertices still share one fetch per
# TaskManager per interval.
METRIC_FETCHER_UPDATE_INTERVAL = _option(
    "metrics.fetcher.update-interval",
    1000,
    _positive_duration_ms,
    "How often the REST endpoint asks each TaskManager for its metrics, at most (it asks "
    "when a REST call needs them). A TaskManager that does not answer is served from its "
    'last values, marked "stale" in the metrics of /jobs/{jobid} and its vertices.',
)
PROMETHEUS_FACTORY_CLASS = _option(
    "metrics.reporter.prom.factory.class",
    "",
    str,
    "org.apache.flink.metrics.prometheus.PrometheusReporterFactory starts a Prometheus "
    "endpoint on the master and on every TaskManager. Empty: none.",
)
PROMETHEUS_PORT = _option(
    "metrics.reporter.prom.port",
    "9249",
    str,
    "The Prometheus endpoint's port, a range (9250-9260) or a list of both: each process "
    "takes the first free one, so give a range when several run on one host. 0 = any.",
)
PROMETHEUS_HOST = _option(
    "metrics.reporter.prom.host",
    "",
    str,
    "The interface the Prometheus endpoints bind. Empty: the process's own address (the "
    "master's jobmanager.bind-host, a TaskManager's host), except on a cluster with "
    "security on (security.ssl.*.enabled or security.auth.token) whose endpoints have no "
    "TLS (metrics.reporter.prom.ssl.enabled): there 127.0.0.1, for a Prometheus on the "
    "same host.",
)
PROMETHEUS_SSL_ENABLED = _option(
    "metrics.reporter.prom.ssl.enabled",
    False,
    _parse_bool,
    "Serve the Prometheus endpoints over HTTPS with the REST endpoint's certificate "
    "(security.ssl.rest.cert and .key; needs security.ssl.rest.enabled), asking scrapers "
    "for a certificate signed by security.ssl.rest.trust-cert unless "
    "security.ssl.rest.authentication-enabled is false. Flink's reporter has no TLS.",
)


# --- queryable state (Flink's QueryableStateOptions) ---------------------------------
def _port_range(key: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:  # refuse a bad spec when the configuration is read, not when a server binds
            parse_port_range(text, key)
        except ConfigurationError as exc:
            msg = f"expected a port, a range like 9067-9077 or a list of them, got {text!r}"
            raise ValueError(msg) from exc
        return str(text).strip()

    return parse


QUERYABLE_STATE_ENABLE = _option(
    "queryable-state.enable",
    False,
    _parse_bool,
    "Serve queryable state: a KvStateServer on every TaskManager and the client proxy "
    "on the master (Flink puts it on TaskManagers; here TaskManagers live in Spark "
    "executors, so the one address clients know is the master's).",
)
QUERYABLE_STATE_PROXY_PORTS = _option(
    "queryable-state.proxy.ports",
    "9069",
    _port_range("queryable-state.proxy.ports"),
    "Port of the queryable state client proxy on the master, a range (9069-9079) or a "
    "list; the first free one is taken. 0 = any free port.",
)
QUERYABLE_STATE_SERVER_PORTS = _option(
    "queryable-state.server.ports",
    "9067",
    _port_range("queryable-state.server.ports"),
    "Port of each TaskManager's queryable state server, a range (9067-9077) or a list: "
    "each TaskManager takes the first free one, so give a range when several run on one "
    "host. 0 = any free port.",
)

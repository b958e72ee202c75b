"""Every configuration key Weir knows: name, type, default, description, defined once.

Flink's key names are used where Flink has the key. ``spark.*`` keys are passed through
to the SparkSession untouched. ``load_config_file`` and ``validate`` report unknown keys
and bad values by name.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import yaml

from weir.core.errors import ConfigurationError
from weir.core.port_range import parse_port_range

T = TypeVar("T")


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    msg = f"expected true or false, got {text!r}"
    raise ValueError(msg)


_DURATION_UNITS_MS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def parse_duration_ms(text: str) -> int:
    """Flink's duration syntax: ``100 ms``, ``10s``, ``1 min``; a bare number is milliseconds."""
    stripped = str(text).strip().lower()
    digits = ""
    for ch in stripped:
        if ch.isdigit() or (ch == "-" and not digits):
            digits += ch
        else:
            break
    unit = stripped[len(digits) :].strip() or "ms"
    if not digits or digits == "-" or unit not in _DURATION_UNITS_MS:
        msg = f"expected a duration such as '100 ms', '10 s' or '1 min', got {text!r}"
        raise ValueError(msg)
    return int(digits) * _DURATION_UNITS_MS[unit]


def parse_memory_bytes(text: str) -> int:
    stripped = str(text).strip().lower().replace(" ", "")
    units = {
        "": 1,
        "b": 1,
        "k": 1 << 10,
        "kb": 1 << 10,
        "m": 1 << 20,
        "mb": 1 << 20,
        "g": 1 << 30,
        "gb": 1 << 30,
    }
    number = stripped.rstrip("kmgb")
    unit = stripped[len(number) :]
    if not number.isdigit() or unit not in units:
        msg = f"expected a size such as '32 kb' or '1 mb', got {text!r}"
        raise ValueError(msg)
    return int(number) * units[unit]


@dataclass(frozen=True, slots=True)
class ConfigOption(Generic[T]):
    key: str
    default: T
    parse: Callable[[str], T]
    description: str
    choices: tuple[str, ...] = ()

    def from_string(self, text: str) -> T:
        if self.choices and str(text).strip().lower() not in self.choices:
            msg = (
                f"bad value {text!r} for configuration key {self.key!r}: "
                f"expected one of {', '.join(self.choices)}"
            )
            raise ConfigurationError(msg)
        try:
            return self.parse(str(text))
        except (ValueError, TypeError) as exc:
            msg = f"bad value for configuration key {self.key!r}: {exc}"
            raise ConfigurationError(msg) from exc


OPTIONS: dict[str, ConfigOption[Any]] = {}


def _option(
    key: str, default: T, parse: Callable[[str], T], description: str, choices: tuple[str, ...] = ()
) -> ConfigOption[T]:
    opt = ConfigOption(key, default, parse, description, choices)
    OPTIONS[key] = opt
    return opt


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"expected a positive integer, got {text!r}"
        raise ValueError(msg)
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:  # gRPC would take 99999 modulo 65536, another port
        msg = f"expected a port from 0 to 65535 (0 = any free port), got {text!r}"
        raise ValueError(msg)
    return value


def _positive_duration_ms(text: str) -> int:
    value = parse_duration_ms(text)
    if value <= 0:
        msg = f"expected a duration longer than 0 ms, got {text!r}"
        raise ValueError(msg)
    return value


def _non_negative_duration_ms(text: str) -> int:
    value = parse_duration_ms(text)
    if value < 0:
        msg = f"expected a duration of 0 ms or more, got {text!r}"
        raise ValueError(msg)
    return value


_SPARK_MASTER_FORMS = (
    re.compile(r"local(\[(\*|[1-9]\d*)(\s*,\s*[1-9]\d*)?\])?"),
    re.compile(r"local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]"),
    re.compile(r"spark://[^\s:/,]+:\d+(,[^\s:/,]+:\d+)*"),
    re.compile(r"yarn"),
    re.compile(r"k8s://\S+"),
)


def _spark_master(text: str) -> str:
    """A master URL Spark accepts; a bad one would otherwise only end Spark's JVM at start
    (``JAVA_GATEWAY_EXITED``) without saying which setting it disliked."""
    value = text.strip()
    if not any(form.fullmatch(value) for form in _SPARK_MASTER_FORMS):
        msg = (
            f"expected local, local[N], local[*], spark://host:port, yarn or "
            f"k8s://https://host:port, got {text!r}"
        )
        raise ValueError(msg)
    return value


# --- job and pipeline -------------------------------------------------------------
PARALLELISM_DEFAULT = _option(
    "parallelism.default", 1, _positive_int, "Parallelism of operators that set none."
)
MAX_PARALLELISM = _option(
    "pipeline.max-parallelism",
    -1,
    int,
    "Default max parallelism (number of key groups); -1 derives it from the parallelism.",
)
OPERATOR_CHAINING = _option(
    "pipeline.operator-chaining.enabled", True, _parse_bool, "Chain operators where possible."
)
BUFFER_TIMEOUT = _option(
    "execution.buffer-timeout.interval",
    100,
    parse_duration_ms,
    "How long a partly filled network buffer may wait before it is sent (ms). "
    "0 sends after every record batch, -1 only when full.",
)
OPERATOR_CHAINING_DEPRECATED = _option(
    "pipeline.operator-chaining",
    True,
    _parse_bool,
    "Deprecated name of pipeline.operator-chaining.enabled, still read as Flink reads it.",
)
BUFFER_TIMEOUT_DEPRECATED = _option(
    "execution.buffer-timeout",
    100,
    parse_duration_ms,
    "Deprecated name of execution.buffer-timeout.interval, still read as Flink reads it.",
)
BUFFER_TIMEOUT_ENABLED = _option(
    "execution.buffer-timeout.enabled",
    True,
    _parse_bool,
    "If false, buffers are sent only when full (the same as a timeout of -1).",
)
JOB_NAME = _option("pipeline.name", "", str, "The job name.")
PROGRAM_KEY = "weir.internal.program"
"""Set by the client: the program and its arguments as it was started (shell-quoted), for
the ``weir run -s`` command a failed job suggests; absent when not started from a script."""
AUTO_WATERMARK_INTERVAL = _option(
    "pipeline.auto-watermark-interval",
    200,
    parse_duration_ms,
    "How often periodic watermark generators emit (ms); 0 turns periodic watermarks off.",
)
PYTHON_BUNDLE_SIZE = _option(
    "python.fn-execution.bundle.size",
    1000,
    _positive_int,
    "PyFlink's bundle size, the most records a task pushes through its operator chain as "
    "one batch: a source polls at most this many at once and a larger network buffer is "
    "processed in parts of this size, with timers, periodic watermarks and due flushes "
    "served in between. 1 makes every record its own batch.",
)
PYTHON_BUNDLE_TIME = _option(
    "python.fn-execution.bundle.time",
    1000,
    _positive_duration_ms,
    "PyFlink's bundle time (ms): the longest a source function's records wait to be pushed "
    "through the chain as one batch. With periodic watermarks a batch is also cut after one "
    "pipeline.auto-watermark-interval, so a watermark can fall between records produced "
    "further apart than that.",
)
PYTHON_FILES = _option(
    "python.files",
    "",
    str,
    "Python files, packages or directories the job's functions import (comma-separated, "
    "as env.add_python_file() sets it): shipped with the job and put on the TaskManagers' "
    "sys.path.",
)
PYTHON_FILES_ARCHIVE = "weir.internal.python-files"
"""Set by the client: the files of python.files, zipped and base64-encoded."""
PYTHON_ARCHIVES = _option(
    "python.archives",
    "",
    str,
    "Archives shipped with the job (comma-separated `path` or `path#target_dir`, as "
    "env.add_python_archive() sets them; zip, jar, whl, egg, tar, tar.gz or tgz): each is "
    "extracted in the job's working directory on every TaskManager, under its target "
    "directory (without one, the archive's file name), where functions read its files by "
    "relative paths.",
)
PYTHON_ARCHIVES_PACKED = "weir.internal.python-archives"
"""Set by the client: the archives of python.archives, zipped and base64-encoded."""
PYTHON_REQUIREMENTS = _option(
    "python.requirements",
    "",
    str,
    "A pip requirements file, optionally followed by `#` and a directory of the packages to "
    "install (as env.set_python_requirements() sets it): installed with pip on every "
    "TaskManager (from that directory alone when given) for the job's functions to import. "
    "A TaskManager's Python is shared by every job and by Weir, so packages it has already "
    "stay as they are.",
)
PYTHON_REQUIREMENTS_PACKED = "weir.internal.python-requirements"
"""Set by the client: the requirements file and its packages, zipped and base64-encoded."""
OBJECT_REUSE = _option(
    "pipeline.object-reuse",
    False,
    _parse_bool,
    "Flink's object reuse switch; records are Python objects handed on as they are "
    "whatever it says.",
)
CLOSURE_CLEANER_LEVEL = _option(
    "pipeline.closure-cleaner-level",
    "RECURSIVE",
    str.upper,
    "Flink's closure cleaner; kept and reported only (functions are pickled whole).",
    ("none", "top_level", "recursive"),
)
AUTO_GENERATE_UIDS = _option(
    "pipeline.auto-generate-uids",
    True,
    _parse_bool,
    "Flink's switch for generated operator uids; kept and reported only.",
)


def parse_map(text: str) -> dict[str, str]:
    """Flink's map syntax: ``key:value,key2:value2``; a part holding , : or ' is quoted
    with ' (a quote inside doubled)."""
    entries: dict[str, str] = {}
    for part in _split_quoted(str(text), ","):
        if not part.strip():
            continue
        pieces = _split_quoted(part, ":")
        if len(pieces) != 2:
            msg = f"{part!r} is not a key:value pair (in {text!r})"
            raise ValueError(msg)
        entries[_unquote(pieces[0].strip())] = _unquote(pieces[1].strip())
    return entries


def _split_quoted(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == "'":
            quoted = not quoted
        if char == separator and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


GLOBAL_JOB_PARAMETERS: ConfigOption[dict[str, str]] = _option(
    "pipeline.global-job-parameters",
    {},
    parse_map,
    "What RuntimeContext.get_job_parameter returns: key:value pairs, comma-separated.",
)
RUNTIME_MODE = _option(
    "execution.runtime-mode",
    "STREAMING",
    str.upper,
    "STREAMING, BATCH, or AUTOMATIC (BATCH when every source is bounded). In BATCH mode "
    "keyed aggregations emit only their final value per key, at the end of the input.",
    ("streaming", "batch", "automatic"),
)

# --- TaskManager and network ------------------------------------------------------
NUM_TASK_SLOTS = _option(
    "taskmanager.numberOfTaskSlots",
    1,
    _positive_int,
    "Slots per TaskManager. One by default: Python threads share the GIL, so parallelism "
    "comes from more TaskManagers (Spark executor cores).",
)
SEGMENT_SIZE = _option(
    "taskmanager.memory.segment-size",
    32 * 1024,
    parse_memory_bytes,
    "Size of a network buffer in bytes.",
)
# A frame carries one network buffer whole. The receiver allocates a frame's announced
# length before it arrives, so it refuses lengths past this ceiling as a corrupt stream;
# the per-job limit below may be raised up to it, never past it.
MAX_FRAME_SIZE_CEILING = 1 << 30


def _frame_size(text: str) -> int:
    value = parse_memory_bytes(text)
    if not 0 < value <= MAX_FRAME_SIZE_CEILING:
        msg = f"expected a size above 0 and at most 1 gb, got {text!r}"
        raise ValueError(msg)
    return value


# Flink's records span buffers; ours travel in one buffer each, so one record must fit in
# a frame. 64 MiB keeps what a receiver allocates for one frame bounded while no ordinary
# record comes near it.
MAX_FRAME_SIZE = _option(
    "taskmanager.network.max-frame-size",
    64 * 1024 * 1024,
    _frame_size,
    "Largest network frame (one serialized buffer) a task sends; a record that does not "
    "fit in one alone fails the task with its size. At most 1 gb.",
)
BUFFERS_PER_CHANNEL = _option(
    "taskmanager.network.memory.buffers-per-channel",
    2,
    _positive_int,
    "Exclusive buffers (initial credit) per input channel.",
)
FLOATING_BUFFERS_PER_GATE = _option(
    "taskmanager.network.memory.floating-buffers-per-gate",
    8,
    int,
    "Floating buffers per input gate, lent as extra credit to backlogged channels.",
)
MAX_BUFFERS_PER_SUBPARTITION = _option(
    "taskmanager.network.memory.max-buffers-per-channel",
    10,
    _positive_int,
    "Buffers a subpartition may queue before its writer blocks (back-pressure).",
)
NETWORK_COMPRESSION = _option(
    "taskmanager.network.compression.codec",
    "none",
    str.lower,
    "Compression of network buffers.",
    ("none", "lz4"),
)
# Flink's key and values; Flink's default is DISABLED. Ours is THROW: a TaskManager is
# one Python process hosting the tasks of every job leased to it, so a user function that
# ended the process would fail all of them and lose the lease, and the job would only
# learn that a TaskManager was lost, not which task did it with which code.
INTERCEPT_USER_SYSTEM_EXIT = _option(
    "cluster.intercept-user-system-exit",
    "THROW",
    str.upper,
    "What os._exit in user code does on a task thread: THROW fails the task naming the "
    "exit code and keeps the TaskManager running; LOG logs the call and exits; DISABLED "
    "exits.",
    ("disabled", "log", "throw"),
)


def parse_port_span(text: str) -> tuple[int, int]:
    """A TaskManager port as Flink writes it: ``0`` (any free port), ``50100`` or
    ``50100-50200``, as (first, last). (``port_range.parse_port_range`` also takes lists.)"""
    first, sep, last = str(text).strip().partition("-")
    try:
        low = int(first)
        high = int(last) if sep else low
    except ValueError:
        msg = f"expected a port, or a range such as 50100-50200, got {text!r}"
        raise ValueError(msg) from None
    if not (0 <= low <= high <= 65535) or (low == 0 and high != 0):
        msg = (
            f"expected ports from 1 to 65535 with the first not above the last (or 0), got {text!r}"
        )
        raise ValueError(msg)
    return low, high


TASKMANAGER_HOST = _option(
    "taskmanager.host",
    "",
    str,
    "Address a TaskManager advertises to the cluster (its gRPC and data endpoints). Empty: "
    "the address of the TaskManager's host on the interface that routes to the "
    "ResourceManager (127.0.0.1 when the master is on loopback).",
)
TASKMANAGER_BIND_HOST = _option(
    "taskmanager.bind-host",
    "",
    str,
    "Interface TaskManagers bind their gRPC and data servers to (0.0.0.0: all). Empty: "
    "taskmanager.host.",
)
TASKMANAGER_DATA_PORT = _option(
    "taskmanager.data.port",
    (0, 0),
    parse_port_span,
    "Port of a TaskManager's data server: 0 (any free), a port, or a range such as "
    "50100-50200 for firewalled clusters (the first free one is taken).",
)
TASKMANAGER_RPC_PORT = _option(
    "taskmanager.rpc.port",
    (0, 0),
    parse_port_span,
    "Port of a TaskManager's gRPC endpoint: 0 (any free), a port, or a range.",
)
TASKMANAGER_TMP_DIR = _option(
    "io.tmp.dirs", "", str, "Working directories of TaskManagers (default: the system temp dir)."
)

# --- master services ----------------------------------------------------------------
JOBMANAGER_ADDRESS = _option(
    "jobmanager.rpc.address",
    "127.0.0.1",
    str,
    "Address of the master process as clients and TaskManagers reach it (the CLI's "
    "default, and what the master advertises). Unset on the master: jobmanager.bind-host "
    "when that is one address.",
)
JOBMANAGER_PORT = _option(
    "jobmanager.rpc.port", 6123, _port, "Port of the Dispatcher's gRPC endpoint (0 = any free)."
)
BIND_HOST = _option(
    "jobmanager.bind-host",
    "127.0.0.1",
    str,
    "Interface the master's gRPC servers bind to. Loopback unless told otherwise: "
    "submitting a job is running code.",
)
SLOT_REQUEST_TIMEOUT = _option(
    "slot.request.timeout",
    300_000,
    parse_duration_ms,
    "How long a JobMaster waits for its slots before it fails the job (ms).",
)
HEARTBEAT_INTERVAL = _option(
    "heartbeat.interval", 10_000, _positive_duration_ms, "Time between heartbeats (ms)."
)
# Flink's defaults: five intervals before a peer is declared lost, so one slow or lost
# heartbeat never is. A timeout below the interval would declare every peer lost between
# two heartbeats, so check_relations() refuses it, as Flink's HeartbeatServices do.
HEARTBEAT_TIMEOUT = _option(
    "heartbeat.timeout",
    50_000,
    _positive_duration_ms,
    "A TaskManager (or ResourceManager) that has not answered for this long is lost (ms); "
    "at least heartbeat.interval.",
)
# Flink's task cancellation settings (TaskManagerOptions); ExecutionConfig's setters write
# them per job. The interval is how often a cancelled task that keeps running is
# interrupted; the timeout, after which its TaskManager gives up on it and exits, is a
# last resort measured in minutes, far beyond any cleanup a task does on cancel.
TASK_CANCELLATION_INTERVAL = _option(
    "task.cancellation.interval",
    30_000,
    _positive_duration_ms,
    "Between two interrupts of a cancelled task that keeps running (ms).",
)
TASK_CANCELLATION_TIMEOUT = _option(
    "task.cancellation.timeout",
    180_000,
    _non_negative_duration_ms,
    "A task still running this long after its cancellation is a fatal error: its "
    "TaskManager logs the task's stack and exits, and is replaced (ms); 0 disables it.",
)
RESOURCE_WAIT_IDLE_TIMEOUT = _option(
    "resourcemanager.taskmanager-timeout",
    30_000,
    parse_duration_ms,
    "An idle TaskManager is released after this long (ms).",
)
TASKMANAGERS_MAX = _option(
    "resourcemanager.taskmanager.max",
    0,
    int,
    "Most TaskManagers leased at once; 0 derives it from spark.master (local[N]: N).",
)
TASKMANAGERS_MIN = _option(
    "resourcemanager.taskmanager.min",
    0,
    int,
    "TaskManagers leased at start and kept while the cluster runs.",
)
CLUSTER_LOG_DIR = _option(
    "env.log.dir",
    "",
    str,
    "Where cluster scripts put the master's log, and each TaskManager its taskmanager.log "
    "and taskmanager.out (in taskmanager-<id>/). Empty: TaskManagers log and print where "
    "their process does.",
)
# Flink keeps env.log.max old files of each log (log4j's DefaultRolloverStrategy) and
# rolls a file over at 100 MB (its log4j.properties): a TaskManager's two files take at
# most 2 x 11 x 100 MB however much its jobs print.
LOG_MAX = _option("env.log.max", 10, _positive_int, "Old files kept of each TaskManager log file.")


def _positive_size(text: str) -> int:
    value = parse_memory_bytes(text)
    if value <= 0:
        msg = f"expected a size above 0, got {text!r}"
        raise ValueError(msg)
    return value


LOG_MAX_FILE_SIZE = _option(
    "env.log.max-file-size",
    100 * 1024 * 1024,
    _positive_size,
    "A TaskManager's taskmanager.log or taskmanager.out rolls over at this size.",
)
CLUSTER_PID_DIR = _option("env.pid.dir", "", str, "Where cluster scripts put pid files.")

# --- security (Flink's SecurityOptions, with PEM files instead of key stores) ---------
SSL_INTERNAL_ENABLED = _option(
    "security.ssl.internal.enabled",
    False,
    _parse_bool,
    "Mutual TLS for everything inside the cluster: the ResourceManager's, JobMasters' and "
    "TaskExecutors' gRPC endpoints and the TaskManagers' data connections. Needs "
    "security.ssl.internal.cert, .key and .trust-cert.",
)
SSL_INTERNAL_CERT = _option(
    "security.ssl.internal.cert",
    "",
    str,
    "PEM certificate (chain) every cluster process presents, as server and as client. "
    "The same path must hold it on every host. `weir certs` makes one.",
)
SSL_INTERNAL_KEY = _option(
    "security.ssl.internal.key", "", str, "PEM private key of security.ssl.internal.cert."
)
SSL_INTERNAL_TRUST_CERT = _option(
    "security.ssl.internal.trust-cert",
    "",
    str,
    "PEM certificate(s) of the CA whose certificates the cluster's processes accept.",
)
SSL_REST_ENABLED = _option(
    "security.ssl.rest.enabled",
    False,
    _parse_bool,
    "TLS on what clients use: the Dispatcher's gRPC endpoint (weir run, list, cancel). "
    "Needs security.ssl.rest.cert and .key on the master, .trust-cert on clients.",
)
SSL_REST_CERT = _option(
    "security.ssl.rest.cert", "", str, "PEM certificate (chain) of the Dispatcher, and of clients."
)
SSL_REST_KEY = _option(
    "security.ssl.rest.key", "", str, "PEM private key of security.ssl.rest.cert."
)
SSL_REST_TRUST_CERT = _option(
    "security.ssl.rest.trust-cert",
    "",
    str,
    "PEM certificate(s) of the CA that clients trust for the Dispatcher (and the Dispatcher "
    "for clients, with security.ssl.rest.authentication-enabled).",
)
# Flink's default is false: a REST client need not show a certificate. Ours is true,
# because a client of the Dispatcher submits code the cluster runs; clients that cannot
# hold a certificate turn it off and present security.auth.token instead.
SSL_REST_AUTHENTICATION_ENABLED = _option(
    "security.ssl.rest.authentication-enabled",
    True,
    _parse_bool,
    "With security.ssl.rest.enabled: clients must present a certificate of the trusted CA "
    "too (mutual TLS). Off: any client may connect over TLS, and only security.auth.token "
    "keeps strangers out.",
)
SSL_VERIFY_HOSTNAME = _option(
    "security.ssl.verify-hostname",
    True,
    _parse_bool,
    "Check that a server's certificate names the host it was reached at. Off: the "
    "certificate must name weir-cluster instead (`weir certs` always adds it), so one "
    "certificate serves hosts whose addresses are not known in advance.",
)
AUTH_TOKEN = _option(
    "security.auth.token",
    "",
    str,
    "A shared secret every client and cluster process sends with each call and data "
    "connection, compared in constant time; calls without it are refused (UNAUTHENTICATED). "
    "Sent in the clear unless TLS is on.",
)

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

# --- high availability --------------------------------------------------------------
HA_TYPE = _option(
    "high-availability.type", "none", str.lower, "High-availability mode.", ("none", "zookeeper")
)
HA_ZK_QUORUM = _option(
    "high-availability.zookeeper.quorum", "", str, "ZooKeeper quorum host:port,..."
)
HA_CLUSTER_ID = _option(
    "high-availability.cluster-id", "/default", str, "Namespace of this cluster in ZooKeeper."
)
HA_STORAGE_DIR = _option(
    "high-availability.storageDir",
    "",
    str,
    "Where job graphs are stored (any fsspec URL); ZooKeeper holds only pointers to them.",
)
HA_ZK_PATH_ROOT = _option(
    "high-availability.zookeeper.path.root",
    "/weir",
    str,
    "The ZooKeeper node under which every Weir cluster keeps its data.",
)
# Flink's ZooKeeper client settings (HighAvailabilityOptions), with Flink's defaults. The
# session timeout is how long a leader that stopped answering (killed, paused, cut off)
# keeps its leadership: a standby takes over that long after the leader dies, so a cluster
# that wants fast failover lowers it (ZooKeeper bounds it to 2..20 ticks of the server).
HA_ZK_SESSION_TIMEOUT = _option(
    "high-availability.zookeeper.client.session-timeout",
    60_000,
    _positive_duration_ms,
    "ZooKeeper session timeout (ms): a leader that stops answering loses leadership after it.",
)
# How long one connection attempt to a quorum member may take; a fraction of the session
# timeout, so a client tries several members before its session could expire.
HA_ZK_CONNECTION_TIMEOUT = _option(
    "high-availability.zookeeper.client.connection-timeout",
    15_000,
    _positive_duration_ms,
    "ZooKeeper connection timeout (ms).",
)
HA_ZK_RETRY_WAIT = _option(
    "high-availability.zookeeper.client.retry-wait",
    5_000,
    _positive_duration_ms,
    "Pause between two attempts of a ZooKeeper operation that lost its connection (ms).",
)
HA_ZK_MAX_RETRY_ATTEMPTS = _option(
    "high-availability.zookeeper.client.max-retry-attempts",
    3,
    _positive_int,
    "Attempts of a ZooKeeper operation that lost its connection before it fails.",
)


# --- checkpointing (Flink 2.x CheckpointingOptions) ---------------------------------
def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        msg = f"expected an integer >= 0, got {text!r}"
        raise ValueError(msg)
    return value


CHECKPOINTING_INTERVAL = _option(
    "execution.checkpointing.interval",
    0,
    parse_duration_ms,
    "Time between the starts of two periodic checkpoints (ms). Checkpointing is off unless "
    "this is set to a positive duration, as in Flink.",
)
CHECKPOINTING_MODE = _option(
    "execution.checkpointing.mode",
    "EXACTLY_ONCE",
    str.upper,
    "EXACTLY_ONCE aligns barriers on tasks with several inputs; AT_LEAST_ONCE does not hold "
    "channels back.",
    ("exactly_once", "at_least_once"),
)
CHECKPOINTING_TIMEOUT = _option(
    "execution.checkpointing.timeout",
    600_000,
    parse_duration_ms,
    "A checkpoint not acknowledged by every task within this time is aborted (ms). Ten "
    "minutes, Flink's default: long enough for large asynchronous uploads, and it only "
    "bounds how long a stuck checkpoint blocks the next one under max-concurrent 1.",
)
CHECKPOINTING_MIN_PAUSE = _option(
    "execution.checkpointing.min-pause",
    0,
    parse_duration_ms,
    "Least time between the end of one checkpoint and the start of the next (ms).",
)
CHECKPOINTING_MAX_CONCURRENT = _option(
    "execution.checkpointing.max-concurrent-checkpoints",
    1,
    _positive_int,
    "Most checkpoints in progress at once; a due trigger waits until one finishes.",
)
CHECKPOINTING_TOLERABLE_FAILURES = _option(
    "execution.checkpointing.tolerable-failed-checkpoints",
    0,
    _non_negative_int,
    "Consecutive checkpoint failures (declines, timeouts, storage errors) tolerated before "
    "the job fails; 0 fails the job on the first.",
)
CHECKPOINTING_UNALIGNED = _option(
    "execution.checkpointing.unaligned.enabled",
    False,
    _parse_bool,
    "Let barriers overtake in-flight buffers, which are persisted as channel state.",
)
CHECKPOINTING_ALIGNED_TIMEOUT = _option(
    "execution.checkpointing.aligned-checkpoint-timeout",
    0,
    parse_duration_ms,
    "With unaligned checkpoints enabled: how long a checkpoint may stay aligned before it "
    "switches to unaligned (ms); 0 starts every checkpoint unaligned. Weir does not switch "
    "yet: with unaligned checkpoints enabled every checkpoint is unaligned, whatever this "
    "value. Deprecated key: execution.checkpointing.alignment-timeout.",
)
CHECKPOINTING_ALIGNED_TIMEOUT_DEPRECATED = _option(
    "execution.checkpointing.alignment-timeout",
    0,
    parse_duration_ms,
    "Deprecated: use execution.checkpointing.aligned-checkpoint-timeout.",
)
CHECKPOINTING_UNALIGNED_FORCED = _option(
    "execution.checkpointing.unaligned.forced",
    False,
    _parse_bool,
    "Take unaligned checkpoints even where Flink would fall back to aligned ones (iteration "
    "feedback, custom partitioners). Weir takes them on every exchange anyway, so this "
    "changes nothing at runtime.",
)
CHECKPOINTING_AFTER_TASKS_FINISH = _option(
    "execution.checkpointing.checkpoints-after-tasks-finish",
    True,
    _parse_bool,
    "Keep checkpointing once some tasks have finished (Flink's FLIP-147): a task that reached "
    "the end of its input waits for one more checkpoint, its final one, before it exits, so "
    "its two-phase-commit sinks commit everything, and a restore does not run it again. Off: "
    "checkpoints stop at the first finished task, as before Flink 1.14.",
)
# Flink 2.x's default, NO_EXTERNALIZED_CHECKPOINTS, as PyFlink reports it: a job's
# checkpoints go when it ends. A job that fails for good says which setting keeps them, or
# the `weir run -s` command that resumes from the one kept (jobmanager's resume_hint).
CHECKPOINTING_RETENTION = _option(
    "execution.checkpointing.externalized-checkpoint-retention",
    "NO_EXTERNALIZED_CHECKPOINTS",
    str.upper,
    "What happens to retained checkpoints when the job ends: NO_EXTERNALIZED_CHECKPOINTS "
    "deletes them when the job finishes, fails or is cancelled; DELETE_ON_CANCELLATION "
    "keeps them only when the job fails; RETAIN_ON_CANCELLATION always keeps them.",
    ("no_externalized_checkpoints", "delete_on_cancellation", "retain_on_cancellation"),
)
CHECKPOINTING_SNAPSHOT_COMPRESSION = _option(
    "execution.checkpointing.snapshot-compression",
    False,
    _parse_bool,
    "Compress state snapshot files with lz4.",
)
CHECKPOINTING_DIR = _option(
    "execution.checkpointing.dir",
    "",
    str,
    "Where checkpoints are written (any fsspec URL); each job gets {dir}/{job-id}/chk-{n}/, "
    "shared/ and taskowned/. Deprecated key: state.checkpoints.dir.",
)
CHECKPOINTING_DIR_DEPRECATED = _option(
    "state.checkpoints.dir", "", str, "Deprecated: use execution.checkpointing.dir."
)
CHECKPOINTING_NUM_RETAINED = _option(
    "execution.checkpointing.num-retained",
    1,
    _positive_int,
    "Completed checkpoints kept; older ones are deleted when a new one completes. "
    "Deprecated key: state.checkpoints.num-retained.",
)
CHECKPOINTING_NUM_RETAINED_DEPRECATED = _option(
    "state.checkpoints.num-retained",
    1,
    _positive_int,
    "Deprecated: use execution.checkpointing.num-retained.",
)
CHECKPOINTING_STORAGE = _option(
    "execution.checkpointing.storage",
    "",
    str.lower,
    "jobmanager keeps small snapshots in the JobMaster's memory (metadata also in "
    "execution.checkpointing.dir when set); filesystem writes them to "
    "execution.checkpointing.dir. Unset: filesystem when a directory is set, else jobmanager.",
    ("", "jobmanager", "filesystem"),
)
SAVEPOINT_DIR = _option(
    "execution.checkpointing.savepoint-dir",
    "",
    str,
    "The default directory for savepoints (weir savepoint JOB_ID, weir stop): each gets a "
    "savepoint-{job-id[:6]}-{random} directory there. Deprecated key: state.savepoints.dir.",
)
SAVEPOINT_DIR_DEPRECATED = _option(
    "state.savepoints.dir", "", str, "Deprecated: use execution.checkpointing.savepoint-dir."
)
STATE_BACKEND_TYPE = _option(
    "state.backend.type",
    "hashmap",
    str.lower,
    "Where keyed state lives: hashmap keeps it as Python objects on the TaskManager; "
    "rocksdb in an embedded RocksDB in taskmanager.state.local.root-dirs (state larger "
    "than memory, incremental checkpoints).",
    ("hashmap", "rocksdb"),
)
STATE_BACKEND_INCREMENTAL = _option(
    "state.backend.incremental",
    False,
    _parse_bool,
    "rocksdb: checkpoints upload only the SST files earlier checkpoints did not, into "
    "the checkpoint directory's shared/ (needs filesystem checkpoint storage).",
)
STATE_LOCAL_ROOT_DIRS = _option(
    "taskmanager.state.local.root-dirs",
    "",
    str,
    "Where the rocksdb state backend keeps its databases on a TaskManager (the first of "
    "a comma-separated list); default: the job's working directory on the TaskManager.",
)
STATE_CHANGELOG_ENABLED = _option(
    "state.changelog.enabled",
    False,
    _parse_bool,
    "Flink's changelog state backend switch; kept and reported only, as Weir has none.",
)

# --- state recovery (Flink 2.x StateRecoveryOptions) ----------------------------------
STATE_RECOVERY_PATH = _option(
    "execution.state-recovery.path",
    "",
    str,
    "A retained checkpoint or savepoint to start the job from: its chk-N directory or its "
    "_metadata file (weir run -s PATH). Empty: start without state. Deprecated key: "
    "execution.savepoint.path.",
)
STATE_RECOVERY_PATH_DEPRECATED = _option(
    "execution.savepoint.path", "", str, "Deprecated: use execution.state-recovery.path."
)
STATE_RECOVERY_IGNORE_UNCLAIMED_STATE = _option(
    "execution.state-recovery.ignore-unclaimed-state",
    False,
    _parse_bool,
    "Start even when the checkpoint holds state of operators the job no longer has; that "
    "state is dropped (weir run --allowNonRestoredState). Off: such a job is refused. "
    "Deprecated key: execution.savepoint.ignore-unclaimed-state.",
)
STATE_RECOVERY_IGNORE_UNCLAIMED_STATE_DEPRECATED = _option(
    "execution.savepoint.ignore-unclaimed-state",
    False,
    _parse_bool,
    "Deprecated: use execution.state-recovery.ignore-unclaimed-state.",
)

# --- restart strategies (Flink 2.x RestartStrategyOptions) ----------------------------
RESTART_STRATEGY_TYPE = _option(
    "restart-strategy.type",
    "",
    str.lower,
    "none (also off, disable), fixed-delay, failure-rate or exponential-delay. Unset: "
    "exponential-delay when checkpointing is on, none when it is off.",
    (
        "",
        "none",
        "off",
        "disable",
        "fixed-delay",
        "fixeddelay",
        "failure-rate",
        "failurerate",
        "exponential-delay",
        "exponentialdelay",
    ),
)
RESTART_FIXED_DELAY_ATTEMPTS = _option(
    "restart-strategy.fixed-delay.attempts",
    1,
    _non_negative_int,
    "Restarts tried before the job fails (fixed-delay).",
)
RESTART_FIXED_DELAY_DELAY = _option(
    "restart-strategy.fixed-delay.delay",
    1_000,
    parse_duration_ms,
    "Wait before each restart (fixed-delay; ms).",
)
RESTART_FAILURE_RATE_MAX_FAILURES = _option(
    "restart-strategy.failure-rate.max-failures-per-interval",
    1,
    _positive_int,
    "Most failures within failure-rate-interval before the job fails (failure-rate).",
)
RESTART_FAILURE_RATE_INTERVAL = _option(
    "restart-strategy.failure-rate.failure-rate-interval",
    60_000,
    parse_duration_ms,
    "Window in which failures are counted (failure-rate; ms).",
)
RESTART_FAILURE_RATE_DELAY = _option(
    "restart-strategy.failure-rate.delay",
    1_000,
    parse_duration_ms,
    "Wait before each restart (failure-rate; ms).",
)
RESTART_EXPONENTIAL_INITIAL_BACKOFF = _option(
    "restart-strategy.exponential-delay.initial-backoff",
    1_000,
    parse_duration_ms,
    "Wait before the first restart (exponential-delay; ms).",
)
RESTART_EXPONENTIAL_MAX_BACKOFF = _option(
    "restart-strategy.exponential-delay.max-backoff",
    60_000,
    parse_duration_ms,
    "Longest wait between restarts (exponential-delay; ms).",
)
RESTART_EXPONENTIAL_MULTIPLIER = _option(
    "restart-strategy.exponential-delay.backoff-multiplier",
    1.5,
    float,
    "The wait is multiplied by this after every failure, up to max-backoff.",
)
RESTART_EXPONENTIAL_RESET_THRESHOLD = _option(
    "restart-strategy.exponential-delay.reset-backoff-threshold",
    3_600_000,
    parse_duration_ms,
    "After this long without a failure the wait and the attempt count start over (ms).",
)
RESTART_EXPONENTIAL_JITTER = _option(
    "restart-strategy.exponential-delay.jitter-factor",
    0.1,
    float,
    "Each wait is moved by a random amount up to this fraction of it, so that jobs hit by "
    "the same outage do not restart in lockstep.",
)
RESTART_EXPONENTIAL_ATTEMPTS = _option(
    "restart-strategy.exponential-delay.attempts-before-reset-backoff",
    2**31 - 1,
    _non_negative_int,
    "Restarts tried before the job fails; counted from the last reset (exponential-delay). "
    "Unbounded by default, as in Flink.",
)

DEPRECATED_KEYS: dict[str, tuple[str, ...]] = {
    OPERATOR_CHAINING.key: (OPERATOR_CHAINING_DEPRECATED.key,),
    BUFFER_TIMEOUT.key: (BUFFER_TIMEOUT_DEPRECATED.key,),
    CHECKPOINTING_DIR.key: (CHECKPOINTING_DIR_DEPRECATED.key,),
    CHECKPOINTING_NUM_RETAINED.key: (CHECKPOINTING_NUM_RETAINED_DEPRECATED.key,),
    CHECKPOINTING_ALIGNED_TIMEOUT.key: (CHECKPOINTING_ALIGNED_TIMEOUT_DEPRECATED.key,),
    SAVEPOINT_DIR.key: (SAVEPOINT_DIR_DEPRECATED.key,),
    STATE_RECOVERY_PATH.key: (STATE_RECOVERY_PATH_DEPRECATED.key,),
    STATE_RECOVERY_IGNORE_UNCLAIMED_STATE.key: (
        STATE_RECOVERY_IGNORE_UNCLAIMED_STATE_DEPRECATED.key,
    ),
}
"""Current key -> older names still accepted for it (Flink's ``withDeprecatedKeys``)."""

# --- Spark --------------------------------------------------------------------------
SPARK_MASTER = _option(
    "spark.master",
    "local[2]",
    _spark_master,
    "Where TaskManagers run: local[N], spark://host:7077, yarn or k8s://...",
)


def option(key: str) -> ConfigOption[Any]:
    try:
        return OPTIONS[key]
    except KeyError:
        raise ConfigurationError(_unknown_key_message(key)) from None


def _unknown_key_message(key: str) -> str:
    close = difflib.get_close_matches(key, OPTIONS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown configuration key {key!r}{hint} (spark.* keys are passed to Spark)"


def is_known_key(key: str) -> bool:
    return key in OPTIONS or key.startswith(
        ("spark.", "weir.internal.", "pipeline.global-job-parameters")
    )


def validate(entries: Mapping[str, Any]) -> dict[str, str]:
    """Check every key and value; returns the entries as strings. Raises ConfigurationError."""
    checked: dict[str, str] = {}
    for key, value in entries.items():
        text = _to_text(value)
        if key in OPTIONS:
            OPTIONS[key].from_string(text)
        elif not is_known_key(key):
            raise ConfigurationError(_unknown_key_message(key))
        checked[key] = text
    return checked


def check_relations(entries: Mapping[str, str]) -> None:
    """Check the keys that constrain each other, over a whole configuration (a missing key
    counts at its default): ``validate`` checks each key alone, and its caller may merge
    several sources first. Raises ConfigurationError naming the keys and their values."""
    interval = get(entries, HEARTBEAT_INTERVAL)
    timeout = get(entries, HEARTBEAT_TIMEOUT)
    if timeout < interval:
        msg = (
            f"{HEARTBEAT_TIMEOUT.key} ({timeout} ms) is shorter than {HEARTBEAT_INTERVAL.key} "
            f"({interval} ms): every peer would count as lost between two heartbeats; make "
            f"the timeout several intervals long (Flink's defaults: 50 s and 10 s)"
        )
        raise ConfigurationError(msg)


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def get(entries: Mapping[str, str], opt: ConfigOption[T]) -> T:
    """The value of ``opt`` in ``entries``, parsed, or its default."""
    text = entries.get(opt.key)
    if text is None:
        return opt.default
    return opt.from_string(text)


def load_config_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a weir-conf.yaml: flat ``key: value`` pairs (nested maps are joined with dots)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except yaml.YAMLError as exc:
        msg = f"cannot parse configuration file {os.fspath(path)!r}: {exc}"
        raise ConfigurationError(msg) from exc
    if not isinstance(data, dict):
        msg = f"configuration file {os.fspath(path)!r} must hold key: value pairs"
        raise ConfigurationError(msg)
    return validate(dict(_flatten(data)))


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, full + ".")
        else:
            yield full, value


def docs_table() -> str:
    """The Markdown table of every key, for the docs."""
    rows = ["| key | default | description |", "|---|---|---|"]
    rows += [f"| `{o.key}` | `{o.default}` | {o.description} |" for o in OPTIONS.values()]
    return "\n".join(rows)


def is_set(entries: Mapping[str, str], opt: ConfigOption[Any]) -> bool:
    """Whether ``entries`` sets ``opt`` under its key or one of its deprecated keys."""
    return opt.key in entries or any(k in entries for k in DEPRECATED_KEYS.get(opt.key, ()))


def get_with_deprecated_keys(entries: Mapping[str, str], opt: ConfigOption[T]) -> T:
    """As :func:`get`, but falls back to the option's deprecated keys when it is unset."""
    if opt.key not in entries:
        for old_key in DEPRECATED_KEYS.get(opt.key, ()):
            if old_key in entries:
                return opt.from_string(entries[old_key])
    return get(entries, opt)


_WILDCARDS = ("", "0.0.0.0", "::")


def advertised_master_host(entries: Mapping[str, str]) -> str:
    """What the master tells clients and TaskManagers its address is:
    ``jobmanager.rpc.address`` when set, else ``jobmanager.bind-host`` unless that is a
    wildcard, else 127.0.0.1."""
    if entries.get(JOBMANAGER_ADDRESS.key):
        return get(entries, JOBMANAGER_ADDRESS)
    bind = get(entries, BIND_HOST)
    return JOBMANAGER_ADDRESS.default if bind in _WILDCARDS else bind

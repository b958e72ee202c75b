"""Every configuration key Weir knows: name, type, default, description, defined once.

Flink's key names are used where Flink has the key. ``spark.*`` keys are passed through
to the SparkSession untouched. ``load_config_file`` and ``validate`` report unknown keys
and bad values by name.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import yaml

from weir.core.errors import ConfigurationError

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
BUFFER_TIMEOUT_ENABLED = _option(
    "execution.buffer-timeout.enabled",
    True,
    _parse_bool,
    "If false, buffers are sent only when full (the same as a timeout of -1).",
)
JOB_NAME = _option("pipeline.name", "", str, "The job name.")
RUNTIME_MODE = _option(
    "execution.runtime-mode", "STREAMING", str.upper,
    "STREAMING, BATCH, or AUTOMATIC (BATCH when every source is bounded). In BATCH mode "
    "keyed aggregations emit only their final value per key, at the end of the input.",
    ("streaming", "batch", "automatic"))

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
TASKMANAGER_HOST = _option(
    "taskmanager.host", "127.0.0.1", str, "Address TaskManagers bind and advertise."
)
TASKMANAGER_TMP_DIR = _option(
    "io.tmp.dirs", "", str, "Working directories of TaskManagers (default: the system temp dir)."
)

# --- master services ----------------------------------------------------------------
JOBMANAGER_ADDRESS = _option(
    "jobmanager.rpc.address", "127.0.0.1", str, "Host of the master process."
)
JOBMANAGER_PORT = _option(
    "jobmanager.rpc.port", 6123, int, "Port of the Dispatcher's gRPC endpoint (0 = any free)."
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
    "heartbeat.interval", 10_000, parse_duration_ms, "Time between heartbeats (ms)."
)
HEARTBEAT_TIMEOUT = _option(
    "heartbeat.timeout",
    50_000,
    parse_duration_ms,
    "A TaskManager (or ResourceManager) that has not answered for this long is lost (ms).",
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
CLUSTER_LOG_DIR = _option("env.log.dir", "", str, "Where cluster scripts put logs.")
CLUSTER_PID_DIR = _option("env.pid.dir", "", str, "Where cluster scripts put pid files.")

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
    "high-availability.storageDir", "", str, "Where job graphs are stored (any fsspec URL)."
)

# --- Spark --------------------------------------------------------------------------
SPARK_MASTER = _option(
    "spark.master",
    "local[2]",
    str,
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

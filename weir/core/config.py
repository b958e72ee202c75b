"""Every configuration key Weir knows: name, type, default, description, defined once
(by topic, in ``weir.core.options``; every key is a name of this module too).

Flink's key names are used where Flink has the key. ``spark.*`` keys are passed through
to the SparkContext untouched. ``load_config_file`` and ``validate`` report unknown keys
and bad values by name.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import yaml

from weir.core.config_option import (
    OPTIONS,
    ConfigOption,
    parse_duration_ms,
    parse_memory_bytes,
)
from weir.core.errors import ConfigurationError
from weir.core.options.checkpointing import (
    CHECKPOINTING_AFTER_TASKS_FINISH,
    CHECKPOINTING_ALIGNED_TIMEOUT,
    CHECKPOINTING_ALIGNED_TIMEOUT_DEPRECATED,
    CHECKPOINTING_DATA_INLINE_THRESHOLD,
    CHECKPOINTING_DATA_INLINE_THRESHOLD_DEPRECATED,
    CHECKPOINTING_DIR,
    CHECKPOINTING_DIR_DEPRECATED,
    CHECKPOINTING_INTERVAL,
    CHECKPOINTING_MAX_CONCURRENT,
    CHECKPOINTING_MIN_PAUSE,
    CHECKPOINTING_MODE,
    CHECKPOINTING_NUM_RETAINED,
    CHECKPOINTING_NUM_RETAINED_DEPRECATED,
    CHECKPOINTING_RETENTION,
    CHECKPOINTING_SNAPSHOT_COMPRESSION,
    CHECKPOINTING_STORAGE,
    CHECKPOINTING_TIMEOUT,
    CHECKPOINTING_TOLERABLE_FAILURES,
    CHECKPOINTING_UNALIGNED,
    CHECKPOINTING_UNALIGNED_FORCED,
    ROCKSDB_TRANSFER_THREADS,
    SAVEPOINT_DIR,
    SAVEPOINT_DIR_DEPRECATED,
    STATE_BACKEND_INCREMENTAL,
    STATE_BACKEND_TYPE,
    STATE_CHANGELOG_ENABLED,
    STATE_LOCAL_ROOT_DIRS,
    STATE_RECOVERY_IGNORE_UNCLAIMED_STATE,
    STATE_RECOVERY_IGNORE_UNCLAIMED_STATE_DEPRECATED,
    STATE_RECOVERY_PATH,
    STATE_RECOVERY_PATH_DEPRECATED,
)
from weir.core.options.high_availability import (
    HA_CLUSTER_ID,
    HA_KUBERNETES_LEASE_DURATION,
    HA_KUBERNETES_RENEW_DEADLINE,
    HA_KUBERNETES_RETRY_PERIOD,
    HA_KUBERNETES_TRANSACTIONAL_MAX_RETRIES,
    HA_STORAGE_DIR,
    HA_TYPE,
    HA_ZK_CONNECTION_TIMEOUT,
    HA_ZK_MAX_RETRY_ATTEMPTS,
    HA_ZK_PATH_ROOT,
    HA_ZK_QUORUM,
    HA_ZK_RETRY_WAIT,
    HA_ZK_SESSION_TIMEOUT,
    HA_ZK_TOLERATE_SUSPENDED_CONNECTIONS,
)
from weir.core.options.job import (
    ADAPTIVE_AUTO_PARALLELISM_AVG_DATA_VOLUME_PER_TASK,
    ADAPTIVE_AUTO_PARALLELISM_DEFAULT_SOURCE_PARALLELISM,
    ADAPTIVE_AUTO_PARALLELISM_ENABLED,
    ADAPTIVE_AUTO_PARALLELISM_MAX_PARALLELISM,
    ADAPTIVE_AUTO_PARALLELISM_MIN_PARALLELISM,
    AUTO_GENERATE_UIDS,
    AUTO_WATERMARK_INTERVAL,
    BUFFER_TIMEOUT,
    BUFFER_TIMEOUT_DEPRECATED,
    BUFFER_TIMEOUT_ENABLED,
    CACHE_DIR,
    CLOSURE_CLEANER_LEVEL,
    GLOBAL_JOB_PARAMETERS,
    JOB_NAME,
    MAX_PARALLELISM,
    OBJECT_REUSE,
    OPERATOR_CHAINING,
    OPERATOR_CHAINING_DEPRECATED,
    PARALLELISM_DEFAULT,
    PROGRAM_KEY,
    PYTHON_ARCHIVES,
    PYTHON_ARCHIVES_PACKED,
    PYTHON_BUNDLE_SIZE,
    PYTHON_BUNDLE_TIME,
    PYTHON_EXECUTABLE,
    PYTHON_FILES,
    PYTHON_FILES_ARCHIVE,
    PYTHON_OPERATOR_CHAINING,
    PYTHON_REQUIREMENTS,
    PYTHON_REQUIREMENTS_PACKED,
    RUNTIME_MODE,
    SORTED_INPUTS_MEMORY,
    parse_map,
)
from weir.core.options.kubernetes import (
    ATTACHED,
    AUTH_TOKEN_SECRET,
    CLUSTER_ID_MAX_LENGTH,
    CONTAINER_IMAGE,
    CONTAINER_IMAGE_DEPRECATED,
    CONTAINER_IMAGE_PULL_POLICY,
    CONTAINER_IMAGE_PULL_SECRETS,
    ENV_SECRET_KEY_REF,
    JOBMANAGER_ANNOTATIONS,
    JOBMANAGER_CPU,
    JOBMANAGER_CPU_LIMIT_FACTOR,
    JOBMANAGER_LABELS,
    JOBMANAGER_NODE_SELECTOR,
    JOBMANAGER_PROCESS_SIZE,
    JOBMANAGER_REPLICAS,
    KUBE_CONFIG_FILE,
    KUBE_CONTEXT,
    KUBERNETES_CLUSTER_ID,
    KUBERNETES_NAMESPACE,
    NODE_PORT_ADDRESS_TYPE,
    PERSISTENT_VOLUME_CLAIMS,
    REST_SERVICE_EXPOSED_TYPE,
    SECRETS,
    SERVICE_ACCOUNT,
    TASKMANAGER_ANNOTATIONS,
    TASKMANAGER_CPU,
    TASKMANAGER_CPU_LIMIT_FACTOR,
    TASKMANAGER_LABELS,
    TASKMANAGER_NODE_SELECTOR,
    TASKMANAGER_POD_TEMPLATE,
    TASKMANAGER_PROCESS_SIZE,
    parse_env_secret_key_refs,
    parse_mounts,
)
from weir.core.options.master import (
    BIND_HOST,
    CLUSTER_LOG_DIR,
    CLUSTER_PID_DIR,
    HEARTBEAT_INTERVAL,
    HEARTBEAT_TIMEOUT,
    JOBMANAGER_ADDRESS,
    JOBMANAGER_PORT,
    LOG_MAX,
    LOG_MAX_FILE_SIZE,
    RESOURCE_WAIT_IDLE_TIMEOUT,
    SLOT_REQUEST_TIMEOUT,
    START_WORKER_MAX_FAILURE_RATE,
    START_WORKER_RETRY_INTERVAL,
    TASK_CANCELLATION_INTERVAL,
    TASK_CANCELLATION_TIMEOUT,
    TASKMANAGERS_MAX,
    TASKMANAGERS_MIN,
)
from weir.core.options.rest import (
    METRIC_FETCHER_UPDATE_INTERVAL,
    PROMETHEUS_FACTORY_CLASS,
    PROMETHEUS_HOST,
    PROMETHEUS_PORT,
    PROMETHEUS_SSL_ENABLED,
    QUERYABLE_STATE_ENABLE,
    QUERYABLE_STATE_PROXY_PORTS,
    QUERYABLE_STATE_SERVER_PORTS,
    REST_ADDRESS,
    REST_BIND_ADDRESS,
    REST_PORT,
    WEB_LOG_PATH,
    WEB_UPLOAD_DIR,
)
from weir.core.options.restart import (
    DEPRECATED_KEYS,
    RESTART_EXPONENTIAL_ATTEMPTS,
    RESTART_EXPONENTIAL_INITIAL_BACKOFF,
    RESTART_EXPONENTIAL_JITTER,
    RESTART_EXPONENTIAL_MAX_BACKOFF,
    RESTART_EXPONENTIAL_MULTIPLIER,
    RESTART_EXPONENTIAL_RESET_THRESHOLD,
    RESTART_FAILURE_RATE_DELAY,
    RESTART_FAILURE_RATE_INTERVAL,
    RESTART_FAILURE_RATE_MAX_FAILURES,
    RESTART_FIXED_DELAY_ATTEMPTS,
    RESTART_FIXED_DELAY_DELAY,
    RESTART_STRATEGY_TYPE,
    SPARK_MASTER,
    WEB_EXCEPTION_HISTORY_SIZE,
)
from weir.core.options.s3 import (
    S3_ACCESS_KEY,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_SECRET_KEY,
    S3_SESSION_TOKEN,
    S3_UPLOAD_MAX_CONCURRENT_UPLOADS,
    S3_UPLOAD_MIN_PART_SIZE,
)
from weir.core.options.security import (
    AUTH_TOKEN,
    SSL_INTERNAL_CERT,
    SSL_INTERNAL_ENABLED,
    SSL_INTERNAL_KEY,
    SSL_INTERNAL_TRUST_CERT,
    SSL_REST_AUTHENTICATION_ENABLED,
    SSL_REST_CERT,
    SSL_REST_ENABLED,
    SSL_REST_KEY,
    SSL_REST_TRUST_CERT,
    SSL_VERIFY_HOSTNAME,
)
from weir.core.options.taskmanager import (
    BUFFERS_PER_CHANNEL,
    FLOATING_BUFFERS_PER_GATE,
    HANDSHAKE_TIMEOUT,
    INTERCEPT_USER_SYSTEM_EXIT,
    MAX_BUFFERS_PER_SUBPARTITION,
    MAX_FRAME_SIZE,
    MAX_FRAME_SIZE_CEILING,
    MAX_UNAUTHENTICATED_CONNECTIONS,
    MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST,
    NETWORK_COMPRESSION,
    NUM_TASK_SLOTS,
    SEGMENT_SIZE,
    TASKMANAGER_BIND_HOST,
    TASKMANAGER_DATA_PORT,
    TASKMANAGER_HOST,
    TASKMANAGER_RPC_PORT,
    TASKMANAGER_TMP_DIR,
    WORKING_DIRECTORY_CLEANUP_INTERVAL,
    parse_port_span,
)
from weir.core.options.yarn import (
    YARN_APPLICATION_ATTEMPTS,
    YARN_APPLICATION_MASTER_PORT,
    YARN_APPLICATION_NAME,
    YARN_APPLICATION_QUEUE,
    YARN_PROPERTIES_FILE_LOCATION,
    YARN_SHIP_ENVIRONMENT,
)
from weir.core.text_files import not_text_reason

T = TypeVar("T")

__all__ = [
    "ADAPTIVE_AUTO_PARALLELISM_AVG_DATA_VOLUME_PER_TASK",
    "ADAPTIVE_AUTO_PARALLELISM_DEFAULT_SOURCE_PARALLELISM",
    "ADAPTIVE_AUTO_PARALLELISM_ENABLED",
    "ADAPTIVE_AUTO_PARALLELISM_MAX_PARALLELISM",
    "ADAPTIVE_AUTO_PARALLELISM_MIN_PARALLELISM",
    "ATTACHED",
    "AUTH_TOKEN",
    "AUTH_TOKEN_SECRET",
    "AUTO_GENERATE_UIDS",
    "AUTO_WATERMARK_INTERVAL",
    "BIND_HOST",
    "BUFFERS_PER_CHANNEL",
    "BUFFER_TIMEOUT",
    "BUFFER_TIMEOUT_DEPRECATED",
    "BUFFER_TIMEOUT_ENABLED",
    "CACHE_DIR",
    "CHECKPOINTING_AFTER_TASKS_FINISH",
    "CHECKPOINTING_ALIGNED_TIMEOUT",
    "CHECKPOINTING_ALIGNED_TIMEOUT_DEPRECATED",
    "CHECKPOINTING_DATA_INLINE_THRESHOLD",
    "CHECKPOINTING_DATA_INLINE_THRESHOLD_DEPRECATED",
    "CHECKPOINTING_DIR",
    "CHECKPOINTING_DIR_DEPRECATED",
    "CHECKPOINTING_INTERVAL",
    "CHECKPOINTING_MAX_CONCURRENT",
    "CHECKPOINTING_MIN_PAUSE",
    "CHECKPOINTING_MODE",
    "CHECKPOINTING_NUM_RETAINED",
    "CHECKPOINTING_NUM_RETAINED_DEPRECATED",
    "CHECKPOINTING_RETENTION",
    "CHECKPOINTING_SNAPSHOT_COMPRESSION",
    "CHECKPOINTING_STORAGE",
    "CHECKPOINTING_TIMEOUT",
    "CHECKPOINTING_TOLERABLE_FAILURES",
    "CHECKPOINTING_UNALIGNED",
    "CHECKPOINTING_UNALIGNED_FORCED",
    "CLOSURE_CLEANER_LEVEL",
    "CLUSTER_ID_MAX_LENGTH",
    "CLUSTER_LOG_DIR",
    "CLUSTER_PID_DIR",
    "CONTAINER_IMAGE",
    "CONTAINER_IMAGE_DEPRECATED",
    "CONTAINER_IMAGE_PULL_POLICY",
    "CONTAINER_IMAGE_PULL_SECRETS",
    "DEPRECATED_KEYS",
    "ENV_SECRET_KEY_REF",
    "FLOATING_BUFFERS_PER_GATE",
    "GLOBAL_JOB_PARAMETERS",
    "HANDSHAKE_TIMEOUT",
    "HA_CLUSTER_ID",
    "HA_KUBERNETES_LEASE_DURATION",
    "HA_KUBERNETES_RENEW_DEADLINE",
    "HA_KUBERNETES_RETRY_PERIOD",
    "HA_KUBERNETES_TRANSACTIONAL_MAX_RETRIES",
    "HA_STORAGE_DIR",
    "HA_TYPE",
    "HA_ZK_CONNECTION_TIMEOUT",
    "HA_ZK_MAX_RETRY_ATTEMPTS",
    "HA_ZK_PATH_ROOT",
    "HA_ZK_QUORUM",
    "HA_ZK_RETRY_WAIT",
    "HA_ZK_SESSION_TIMEOUT",
    "HA_ZK_TOLERATE_SUSPENDED_CONNECTIONS",
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_TIMEOUT",
    "INTERCEPT_USER_SYSTEM_EXIT",
    "JOBMANAGER_ADDRESS",
    "JOBMANAGER_ANNOTATIONS",
    "JOBMANAGER_CPU",
    "JOBMANAGER_CPU_LIMIT_FACTOR",
    "JOBMANAGER_LABELS",
    "JOBMANAGER_NODE_SELECTOR",
    "JOBMANAGER_PORT",
    "JOBMANAGER_PROCESS_SIZE",
    "JOBMANAGER_REPLICAS",
    "JOB_NAME",
    "KUBERNETES_CLUSTER_ID",
    "KUBERNETES_NAMESPACE",
    "KUBE_CONFIG_FILE",
    "KUBE_CONTEXT",
    "LOG_MAX",
    "LOG_MAX_FILE_SIZE",
    "MAX_BUFFERS_PER_SUBPARTITION",
    "MAX_FRAME_SIZE",
    "MAX_FRAME_SIZE_CEILING",
    "MAX_PARALLELISM",
    "MAX_UNAUTHENTICATED_CONNECTIONS",
    "MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST",
    "METRIC_FETCHER_UPDATE_INTERVAL",
    "NETWORK_COMPRESSION",
    "NODE_PORT_ADDRESS_TYPE",
    "NUM_TASK_SLOTS",
    "OBJECT_REUSE",
    "OPERATOR_CHAINING",
    "OPERATOR_CHAINING_DEPRECATED",
    "OPTIONS",
    "PARALLELISM_DEFAULT",
    "PERSISTENT_VOLUME_CLAIMS",
    "PROGRAM_KEY",
    "PROMETHEUS_FACTORY_CLASS",
    "PROMETHEUS_HOST",
    "PROMETHEUS_PORT",
    "PROMETHEUS_SSL_ENABLED",
    "PYTHON_ARCHIVES",
    "PYTHON_ARCHIVES_PACKED",
    "PYTHON_BUNDLE_SIZE",
    "PYTHON_BUNDLE_TIME",
    "PYTHON_EXECUTABLE",
    "PYTHON_FILES",
    "PYTHON_FILES_ARCHIVE",
    "PYTHON_OPERATOR_CHAINING",
    "PYTHON_REQUIREMENTS",
    "PYTHON_REQUIREMENTS_PACKED",
    "QUERYABLE_STATE_ENABLE",
    "QUERYABLE_STATE_PROXY_PORTS",
    "QUERYABLE_STATE_SERVER_PORTS",
    "RESOURCE_WAIT_IDLE_TIMEOUT",
    "RESTART_EXPONENTIAL_ATTEMPTS",
    "RESTART_EXPONENTIAL_INITIAL_BACKOFF",
    "RESTART_EXPONENTIAL_JITTER",
    "RESTART_EXPONENTIAL_MAX_BACKOFF",
    "RESTART_EXPONENTIAL_MULTIPLIER",
    "RESTART_EXPONENTIAL_RESET_THRESHOLD",
    "RESTART_FAILURE_RATE_DELAY",
    "RESTART_FAILURE_RATE_INTERVAL",
    "RESTART_FAILURE_RATE_MAX_FAILURES",
    "RESTART_FIXED_DELAY_ATTEMPTS",
    "RESTART_FIXED_DELAY_DELAY",
    "RESTART_STRATEGY_TYPE",
    "REST_ADDRESS",
    "REST_BIND_ADDRESS",
    "REST_PORT",
    "REST_SERVICE_EXPOSED_TYPE",
    "ROCKSDB_TRANSFER_THREADS",
    "RUNTIME_MODE",
    "S3_ACCESS_KEY",
    "S3_ENDPOINT",
    "S3_PATH_STYLE_ACCESS",
    "S3_SECRET_KEY",
    "S3_SESSION_TOKEN",
    "S3_UPLOAD_MAX_CONCURRENT_UPLOADS",
    "S3_UPLOAD_MIN_PART_SIZE",
    "SAVEPOINT_DIR",
    "SAVEPOINT_DIR_DEPRECATED",
    "SECRETS",
    "SEGMENT_SIZE",
    "SERVICE_ACCOUNT",
    "SLOT_REQUEST_TIMEOUT",
    "SORTED_INPUTS_MEMORY",
    "SPARK_MASTER",
    "SSL_INTERNAL_CERT",
    "SSL_INTERNAL_ENABLED",
    "SSL_INTERNAL_KEY",
    "SSL_INTERNAL_TRUST_CERT",
    "SSL_REST_AUTHENTICATION_ENABLED",
    "SSL_REST_CERT",
    "SSL_REST_ENABLED",
    "SSL_REST_KEY",
    "SSL_REST_TRUST_CERT",
    "SSL_VERIFY_HOSTNAME",
    "START_WORKER_MAX_FAILURE_RATE",
    "START_WORKER_RETRY_INTERVAL",
    "STATE_BACKEND_INCREMENTAL",
    "STATE_BACKEND_TYPE",
    "STATE_CHANGELOG_ENABLED",
    "STATE_LOCAL_ROOT_DIRS",
    "STATE_RECOVERY_IGNORE_UNCLAIMED_STATE",
    "STATE_RECOVERY_IGNORE_UNCLAIMED_STATE_DEPRECATED",
    "STATE_RECOVERY_PATH",
    "STATE_RECOVERY_PATH_DEPRECATED",
    "TASKMANAGERS_MAX",
    "TASKMANAGERS_MIN",
    "TASKMANAGER_ANNOTATIONS",
    "TASKMANAGER_BIND_HOST",
    "TASKMANAGER_CPU",
    "TASKMANAGER_CPU_LIMIT_FACTOR",
    "TASKMANAGER_DATA_PORT",
    "TASKMANAGER_HOST",
    "TASKMANAGER_LABELS",
    "TASKMANAGER_NODE_SELECTOR",
    "TASKMANAGER_POD_TEMPLATE",
    "TASKMANAGER_PROCESS_SIZE",
    "TASKMANAGER_RPC_PORT",
    "TASKMANAGER_TMP_DIR",
    "TASK_CANCELLATION_INTERVAL",
    "TASK_CANCELLATION_TIMEOUT",
    "WEB_EXCEPTION_HISTORY_SIZE",
    "WEB_LOG_PATH",
    "WEB_UPLOAD_DIR",
    "WORKING_DIRECTORY_CLEANUP_INTERVAL",
    "YARN_APPLICATION_ATTEMPTS",
    "YARN_APPLICATION_MASTER_PORT",
    "YARN_APPLICATION_NAME",
    "YARN_APPLICATION_QUEUE",
    "YARN_PROPERTIES_FILE_LOCATION",
    "YARN_SHIP_ENVIRONMENT",
    "ConfigOption",
    "advertised_master_host",
    "check_no_nul",
    "check_relations",
    "docs_table",
    "get",
    "get_with_deprecated_keys",
    "is_known_key",
    "is_set",
    "load_config_file",
    "option",
    "parse_duration_ms",
    "parse_env_secret_key_refs",
    "parse_map",
    "parse_memory_bytes",
    "parse_mounts",
    "parse_port_span",
    "validate",
]


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
        check_no_nul(key, text)
        if key in OPTIONS:
            OPTIONS[key].from_string(text)
        elif not is_known_key(key):
            raise ConfigurationError(_unknown_key_message(key))
        checked[key] = text
    return checked


def check_no_nul(key: str, text: str) -> None:
    """ConfigurationError if a key or its value holds a NUL character: no setting can (a
    path with one is refused by the operating system, far from where it was set)."""
    what, at = ("configuration key", key.find("\x00"))
    if at < 0:
        what, at = ("value for configuration key", text.find("\x00"))
    if at >= 0:
        msg = (
            f"bad {what} {key!r}: it holds a NUL character (at position {at}), which no "
            "setting can hold; remove it"
        )
        raise ConfigurationError(msg)


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
    lease = get(entries, HA_KUBERNETES_LEASE_DURATION)
    renew = get(entries, HA_KUBERNETES_RENEW_DEADLINE)
    retry = get(entries, HA_KUBERNETES_RETRY_PERIOD)
    if renew > lease or retry >= renew:
        msg = (
            f"{HA_KUBERNETES_RENEW_DEADLINE.key} ({renew} ms) must be at most "
            f"{HA_KUBERNETES_LEASE_DURATION.key} ({lease} ms), and "
            f"{HA_KUBERNETES_RETRY_PERIOD.key} ({retry} ms) shorter than the renew deadline: "
            "a leader must give its leadership up before a standby may take it, and try to "
            "renew several times first (Flink's defaults: 15 s, 15 s and 5 s)"
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
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        msg = f"cannot read configuration file {os.fspath(path)!r}: {exc.strerror or exc}"
        raise ConfigurationError(msg) from exc
    if reason := not_text_reason(raw):
        msg = (
            f"configuration file {os.fspath(path)!r} {reason}: a weir-conf.yaml holds "
            "`key: value` lines of UTF-8 text; is it the right file?"
        )
        raise ConfigurationError(msg)
    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except yaml.YAMLError as exc:
        where = " ".join(str(exc).split())  # one line: YAML's message spans several
        msg = f"cannot parse configuration file {os.fspath(path)!r}: {where}"
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

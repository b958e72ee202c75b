"""Master service keys: the Dispatcher, the ResourceManager and JobMasters, heartbeats,
logs."""

from __future__ import annotations

from weir.core.config_option import (
    _non_negative_duration_ms,
    _non_negative_float,
    _option,
    _port,
    _positive_duration_ms,
    _positive_int,
    parse_duration_ms,
    parse_memory_bytes,
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
START_WORKER_MAX_FAILURE_RATE = _option(
    "resourcemanager.start-worker.max-failure-rate",
    10.0,
    _non_negative_float,
    "Leases whose TaskManager ended before it registered, per minute, before new leases "
    "wait resourcemanager.start-worker.retry-interval: a TaskManager that cannot start "
    "(its Python lacks Weir, a bad setting) is not re-leased in a tight loop.",
)
START_WORKER_RETRY_INTERVAL = _option(
    "resourcemanager.start-worker.retry-interval",
    3_000,
    _non_negative_duration_ms,
    "How long new leases wait once resourcemanager.start-worker.max-failure-rate is reached (ms).",
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

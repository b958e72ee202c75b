"""Checkpointing and state recovery keys (Flink 2.x CheckpointingOptions,
StateRecoveryOptions)."""

from __future__ import annotations

from weir.core.config_option import (
    _option,
    _parse_bool,
    _positive_int,
    parse_duration_ms,
    parse_memory_bytes,
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
    ("jobmanager", "filesystem"),
)
# Flink's cap on the inline threshold: inline state travels in the acknowledgement to the
# JobMaster and sits in every _metadata and every retained checkpoint in its memory.
MAX_DATA_INLINE_THRESHOLD = 1024 * 1024


def _inline_threshold(text: str) -> int:
    value = parse_memory_bytes(text)
    if not 0 <= value <= MAX_DATA_INLINE_THRESHOLD:
        msg = f"expected a size from 0 to 1 mb, got {text!r}"
        raise ValueError(msg)
    return value


CHECKPOINTING_DATA_INLINE_THRESHOLD = _option(
    "execution.checkpointing.data-inline-threshold",
    20 * 1024,
    _inline_threshold,
    "filesystem storage: state chunks smaller than this are kept inline in the checkpoint's "
    "_metadata instead of files of their own (20 kb as Flink's default, at most 1 mb; 0 "
    "writes every chunk to a file). Deprecated key: state.storage.fs.memory-threshold.",
)
CHECKPOINTING_DATA_INLINE_THRESHOLD_DEPRECATED = _option(
    "state.storage.fs.memory-threshold",
    20 * 1024,
    _inline_threshold,
    "Deprecated: use execution.checkpointing.data-inline-threshold.",
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
ROCKSDB_TRANSFER_THREADS = _option(
    "state.backend.rocksdb.checkpoint.transfer.thread.num",
    4,
    _positive_int,
    "rocksdb: files of one keyed operator's incremental checkpoint uploaded, and of its "
    "restore downloaded, at once (Flink's key and default). On a remote file system each "
    "file costs round trips however small it is; several at a time overlap them.",
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

"""Restart strategy keys (Flink 2.x RestartStrategyOptions) and the exception history's size,
Spark keys, deprecated names."""

from __future__ import annotations

from weir.core.config_option import (
    _option,
    _positive_int,
    _spark_master,
    parse_duration_ms,
)
from weir.core.options.checkpointing import (
    CHECKPOINTING_ALIGNED_TIMEOUT,
    CHECKPOINTING_ALIGNED_TIMEOUT_DEPRECATED,
    CHECKPOINTING_DATA_INLINE_THRESHOLD,
    CHECKPOINTING_DATA_INLINE_THRESHOLD_DEPRECATED,
    CHECKPOINTING_DIR,
    CHECKPOINTING_DIR_DEPRECATED,
    CHECKPOINTING_NUM_RETAINED,
    CHECKPOINTING_NUM_RETAINED_DEPRECATED,
    SAVEPOINT_DIR,
    SAVEPOINT_DIR_DEPRECATED,
    STATE_RECOVERY_IGNORE_UNCLAIMED_STATE,
    STATE_RECOVERY_IGNORE_UNCLAIMED_STATE_DEPRECATED,
    STATE_RECOVERY_PATH,
    STATE_RECOVERY_PATH_DEPRECATED,
    _non_negative_int,
)
from weir.core.options.job import (
    BUFFER_TIMEOUT,
    BUFFER_TIMEOUT_DEPRECATED,
    OPERATOR_CHAINING,
    OPERATOR_CHAINING_DEPRECATED,
)
from weir.core.options.kubernetes import CONTAINER_IMAGE, CONTAINER_IMAGE_DEPRECATED

# --- restart strategies (Flink 2.x RestartStrategyOptions) ----------------------------
RESTART_STRATEGY_TYPE = _option(
    "restart-strategy.type",
    "",
    str.lower,
    "none (also off, disable), fixed-delay, failure-rate or exponential-delay. Unset: "
    "exponential-delay when checkpointing is on, none when it is off.",
    (
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

# Flink's key (WebOptions) and default: how much of a job's failures it keeps.
WEB_EXCEPTION_HISTORY_SIZE = _option(
    "web.exception-history-size",
    16,
    _positive_int,
    "The failures a job keeps in its exception history (/jobs/:jobid/exceptions, and the "
    "restarts an attached `weir run` shows), one per failover; the oldest go first.",
)

DEPRECATED_KEYS: dict[str, tuple[str, ...]] = {
    OPERATOR_CHAINING.key: (OPERATOR_CHAINING_DEPRECATED.key,),
    BUFFER_TIMEOUT.key: (BUFFER_TIMEOUT_DEPRECATED.key,),
    CHECKPOINTING_DIR.key: (CHECKPOINTING_DIR_DEPRECATED.key,),
    CHECKPOINTING_NUM_RETAINED.key: (CHECKPOINTING_NUM_RETAINED_DEPRECATED.key,),
    CHECKPOINTING_DATA_INLINE_THRESHOLD.key: (CHECKPOINTING_DATA_INLINE_THRESHOLD_DEPRECATED.key,),
    CHECKPOINTING_ALIGNED_TIMEOUT.key: (CHECKPOINTING_ALIGNED_TIMEOUT_DEPRECATED.key,),
    SAVEPOINT_DIR.key: (SAVEPOINT_DIR_DEPRECATED.key,),
    STATE_RECOVERY_PATH.key: (STATE_RECOVERY_PATH_DEPRECATED.key,),
    STATE_RECOVERY_IGNORE_UNCLAIMED_STATE.key: (
        STATE_RECOVERY_IGNORE_UNCLAIMED_STATE_DEPRECATED.key,
    ),
    CONTAINER_IMAGE.key: (CONTAINER_IMAGE_DEPRECATED.key,),
}
"""Current key -> older names still accepted for it (Flink's ``withDeprecatedKeys``)."""

# --- Spark --------------------------------------------------------------------------
SPARK_MASTER = _option(
    "spark.master",
    "local[2]",
    _spark_master,
    "Where TaskManagers run: local[N], spark://host:7077, yarn or k8s://...",
)

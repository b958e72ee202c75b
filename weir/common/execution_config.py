"""``ExecutionConfig``: per-job settings reached through ``env.get_config()``."""

from __future__ import annotations

from typing import Any, Protocol

from weir.common.configuration import Configuration
from weir.core import config as keys

__all__ = ["ExecutionConfig"]


class _Environment(Protocol):
    """What an ExecutionConfig shares with its environment (parallelism, configuration)."""

    def get_parallelism(self) -> int: ...
    def set_parallelism(self, parallelism: int) -> Any: ...
    def get_max_parallelism(self) -> int: ...
    def set_max_parallelism(self, max_parallelism: int) -> Any: ...


class ExecutionConfig:
    """PyFlink's ExecutionConfig: job parameters, the watermark interval, object reuse,
    parallelism (the same setting as the environment's) and snapshot compression.

    A few of Flink's switches are kept and reported but change nothing here: the
    closure cleaner (functions are always pickled whole), generic types and
    auto-generated uids (no Java type system) and latency tracking (no metrics yet).
    The task cancellation interval and timeout are Flink's ``task.cancellation.*`` keys
    of the job."""

    PARALLELISM_DEFAULT = -1
    PARALLELISM_UNKNOWN = -2

    def __init__(
        self, environment: _Environment | None = None, configuration: Configuration | None = None
    ) -> None:
        self._environment = environment
        # The settings Flink keeps under pipeline.* live in the environment's
        # configuration, so a Configuration given to the environment sets them too.
        self._configuration = Configuration() if configuration is None else configuration
        self._parallelism = self.PARALLELISM_DEFAULT
        self._max_parallelism = -1
        self._latency_tracking_interval_ms = 0
        self._generic_types = True

    def _get(self, option: Any) -> Any:
        return keys.get(self._configuration.to_dict(), option)

    def set_global_job_parameters(self, global_parameters_dict: dict[str, str]) -> ExecutionConfig:
        """What ``RuntimeContext.get_job_parameter(key, default_value)`` returns in every
        task (``pipeline.global-job-parameters``, ``key:value`` pairs)."""
        text = ",".join(f"{_quoted(k)}:{_quoted(v)}" for k, v in global_parameters_dict.items())
        self._configuration.set_string(keys.GLOBAL_JOB_PARAMETERS.key, text)
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._get(keys.GLOBAL_JOB_PARAMETERS))

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        self._configuration.set_string(keys.AUTO_WATERMARK_INTERVAL.key, f"{int(interval)} ms")
        return self

    def get_auto_watermark_interval(self) -> int:
        return int(self._get(keys.AUTO_WATERMARK_INTERVAL))

    def enable_object_reuse(self) -> ExecutionConfig:
        self._configuration.set_boolean(keys.OBJECT_REUSE.key, True)
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        self._configuration.set_boolean(keys.OBJECT_REUSE.key, False)
        return self

    def is_object_reuse_enabled(self) -> bool:
        return bool(self._get(keys.OBJECT_REUSE))

    # --- parallelism: the environment's own setting ---------------------------------------

    def get_parallelism(self) -> int:
        if self._environment is not None:
            return self._environment.get_parallelism()
        return self._parallelism

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        """The default parallelism of the job's operators (``env.set_parallelism``)."""
        if self._environment is not None:
            self._environment.set_parallelism(parallelism)
        elif parallelism < 1 and parallelism != self.PARALLELISM_DEFAULT:
            msg = f"parallelism must be at least 1 (or PARALLELISM_DEFAULT), got {parallelism}"
            raise ValueError(msg)
        else:
            self._parallelism = parallelism
        return self

    def get_max_parallelism(self) -> int:
        if self._environment is not None:
            return self._environment.get_max_parallelism()
        return self._max_parallelism

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        if self._environment is not None:
            self._environment.set_max_parallelism(max_parallelism)
        else:
            self._max_parallelism = max_parallelism
        return self

    # --- snapshot compression: execution.checkpointing.snapshot-compression ------------------

    def is_use_snapshot_compression(self) -> bool:
        entries = self._configuration.to_dict()
        return bool(keys.get(entries, keys.CHECKPOINTING_SNAPSHOT_COMPRESSION))

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        """Compress keyed state snapshots with lz4 (``execution.checkpointing.snapshot-
        compression``)."""
        self._configuration.set_boolean(
            keys.CHECKPOINTING_SNAPSHOT_COMPRESSION.key, bool(use_snapshot_compression)
        )
        return self

    # --- kept and reported only --------------------------------------------------------

    def enable_closure_cleaner(self) -> ExecutionConfig:
        self._configuration.set_string(keys.CLOSURE_CLEANER_LEVEL.key, "RECURSIVE")
        return self

    def disable_closure_cleaner(self) -> ExecutionConfig:
        self._configuration.set_string(keys.CLOSURE_CLEANER_LEVEL.key, "NONE")
        return self

    def is_closure_cleaner_enabled(self) -> bool:
        return self._get(keys.CLOSURE_CLEANER_LEVEL) != "NONE"

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        self._latency_tracking_interval_ms = int(interval)
        return self

    def get_latency_tracking_interval(self) -> int:
        return self._latency_tracking_interval_ms

    def set_task_cancellation_interval(self, interval: int) -> ExecutionConfig:
        """How often (ms) a cancelled task that keeps running is interrupted
        (``task.cancellation.interval``, default 30000)."""
        self._configuration.set_string(keys.TASK_CANCELLATION_INTERVAL.key, str(int(interval)))
        return self

    def get_task_cancellation_interval(self) -> int:
        return int(self._get(keys.TASK_CANCELLATION_INTERVAL))

    def set_task_cancellation_timeout(self, timeout: int) -> ExecutionConfig:
        """After how long (ms) a cancelled task that is still running makes its TaskManager
        exit (``task.cancellation.timeout``, default 180000; 0 never)."""
        if timeout < 0:
            msg = f"the task cancellation timeout must be 0 or more, got {timeout}"
            raise ValueError(msg)
        self._configuration.set_string(keys.TASK_CANCELLATION_TIMEOUT.key, str(int(timeout)))
        return self

    def get_task_cancellation_timeout(self) -> int:
        return int(self._get(keys.TASK_CANCELLATION_TIMEOUT))

    def enable_generic_types(self) -> ExecutionConfig:
        self._generic_types = True
        return self

    def disable_generic_types(self) -> ExecutionConfig:
        self._generic_types = False
        return self

    def has_generic_types_disabled(self) -> bool:
        return not self._generic_types

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        self._configuration.set_boolean(keys.AUTO_GENERATE_UIDS.key, True)
        return self

    def disable_auto_generated_uids(self) -> ExecutionConfig:
        self._configuration.set_boolean(keys.AUTO_GENERATE_UIDS.key, False)
        return self

    def has_auto_generated_uids_enabled(self) -> bool:
        return bool(self._get(keys.AUTO_GENERATE_UIDS))


def _quoted(text: Any) -> str:
    """A key or value of a ``key:value,...`` list, quoted when it holds , : or '."""
    text = str(text)
    if any(c in text for c in ",:'\""):
        return "'" + text.replace("'", "''") + "'"
    return text

"""PyFlink's CheckpointConfig: checkpoint settings of a job, written as Flink's keys."""

from __future__ import annotations

from weir.common.configuration import Configuration
from weir.common.time import Duration
from weir.core import config as keys
from weir.core.checkpoint.checkpoint_config import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)

__all__ = ["CheckpointConfig", "CheckpointingMode", "ExternalizedCheckpointRetention"]


# Java's Integer.MAX_VALUE, what Flink uses for "tolerate every failed checkpoint".
_TOLERATE_ALL = 2**31 - 1


class CheckpointConfig:
    """The checkpoint settings of a StreamExecutionEnvironment (PyFlink's CheckpointConfig);
    every setter writes the matching Flink key into the job's configuration::

        >>> env.enable_checkpointing(1000)
        >>> env.get_checkpoint_config().set_min_pause_between_checkpoints(500)
    """

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    def _set(self, key: str, value: object) -> CheckpointConfig:
        self._configuration.set_string(key, str(value))
        return self

    def _get(self, option: keys.ConfigOption) -> object:
        return keys.get_with_deprecated_keys(self._configuration.to_dict(), option)

    def is_checkpointing_enabled(self) -> bool:
        return self.get_checkpoint_interval() > 0

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """AT_LEAST_ONCE while checkpointing is off, as Flink 2 reports it."""
        if not self.is_checkpointing_enabled():
            return CheckpointingMode.AT_LEAST_ONCE
        return CheckpointingMode[str(self._get(keys.CHECKPOINTING_MODE))]

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_MODE.key, checkpointing_mode.name)

    def get_checkpoint_interval(self) -> int:
        """Milliseconds between checkpoints; -1 while checkpointing is off (Flink's)."""
        interval = int(self._get(keys.CHECKPOINTING_INTERVAL))  # type: ignore[call-overload]
        return interval if interval > 0 else -1

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_INTERVAL.key, checkpoint_interval)

    def get_checkpoint_timeout(self) -> int:
        return int(self._get(keys.CHECKPOINTING_TIMEOUT))  # type: ignore[call-overload]

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_TIMEOUT.key, checkpoint_timeout)

    def get_min_pause_between_checkpoints(self) -> int:
        return int(self._get(keys.CHECKPOINTING_MIN_PAUSE))  # type: ignore[call-overload]

    def set_min_pause_between_checkpoints(self, min_pause: int) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_MIN_PAUSE.key, min_pause)

    def get_max_concurrent_checkpoints(self) -> int:
        return int(self._get(keys.CHECKPOINTING_MAX_CONCURRENT))  # type: ignore[call-overload]

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_MAX_CONCURRENT.key, max_concurrent_checkpoints)

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return int(self._get(keys.CHECKPOINTING_TOLERABLE_FAILURES))  # type: ignore[call-overload]

    def set_tolerable_checkpoint_failure_number(self, number: int) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_TOLERABLE_FAILURES.key, number)

    def is_fail_on_checkpointing_errors(self) -> bool:
        """True when a failed checkpoint fails the job (no tolerable failures)."""
        return self.get_tolerable_checkpoint_failure_number() == 0

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        """Deprecated in Flink for ``set_tolerable_checkpoint_failure_number``: True is 0
        tolerable failures, False tolerates any number."""
        return self.set_tolerable_checkpoint_failure_number(
            0 if fail_on_checkpointing_errors else _TOLERATE_ALL
        )

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_UNALIGNED.key, "true" if enabled else "false")

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether checkpoints are taken unaligned: only while checkpointing is on in
        EXACTLY_ONCE mode, whatever :func:`enable_unaligned_checkpoints` set, as PyFlink 2
        reports it (at-least-once checkpoints never align, so never unalign)::

            >>> env.get_checkpoint_config().enable_unaligned_checkpoints()
            >>> env.get_checkpoint_config().is_unaligned_checkpoints_enabled()  # no interval
            False
        """
        if self.get_checkpointing_mode() is not CheckpointingMode.EXACTLY_ONCE:
            return False
        return bool(self._get(keys.CHECKPOINTING_UNALIGNED))

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration) -> CheckpointConfig:
        """Only relevant with :func:`enable_unaligned_checkpoints`: with 0 (the default)
        checkpoints start unaligned; with more, Flink starts them aligned and switches to
        unaligned when the alignment takes longer
        (``execution.checkpointing.aligned-checkpoint-timeout``)::

            >>> config.set_aligned_checkpoint_timeout(Duration.of_seconds(30))

        Weir stores and reports the value but does not switch yet: with unaligned
        checkpoints enabled, every checkpoint is unaligned from its start.
        """
        millis = alignment_timeout.to_milliseconds()
        if millis < 0:
            msg = (
                f"the aligned checkpoint timeout must not be negative; got {alignment_timeout!r}; "
                "give Duration.of_millis(0) to start every checkpoint unaligned"
            )
            raise ValueError(msg)
        return self._set(keys.CHECKPOINTING_ALIGNED_TIMEOUT.key, f"{millis} ms")

    def get_aligned_checkpoint_timeout(self) -> Duration:
        """The alignment timeout set by :func:`set_aligned_checkpoint_timeout` or
        ``execution.checkpointing.aligned-checkpoint-timeout`` (default 0)."""
        return Duration.of_millis(self._get(keys.CHECKPOINTING_ALIGNED_TIMEOUT))  # type: ignore[arg-type]

    def set_alignment_timeout(self, alignment_timeout: Duration) -> CheckpointConfig:
        """Deprecated in Flink 2.0: :func:`set_aligned_checkpoint_timeout`."""
        return self.set_aligned_checkpoint_timeout(alignment_timeout)

    def get_alignment_timeout(self) -> Duration:
        """Deprecated in Flink 2.0: :func:`get_aligned_checkpoint_timeout`."""
        return self.get_aligned_checkpoint_timeout()

    def set_force_unaligned_checkpoints(
        self, force_unaligned_checkpoints: bool = True
    ) -> CheckpointConfig:
        """Take unaligned checkpoints even where Flink falls back to aligned ones
        (iteration feedback, custom partitioners)
        (``execution.checkpointing.unaligned.forced``)::

            >>> config.enable_unaligned_checkpoints().set_force_unaligned_checkpoints()

        Stored and reported only: Weir takes unaligned checkpoints on every exchange,
        custom partitioners included, so the flag changes nothing at runtime.
        """
        return self._set(
            keys.CHECKPOINTING_UNALIGNED_FORCED.key,
            "true" if force_unaligned_checkpoints else "false",
        )

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether :func:`set_force_unaligned_checkpoints` forced unaligned checkpoints."""
        return bool(self._get(keys.CHECKPOINTING_UNALIGNED_FORCED))

    def set_externalized_checkpoint_retention(
        self, retention_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        return self._set(keys.CHECKPOINTING_RETENTION.key, retention_mode.name)

    def is_externalized_checkpoints_enabled(self) -> bool:
        return (
            self.get_externalized_checkpoint_retention()
            is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        )

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        return ExternalizedCheckpointRetention[str(self._get(keys.CHECKPOINTING_RETENTION))]

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        """Where checkpoints go: any fsspec URL (``execution.checkpointing.dir``)."""
        return self._set(keys.CHECKPOINTING_DIR.key, checkpoint_path)

    def get_checkpoint_storage_dir(self) -> str:
        return str(self._get(keys.CHECKPOINTING_DIR))

    def set_num_retained_checkpoints(self, num_retained: int) -> CheckpointConfig:
        """Weir addition: ``execution.checkpointing.num-retained``."""
        return self._set(keys.CHECKPOINTING_NUM_RETAINED.key, num_retained)

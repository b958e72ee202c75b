"""The checkpointing settings of one job, read once from its configuration."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.core.job_status import JobStatus


class CheckpointingMode(enum.Enum):
    """PyFlink's CheckpointingMode (its members and values); configuration keys hold
    the names."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to retained checkpoints when the job ends (Flink 2.x names; PyFlink's
    members, values and order). Configuration keys hold the names."""

    DELETE_ON_CANCELLATION = 0
    """Kept when the job fails; deleted when it finishes or is cancelled."""
    RETAIN_ON_CANCELLATION = 1
    """Always kept; delete them by hand."""
    NO_EXTERNALIZED_CHECKPOINTS = 2
    """Deleted when the job finishes, fails or is cancelled."""

    def retains_on(self, status: JobStatus) -> bool:
        """Whether completed checkpoints outlive a job that ended with ``status``.

        A SUSPENDED job (its JobMaster lost leadership) always keeps them: a new leader
        recovers from them.
        """
        if (
            status is JobStatus.SUSPENDED
            or self is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
        ):
            return True
        if self is ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION:
            return status is JobStatus.FAILED
        return False


@dataclass(frozen=True, slots=True)
class CheckpointingConfig:
    interval_ms: int = 0
    """0: periodic checkpoints are off."""
    mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
    timeout_ms: int = 600_000
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 0
    unaligned: bool = False
    retention: ExternalizedCheckpointRetention = (
        ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    snapshot_compression: bool = False
    num_retained: int = 1
    after_tasks_finish: bool = True
    """Checkpoints go on while some tasks have finished; a finishing task waits for its
    final checkpoint (``execution.checkpointing.checkpoints-after-tasks-finish``)."""

    @property
    def enabled(self) -> bool:
        return self.interval_ms > 0

    @property
    def final_checkpoints(self) -> bool:
        """A task at the end of its input waits for a checkpoint before it exits."""
        return self.enabled and self.after_tasks_finish

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> CheckpointingConfig:
        result = cls(
            interval_ms=max(0, cfg.get(config, cfg.CHECKPOINTING_INTERVAL)),
            mode=CheckpointingMode[cfg.get(config, cfg.CHECKPOINTING_MODE)],
            timeout_ms=cfg.get(config, cfg.CHECKPOINTING_TIMEOUT),
            min_pause_ms=cfg.get(config, cfg.CHECKPOINTING_MIN_PAUSE),
            max_concurrent=cfg.get(config, cfg.CHECKPOINTING_MAX_CONCURRENT),
            tolerable_failures=cfg.get(config, cfg.CHECKPOINTING_TOLERABLE_FAILURES),
            unaligned=cfg.get(config, cfg.CHECKPOINTING_UNALIGNED),
            retention=ExternalizedCheckpointRetention[cfg.get(config, cfg.CHECKPOINTING_RETENTION)],
            snapshot_compression=cfg.get(config, cfg.CHECKPOINTING_SNAPSHOT_COMPRESSION),
            num_retained=cfg.get_with_deprecated_keys(config, cfg.CHECKPOINTING_NUM_RETAINED),
            after_tasks_finish=cfg.get(config, cfg.CHECKPOINTING_AFTER_TASKS_FINISH),
        )
        if result.timeout_ms <= 0 or result.min_pause_ms < 0:
            msg = (
                "execution.checkpointing.timeout must be positive and "
                f"execution.checkpointing.min-pause not negative; got {result.timeout_ms} ms "
                f"and {result.min_pause_ms} ms"
            )
            raise ConfigurationError(msg)
        if result.unaligned and result.mode is CheckpointingMode.AT_LEAST_ONCE:
            msg = (
                "execution.checkpointing.unaligned.enabled needs execution.checkpointing.mode "
                "EXACTLY_ONCE; got AT_LEAST_ONCE (at-least-once never holds barriers back, "
                "so there is nothing for unaligned checkpoints to overtake)"
            )
            raise ConfigurationError(msg)
        return result

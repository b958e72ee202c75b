"""``CheckpointStatsTracker``: checkpoint statistics for reporting (Flink's), counts and a
bounded history of the latest checkpoints, newest first, as weir.core's
``CheckpointStatsSnapshot``."""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Iterable

from weir.core.checkpoint import (
    CheckpointMetrics,
    CheckpointStats,
    CheckpointStatsSnapshot,
    CheckpointStatus,
    CheckpointType,
    RestoredCheckpointStats,
)

# Flink's `web.checkpoints.history` default: enough to see a trend in `weir info` without
# the JobMaster keeping an unbounded list for a job that checkpoints every second.
DEFAULT_HISTORY_SIZE = 10


class CheckpointStatsTracker:
    """Thread-safe; updated by the coordinator, read by whoever reports."""

    def __init__(self, history_size: int = DEFAULT_HISTORY_SIZE) -> None:
        self._lock = threading.Lock()
        self._history_size = history_size
        self._stats: collections.OrderedDict[int, CheckpointStats] = collections.OrderedDict()
        self._num_completed = 0
        self._num_failed = 0
        self._latest_completed: CheckpointStats | None = None
        self._latest_failed: CheckpointStats | None = None
        self._latest_savepoint: CheckpointStats | None = None
        self._num_restored = 0
        self._latest_restored: RestoredCheckpointStats | None = None

    def report_pending(
        self,
        checkpoint_id: int,
        trigger_ms: int,
        checkpoint_type: CheckpointType,
        num_subtasks: int,
    ) -> None:
        with self._lock:
            self._stats[checkpoint_id] = CheckpointStats(
                checkpoint_id,
                CheckpointStatus.IN_PROGRESS,
                checkpoint_type=checkpoint_type,
                trigger_timestamp_ms=trigger_ms,
                num_subtasks=num_subtasks,
            )
            self._trim()

    def report_acknowledged(
        self, checkpoint_id: int, now_ms: int, metrics: Iterable[CheckpointMetrics]
    ) -> None:
        with self._lock:
            stats = self._stats.get(checkpoint_id)
            if stats is not None and stats.status is CheckpointStatus.IN_PROGRESS:
                self._stats[checkpoint_id] = _with_metrics(stats, now_ms, list(metrics))

    def report_completed(
        self,
        checkpoint_id: int,
        now_ms: int,
        metrics: Iterable[CheckpointMetrics],
        state_size_bytes: int,
        external_pointer: str,
    ) -> None:
        with self._lock:
            stats = self._stats.get(checkpoint_id)
            if stats is None:
                return
            done = dataclasses.replace(
                _with_metrics(stats, now_ms, list(metrics)),
                status=CheckpointStatus.COMPLETED,
                state_size_bytes=state_size_bytes,
                external_pointer=external_pointer,
            )
            self._stats[checkpoint_id] = done
            self._num_completed += 1
            self._latest_completed = done
            if done.checkpoint_type is CheckpointType.SAVEPOINT:
                self._latest_savepoint = done

    def report_failed(self, checkpoint_id: int, now_ms: int, message: str) -> None:
        with self._lock:
            stats = self._stats.get(checkpoint_id)
            if stats is None or stats.status is not CheckpointStatus.IN_PROGRESS:
                return
            failed = dataclasses.replace(
                stats,
                status=CheckpointStatus.FAILED,
                end_to_end_duration_ms=max(0, now_ms - stats.trigger_timestamp_ms),
                failure_message=message,
            )
            self._stats[checkpoint_id] = failed
            self._num_failed += 1
            self._latest_failed = failed

    def report_restored(
        self,
        checkpoint_id: int,
        now_ms: int,
        external_pointer: str,
        checkpoint_type: CheckpointType = CheckpointType.CHECKPOINT,
    ) -> None:
        with self._lock:
            self._num_restored += 1
            self._latest_restored = RestoredCheckpointStats(
                checkpoint_id,
                now_ms,
                external_pointer,
                is_savepoint=checkpoint_type is CheckpointType.SAVEPOINT,
            )

    def snapshot(self) -> CheckpointStatsSnapshot:
        with self._lock:
            history = tuple(reversed(self._stats.values()))
            in_progress = sum(1 for s in history if s.status is CheckpointStatus.IN_PROGRESS)
            return CheckpointStatsSnapshot(
                checkpointing_enabled=True,  # a job has a tracker only when it checkpoints
                num_completed=self._num_completed,
                num_failed=self._num_failed,
                num_in_progress=in_progress,
                history=history,
                latest_completed=self._latest_completed,
                latest_failed=self._latest_failed,
                latest_savepoint=self._latest_savepoint,
                num_restored=self._num_restored,
                latest_restored=self._latest_restored,
            )

    def _trim(self) -> None:
        # Drop the oldest finished entries; in-progress ones stay until they end.
        while len(self._stats) > self._history_size:
            oldest = next(
                (
                    cid
                    for cid, s in self._stats.items()
                    if s.status is not CheckpointStatus.IN_PROGRESS
                ),
                None,
            )
            if oldest is None:
                return
            del self._stats[oldest]


def _with_metrics(
    stats: CheckpointStats, now_ms: int, metrics: list[CheckpointMetrics]
) -> CheckpointStats:
    return dataclasses.replace(
        stats,
        num_acknowledged=len(metrics),
        end_to_end_duration_ms=max(0, now_ms - stats.trigger_timestamp_ms),
        sync_duration_ms=max((m.sync_duration_ms for m in metrics), default=0),
        async_duration_ms=max((m.async_duration_ms for m in metrics), default=0),
        alignment_duration_ms=max((m.alignment_duration_ms for m in metrics), default=0),
        state_size_bytes=sum(m.state_size_bytes for m in metrics),
        persisted_in_flight_bytes=sum(m.persisted_in_flight_bytes for m in metrics),
    )

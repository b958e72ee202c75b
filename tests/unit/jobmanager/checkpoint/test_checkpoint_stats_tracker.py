"""The CheckpointStatsTracker: savepoints are reported apart as the latest savepoint, a
failure as the latest failed, and a restore says whether it was from a savepoint."""

from __future__ import annotations

from weir.core.checkpoint import CheckpointMetrics, CheckpointStatus, CheckpointType
from weir.jobmanager.checkpoint.checkpoint_stats_tracker import CheckpointStatsTracker


def _complete(tracker: CheckpointStatsTracker, checkpoint_id: int, kind: CheckpointType) -> None:
    tracker.report_pending(checkpoint_id, 1000 * checkpoint_id, kind, 2)
    metrics = [CheckpointMetrics(state_size_bytes=10), CheckpointMetrics(state_size_bytes=5)]
    tracker.report_completed(
        checkpoint_id, 1000 * checkpoint_id + 40, metrics, 15, f"p{checkpoint_id}"
    )


def test_a_savepoint_is_the_latest_savepoint_and_a_later_checkpoint_leaves_it():
    tracker = CheckpointStatsTracker()
    _complete(tracker, 1, CheckpointType.CHECKPOINT)
    assert tracker.snapshot().latest_savepoint is None
    _complete(tracker, 2, CheckpointType.SAVEPOINT)
    _complete(tracker, 3, CheckpointType.CHECKPOINT)
    snapshot = tracker.snapshot()
    assert snapshot.latest_savepoint is not None
    assert snapshot.latest_savepoint.checkpoint_id == 2
    assert snapshot.latest_savepoint.external_pointer == "p2"
    assert snapshot.latest_completed is not None
    assert snapshot.latest_completed.checkpoint_id == 3


def test_a_failure_is_the_latest_failed():
    tracker = CheckpointStatsTracker()
    tracker.report_pending(4, 4000, CheckpointType.CHECKPOINT, 2)
    tracker.report_failed(4, 4100, "a task declined")
    failed = tracker.snapshot().latest_failed
    assert failed is not None
    assert (failed.status, failed.failure_message) == (CheckpointStatus.FAILED, "a task declined")


def test_a_restore_says_when_and_whether_from_a_savepoint():
    tracker = CheckpointStatsTracker()
    tracker.report_restored(7, 1234, "file:///sp/savepoint-1", CheckpointType.SAVEPOINT)
    restored = tracker.snapshot().latest_restored
    assert restored is not None
    assert (restored.checkpoint_id, restored.restore_timestamp_ms) == (7, 1234)
    assert restored.is_savepoint
    tracker.report_restored(8, 2345, "file:///chk/job/chk-8")
    restored = tracker.snapshot().latest_restored
    assert restored is not None and not restored.is_savepoint
    assert tracker.snapshot().num_restored == 2

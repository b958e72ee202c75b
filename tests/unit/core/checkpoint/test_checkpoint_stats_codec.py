"""Checkpoint statistics over the wire: what the message carries round-trips exactly (the
latest failed checkpoint, the latest savepoint and the restore too), and the latest
completed checkpoint travels by its path."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from weir.core.checkpoint import (
    CheckpointStats,
    CheckpointStatsSnapshot,
    CheckpointStatus,
    CheckpointType,
    RestoredCheckpointStats,
)
from weir.core.checkpoint.checkpoint_stats_codec import (
    decode_checkpoint_stats,
    encode_checkpoint_stats,
)

JOB_ID = "ab" * 16
counts = st.integers(min_value=0, max_value=2**40)


@st.composite
def entries(draw, checkpoint_id: int) -> CheckpointStats:
    return CheckpointStats(
        checkpoint_id=checkpoint_id,
        status=draw(st.sampled_from(CheckpointStatus)),
        checkpoint_type=draw(st.sampled_from(CheckpointType)),
        trigger_timestamp_ms=draw(counts),
        num_subtasks=draw(st.integers(min_value=0, max_value=1000)),
        num_acknowledged=draw(st.integers(min_value=0, max_value=1000)),
        end_to_end_duration_ms=draw(counts),
        sync_duration_ms=draw(counts),
        async_duration_ms=draw(counts),
        alignment_duration_ms=draw(counts),
        state_size_bytes=draw(counts),
        persisted_in_flight_bytes=draw(counts),
        external_pointer=f"file:///chk/chk-{checkpoint_id}",
        failure_message=draw(st.text(max_size=20)),
    )


@st.composite
def snapshots(draw) -> CheckpointStatsSnapshot:
    ids = draw(st.lists(st.integers(min_value=1, max_value=2**40), max_size=5, unique=True))
    history = tuple(draw(entries(i)) for i in sorted(ids, reverse=True))
    completed = [s for s in history if s.status is CheckpointStatus.COMPLETED]
    failed = [s for s in history if s.status is CheckpointStatus.FAILED]
    savepoints = [s for s in completed if s.checkpoint_type is CheckpointType.SAVEPOINT]
    num_restored = draw(st.integers(min_value=0, max_value=3))
    return CheckpointStatsSnapshot(
        checkpointing_enabled=draw(st.booleans()),
        num_completed=draw(counts),
        num_failed=draw(counts),
        num_in_progress=draw(counts),
        history=history,
        latest_completed=draw(st.sampled_from(completed)) if completed else None,
        # The latest failed checkpoint and savepoint travel whole, in the history or not.
        latest_failed=draw(st.sampled_from(failed)) if failed else draw(entries(2**41)),
        latest_savepoint=draw(st.sampled_from(savepoints)) if savepoints else None,
        num_restored=num_restored,
        latest_restored=(
            RestoredCheckpointStats(
                draw(st.integers(1, 2**40)),
                draw(counts),
                "file:///chk/chk-1",
                is_savepoint=draw(st.booleans()),
            )
            if num_restored
            else None
        ),
    )


@given(snapshots())
def test_what_the_message_carries_round_trips(stats):
    message = encode_checkpoint_stats(stats, JOB_ID)
    assert message.job_id == JOB_ID
    assert message.num_triggered == stats.num_triggered
    assert decode_checkpoint_stats(message) == stats


def test_a_latest_completed_checkpoint_out_of_the_history_travels_by_its_path():
    trimmed = CheckpointStats(3, CheckpointStatus.COMPLETED, external_pointer="file:///c/chk-3")
    failed = CheckpointStats(9, CheckpointStatus.FAILED, failure_message="boom")
    stats = CheckpointStatsSnapshot(
        checkpointing_enabled=True,
        num_completed=1,
        num_failed=1,
        history=(failed,),
        latest_completed=trimmed,
        latest_failed=failed,
        num_restored=1,
        latest_restored=RestoredCheckpointStats(2, 1234, "file:///c/sp", is_savepoint=True),
    )
    decoded = decode_checkpoint_stats(encode_checkpoint_stats(stats, JOB_ID))
    assert decoded.latest_failed == failed
    assert decoded.latest_restored == stats.latest_restored
    # Out of the history: only its path and status travel.
    assert decoded.latest_completed == CheckpointStats(
        0, CheckpointStatus.COMPLETED, external_pointer="file:///c/chk-3"
    )
    assert decoded.latest_completed_path == stats.latest_completed_path
    assert decoded.history == stats.history


def test_a_job_without_checkpointing():
    decoded = decode_checkpoint_stats(encode_checkpoint_stats(CheckpointStatsSnapshot(), JOB_ID))
    assert decoded == CheckpointStatsSnapshot()
    assert not decoded.checkpointing_enabled
    assert (decoded.num_triggered, decoded.latest_completed_path) == (0, "")


def test_a_status_is_its_name():
    assert CheckpointStatus.COMPLETED == "COMPLETED"
    assert f"{CheckpointStatus.FAILED}" == "FAILED"

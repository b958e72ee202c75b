"""Unaligned checkpoints under back-pressure on the MiniCluster: a slow sink fills every
network buffer between the source and itself; aligned barriers queue behind all of that
data and time out, unaligned ones overtake it and complete."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from weir.common import Configuration, WatermarkStrategy
from weir.core.checkpoint.metadata import decode_metadata
from weir.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.functions import SinkFunction

pytestmark = pytest.mark.spark

RECORDS = 120_000
# Per record: the sink's workload that back-pressures the job (not a synchronisation).
SINK_DELAY_S = 0.00002
# Buffers of ~1,600 numbers, a fraction of a second of the sink's work each: an aligned
# barrier waits behind every buffer queued on the way to the sink (a subpartition's 10,
# plus an input channel's credit when remote, per source subtask), several seconds; an
# unaligned one overtakes them and waits for the buffer the sink is processing. The
# timeout lies between the two, with a margin of several buffers either way.
SEGMENT_SIZE = "8 kb"
CHECKPOINT_TIMEOUT_MS = 2_000


class SlowSink(SinkFunction):
    """Sleeps per record and writes down the checkpoints it is told completed or aborted."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def invoke(self, value, context) -> None:
        time.sleep(SINK_DELAY_S)

    def _note(self, name: str, checkpoint_id: int) -> None:
        with open(os.path.join(self.directory, name), "a") as f:
            f.write(f"{checkpoint_id}\n")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._note("completed", checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self._note("aborted", checkpoint_id)


def _run(tmp_path: Path, unaligned: bool) -> tuple[set[int], set[int]]:
    """Runs the back-pressured job; returns the ids of the completed checkpoints (their
    ``_metadata`` in the checkpoint directory) and of those the sink saw aborted."""
    marks = tmp_path / "marks"
    marks.mkdir(parents=True)
    configuration = Configuration()
    configuration.set_string("taskmanager.memory.segment-size", SEGMENT_SIZE)
    configuration.set_string("restart-strategy.type", "none")
    configuration.set_string("execution.checkpointing.num-retained", "1000")
    configuration.set_string("execution.checkpointing.tolerable-failed-checkpoints", "1000")
    # The comparison is of checkpoints taken under back-pressure: no final checkpoint at
    # the end of input (which, once the queues drain, an aligned one also completes).
    configuration.set_string("execution.checkpointing.checkpoints-after-tasks-finish", "false")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(200, CheckpointingMode.EXACTLY_ONCE)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    checkpoints.set_checkpoint_timeout(CHECKPOINT_TIMEOUT_MS)
    checkpoints.enable_unaligned_checkpoints(unaligned)
    checkpoints.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    (
        env.from_source(
            NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .key_by(lambda x: x % 8)
        .add_sink(SlowSink(str(marks)))
        .set_parallelism(1)
    )
    result = env.execute(f"back-pressured, unaligned={unaligned}")
    job_dir = tmp_path / "checkpoints" / str(result.get_job_id())
    completed = {
        int(p.name.removeprefix("chk-"))
        for p in job_dir.glob("chk-*")
        if (p / "_metadata").exists()
    }
    aborted_file = marks / "aborted"
    aborted = set(map(int, aborted_file.read_text().split())) if aborted_file.exists() else set()
    return completed, aborted


def test_unaligned_checkpoints_complete_under_back_pressure_where_aligned_ones_expire(
    cluster, tmp_path
):
    aligned_completed, aligned_aborted = _run(tmp_path / "aligned", unaligned=False)
    unaligned_completed, _ = _run(tmp_path / "unaligned", unaligned=True)
    print("aligned", aligned_completed, aligned_aborted, "unaligned", unaligned_completed)

    assert aligned_completed == set(), aligned_completed
    assert aligned_aborted, "no aligned checkpoint was even triggered and aborted"
    assert unaligned_completed, "no unaligned checkpoint completed under back-pressure"


class SlowerSink(SlowSink):
    """A buffer of numbers takes it about half a second."""

    def invoke(self, value, context) -> None:
        time.sleep(0.0003)


def test_a_checkpoint_after_the_source_finished_stays_unaligned(cluster, tmp_path):
    """The source finishes with its last buffers still on the way to the slow sink, so
    the coordinator triggers the next checkpoints at the sink itself (FLIP-147). They are
    taken at once, the data still in flight persisted as the sink's input channel state,
    as Flink's triggerUnfinishedChannelsCheckpoint takes them, rather than aligned behind
    that data once every channel has ended (with no channel state)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    configuration = Configuration()
    configuration.set_string("taskmanager.memory.segment-size", SEGMENT_SIZE)
    configuration.set_string("restart-strategy.type", "none")
    configuration.set_string("execution.checkpointing.num-retained", "1000")
    configuration.set_string("execution.checkpointing.tolerable-failed-checkpoints", "1000")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(100, CheckpointingMode.EXACTLY_ONCE)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    checkpoints.enable_unaligned_checkpoints(True)
    checkpoints.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    # About a dozen buffers, all of them in flight at once (a subpartition holds 10 and
    # the channel's credit a few more): the source is done, its final checkpoint taken
    # when the sink reads the barrier after the buffer at hand, long before the sink has
    # worked through the rest (seconds of it).
    records = 16_000
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .key_by(lambda x: x % 8)
        .add_sink(SlowerSink(str(marks)))
    )
    result = env.execute("source finished, data in flight")
    job_dir = tmp_path / "checkpoints" / str(result.get_job_id())
    after_the_source = {}
    for path in sorted(job_dir.glob("chk-*/_metadata")):
        metadata = decode_metadata(path.read_bytes())
        if not any(op.is_fully_finished for op in metadata.operator_states.values()):
            continue
        in_flight = sum(
            len(subtask.input_channel_state)
            for op in metadata.operator_states.values()
            for subtask in op.subtask_states.values()
        )
        after_the_source[metadata.checkpoint_id] = in_flight
    print("input channel state handles of checkpoints after the source finished", after_the_source)
    assert after_the_source, "no checkpoint completed after the source finished"
    assert any(after_the_source.values()), after_the_source

"""Unaligned checkpoints under back-pressure on the MiniCluster: a slow sink fills every
network buffer between the source and itself; aligned barriers queue behind all of that
data and time out, unaligned ones overtake it and complete."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from held_numbers import FileExists, HeldNumbers

from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.checkpoint.metadata import decode_metadata
from weir.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.functions import KeyedProcessFunction, SinkFunction
from weir.datastream.state import ValueStateDescriptor

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


# One source finishes while another still runs, both feeding a slow keyed sum: the sum's
# task has one input channel whose producer finished with data still on the way and one
# whose producer runs on.
FINISHING_RECORDS = 20_000
RUNNING_RECORDS = 10_000
RUNNING_HOLD = 4_000
# Per record until the test lets the job go: about a second per buffer of the finished
# source, a dozen of which are still on the way when it finishes, so the checkpoints
# after it finished are triggered long before the sum has worked through them.
HELD_DELAY_S = 0.001
QUALIFYING_DEADLINE_S = 90


class HeldSum(KeyedProcessFunction):
    """A running count and sum per key, slow until ``release`` exists; it does not take
    the finishing source's last number before then, so whatever checkpoint completes
    before the release, after that source finished, had its last number in flight."""

    def __init__(self, release: str, out: str, last: int) -> None:
        self.release = release
        self.out = out
        self.last = last

    def open(self, runtime_context) -> None:
        self.state = runtime_context.get_state(
            ValueStateDescriptor("count-and-sum", Types.PICKLED_BYTE_ARRAY())
        )
        self.released = False

    def process_element(self, value, ctx):
        key, number = value
        if not self.released:
            self.released = os.path.exists(self.release)
            if not self.released:
                time.sleep(HELD_DELAY_S)  # the workload that back-pressures the job
                if key == "a" and number == self.last:
                    while not os.path.exists(self.release):
                        time.sleep(0.01)  # polling interval of the hold
                    self.released = True
        count, total = self.state.value() or (0, 0)
        count, total = count + 1, total + number
        self.state.update((count, total))
        with open(self.out, "a") as f:
            f.write(f"{key},{count},{total}\n")
        yield key, count, total


def _finished_and_running_job(env, release: Path, out: Path) -> None:
    finishing = env.from_source(
        NumberSequenceSource(0, FINISHING_RECORDS - 1),
        WatermarkStrategy.no_watermarks(),
        "finishing",
    ).uid("finishing")
    running = env.from_source(
        HeldNumbers(0, RUNNING_RECORDS - 1, {RUNNING_HOLD: FileExists(release)}),
        WatermarkStrategy.no_watermarks(),
        "running",
    ).uid("running")
    (
        finishing.map(lambda x: ("a", x))
        .uid("tag-a")
        .union(running.map(lambda x: ("b", x)).uid("tag-b"))
        .key_by(lambda kv: kv[0])
        .process(HeldSum(str(release), str(out), FINISHING_RECORDS - 1))
        .uid("sum")
    )


def _unaligned_env(tmp_path: Path, restore_from: str = "") -> StreamExecutionEnvironment:
    configuration = Configuration()
    configuration.set_string("taskmanager.memory.segment-size", SEGMENT_SIZE)
    configuration.set_string("restart-strategy.type", "none")
    configuration.set_string("execution.checkpointing.num-retained", "1000")
    configuration.set_string("execution.checkpointing.tolerable-failed-checkpoints", "1000")
    if restore_from:
        configuration.set_string("execution.state-recovery.path", restore_from)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(100, CheckpointingMode.EXACTLY_ONCE)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    checkpoints.enable_unaligned_checkpoints(True)
    checkpoints.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    return env


def _after_the_finished_source(checkpoints: Path) -> list[tuple[int, Path, int]]:
    """(id, directory, input channel state handles) of the completed checkpoints that
    recorded the finishing source as finished."""
    found = []
    for path in checkpoints.glob("*/chk-*/_metadata"):
        metadata = decode_metadata(path.read_bytes())
        states = {op.uid: op for op in metadata.operator_states.values()}
        if "finishing" not in states or not states["finishing"].is_fully_finished:
            continue
        in_flight = sum(
            len(subtask.input_channel_state) for subtask in states["sum"].subtask_states.values()
        )
        found.append((metadata.checkpoint_id, path.parent, in_flight))
    return sorted(found)


def _outputs(path: Path) -> dict[str, list[tuple[int, int]]]:
    outputs: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}
    for line in path.read_text().splitlines():
        key, count, total = line.split(",")
        outputs[key].append((int(count), int(total)))
    return outputs


@pytest.mark.long
def test_a_checkpoint_with_one_producer_finished_and_one_running_stays_unaligned(cluster, tmp_path):
    """The sum's task reads a source that finished with about a dozen buffers still on the
    way and one that still runs. A checkpoint triggered after the first one finished is
    taken at once, as Flink's are (the barrier overtakes the running source's data, the
    finished channel counts as aligned behind its last buffer): it completes while the
    sum has not yet taken the finished source's last number, that source's remaining
    data persisted as the sum's input channel state. Before, the sum kept the checkpoint
    open until it had worked through that data to the channel's end, so none could
    complete while the last number was held. Restored from that checkpoint, the sums
    continue exactly: every number counted once."""
    release = tmp_path / "release"
    first_out = tmp_path / "first.csv"
    env = _unaligned_env(tmp_path)
    _finished_and_running_job(env, release, first_out)
    client = env.execute_async("one producer finished, one running")
    checkpoints = tmp_path / "checkpoints"
    deadline = time.monotonic() + QUALIFYING_DEADLINE_S
    qualifying: list[tuple[int, Path, int]] = []
    while (
        time.monotonic() < deadline
        and not client.get_job_status().result().is_globally_terminal_state()
    ):
        qualifying = [c for c in _after_the_finished_source(checkpoints) if c[2]]
        if qualifying:
            break
        time.sleep(0.1)  # polling interval
    release.touch()
    client.get_job_execution_result().result()
    print(
        "checkpoints after the source finished (id, in-flight handles):",
        [(n, handles) for n, _, handles in _after_the_finished_source(checkpoints)],
    )
    assert qualifying, (
        "no checkpoint completed after the source finished while its last number was "
        "still in flight"
    )
    checkpoint_id, directory, _ = qualifying[0]

    restored_out = tmp_path / "restored.csv"
    env = _unaligned_env(tmp_path / "restored", restore_from=str(directory))
    _finished_and_running_job(env, release, restored_out)
    env.execute("restored from a checkpoint with data in flight")
    outputs = _outputs(restored_out)
    print(
        f"restored from checkpoint {checkpoint_id}: first and last outputs",
        {key: (values[0], values[-1]) for key, values in outputs.items() if values},
    )
    for key, records in (("a", FINISHING_RECORDS), ("b", RUNNING_RECORDS)):
        values = outputs[key]
        counts = [count for count, _ in values]
        # Counted on from the checkpoint's state, every number once.
        assert counts == list(range(counts[0], records + 1)), (key, counts[:3], counts[-3:])
        assert values[-1] == (records, records * (records - 1) // 2), (key, values[-1])
    # The finished source's last numbers came from the checkpoint's channel state.
    assert outputs["a"], "no number of the finished source was in flight"

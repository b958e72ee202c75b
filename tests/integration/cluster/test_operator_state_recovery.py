"""Broadcast state and operator state across a failure, on the MiniCluster: a job fails
once after a checkpoint completed, restarts from it, and its exactly-once FileSink must
commit exactly the lines of a failure-free run. The broadcast source has finished by
then, so the rules after the restart can only come from the restored broadcast state; the
records that arrived before their rule are kept in operator list state. The keyed job
runs on both keyed state backends: operator state stays on the heap beside rocksdb."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter

import pytest
from test_checkpoint_recovery import checkpointed_env, committed_lines, exactly_once_lines

from weir.common import Types, WatermarkStrategy
from weir.core.checkpoint import IncrementalKeyGroupsStateHandle, decode_metadata
from weir.datastream import MapFunction
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.functions import (
    BroadcastProcessFunction,
    CheckpointedFunction,
    KeyedBroadcastProcessFunction,
    RuntimeContext,
)
from weir.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

pytestmark = pytest.mark.spark

RECORDS = 5_000
KEYS = 4
FACTORS = MapStateDescriptor("factors", Types.STRING(), Types.INT())
WAITING = ListStateDescriptor("waiting", Types.LONG())


class FailOnceAfterACheckpoint(MapFunction):
    """Passes numbers on, a little slowly; in the first attempt only (no marker file
    yet), raises on the first number after checkpoint ``after`` completed."""

    def __init__(self, marks: str, after: int = 1) -> None:
        self.marks = marks
        self.after = after
        self.completed = 0

    def open(self, runtime_context: RuntimeContext) -> None:
        self.first_attempt = not os.path.exists(os.path.join(self.marks, "failed"))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.completed = checkpoint_id

    def map(self, value):
        if self.first_attempt and self.completed >= self.after:
            with (
                contextlib.suppress(FileExistsError),
                open(os.path.join(self.marks, "failed"), "x") as f,
            ):
                f.write(str(value))
            msg = f"injected failure at {value}"
            raise RuntimeError(msg)
        time.sleep(0.001)  # pacing, so that checkpoints complete mid-stream
        return value


class Scale(BroadcastProcessFunction, CheckpointedFunction):
    """Multiplies each number by the broadcast factor; a number that comes before the
    factor waits in operator list state (so a checkpoint keeps it) until one does."""

    def initialize_state(self, context) -> None:
        self.waiting = context.get_operator_state_store().get_list_state(WAITING)
        self.pending = list(self.waiting.get())

    def snapshot_state(self, context) -> None:
        self.waiting.update(self.pending)

    def process_element(self, value, ctx):
        factor = ctx.get_broadcast_state(FACTORS).get("factor")
        if factor is None:
            self.pending.append(value)
            return
        for n in [*self.pending, value]:
            yield f"{n},{n * factor}"
        self.pending = []

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(FACTORS).put(value[0], value[1])
        for n in self.pending:
            yield f"{n},{n * value[1]}"
        self.pending = []


def test_broadcast_state_and_list_state_are_restored_after_a_failure(cluster, tmp_path):
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    env = checkpointed_env(tmp_path, {})
    factors = env.from_collection(
        [("factor", 3)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    (
        env.from_source(
            NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(FailOnceAfterACheckpoint(str(marks)))
        .set_parallelism(1)
        .connect(factors.broadcast(FACTORS))
        .process(Scale(), output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    env.execute("broadcast factor, one failure")

    assert (marks / "failed").exists(), "the injected failure never happened"
    assert committed_lines(out) == Counter(f"{n},{3 * n}" for n in range(RECORDS))


class Totals(KeyedBroadcastProcessFunction):
    """Per key: a running total in keyed state and an event-time timer at the end; the
    broadcast ``unit`` names the output, and a broadcast ``tag`` marks every key, those
    seen before it through apply_to_keyed_state and later ones as they come."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.tag = runtime_context.get_state(ValueStateDescriptor("tag", Types.STRING()))

    def process_element(self, value, ctx):
        self.total.update((self.total.value() or 0) + value)
        tag = ctx.get_broadcast_state(FACTORS).get("tag")
        if tag is not None:
            self.tag.update(str(tag))
        ctx.timer_service().register_event_time_timer(RECORDS)

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(FACTORS).put(value[0], value[1])
        if value[0] == "tag":
            ctx.apply_to_keyed_state(
                ValueStateDescriptor("tag", Types.STRING()),
                lambda key, state: state.update(str(value[1])),
            )

    def on_timer(self, timestamp, ctx):
        rules = ctx.get_broadcast_state(FACTORS)
        key = ctx.get_current_key()
        yield f"key {key}: total {self.total.value()} {rules.get('unit')}, tag {self.tag.value()}"


BACKENDS = {
    "hashmap": {},
    "rocksdb-incremental": {"state.backend.type": "rocksdb", "state.backend.incremental": "true"},
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_keyed_broadcast_state_timers_and_keyed_state_across_a_failure(cluster, tmp_path, backend):
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    env = checkpointed_env(tmp_path, BACKENDS[backend])
    rules = env.from_collection(
        [("unit", 100), ("tag", 7)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    (
        env.from_source(
            NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        # After the second checkpoint: the rules' source had finished by then, so the
        # restored job deploys it as finished, and its end of event time must still
        # reach the keyed input's timers.
        .map(FailOnceAfterACheckpoint(str(marks), after=2))
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.no_watermarks().with_timestamp_assigner(_NumberTime())
        )
        .key_by(lambda n: n % KEYS, key_type=Types.INT())
        .connect(rules.broadcast(FACTORS))
        .process(Totals(), output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    env.execute("keyed broadcast totals, one failure")

    assert (marks / "failed").exists(), "the injected failure never happened"
    totals = [sum(range(k, RECORDS, KEYS)) for k in range(KEYS)]
    assert committed_lines(out) == Counter(
        f"key {k}: total {totals[k]} 100, tag 7" for k in range(KEYS)
    )
    keyed = [
        handle
        for path in tmp_path.glob("checkpoints/*/chk-*/_metadata")
        for op in decode_metadata(path.read_bytes()).operator_states.values()
        for sub in op.subtask_states.values()
        for handle in sub.managed_keyed_state
    ]
    assert keyed, "no retained checkpoint holds keyed state"
    incremental = [isinstance(h, IncrementalKeyGroupsStateHandle) for h in keyed]
    assert all(incremental) if backend.startswith("rocksdb") else not any(incremental)


class _NumberTime:
    def extract_timestamp(self, value, record_timestamp):
        return value


class CountingMap(MapFunction, CheckpointedFunction):
    """Counts what its subtask mapped, in list state, and keeps every subtask's count of the
    last checkpoint in union list state; on restore it writes what it got to ``marks``."""

    def __init__(self, marks: str) -> None:
        self.marks = marks
        self.count = 0

    def initialize_state(self, context) -> None:
        store = context.get_operator_state_store()
        self.own = store.get_list_state(ListStateDescriptor("count", Types.PICKLED_BYTE_ARRAY()))
        self.everyone = store.get_union_list_state(
            ListStateDescriptor("counts", Types.PICKLED_BYTE_ARRAY())
        )
        self.restored = context.is_restored()
        self.restored_own = list(self.own.get())
        self.restored_everyone = list(self.everyone.get())
        self.count = sum(count for _, count in self.restored_own)

    def open(self, runtime_context: RuntimeContext) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()
        if self.restored:
            path = os.path.join(self.marks, f"restored-{self.subtask}.json")
            with open(path, "w") as f:
                json.dump({"own": self.restored_own, "everyone": self.restored_everyone}, f)

    def snapshot_state(self, context) -> None:
        self.own.update([(self.subtask, self.count)])
        self.everyone.update([(self.subtask, self.count)])

    def map(self, value):
        self.count += 1
        return str(value)


def test_list_state_stays_with_its_subtask_and_union_state_reaches_every_one(cluster, tmp_path):
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    env = checkpointed_env(tmp_path, {})
    (
        env.from_source(
            NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(FailOnceAfterACheckpoint(str(marks)))
        .set_parallelism(1)
        .rebalance()
        .map(CountingMap(str(marks)), output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    env.execute("operator state, one failure")

    assert (marks / "failed").exists(), "the injected failure never happened"
    assert committed_lines(out) == Counter(str(n) for n in range(RECORDS))
    restored = {i: json.loads((marks / f"restored-{i}.json").read_text()) for i in range(2)}
    # Each subtask got back its own count (list state, same parallelism) ...
    for i, state in restored.items():
        assert [subtask for subtask, _ in state["own"]] == [i]
    # ... and every subtask's count of that checkpoint (union list state).
    everyone = sorted(map(tuple, restored[0]["everyone"]))
    assert everyone == sorted(map(tuple, restored[1]["everyone"]))
    assert everyone == sorted(tuple(restored[i]["own"][0]) for i in range(2))

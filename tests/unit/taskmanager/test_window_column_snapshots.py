"""Windows a built-in aggregate holds as columns, through a checkpoint: stored as Arrow
column blocks per key group (not key by key), restored as columns at the same and at
another parallelism (only the key groups a subtask owns), restored by an operator that
adds record by record (an AggregateFunction on the same windows) and the other way round,
and read by ``read_savepoint``; the restored windows fire with the counts of a run that
was never checkpointed."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from window_testing import Harness, window_payload

from weir.common.time import Time
from weir.core import column_blocks
from weir.core.checkpoint import (
    CheckpointMetadata,
    CheckpointType,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorSubtaskState,
)
from weir.core.checkpoint.savepoint_storage import savepoint_location, write_savepoint_metadata
from weir.core.column_blocks import decode_block, encode_block, window_batch, window_entries
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.ids import JobId, OperatorId
from weir.core.key_groups import PyFlinkKeyHasher, key_group_range_for_operator
from weir.datastream.aggregate_functions import Avg, Count, Max, Min, Sum
from weir.datastream.functions import AggregateFunction
from weir.datastream.window import TumblingEventTimeWindows
from weir.state import read_savepoint
from weir.taskmanager.checkpointing.snapshot import (
    KeyGroupsSnapshot,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.operators.window_columns import ColumnWindow
from weir.taskmanager.operators.window_state import CONTENTS
from weir.taskmanager.state.backend import with_columns_as_entries
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend

SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))
INT_SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "int64"))
BUILTINS = {"count": Count(), "sum": Sum(1), "min": Min(1), "max": Max(1), "avg": Avg(1)}


class CountRecords(AggregateFunction):
    """A count written as users write one: called record by record."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


@functools.cache
def _payload(function: Any) -> dict[str, Any]:
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(100))
    return window_payload(lambda ds: ds.key_by(lambda r: r[0]).window(assigner).aggregate(function))


def _columns(keys: list[int], values: list[Any], spec: ColumnSpec = SPEC) -> ColumnBatch:
    dtype = np.float64 if spec is SPEC else np.int64
    return ColumnBatch(
        {"f0": np.array(keys, dtype=np.int64), "f1": np.array(values, dtype=dtype)}, spec
    )


def _checkpoint(harness: Harness) -> KeyGroupsSnapshot:
    """The operator's keyed state as a checkpoint writes it (bytes per key group)."""
    harness.op.snapshot_state(1)
    backend = harness.backend
    return encode_keyed_state(backend.snapshot(), backend.key_group_range)


def _restored(
    payload: dict[str, Any], checkpoints: list[KeyGroupsSnapshot], groups: range, watermark: int
) -> Harness:
    backend = HashMapKeyedStateBackend(128, groups)
    backend.restore([decode_keyed_state(c, groups) for c in checkpoints])
    harness = Harness(payload, backend=backend)
    harness.watermark(watermark)
    return harness


def _windows(harness: Harness) -> dict[int, Any]:
    index = harness.op._aligned._index
    assert index is not None
    return index._windows  # type: ignore[no-any-return]


# Keys over a wide range (sparse windows) and a narrow one (dense), with repeats.
KEYS = [3, 3, 7, -2, 2**40, 5, 3, 11, 2**40, -(2**35), 0, 12]
VALUES = [1.5, 2.0, -3.0, 4.25, 10.0, 6.0, 7.0, 0.5, -1.0, 2.0, 8.0, 9.0]
STAMPS = [10, 20, 30, 40, 150, 160, 170, 180, 190, 60, 70, 199]


def _by_records(function: Any) -> list[Any]:
    """What records alone give: every window's results, fired at the end."""
    harness = Harness(_payload(function))
    harness.op.process(list(zip(KEYS, VALUES, strict=True)), STAMPS)
    harness.watermark(10_000)
    return sorted(harness.out.records)


@pytest.mark.parametrize("kind", sorted(BUILTINS))
def test_a_checkpoint_stores_columns_per_key_group_and_restores_them_as_columns(kind):
    function = BUILTINS[kind]
    first = Harness(_payload(function))
    first.op.process(_columns(KEYS, VALUES), STAMPS)
    checkpoint = _checkpoint(first)

    decoded = decode_keyed_state(checkpoint)
    assert not decoded.states.get(CONTENTS), "the windows went into the checkpoint key by key"
    groups = decoded.columns[CONTENTS]
    for group, blocks in groups.items():
        for block in blocks:
            assert {first.backend.key_group_of(k) for k in block.column("key").to_pylist()} == {
                group
            }
    rows = sum(block.num_rows for blocks in groups.values() for block in blocks)
    assert rows == len({(k, t - t % 100) for k, t in zip(KEYS, STAMPS, strict=True)})

    restored = _restored(_payload(function), [checkpoint], range(128), first.op.current_watermark)
    assert all(isinstance(w, ColumnWindow) for w in _windows(restored).values())
    restored.watermark(10_000)
    assert sorted(restored.out.records) == _by_records(function)


@pytest.mark.parametrize(("parts_before", "parts_after"), [(1, 2), (2, 1), (2, 3)])
def test_a_rescaled_restore_reads_the_key_groups_it_owns(parts_before, parts_after):
    payload = _payload(Count())
    keys = np.arange(-500, 1500, dtype=np.int64) * 7919
    stamps = (np.arange(len(keys)) % 200).tolist()
    checkpoints = []
    for part in range(parts_before):
        groups = key_group_range_for_operator(128, parts_before, part)
        harness = Harness(payload, backend=HashMapKeyedStateBackend(128, groups))
        mine = [i for i, k in enumerate(keys.tolist()) if harness.backend.key_group_of(k) in groups]
        harness.op.process(
            _columns(keys[mine].tolist(), [0.0] * len(mine)), [stamps[i] for i in mine]
        )
        checkpoints.append(_checkpoint(harness))

    results = []
    for part in range(parts_after):
        groups = key_group_range_for_operator(128, parts_after, part)
        harness = _restored(payload, checkpoints, groups, -1)
        held = {k for w in _windows(harness).values() for k in w.as_dict()}
        assert held == {k for k in keys.tolist() if harness.backend.key_group_of(k) in groups}
        harness.watermark(10_000)
        results += harness.out.records
    # Every key once, in window [0, 100) or [100, 200).
    assert sorted(results) == [1] * len(keys)


def test_a_columnar_checkpoint_restores_into_a_per_record_aggregate_function():
    columnar = Harness(_payload(Count()))
    assert columnar.op.columnar
    columnar.op.process(_columns(KEYS, VALUES), STAMPS)
    columnar.watermark(99)  # the first window fires before the checkpoint
    fired = sorted(columnar.out.records)
    checkpoint = _checkpoint(columnar)

    per_record = _restored(_payload(CountRecords()), [checkpoint], range(128), 99)
    assert not per_record.op.columnar
    assert all(isinstance(w, dict) for w in _windows(per_record).values())
    per_record.send(((3, 1.0), 120), ((2**40, 1.0), 130), ((99, 1.0), 140))
    per_record.watermark(10_000)

    reference = Harness(_payload(CountRecords()))
    reference.op.process(list(zip(KEYS, VALUES, strict=True)), STAMPS)
    reference.op.process([(3, 1.0), (2**40, 1.0), (99, 1.0)], [120, 130, 140])
    reference.watermark(10_000)
    assert sorted(fired + per_record.out.records) == sorted(reference.out.records)


def test_a_per_record_checkpoint_restores_into_the_columnar_path():
    per_record = Harness(_payload(CountRecords()))
    per_record.op.process(list(zip(KEYS, VALUES, strict=True)), STAMPS)
    checkpoint = _checkpoint(per_record)
    assert not decode_keyed_state(checkpoint).columns  # key by key, as before

    columnar = _restored(_payload(Count()), [checkpoint], range(128), -1)
    assert columnar.op.columnar
    columnar.op.process(_columns([3, 2**40, 99], [1.0, 1.0, 1.0]), [120, 130, 140])
    # Columns again: the next checkpoint holds blocks.
    assert decode_keyed_state(_checkpoint(columnar)).columns[CONTENTS]
    columnar.watermark(10_000)

    reference = Harness(_payload(Count()))
    reference.op.process(list(zip(KEYS, VALUES, strict=True)), STAMPS)
    reference.op.process([(3, 1.0), (2**40, 1.0), (99, 1.0)], [120, 130, 140])
    reference.watermark(10_000)
    assert sorted(columnar.out.records) == sorted(reference.out.records)


def test_blocks_of_a_window_that_fired_leave_the_next_checkpoint():
    harness = Harness(_payload(Count()))
    harness.op.process(_columns([1, 2], [0.0, 0.0]), [10, 110])
    assert decode_keyed_state(_checkpoint(harness)).columns[CONTENTS]
    harness.watermark(99)
    harness.op.process(_columns([5], [0.0]), [150])
    entries = with_columns_as_entries(decode_keyed_state(_checkpoint(harness))).states[CONTENTS]
    assert {k: v for by_key in entries.values() for k, v in by_key.items()} == {
        2: {100: 1},
        5: {100: 1},
    }


def test_restored_blocks_nobody_took_are_carried_into_the_next_checkpoint():
    harness = Harness(_payload(Count()))
    harness.op.process(_columns([1, 2, 3], [0.0] * 3), [10, 20, 30])
    checkpoint = _checkpoint(harness)
    backend = HashMapKeyedStateBackend(128, range(128))
    backend.restore([decode_keyed_state(checkpoint)])
    again = encode_keyed_state(backend.snapshot(), range(128))
    assert decode_keyed_state(again).columns[CONTENTS]
    carried = with_columns_as_entries(decode_keyed_state(again)).states[CONTENTS]
    assert carried == with_columns_as_entries(decode_keyed_state(checkpoint)).states[CONTENTS]


def test_integer_sums_keep_their_type_through_a_block():
    harness = Harness(_payload(Sum(1)))
    harness.op.process(_columns([1, 2, 1], [5, 7, 2**40], INT_SPEC), [10, 20, 30])
    decoded = decode_keyed_state(_checkpoint(harness))
    entries = with_columns_as_entries(decoded).states[CONTENTS]
    values = {k: v for by_key in entries.values() for k, v in by_key.items()}
    assert values == {1: {0: 5 + 2**40}, 2: {0: 7}}
    assert all(type(v[0]) is int for v in values.values())


def test_a_block_round_trips_through_arrow_ipc():
    batch = window_batch(
        "avg",
        np.array([1, 2], dtype=np.int64),
        np.array([0, 100], dtype=np.int64),
        np.array([1.5, 3.0]),
        np.array([2, 3], dtype=np.int64),
    )
    again = decode_block(encode_block(batch))
    assert again.equals(batch)
    assert again.schema.metadata == {b"weir.kind": b"avg"}
    assert window_entries([again]) == {1: {0: (1.5, 2)}, 2: {100: (3.0, 3)}}


@pytest.mark.parametrize("rows_at_a_time", [1, 7, 1 << 17])
def test_blocks_cut_a_chunk_at_a_time_are_the_rows_of_each_key_group_in_order(
    monkeypatch, rows_at_a_time
):
    """Rows cut by key group a chunk at a time, over batches of two built-ins, give one
    block per key group and built-in whose rows are that group's, in the order they
    came: what one stable sort of all of them gives."""
    monkeypatch.setattr(column_blocks, "CUT_ROWS", rows_at_a_time)
    rng = np.random.default_rng(7)
    hasher = PyFlinkKeyHasher("Long")
    batches = []
    for i in range(4):
        keys = rng.integers(-50, 50, 40).astype(np.int64)
        kind = ("count", "sum")[i % 2]
        batches.append(window_batch(kind, keys, np.full(40, i * 10, np.int64), keys * 3 + i))
    cut = column_blocks.blocks_by_key_group(batches, hasher, 16)
    for kind in ("count", "sum"):
        rows = [
            (hasher.key_group(int(k), 16), int(k), int(s), int(a))
            for b in batches
            if b.schema.metadata[b"weir.kind"] == kind.encode()
            for k, s, a in zip(*(b.column(c).to_pylist() for c in range(3)), strict=True)
        ]
        expected: dict[int, list[tuple[int, int, int]]] = {}
        for group, *row in rows:  # in the order they came
            expected.setdefault(group, []).append(tuple(row))
        got = {
            group: list(zip(*(b.column(c).to_pylist() for c in range(3)), strict=True))
            for group, blocks in cut.items()
            for b in blocks
            if b.schema.metadata[b"weir.kind"] == kind.encode()
        }
        assert got == expected


def _write_savepoint(directory: str) -> dict[int, dict[int, int]]:
    """A savepoint of a columnar Count at parallelism 2; returns its windows by key."""
    location = savepoint_location(directory, 3)
    expected: dict[int, dict[int, int]] = {}
    subtasks = {}
    keys = list(range(0, 3000, 7))
    for index in range(2):
        groups = key_group_range_for_operator(128, 2, index)
        harness = Harness(_payload(Count()), backend=HashMapKeyedStateBackend(128, groups))
        mine = [k for k in keys if harness.backend.key_group_of(k) in groups]
        harness.op.process(
            _columns(mine + mine[:5], [0.0] * (len(mine) + 5)), [5] * (len(mine) + 5)
        )
        for k in mine:
            expected[k] = {0: 2 if k in mine[:5] else 1}
        encoded = _checkpoint(harness)
        handle = location.write_state(f"keyed-{index}", encoded.data)
        subtasks[index] = OperatorSubtaskState(
            managed_keyed_state=(
                KeyGroupsStateHandle(
                    KeyGroupRange(groups.start, groups.stop),
                    handle,
                    encoded.offsets,
                    encoded.state_meta,
                    key_placement="pickled",
                ),
            )
        )
    operator = OperatorId("c" * 32)
    write_savepoint_metadata(
        directory,
        CheckpointMetadata(
            JobId("f" * 32),
            3,
            1,
            2,
            CheckpointType.SAVEPOINT,
            {operator: OperatorState(operator, 2, 128, subtasks, uid="windows")},
        ),
    )
    return expected


def test_read_savepoint_reads_columnar_windows_as_entries_and_as_one_table(tmp_path):
    directory = str(tmp_path / "savepoint-ffffff-3")
    expected = _write_savepoint(directory)
    sp = read_savepoint(directory)
    assert dict(sp.keyed_state("windows", CONTENTS)) == expected
    # Another table of the same key-group blocks reads past the column blocks.
    assert dict(sp.keyed_state("windows", "_weir_window_merging")) == {}
    table = sp.keyed_state_columns("windows", CONTENTS)
    assert isinstance(table, pa.Table)
    assert table.column_names == ["key", "window_start", "acc"]
    rows = zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True)
    assert {k: {s: a} for k, s, a in rows} == expected


@pytest.mark.parametrize("kind", ["count", "avg"])
def test_a_narrow_key_range_restores_dense_and_a_wide_one_sparse(kind):
    function = BUILTINS[kind]
    dense, wide = list(range(1000, 0, -1)), [k * 2**33 for k in range(-50, 50)]
    first = Harness(_payload(function))
    first.op.process(
        _columns(dense + wide, [float(k % 7) for k in dense + wide]), [10] * 1000 + [110] * 100
    )
    restored = _restored(_payload(function), [_checkpoint(first)], range(128), -1)
    windows = _windows(restored)
    assert windows[0].low == 1 and windows[100].low is None
    restored.watermark(10_000)
    first.watermark(10_000)
    assert sorted(restored.out.records) == sorted(first.out.records)


def test_column_blocks_restore_into_rocksdb_as_entries(tmp_path):
    harness = Harness(_payload(Avg(1)))
    harness.op.process(_columns(KEYS, VALUES), STAMPS)
    checkpoint = _checkpoint(harness)
    backend = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / "db"))
    try:
        backend.restore([decode_keyed_state(checkpoint)])
        table = backend.get_namespaced_table(CONTENTS)
        entries = {(k, ns): v for k, ns, v in table.entries()}
    finally:
        backend.dispose()
    expected: dict[tuple[int, int], tuple[float, int]] = {}
    for k, v, t in zip(KEYS, VALUES, STAMPS, strict=True):
        total, count = expected.get((k, t - t % 100), (0, 0))
        expected[(k, t - t % 100)] = (total + v, count + 1)
    assert entries == expected


@functools.cache
def _late_payload(function: Any, lateness_ms: int) -> dict[str, Any]:
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(100))
    return window_payload(
        lambda ds: (
            ds.key_by(lambda r: r[0])
            .window(assigner)
            .allowed_lateness(lateness_ms)
            .aggregate(function)
        )
    )


@pytest.mark.parametrize("function", [Count(), CountRecords()], ids=["columns", "records"])
def test_windows_a_timer_free_snapshot_held_fire_in_an_operator_with_allowed_lateness(function):
    """Windows kept without timers (the index of event-time windows without lateness)
    restored into an operator that keeps them key by key with timers (the job now allows
    lateness): each gets the timers that operator would have given it, fires once when
    the watermark passes its end, and is dropped at its cleanup time."""
    before = Harness(_payload(function))
    if isinstance(function, CountRecords):
        before.op.process(list(zip(KEYS, VALUES, strict=True)), STAMPS)
    else:
        before.op.process(_columns(KEYS, VALUES), STAMPS)
    checkpoint = _checkpoint(before)
    assert not before.out.records  # nothing fired yet

    after = _restored(_late_payload(CountRecords(), 50), [checkpoint], range(128), -1)
    after.watermark(99)
    assert sorted(after.out.take()) == [1, 1, 1, 1, 2]  # window [0, 100)
    after.watermark(10_000)
    assert sorted(after.out.take()) == [1, 1, 1, 1, 2]  # window [100, 200), once each
    assert after.op.timers.num_event_time_timers == 0
    assert not list(after.op.contents.entries())  # dropped at their cleanup time


def test_a_window_fired_within_its_lateness_is_not_fired_again_after_a_restore():
    """A window kept key by key that fired and waits out its lateness keeps only its
    cleanup timer through a checkpoint: the restore gives it no timer at its end again."""
    payload = _late_payload(CountRecords(), 50)
    before = Harness(payload)
    before.op.process(list(zip(KEYS, VALUES, strict=True)), STAMPS)
    before.watermark(120)  # window [0, 100) fired; its cleanup is at 149
    assert sorted(before.out.take()) == [1, 1, 1, 1, 2]
    after = _restored(payload, [_checkpoint(before)], range(128), 120)
    after.watermark(130)
    assert after.out.take() == []  # not fired a second time
    after.watermark(10_000)
    assert sorted(after.out.take()) == [1, 1, 1, 1, 2]  # window [100, 200) only

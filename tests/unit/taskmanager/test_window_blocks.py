"""Built-in window aggregates on the rocksdb backend, in columnar blocks (one RocksDB value
per key group and window): the results and the canonical snapshots are exactly those of
the same records added one by one on the hashmap backend; a snapshot, canonical or
incremental, restores at another parallelism by key groups and on the hashmap backend;
blocks the cache drops are read back from RocksDB; what arrays cannot hold exactly is
held as it is on the per-record path."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_builtin_window_aggregates import fired
from window_testing import Harness, window_payload

from weir.common.time import Time
from weir.core.checkpoint import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    read_state,
)
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.ids import JobId
from weir.core.key_group_arrays import KeyGroupTable, int_key_groups
from weir.core.key_groups import PyFlinkKeyHasher
from weir.datastream.aggregate_functions import Avg, Count, Max, Min, Sum
from weir.datastream.output_tag import OutputTag
from weir.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
from weir.datastream.window_triggers import EventTimeTrigger
from weir.taskmanager.checkpointing.snapshot import (
    KeyGroupsSnapshot,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.operators import window_blocks
from weir.taskmanager.operators.window_blocks import BlockWindowIndex
from weir.taskmanager.operators.window_state import CONTENTS
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_blocks import blocks_table
from weir.taskmanager.state.rocksdb_full_snapshot import RocksDBFullSnapshot
from weir.taskmanager.state.rocksdb_incremental import RocksDBNativeSnapshot, restore_native
from weir.taskmanager.state.window_block_codec import BlockArrays, decode_block, encode_block

M = 128
SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))
BUILTINS = [Count(), Sum(1), Min(1), Max(1), Avg(1)]


@functools.cache
def _payload(aggregate: Any, size: int, slide: int, late_tag: bool = False) -> dict[str, Any]:
    assigner = (
        TumblingEventTimeWindows.of(Time.milliseconds(size))
        if size == slide
        else SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide))
    )

    def build(ds: Any) -> Any:
        windowed = ds.key_by(lambda r: r[0]).window(assigner)
        if late_tag:
            windowed = windowed.side_output_late_data(OutputTag("late"))
        return windowed.aggregate(aggregate)

    return window_payload(build)


def rocksdb(tmp_path: Any, key_groups: range = range(M)) -> RocksDBKeyedStateBackend:
    """A backend in memory where the machine has a tmpfs (RocksDB syncs its manifest on
    every column family it creates: on a busy disk that, not the test, takes seconds);
    disposed by the test, which deletes its directory."""
    root = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    return RocksDBKeyedStateBackend(M, key_groups, str(root / f"weir-test-db-{uuid.uuid4().hex}"))


def columns(keys: Any, values: Any) -> ColumnBatch:
    return ColumnBatch(
        {"f0": np.asarray(keys, dtype=np.int64), "f1": np.asarray(values, dtype=np.float64)}, SPEC
    )


def send_both(by_records: Harness, by_blocks: Harness, keys: Any, values: Any, stamps: Any) -> None:
    by_records.op.process(list(zip(keys, values, strict=True)), list(stamps))
    by_blocks.op.process(columns(keys, values), list(stamps))


batches = st.lists(
    st.lists(
        st.tuples(
            st.integers(-3, 300),  # key
            st.floats(-1e6, 1e6, allow_nan=False, width=32) | st.sampled_from([0.0, -0.0]),
            st.integers(0, 400),  # timestamp
        ),
        min_size=1,
        max_size=40,
    ),
    min_size=1,
    max_size=5,
)


# Records of columns merged into their blocks every few records with keys a few apart
# (counted and placed over their range), or only before a window fires or a snapshot is
# taken with keys far apart (sorted, hashed).
@pytest.mark.parametrize(("pending", "spread"), [(7, 1), (1 << 22, 2**40 + 1)])
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=batches,
    builtin=st.sampled_from(range(len(BUILTINS))),
    size_and_slide=st.sampled_from([(100, 100), (100, 25)]),
    watermark_lag=st.integers(0, 120),
)
def test_blocks_give_what_records_give(
    tmp_path, batches, builtin, size_and_slide, watermark_lag, pending, spread
):
    saved, window_blocks._PENDING_EVENTS = window_blocks._PENDING_EVENTS, pending
    batches = [[(k * spread, v, t) for k, v, t in batch] for batch in batches]
    try:
        _blocks_give_what_records_give(tmp_path, batches, builtin, size_and_slide, watermark_lag)
    finally:
        window_blocks._PENDING_EVENTS = saved


def _blocks_give_what_records_give(tmp_path, batches, builtin, size_and_slide, watermark_lag):
    size, slide = size_and_slide
    payload = _payload(BUILTINS[builtin], size, slide)
    by_records = Harness(payload)
    backend = rocksdb(tmp_path)
    by_blocks = Harness(payload, backend=backend)
    assert isinstance(by_blocks.op._aligned._index, BlockWindowIndex)
    assert by_blocks.op.columnar
    for batch in batches:
        keys, values, stamps = zip(*batch, strict=True)
        send_both(by_records, by_blocks, keys, values, stamps)
        watermark = max(stamps) - watermark_lag
        by_records.watermark(watermark)
        by_blocks.watermark(watermark)
        assert fired(by_blocks.out.log) == fired(by_records.out.log)
        assert by_blocks.checkpoint() == by_records.checkpoint()
    by_records.watermark(10_000)
    by_blocks.watermark(10_000)
    assert fired(by_blocks.out.log) == fired(by_records.out.log)
    backend.dispose()


def test_a_window_is_one_value_per_key_group(tmp_path):
    backend = rocksdb(tmp_path)
    harness = Harness(_payload(Count(), 100, 100), backend=backend)
    keys = np.arange(10_000)
    harness.op.process(columns(keys, keys), [5] * len(keys))
    harness.op.process(columns(keys[:10], keys[:10]), [150] * 10)
    harness.op.snapshot_state(1)
    blocks = backend.column_families()[blocks_table(CONTENTS)]
    stored = list(blocks.keys())
    later = {backend.key_group_of(k) for k in range(10)}
    assert len(stored) == M + len(later)  # every key group in window 0, ten keys' in 100
    contents = backend.column_families()[CONTENTS]
    assert not list(contents.keys())
    harness.watermark(99)
    assert sorted(harness.out.records) == [1] * 10_000
    assert len(list(blocks.keys())) == len(later)  # the fired window's blocks are gone
    backend.dispose()


def _fill(harness: Harness, reference: Harness, seed: int, start: int) -> None:
    rng = np.random.default_rng(seed)
    for i in range(3):
        keys = rng.integers(0, 2_000, 1_000)
        values = rng.random(1_000)
        stamps = np.sort(rng.integers(start + i * 40, start + i * 40 + 90, 1_000))
        send_both(reference, harness, keys.tolist(), values.tolist(), stamps.tolist())


def _restored_on(backend: Any, snapshot: Any, payload: dict[str, Any]) -> Harness:
    if snapshot is not None:
        backend.restore([decode_keyed_state(snapshot, backend.key_group_range)])
    return Harness(payload, backend=backend)


@pytest.mark.parametrize("aggregate", [Count(), Avg(1)])
def test_a_canonical_snapshot_restores_at_another_parallelism(tmp_path, aggregate):
    payload = _payload(aggregate, 100, 50)
    reference = Harness(payload)
    before = rocksdb(tmp_path)
    harness = Harness(payload, backend=before)
    _fill(harness, reference, 1, 0)
    harness.watermark(60)
    reference.watermark(60)
    harness.op.snapshot_state(1)
    # Through a full snapshot of the frozen copy, as a full checkpoint or savepoint is taken.
    location = JobManagerCheckpointStorage(JobId("4" * 32)).init_checkpoint(1)
    handle = RocksDBFullSnapshot.take(before, 1).write(location, "op", compress=True)
    snapshot = KeyGroupsSnapshot(
        M, handle.key_groups.start, read_state(handle.handle), handle.offsets, handle.state_meta
    )
    assert decode_keyed_state(snapshot) == decode_keyed_state(
        encode_keyed_state(reference.checkpoint(), range(M))
    )
    halves = [
        _restored_on(rocksdb(tmp_path, range(0, 64)), snapshot, payload),
        _restored_on(HashMapKeyedStateBackend(M, range(64, 128)), snapshot, payload),
    ]
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 2_000, 1_000)
    values = rng.random(1_000)
    stamps = np.sort(rng.integers(100, 200, 1_000))
    reference.op.process(list(zip(keys.tolist(), values.tolist(), strict=True)), stamps.tolist())
    for half in halves:
        own = np.array(
            [half.backend.key_group_of(k) in half.backend.key_group_range for k in keys.tolist()]
        )
        half.op.process(columns(keys[own], values[own]), stamps[own].tolist())
    for h in (*halves, reference):
        h.watermark(10_000)
    assert sorted(halves[0].out.records + halves[1].out.records) == sorted(
        r for r in reference.out.records[len(harness.out.records) :]
    )
    for half in halves:
        half.backend.dispose()
    before.dispose()


def test_an_incremental_checkpoint_restores_by_key_group_ranges(tmp_path):
    payload = _payload(Sum(1), 100, 100)
    reference = Harness(payload)
    before = rocksdb(tmp_path)
    before.incremental = True
    harness = Harness(payload, backend=before)
    _fill(harness, reference, 3, 0)
    harness.op.snapshot_state(1)
    storage = FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}", JobId("r" * 32))
    storage.initialize_base_locations()
    handle = RocksDBNativeSnapshot.take(before, 1).write(storage, storage.init_checkpoint(1), "op")
    assert {m.kind for m in handle.state_meta} >= {"BLOCKS"}
    halves = []
    for key_groups in (range(0, 43), range(43, 128)):
        backend = rocksdb(tmp_path, key_groups)
        restore_native(backend, [handle], str(tmp_path / "scratch"))
        halves.append(Harness(payload, backend=backend))
    for h in (*halves, reference):
        h.watermark(10_000)
    assert len(halves[0].out.records) > 0
    assert sorted(halves[0].out.records + halves[1].out.records) == sorted(reference.out.records)
    # And whole, on the hashmap backend: the canonical form of the native handle.
    on_heap = HashMapKeyedStateBackend(M, range(M))
    restore_native(on_heap, [handle], str(tmp_path / "scratch"))
    heap = Harness(payload, backend=on_heap)
    heap.watermark(10_000)
    assert sorted(heap.out.records) == sorted(reference.out.records)
    for half in halves:
        half.backend.dispose()
    before.dispose()


def test_blocks_the_cache_drops_are_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(window_blocks, "_CACHE_BYTES", 4096)
    monkeypatch.setattr(window_blocks, "_PENDING_EVENTS", 100)
    payload = _payload(Max(1), 100, 100)
    reference = Harness(payload)
    backend = rocksdb(tmp_path)
    harness = Harness(payload, backend=backend)
    _fill(harness, reference, 4, 0)
    index = harness.op._aligned._index
    assert index._cache_bytes <= 4096 and index._stored
    for h in (harness, reference):
        h.watermark(10_000)
    assert fired(harness.out.log) == fired(reference.out.log)
    backend.dispose()


def test_what_arrays_cannot_hold_exactly_is_held_as_records_hold_it(tmp_path):
    payload = _payload(Sum(1), 100, 100)
    spec = ColumnSpec(("f0", "f1"), None, ("int64", "int64"))
    reference = Harness(payload)
    backend = rocksdb(tmp_path)
    harness = Harness(payload, backend=backend)
    big = 2**62
    keys, values = [1, 1, 2, 300], [big, big, 3, 4]  # 2**63: past int64, a Python int
    reference.op.process(list(zip(keys, values, strict=True)), [1, 2, 3, 4])
    harness.op.process(
        ColumnBatch({"f0": np.array(keys), "f1": np.array(values)}, spec), [1, 2, 3, 4]
    )
    # Records (not columns), and floats after ints in one window.
    for h in (reference, harness):
        h.op.process([(2, 0.5), (7, 1)], [5, 6])
    assert harness.checkpoint() == reference.checkpoint()
    for h in (reference, harness):
        h.watermark(10_000)
    assert fired(harness.out.log) == fired(reference.out.log)
    assert 2**63 in harness.out.records
    backend.dispose()


def test_late_records_go_where_they_go_on_the_records_path(tmp_path):
    payload = _payload(Count(), 100, 100, late_tag=True)
    reference = Harness(payload, tags=("late",))
    backend = rocksdb(tmp_path)
    harness = Harness(payload, backend=backend, tags=("late",))
    for h in (reference, harness):
        h.watermark(250)
    send_both(reference, harness, [1, 2, 3], [1.0, 2.0, 3.0], [120, 300, 299])
    for h in (reference, harness):
        h.watermark(1_000)
    assert harness.out.side == reference.out.side
    assert harness.out.side
    assert fired(harness.out.log) == fired(reference.out.log)
    backend.dispose()


@pytest.mark.parametrize(
    "block",
    [
        BlockArrays("count", np.array([-5, 3, 2**40]), np.array([1, 2, 3])),
        BlockArrays("min", np.array([1, 2]), np.array([0.5, -1.5], dtype=np.float32)),
        BlockArrays("avg", np.array([7]), np.array([2.5]), np.array([2])),
        {"a": 3, (1, 2): 4},
    ],
)
def test_a_block_reads_back_from_its_bytes(block):
    again = decode_block(encode_block(block))
    if isinstance(block, dict):
        assert again == block
        return
    assert again.accumulators() == block.accumulators()
    assert again.acc.dtype == block.acc.dtype
    again.acc[0] = again.acc[0]  # writable


def test_key_groups_remembered_over_a_climbing_key_range_are_the_hashers():
    rng = np.random.default_rng(3)
    remembered = KeyGroupTable(M, "pickled")
    for step in range(60):
        low = step * 5_000 - 100_000
        keys = rng.integers(low, low + 70_000, 30_000)
        if step % 17 == 0:  # far apart: hashed as they come
            keys = np.concatenate([keys, [2**50, -(2**45)]])
        assert remembered.of(keys).tolist() == int_key_groups(keys, "pickled", M).tolist()


def test_keys_of_a_type_not_placed_as_arrays_keep_per_key_contents(tmp_path):
    root = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    backend = RocksDBKeyedStateBackend(
        M, range(M), str(root / f"weir-test-db-{uuid.uuid4().hex}"), PyFlinkKeyHasher("String")
    )
    harness = Harness(_payload(Count(), 100, 100), backend=backend)
    assert harness.op._aligned._index is None  # contents key by key, with timers
    harness.op.process([("a", 1.0), ("b", 2.0), ("a", 3.0)], [1, 2, 3])
    harness.watermark(1_000)
    assert sorted(harness.out.records) == [1, 2]
    backend.dispose()


def test_blocks_of_an_incremental_checkpoint_restore_into_windows_kept_key_by_key(tmp_path):
    """The blocks an incremental checkpoint carries, restored where the windows are kept
    key by key with timers (the job now allows lateness): every window fires once with
    what its blocks held; the next checkpoint holds them key by key and no blocks, so a
    restore of it into blocks again gives every window once."""
    payload = _payload(Sum(1), 100, 100)
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(100))
    late_payload = window_payload(
        lambda ds: ds.key_by(lambda r: r[0]).window(assigner).allowed_lateness(50).aggregate(Sum(1))
    )
    reference = Harness(payload)
    before = rocksdb(tmp_path)
    before.incremental = True
    harness = Harness(payload, backend=before)
    _fill(harness, reference, 5, 0)
    harness.op.snapshot_state(1)
    storage = FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}", JobId("k" * 32))
    storage.initialize_base_locations()
    first = RocksDBNativeSnapshot.take(before, 1).write(storage, storage.init_checkpoint(1), "op")
    assert "BLOCKS" in {m.kind for m in first.state_meta}

    keyed = rocksdb(tmp_path)
    keyed.incremental = True
    restore_native(keyed, [first], str(tmp_path / "scratch"))
    late = Harness(late_payload, backend=keyed)
    assert late.op._aligned._index is None  # key by key, with timers
    late.op.snapshot_state(2)
    second = RocksDBNativeSnapshot.take(keyed, 2).write(storage, storage.init_checkpoint(2), "op")
    assert "BLOCKS" not in {m.kind for m in second.state_meta}

    late.watermark(10_000)
    reference.watermark(10_000)
    assert len(reference.out.records) > 1_000
    assert sorted(late.out.records) == sorted(reference.out.records)

    blocks_again = rocksdb(tmp_path)
    restore_native(blocks_again, [second], str(tmp_path / "scratch"))
    again = Harness(payload, backend=blocks_again)
    again.watermark(10_000)
    assert sorted(again.out.records) == sorted(reference.out.records)

    # And where a trigger of the user's keeps them (the general path).
    general = rocksdb(tmp_path)
    restore_native(general, [first], str(tmp_path / "scratch"))
    own_trigger = window_payload(
        lambda ds: (
            ds.key_by(lambda r: r[0]).window(assigner).trigger(OwnTrigger()).aggregate(Sum(1))
        )
    )
    assert own_trigger["fast_path"] is None
    triggered = Harness(own_trigger, backend=general)
    triggered.watermark(10_000)
    assert sorted(triggered.out.records) == sorted(reference.out.records)
    for backend in (before, keyed, blocks_again, general):
        backend.dispose()


class OwnTrigger(EventTimeTrigger):
    """The default trigger's behaviour as a trigger of the user's."""

"""Processing-time windows of the built-in aggregates over batches of columns: every record
of a batch falls in the windows that hold the time it is handled at, added as columns,
with one timer per window rather than per key. They give exactly what the same records
give one by one on the per-record path, each path restored from the other's checkpoints
at any point too (a processing-time timer per key and window, as
Flink's ProcessingTimeTrigger registers), fire each key's result once at the window's
end, and checkpoint as Arrow column blocks per key group that restore into either path,
at another parallelism too; a restored window gets its timer, and one that ended while
the job was down fires as soon as the timers run."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from window_testing import FakeClock, Harness, signed, window_payload

from weir.common.time import Time
from weir.core.checkpoint import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    read_state,
)
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.ids import JobId
from weir.core.key_groups import key_group_range_for_operator
from weir.datastream.aggregate_functions import Avg, Count, Max, Min, Sum
from weir.datastream.functions import AggregateFunction, ProcessWindowFunction
from weir.datastream.window import (
    EventTimeTrigger,
    ProcessingTimeTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingProcessingTimeWindows,
)
from weir.taskmanager.checkpointing.snapshot import (
    KeyGroupsSnapshot,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.operators.window_blocks import BlockWindowIndex
from weir.taskmanager.operators.window_columns import ColumnWindow
from weir.taskmanager.operators.window_state import CONTENTS
from weir.taskmanager.state.backend import with_columns_as_entries
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_full_snapshot import RocksDBFullSnapshot
from weir.taskmanager.state.rocksdb_incremental import RocksDBNativeSnapshot, restore_native

M = 128
SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))
BUILTINS = [Count(), Sum(1), Min(1), Max(1), Avg(1)]


class PerRecord(AggregateFunction):
    """A built-in's arithmetic as a user's AggregateFunction: the per-record path."""

    def __init__(self, builtin: Any) -> None:
        self.builtin_function = builtin

    def create_accumulator(self) -> Any:
        return self.builtin_function.create_accumulator()

    def add(self, value: Any, accumulator: Any) -> Any:
        return self.builtin_function.add(value, accumulator)

    def get_result(self, accumulator: Any) -> Any:
        return self.builtin_function.get_result(accumulator)

    def merge(self, a: Any, b: Any) -> Any:
        return self.builtin_function.merge(a, b)

    # Equal for one built-in, so that its payload is built once (``_payload``).
    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerRecord) and other.builtin_function is self.builtin_function

    def __hash__(self) -> int:
        return id(self.builtin_function)


class Labelled(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield (key, w.start, w.end, list(elements))


@functools.cache
def _payload(aggregate: Any, size: int, slide: int, labelled: bool = False) -> dict[str, Any]:
    assigner = (
        TumblingProcessingTimeWindows.of(Time.milliseconds(size))
        if size == slide
        else SlidingProcessingTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide))
    )
    window_function = Labelled() if labelled else None
    return window_payload(
        lambda ds: (
            ds.key_by(lambda r: r[0])
            .window(assigner)
            .aggregate(aggregate, window_function=window_function)
        )
    )


def _columns(keys: Any, values: Any) -> ColumnBatch:
    return ColumnBatch(
        {"f0": np.asarray(keys, dtype=np.int64), "f1": np.asarray(values, dtype=np.float64)}, SPEC
    )


def _new_results(harness: Harness, *, plain: bool = True) -> list[tuple[Any, int | None]]:
    """What the operator emitted since the last call, sorted (the keys of one window fire
    in ascending order over columns and in timer order per key, Flink's in none), each
    float with its sign unless ``plain`` (a Min of 0.0 and -0.0 keeps the first, as
    records do)."""
    out = sorted((signed(value), timestamp) for value, timestamp in harness.results())
    harness.out.records, harness.out.timestamps = [], []
    return [(value, timestamp) for (value, _sign), timestamp in out] if plain else out


def _contents(harness: Harness) -> dict[int, Any]:
    """The operator's window contents as a checkpoint holds them, key by key."""
    harness.op.snapshot_state(1)
    snapshot = with_columns_as_entries(harness.backend.snapshot())
    return {g: dict(e) for g, e in snapshot.states.get(CONTENTS, {}).items() if e}


class RecordingProcessingTimeService:
    """Records what is scheduled on it; runs what is due when told to."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[int, Callable[[], None]]] = []

    def schedule(self, timestamp_ms: int, callback: Callable[[], None]) -> None:
        self.scheduled.append((timestamp_ms, callback))

    def run_due(self, now: int) -> None:
        due = [c for t, c in self.scheduled if t <= now]
        self.scheduled = [(t, c) for t, c in self.scheduled if t > now]
        for callback in due:
            callback()


steps = st.lists(
    st.tuples(
        st.integers(0, 90),  # how far the clock moves first
        st.lists(  # a batch handled then, or (empty) the timers due then fire
            st.tuples(
                st.integers(0, 5),
                st.floats(-1e6, 1e6, allow_nan=False, width=32) | st.sampled_from([0.0, -0.0]),
            ),
            max_size=25,
        ),
        st.booleans(),  # then each restores the other's checkpoint
    ),
    min_size=1,
    max_size=10,
)


def _restored_from(payload: dict[str, Any], snapshot: Any, clock: FakeClock) -> Harness:
    backend = HashMapKeyedStateBackend(M, range(M))
    backend.restore([snapshot])
    return Harness(payload, backend=backend, clock=clock)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=steps,
    builtin=st.sampled_from(range(len(BUILTINS))),
    size_and_slide=st.sampled_from([(50, 50), (100, 100), (100, 25), (60, 20)]),
    start=st.integers(0, 99),
)
def test_columns_give_what_records_give(steps, builtin, size_and_slide, start):
    size, slide = size_and_slide
    aggregate = BUILTINS[builtin]
    clock = FakeClock(1_000 + start)
    by_records = Harness(_payload(PerRecord(aggregate), size, slide), clock=clock)
    by_columns = Harness(_payload(aggregate, size, slide), clock=clock)
    assert by_columns.op.columnar
    assert not by_records.op.columnar
    for advance, batch, swap in steps:
        clock.now += advance
        if batch:
            by_records.op.process([(k, v) for k, v in batch], None)
            by_columns.op.process(_columns(*zip(*batch, strict=True)), None)
        else:
            by_records.fire_processing_timers()
            by_columns.fire_processing_timers()
        assert _new_results(by_columns, plain=False) == _new_results(by_records, plain=False)
        assert _contents(by_columns) == _contents(by_records)
        # One timer per window: none kept per key.
        assert by_columns.op.timers.num_processing_time_timers == 0
        if swap:  # the columns' checkpoint restored per record, and the other way round
            from_columns, from_records = by_columns.checkpoint(), by_records.checkpoint()
            by_records = _restored_from(
                _payload(PerRecord(aggregate), size, slide), from_columns, clock
            )
            by_columns = _restored_from(_payload(aggregate, size, slide), from_records, clock)
    clock.now += 10 * size
    by_records.fire_processing_timers()
    by_columns.fire_processing_timers()
    assert _new_results(by_columns) == _new_results(by_records)
    assert _contents(by_columns) == _contents(by_records) == {}


def test_each_key_fires_once_at_the_window_end_and_nothing_at_end_of_input():
    clock = FakeClock(1_000)
    harness = Harness(_payload(Count(), 100, 100), clock=clock)
    harness.op.process(_columns([1, 2, 1], [0.0, 0.0, 0.0]), None)
    clock.now = 1_050
    harness.op.process(_columns([2, 3], [0.0, 0.0]), None)
    clock.now = 1_098
    harness.fire_processing_timers()
    assert harness.results() == []
    clock.now = 1_099
    harness.fire_processing_timers()
    assert _new_results(harness) == [(1, 1_099), (2, 1_099), (2, 1_099)]
    clock.now = 1_500
    harness.fire_processing_timers()
    assert harness.results() == []  # fired once, then purged
    harness.op.process(_columns([7], [0.0]), None)
    harness.watermark(2**63 - 1)  # the watermark fires no processing-time window
    harness.op.finish()
    assert harness.results() == []


def test_the_timer_service_wakes_at_each_window_end():
    clock = FakeClock(1_000)
    service = RecordingProcessingTimeService()
    harness = Harness(_payload(Count(), 100, 50), clock=clock, processing_timers=service)
    harness.op.process(_columns([1, 2], [0.0, 0.0]), None)  # windows [950, 1050), [1000, 1100)
    assert [t for t, _ in service.scheduled] == [1_049]
    clock.now = 1_049
    service.run_due(clock.now)
    assert _new_results(harness) == [(1, 1_049), (1, 1_049)]  # a count per key
    assert [t for t, _ in service.scheduled] == [1_099]
    clock.now = 1_120
    service.run_due(clock.now)
    assert _new_results(harness) == [(1, 1_099), (1, 1_099)]
    assert service.scheduled == []


def _checkpoint(harness: Harness) -> KeyGroupsSnapshot:
    harness.op.snapshot_state(1)
    backend = harness.backend
    return encode_keyed_state(backend.snapshot(), backend.key_group_range)


def _restored(
    payload: dict[str, Any],
    checkpoints: list[KeyGroupsSnapshot],
    groups: range,
    clock: FakeClock,
    service: RecordingProcessingTimeService | None = None,
) -> Harness:
    backend = HashMapKeyedStateBackend(M, groups)
    backend.restore([decode_keyed_state(c, groups) for c in checkpoints])
    return Harness(payload, backend=backend, clock=clock, processing_timers=service)


KEYS = np.arange(-300, 700, dtype=np.int64) * 7919
VALUES = np.linspace(-5.0, 5.0, len(KEYS))


def _fill(harness: Harness, clock: FakeClock, own: Callable[[int], bool] = lambda k: True) -> None:
    """Records at 1_000 (windows [1_000, 1_100) and [950, 1_050) of a sliding window) and
    at 1_060, those of ``own`` keys."""
    for now, rows in ((1_000, slice(0, 600)), (1_060, slice(400, 1_000))):
        clock.now = now
        mine = np.array([own(k) for k in KEYS[rows].tolist()], dtype=bool)
        harness.op.process(_columns(KEYS[rows][mine], VALUES[rows][mine]), None)


def _reference(aggregate: Any, size: int, slide: int, until: int) -> list[Any]:
    """What a run never checkpointed gives: every window's results, fired at ``until``."""
    clock = FakeClock()
    reference = Harness(_payload(PerRecord(aggregate), size, slide), clock=clock)
    _fill(reference, clock)
    clock.now = until
    reference.fire_processing_timers()
    return _new_results(reference)


@pytest.mark.parametrize(("parts_before", "parts_after"), [(1, 1), (1, 2), (2, 1), (2, 3)])
@pytest.mark.parametrize("aggregate", [Count(), Avg(1)], ids=["count", "avg"])
def test_a_columnar_checkpoint_restores_as_columns_at_any_parallelism(
    parts_before, parts_after, aggregate
):
    payload = _payload(aggregate, 100, 50)
    clock = FakeClock()
    checkpoints = []
    for part in range(parts_before):
        groups = key_group_range_for_operator(M, parts_before, part)
        harness = Harness(payload, backend=HashMapKeyedStateBackend(M, groups), clock=clock)
        _fill(harness, clock, lambda k, h=harness, g=groups: h.backend.key_group_of(k) in g)
        checkpoint = _checkpoint(harness)
        decoded = decode_keyed_state(checkpoint)
        assert not decoded.states.get(CONTENTS), "the windows went in key by key"
        assert decoded.columns[CONTENTS]
        assert not decoded.states.get("_weir_timers_processing")
        checkpoints.append(checkpoint)

    # Down until 1_080: window [950, 1_050) ended meanwhile; [1_000, 1_100) and
    # [1_050, 1_150) are still open.
    clock.now = 1_080
    results: list[Any] = []
    for part in range(parts_after):
        groups = key_group_range_for_operator(M, parts_after, part)
        service = RecordingProcessingTimeService()
        harness = _restored(payload, checkpoints, groups, clock, service)
        assert harness.op.columnar
        windows = harness.op._aligned._index._windows
        assert windows and all(isinstance(w, ColumnWindow) for w in windows.values())
        held = {k for w in windows.values() for k in w.as_dict()}
        assert held == {k for k in KEYS.tolist() if harness.backend.key_group_of(k) in groups}
        # The earliest restored window's timer is due already: the service runs it at once.
        assert [t for t, _ in service.scheduled] == [1_049]
        service.run_due(clock.now)
        assert {t for _, t in harness.results()} == {1_049}
        clock.now = 2_000
        service.run_due(clock.now)
        assert service.scheduled == []
        results += harness.results()
        clock.now = 1_080
    assert sorted(results) == _reference(aggregate, 100, 50, 2_000)


@pytest.mark.parametrize("aggregate", BUILTINS, ids=lambda a: a.kind)
def test_a_columnar_checkpoint_restores_into_the_per_record_path_with_timers(aggregate):
    clock = FakeClock()
    columnar = Harness(_payload(aggregate, 100, 50), clock=clock)
    _fill(columnar, clock)
    checkpoint = _checkpoint(columnar)

    clock.now = 1_080  # window [950, 1_050) ended while the job was down
    per_record = _restored(_payload(PerRecord(aggregate), 100, 50), [checkpoint], range(M), clock)
    assert not per_record.op.columnar
    entries = sum(1 for _ in per_record.op.contents.entries())
    assert entries and per_record.op.timers.num_processing_time_timers == entries
    per_record.fire_processing_timers()
    assert {t for _, t in per_record.results()} == {1_049}
    clock.now = 2_000
    per_record.fire_processing_timers()
    assert _new_results(per_record) == _reference(aggregate, 100, 50, 2_000)
    assert per_record.op.timers.num_processing_time_timers == 0
    assert not any(True for _ in per_record.op.contents.entries())


def test_a_per_record_checkpoint_restores_into_the_columnar_path():
    clock = FakeClock()
    per_record = Harness(_payload(PerRecord(Sum(1)), 100, 50), clock=clock)
    _fill(per_record, clock)
    checkpoint = _checkpoint(per_record)
    assert not decode_keyed_state(checkpoint).columns  # key by key, with a timer each
    assert per_record.op.timers.num_processing_time_timers

    clock.now = 1_080
    service = RecordingProcessingTimeService()
    columnar = _restored(_payload(Sum(1), 100, 50), [checkpoint], range(M), clock, service)
    assert columnar.op.columnar
    # The index took the windows and their timers over: one per window, none per key.
    assert columnar.op.timers.num_processing_time_timers == 0
    assert [t for t, _ in service.scheduled] == [1_049]
    columnar.op.process(_columns([3], [1.0]), None)  # into [1_050, 1_150)
    service.run_due(clock.now)
    clock.now = 2_000
    service.run_due(clock.now)
    expected = [*_reference(Sum(1), 100, 50, 2_000), (1.0, 1_099), (1.0, 1_149)]
    assert _new_results(columnar) == sorted(expected)
    # Columns again: the next checkpoint holds blocks.
    clock.now = 2_010
    columnar.op.process(_columns([3], [1.0]), None)
    assert decode_keyed_state(_checkpoint(columnar)).columns[CONTENTS]


def test_a_process_window_function_sees_each_key_once_per_window():
    clock = FakeClock(1_000)
    columnar = Harness(_payload(Count(), 100, 100, labelled=True), clock=clock)
    by_records = Harness(_payload(PerRecord(Count()), 100, 100, labelled=True), clock=clock)
    assert columnar.op.columnar
    for harness in (columnar, by_records):
        harness.op.process(_columns([1, 2, 1], [0.0, 0.0, 0.0]), None)
    clock.now = 1_099
    for harness in (columnar, by_records):
        harness.fire_processing_timers()
    expected = [((1, 1_000, 1_100, [2]), 1_099), ((2, 1_000, 1_100, [1]), 1_099)]
    assert _new_results(columnar) == _new_results(by_records) == expected
    clock.now = 1_500
    for harness in (columnar, by_records):
        harness.fire_processing_timers()
        assert harness.results() == []


def rocksdb(tmp_path: Any, key_groups: range = range(M)) -> RocksDBKeyedStateBackend:
    root = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    return RocksDBKeyedStateBackend(M, key_groups, str(root / f"weir-test-db-{uuid.uuid4().hex}"))


def test_on_rocksdb_the_windows_are_kept_in_blocks_with_one_timer_each(tmp_path):
    clock = FakeClock()
    backend = rocksdb(tmp_path)
    try:
        blocks = Harness(_payload(Avg(1), 100, 50), backend=backend, clock=clock)
        assert isinstance(blocks.op._aligned._index, BlockWindowIndex)
        _fill(blocks, clock)
        assert blocks.op.timers.num_processing_time_timers == 0
        clock.now = 2_000
        blocks.fire_processing_timers()
        assert _new_results(blocks) == _reference(Avg(1), 100, 50, 2_000)
    finally:
        backend.dispose()


class LikeTheDefault(ProcessingTimeTrigger):
    """The default trigger's behaviour as a trigger of the user's: the general path."""


class LikeTheEventTimeDefault(EventTimeTrigger):
    """Likewise in event time."""


@functools.cache
def _with_trigger(aggregate: Any, trigger: Any) -> dict[str, Any]:
    """Windows [k * 50, k * 50 + 100) (processing or event time) with ``trigger``."""
    if isinstance(trigger, ProcessingTimeTrigger):
        assigner = SlidingProcessingTimeWindows.of(Time.milliseconds(100), Time.milliseconds(50))
    else:
        assigner = SlidingEventTimeWindows.of(Time.milliseconds(100), Time.milliseconds(50))
    payload = window_payload(
        lambda ds: ds.key_by(lambda r: r[0]).window(assigner).trigger(trigger).aggregate(aggregate)
    )
    assert payload["fast_path"] is None
    return payload


@pytest.mark.parametrize("aggregate", [Count(), Avg(1)], ids=["count", "avg"])
def test_a_columnar_checkpoint_restores_into_a_window_with_a_trigger_of_its_own(aggregate):
    clock = FakeClock()
    columnar = Harness(_payload(aggregate, 100, 50), clock=clock)
    _fill(columnar, clock)
    checkpoint = _checkpoint(columnar)

    clock.now = 1_080
    general = _restored(_with_trigger(aggregate, LikeTheDefault()), [checkpoint], range(M), clock)
    entries = sum(1 for _ in general.op.contents.entries())
    assert entries and general.op.timers.num_processing_time_timers == entries
    general.fire_processing_timers()
    assert {t for _, t in general.results()} == {1_049}
    clock.now = 2_000
    general.fire_processing_timers()
    assert _new_results(general) == _reference(aggregate, 100, 50, 2_000)
    assert not any(True for _ in general.op.contents.entries())


def test_a_checkpoint_of_a_window_with_a_trigger_of_its_own_restores_into_columns():
    clock = FakeClock()
    general = Harness(_with_trigger(Sum(1), LikeTheDefault()), clock=clock)
    _fill(general, clock)
    checkpoint = _checkpoint(general)

    clock.now = 1_080
    service = RecordingProcessingTimeService()
    columnar = _restored(_payload(Sum(1), 100, 50), [checkpoint], range(M), clock, service)
    assert columnar.op.columnar
    # Named by their starts, as the index names them.
    assert set(columnar.op._aligned._index._windows) == {950, 1_000, 1_050}
    assert [t for t, _ in service.scheduled] == [1_049]
    clock.now = 2_000
    service.run_due(clock.now)
    assert _new_results(columnar) == _reference(Sum(1), 100, 50, 2_000)


def test_an_event_time_columnar_checkpoint_restores_into_a_trigger_of_its_own():
    def events(aggregate: Any) -> dict[str, Any]:
        assigner = SlidingEventTimeWindows.of(Time.milliseconds(100), Time.milliseconds(50))
        return window_payload(
            lambda ds: ds.key_by(lambda r: r[0]).window(assigner).aggregate(aggregate)
        )

    stamps = [1_000] * 600
    columnar = Harness(events(Count()))
    columnar.op.process(_columns(KEYS[:600], VALUES[:600]), stamps)
    checkpoint = _checkpoint(columnar)
    general = _restored(
        _with_trigger(Count(), LikeTheEventTimeDefault()), [checkpoint], range(M), FakeClock()
    )
    assert general.op.timers.num_event_time_timers == 1_200
    general.watermark(10_000)
    reference = Harness(events(PerRecord(Count())))
    reference.op.process(list(zip(KEYS[:600].tolist(), VALUES[:600].tolist(), strict=True)), stamps)
    reference.watermark(10_000)
    assert sorted(general.results()) == sorted(reference.results())


def test_rocksdb_blocks_restore_with_their_timers_whole_or_by_key_group_ranges(tmp_path):
    """A full snapshot (key by key) into the per-record path on the hashmap backend, and
    an incremental one (the blocks as they are) into two halves on rocksdb: every window
    fires once, its timer restored, as in a run never checkpointed."""
    clock = FakeClock()
    before = rocksdb(tmp_path)
    before.incremental = True
    backends = [before]
    try:
        blocks = Harness(_payload(Count(), 100, 50), backend=before, clock=clock)
        _fill(blocks, clock)
        blocks.op.snapshot_state(1)
        location = JobManagerCheckpointStorage(JobId("5" * 32)).init_checkpoint(1)
        full = RocksDBFullSnapshot.take(before, 1).write(location, "op", compress=True)
        full_snapshot = KeyGroupsSnapshot(
            M, full.key_groups.start, read_state(full.handle), full.offsets, full.state_meta
        )
        storage = FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}", JobId("6" * 32))
        storage.initialize_base_locations()
        native = RocksDBNativeSnapshot.take(before, 1).write(
            storage, storage.init_checkpoint(1), "op"
        )
        expected = _reference(Count(), 100, 50, 2_000)

        clock.now = 1_080
        per_record = _restored(
            _payload(PerRecord(Count()), 100, 50), [full_snapshot], range(M), clock
        )
        assert per_record.op.timers.num_processing_time_timers == sum(
            1 for _ in per_record.op.contents.entries()
        )
        clock.now = 2_000
        per_record.fire_processing_timers()
        assert _new_results(per_record) == expected

        clock.now = 1_080
        results: list[Any] = []
        for groups in (range(0, 43), range(43, M)):
            half = rocksdb(tmp_path, groups)
            backends.append(half)
            restore_native(half, [native], str(tmp_path / "scratch"))
            service = RecordingProcessingTimeService()
            harness = Harness(
                _payload(Count(), 100, 50), backend=half, clock=clock, processing_timers=service
            )
            assert isinstance(harness.op._aligned._index, BlockWindowIndex)
            assert [t for t, _ in service.scheduled] == [1_049]
            clock.now = 2_000
            service.run_due(clock.now)
            assert service.scheduled == []
            results += harness.results()
            clock.now = 1_080
        assert sorted(results) == expected
    finally:
        for backend in backends:
            backend.dispose()

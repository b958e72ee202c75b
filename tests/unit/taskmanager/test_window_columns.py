"""Windows of a built-in aggregate held as columns (``ColumnWindow``): the accumulators
are those the built-in's ``add`` makes record after record, dense or sparse, and the
window operator mixing batches of columns and of records, checkpointing and restoring
into other key-group ranges, gives what the records path gives."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from window_testing import Harness, window_payload

from weir.common.time import Time
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.windowing import MissingTimestampError
from weir.datastream.aggregate_functions import Avg, Count, Max, Min, Sum
from weir.datastream.window import TumblingEventTimeWindows
from weir.taskmanager.operators.window_columns import (
    ColumnWindow,
    Lease,
    place_each,
    place_in_windows,
)
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

BUILTINS = {"count": Count(), "sum": Sum(1), "min": Min(1), "max": Max(1), "avg": Avg(1)}


def by_records(kind: str, batches: list[list[tuple[int, Any]]]) -> dict[Any, Any]:
    """``{key: accumulator}`` as the built-in's ``add`` makes it, record after record."""
    function = BUILTINS[kind]
    accs: dict[Any, Any] = {}
    for batch in batches:
        for k, v in batch:
            acc = accs[k] if k in accs else function.create_accumulator()
            accs[k] = function.add((k, v), acc)
    return accs


keys = st.one_of(st.integers(-5, 5), st.integers(-(2**40), 2**40))
int_batches = st.lists(
    st.lists(st.tuples(keys, st.integers(-(2**31), 2**31)), min_size=1, max_size=40),
    min_size=1,
    max_size=5,
)
float_batches = st.lists(
    st.lists(st.tuples(keys, st.floats(-1e9, 1e9, allow_nan=False)), min_size=1, max_size=40),
    min_size=1,
    max_size=5,
)


def _window(
    kind: str,
    batches: list[list[tuple[int, Any]]],
    dtype: Any,
    span: Any = None,
    *,
    bounded: bool = False,
) -> ColumnWindow:
    """The window of ``batches``; ``bounded``: each added with the bounds of all their
    keys (as a window's share of a larger batch is)."""
    window = ColumnWindow(kind, span)
    every = [k for batch in batches for k, _ in batch]
    bounds = (min(every), max(every)) if bounded else None
    for batch in batches:
        ks = np.array([k for k, _ in batch], dtype=np.int64)
        vs = np.array([v for _, v in batch], dtype=dtype)
        assert window.add(ks, None if kind == "count" else vs, bounds)
    return window


def _exact(expected: dict[Any, Any], got: dict[Any, Any]) -> None:
    assert got == expected
    for k, acc in expected.items():  # the same types too: 3 is not 3.0 in a result type
        assert type(got[k]) is type(acc), (k, got[k], acc)


@settings(max_examples=60, deadline=None)
@given(batches=int_batches, kind=st.sampled_from(sorted(BUILTINS)))
def test_integer_values_accumulate_as_add_does(batches, kind):
    window = _window(kind, batches, np.int64)
    expected = by_records(kind, batches)
    _exact(expected, window.as_dict())
    results = [BUILTINS[kind].get_result(expected[k]) for k in sorted(expected)]
    assert window.results() == results


@settings(max_examples=60, deadline=None)
@given(batches=float_batches, kind=st.sampled_from(["sum", "min", "max", "avg"]))
def test_float_values_accumulate_as_add_does_in_record_order(batches, kind):
    window = _window(kind, batches, np.float64)
    expected = by_records(kind, batches)
    _exact(expected, window.as_dict())
    results = [BUILTINS[kind].get_result(expected[k]) for k in sorted(expected)]
    assert window.results() == results


@settings(max_examples=60, deadline=None)
@given(
    batches=int_batches,
    kind=st.sampled_from(sorted(BUILTINS)),
    span=st.tuples(st.integers(-(2**20), 2**20), st.integers(0, 2**17), st.integers(1, 2**16)),
)
def test_a_span_shapes_the_arrays_not_the_accumulators(batches, kind, span):
    low, width, count = span
    for bounded in (False, True):
        window = _window(kind, batches, np.int64, (low, low + width, count), bounded=bounded)
        _exact(by_records(kind, batches), window.as_dict())


def test_a_window_spanning_the_last_ones_keys_is_made_that_wide_at_once():
    """A new window's first batch holds a few of the keys the last window held: its
    arrays span all of those, so later batches need not widen them."""
    window = ColumnWindow("count", (0, 9_999, 10_000))
    assert window.add(np.arange(100, 200), None)
    assert window.low == 0 and len(window.acc) == 10_000
    acc_before = window.acc
    assert window.add(np.arange(9_000, 10_000), None)
    assert window.acc is acc_before  # added in place, not widened
    assert window.key_span() == (0, 9_999, 1_100)
    assert window.as_dict() == {k: 1 for k in [*range(100, 200), *range(9_000, 10_000)]}


def test_sparse_arrays_whose_keys_fill_their_range_turn_dense():
    """A window whose first batch holds a few keys of a wide range starts sparse; once its
    keys fill the range, it turns dense with the same accumulators, and the next window
    (given its span) is dense from its first batch."""
    keys = np.random.default_rng(7).permutation(1_000_000)
    window = ColumnWindow("sum")
    expected: dict[int, int] = {}
    for part in np.array_split(keys, 8):
        assert window.add(part, part * 2)
        expected.update({k: 2 * k for k in part.tolist()})
    assert window.low == 0 and window.keys is None  # dense now
    assert window.as_dict() == expected
    span = window.key_span()
    assert span == (0, 999_999, 1_000_000)
    after = ColumnWindow("sum", span)
    assert after.add(keys[:65_536], keys[:65_536])
    assert after.low == 0 and len(after.acc) == 1_000_000


def test_keys_over_a_narrow_range_are_dense_and_a_wide_one_sparse():
    dense = ColumnWindow("count")
    assert dense.add(np.array([3, 1, 3, 2]), None)
    assert dense.low == 1
    assert dense.as_dict() == {1: 1, 2: 1, 3: 2}
    # A key far away: the arrays would be mostly empty, so the window turns sparse.
    assert dense.add(np.array([10**12, 3]), None)
    assert dense.low is None
    assert dense.as_dict() == {1: 1, 2: 1, 3: 3, 10**12: 1}
    assert dense.results() == [1, 1, 3, 1]


def test_what_arrays_cannot_hold_exactly_is_refused_unchanged():
    window = ColumnWindow("min")
    assert window.add(np.array([1, 2]), np.array([5.0, 6.0]))
    assert not window.add(np.array([1]), np.array([np.nan]))  # Python's < with NaN
    assert not window.add(np.array([1]), np.array([4]))  # ints into float minima
    assert not window.add(np.array(["a"]), np.array([4.0]))  # keys that are not integers
    assert window.as_dict() == {1: 5.0, 2: 6.0}
    assert ColumnWindow.from_dict("sum", {1: 2, 2: 2.5}) is None  # int and float sums
    assert ColumnWindow.from_dict("count", {"a": 1}) is None


# --- the operator ----------------------------------------------------------------------

SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))


@functools.cache
def _payload(kind: str) -> dict[str, Any]:
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(100))
    return window_payload(
        lambda ds: ds.key_by(lambda r: r[0]).window(assigner).aggregate(BUILTINS[kind])
    )


def _columns(batch: list[tuple[int, float, int]]) -> ColumnBatch:
    return ColumnBatch(
        {
            "f0": np.array([k for k, _, _ in batch], dtype=np.int64),
            "f1": np.array([v for _, v, _ in batch], dtype=np.float64),
        },
        SPEC,
    )


def _results(harnesses: list[Harness]) -> list[tuple[Any, int | None]]:
    return sorted(r for h in harnesses for r in h.results())


operator_batches = st.lists(
    st.tuples(
        st.booleans(),  # as columns (else as records)
        st.lists(
            st.tuples(
                st.one_of(st.integers(0, 6), st.integers(0, 2**40)),
                st.floats(-1e6, 1e6, allow_nan=False, width=32),
                st.integers(0, 400),
            ),
            min_size=1,
            max_size=25,
        ),
        st.integers(0, 150),  # watermark lag
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=operator_batches,
    kind=st.sampled_from(sorted(BUILTINS)),
    restore_after=st.integers(0, 6),
    parts=st.sampled_from([1, 2, 3]),
)
def test_columns_records_and_a_rescaling_restore_give_what_records_give(
    batches, kind, restore_after, parts
):
    """Batches of columns and of records mixed, late records among them, and after
    ``restore_after`` batches a checkpoint restored into ``parts`` operators that split
    the key groups: the results (value, timestamp) are those of records alone, and the
    records dropped as late the same."""
    reference = Harness(_payload(kind))
    running = [Harness(_payload(kind))]
    dropped_before_restore = 0
    for i, (as_columns, batch, lag) in enumerate(batches):
        if i == restore_after:
            snapshot = running[0].checkpoint() if len(running) == 1 else None
            if snapshot is not None:
                fired = running[0].results()
                dropped_before_restore = running[0].op.num_late_records_dropped
                running = []
                for part in range(parts):
                    groups = range(part * 128 // parts, (part + 1) * 128 // parts)
                    backend = HashMapKeyedStateBackend(128, groups)
                    backend.restore([snapshot])
                    harness = Harness(_payload(kind), backend=backend)
                    harness.watermark(reference.op.timers.current_watermark)
                    running.append(harness)
                running[0].out.records[:0] = [r for r, _ in fired]
                running[0].out.timestamps[:0] = [t for _, t in fired]
        stamps = [t for _, _, t in batch]
        reference.op.process([(k, v) for k, v, _ in batch], stamps)
        for harness in running:
            rows = [
                j
                for j, (k, _, _) in enumerate(batch)
                if harness.backend.key_group_of(k) in harness.backend.key_group_range
            ]
            if not rows:
                continue
            part = [batch[j] for j in rows]
            part_stamps = [stamps[j] for j in rows]
            if as_columns:
                harness.op.process(_columns(part), part_stamps)
            else:
                harness.op.process([(k, v) for k, v, _ in part], part_stamps)
        watermark = max(stamps) - lag
        if watermark > reference.op.timers.current_watermark:
            reference.watermark(watermark)
            for harness in running:
                harness.watermark(watermark)
    reference.watermark(10_000)
    for harness in running:
        harness.watermark(10_000)
    assert _results(running) == sorted(reference.results())
    dropped = dropped_before_restore + sum(h.op.num_late_records_dropped for h in running)
    assert dropped == reference.op.num_late_records_dropped


def test_a_column_batch_with_a_record_without_timestamp_is_refused():
    harness = Harness(_payload("count"))
    with pytest.raises(MissingTimestampError, match="without a timestamp"):
        harness.op.process(_columns([(1, 1.0, 5), (2, 2.0, 6)]), [5, None])


@pytest.mark.parametrize(
    ("output_type", "late_tag", "as_columns"),
    [
        (None, False, True),  # undeclared: pickled, any dtype
        ("LONG", False, True),
        ("INT", False, False),  # int32: coded value by value, as PyFlink codes it
        ("LONG", True, False),  # a late-data side output: results are routed one by one
    ],
)
def test_a_builtin_over_columns_fires_a_window_as_one_column(output_type, late_tag, as_columns):
    """Counts of a window filled from columns go on as a batch of one column (keys
    ascending) with an array of timestamps, where the results' type is the column's and
    nothing reads them one by one; otherwise as values. The values are the same."""
    from weir.common import Types
    from weir.datastream.output_tag import OutputTag

    assigner = TumblingEventTimeWindows.of(Time.milliseconds(100))
    declared = None if output_type is None else getattr(Types, output_type)()

    def build(ds: Any) -> Any:
        windowed = ds.key_by(lambda r: r[0]).window(assigner)
        if late_tag:
            windowed = windowed.side_output_late_data(OutputTag("late", Types.PICKLED_BYTE_ARRAY()))
        return windowed.aggregate(Count(), output_type=declared)

    harness = Harness(window_payload(build), tags=("late",) if late_tag else ())
    harness.op.process(
        _columns([(3, 1.0, 5), (1, 2.0, 6), (3, 3.0, 7), (9, 1.0, 150)]), [5, 6, 7, 150]
    )
    harness.watermark(120)
    ((batch, stamps),) = harness.out.batches
    if as_columns:
        assert type(batch) is ColumnBatch
        assert isinstance(stamps, np.ndarray)
    else:
        assert type(batch) is list and type(stamps) is list
    assert list(batch) == [1, 2]  # keys 1 and 3
    assert harness.out.timestamps == [99, 99]
    assert all(type(r) is int for r in harness.out.records)


def _placed(placement: Any, n: int) -> tuple[dict[int, list[int]], list[int]]:
    rows = np.arange(n)
    windows = {start: rows[at].tolist() for start, at in placement.windows()}
    return windows, placement.late_rows()


@given(
    deltas=st.lists(st.integers(0, 7_000), min_size=1, max_size=60),
    first=st.integers(-30_000, 30_000),
    shape=st.sampled_from([(10_000, 10_000, 0), (10_000, 2_000, 0), (3_000, 1_000, 500)]),
    behind=st.integers(-20_000, 20_000),
)
def test_ascending_timestamps_are_placed_as_records_one_by_one_would_be(
    deltas, first, shape, behind
):
    """Timestamps that ascend take runs of the batch by binary search; the windows and
    late records are those of the general, record-by-record placement, watermark
    anywhere around the batch."""
    size, slide, offset = shape
    ts = first + np.cumsum(np.asarray(deltas, dtype=np.int64))
    watermark = int(ts[0]) + behind
    n = len(ts)
    assert _placed(place_in_windows(ts, size, slide, offset, watermark), n) == _placed(
        place_each(ts, size, slide, offset, watermark), n
    )


@pytest.mark.parametrize("keys", [[3, 4, 5, 3], [3, 9_000_000, 5]], ids=["dense", "sparse"])
@pytest.mark.parametrize("kind", ["count", "sum", "avg"])
def test_lent_arrays_stay_as_they_were_lent_while_the_window_changes_and_fires(kind, keys):
    window = ColumnWindow(kind)
    values = np.arange(len(keys), dtype=np.float64)
    window.add(np.array(keys), values)
    before = window.as_dict()
    lease = Lease()
    lent = window.lend(lease)
    window.add(np.array([3, 5, 3]), np.ones(3))  # changed in place while lent
    column = window.result_column()  # fired while lent; what follows may change it
    column[:] = -1
    held_keys, acc, counts = lent.held()
    if kind == "avg":
        assert dict(zip(held_keys.tolist(), zip(acc.tolist(), counts.tolist()))) == before
    else:
        assert dict(zip(held_keys.tolist(), acc.tolist())) == before


@pytest.mark.parametrize("keys", [[3, 4, 5, 3], [3, 9_000_000, 5]], ids=["dense", "sparse"])
def test_a_window_fired_while_lent_hands_on_a_copy(keys):
    window = ColumnWindow("sum")
    window.add(np.array(keys), np.arange(len(keys), dtype=np.float64))
    before = window.as_dict()
    lent = window.lend(Lease())
    column = window.result_column()
    column[:] = -1  # what follows the window may change what it is handed
    held_keys, acc, _ = lent.held()
    assert dict(zip(held_keys.tolist(), acc.tolist())) == before


def test_a_window_changes_its_arrays_in_place_once_they_are_given_back():
    window = ColumnWindow("count")
    window.add(np.array([1, 2, 3]), None)
    lease = Lease()
    window.lend(lease)
    lease.release()
    acc = window.acc
    window.add(np.array([1, 2, 3]), None)
    assert window.acc is acc  # not copied
    assert window.result_column() is acc  # handed on as it is
    assert window.as_dict() == {1: 2, 2: 2, 3: 2}

"""The built-in aggregates on aligned windows: a batch of columns (added with no Python
call per record) gives exactly what the same records give one by one, whatever the
keys, values, timestamps, watermarks and windows; and checkpoints hold the same state.
The keys of one window fire in ascending order over columns and in arrival order over
records (Flink fires them in no defined order), so results are compared window by
window as multisets."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from window_testing import Harness, signed, window_payload

from weir.common.time import Time
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream.aggregate_functions import Avg, Count, Max, Min, Sum
from weir.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
from weir.taskmanager.operators.window_state import CONTENTS
from weir.taskmanager.state.backend import with_columns_as_entries


def fired(log: list[tuple[str, Any]]) -> list[Any]:
    """The log with each run of results between watermarks as a sorted list (numbers:
    results of one window may mix ints and None-free floats), each with its sign."""
    out: list[Any] = []
    run: list[Any] = []
    for entry in log:
        if entry[0] == "record":
            run.append(signed(entry[1]))
            continue
        if run:
            out.append(sorted(run))
            run = []
        out.append(entry)
    if run:
        out.append(sorted(run))
    return out


SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))
BUILTINS = [Count(), Sum(1), Min(1), Max(1), Avg(1)]


@functools.cache
def _payload(aggregate: Any, size: int, slide: int) -> dict[str, Any]:
    assigner = (
        TumblingEventTimeWindows.of(Time.milliseconds(size))
        if size == slide
        else SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide))
    )
    return window_payload(
        lambda ds: ds.key_by(lambda r: r[0]).window(assigner).aggregate(aggregate)
    )


batches = st.lists(
    st.lists(
        st.tuples(
            st.integers(0, 5),  # key
            st.floats(-1e6, 1e6, allow_nan=False, width=32) | st.sampled_from([0.0, -0.0]),
            st.integers(0, 400),  # timestamp
        ),
        min_size=1,
        max_size=30,
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=batches,
    builtin=st.sampled_from(range(len(BUILTINS))),
    size_and_slide=st.sampled_from([(50, 50), (100, 100), (100, 25), (60, 20)]),
    watermark_lag=st.integers(0, 120),
)
def test_columns_give_what_records_give(batches, builtin, size_and_slide, watermark_lag):
    size, slide = size_and_slide
    aggregate = BUILTINS[builtin]
    by_records = Harness(_payload(aggregate, size, slide))
    by_columns = Harness(_payload(aggregate, size, slide))
    assert by_columns.op.columnar
    for batch in batches:
        records = [(k, v) for k, v, _ in batch]
        stamps = [t for _, _, t in batch]
        by_records.op.process(records, stamps)
        columns = ColumnBatch(
            {
                "f0": np.array([k for k, _, _ in batch], dtype=np.int64),
                "f1": np.array([v for _, v, _ in batch], dtype=np.float64),
            },
            SPEC,
        )
        by_columns.op.process(columns, stamps)
        watermark = max(stamps) - watermark_lag
        by_records.watermark(watermark)
        by_columns.watermark(watermark)
        assert fired(by_columns.out.log) == fired(by_records.out.log)
        # Column blocks in the checkpoint, whose rows are the entries records make.
        columns_checkpoint = by_columns.checkpoint()
        assert not columns_checkpoint.states.get(CONTENTS)
        assert with_columns_as_entries(columns_checkpoint) == by_records.checkpoint()
    by_records.watermark(10_000)
    by_columns.watermark(10_000)
    assert fired(by_columns.out.log) == fired(by_records.out.log)
    assert by_columns.out.side == by_records.out.side


def test_late_records_of_a_column_batch_are_dropped_as_records_are():
    by_records = Harness(_payload(Count(), 100, 100))
    by_columns = Harness(_payload(Count(), 100, 100))
    for harness in (by_records, by_columns):
        harness.watermark(250)
    by_records.op.process([(1, 1.0), (2, 2.0)], [120, 300])
    by_columns.op.process(
        ColumnBatch({"f0": np.array([1, 2]), "f1": np.array([1.0, 2.0])}, SPEC), [120, 300]
    )
    assert by_columns.op.num_late_records_dropped == by_records.op.num_late_records_dropped == 1
    for harness in (by_records, by_columns):
        harness.watermark(1_000)
    expected = [("watermark", 250), ("record", 1), ("watermark", 1_000)]
    assert by_columns.out.log == by_records.out.log == expected


def test_a_user_aggregate_or_a_computed_key_takes_the_records_path():
    class UserCount(Count):
        builtin = None  # type: ignore[assignment]

    assert not Harness(_payload(UserCount(), 100, 100)).op.columnar
    payload = window_payload(
        lambda ds: (
            ds.key_by(lambda r: r[0] + 1)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(100)))
            .aggregate(Count())
        )
    )
    assert not Harness(payload).op.columnar

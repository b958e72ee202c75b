"""The window operator against a plain-Python reference on random out-of-order streams
whose disorder stays within the watermark bound (so nothing is late)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from window_testing import Harness, window_payload

from weir.common.time import Time
from weir.datastream.functions import ProcessWindowFunction
from weir.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from weir.taskmanager.operators.base import MAX_WATERMARK

BOUND = 20


class Summary(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        yield (key, w.start, w.end, sorted(v for _, v in elements))


def key(x: tuple[str, int]) -> str:
    return x[0]


@st.composite
def streams(draw: Any) -> list[list[tuple[tuple[str, int], int]]]:
    """Batches of ((key, value), timestamp): increasing base times, each record at most
    BOUND ms before the largest timestamp seen so far."""
    n = draw(st.integers(1, 60))
    records = []
    t = 0
    for i in range(n):
        t += draw(st.integers(0, 15))
        ts = max(0, t - draw(st.integers(0, BOUND)))
        records.append(((draw(st.sampled_from("abc")), i), ts))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    batches, last = [], 0
    for c in [*cuts, n]:
        if c > last:
            batches.append(records[last:c])
            last = c
    return batches


def run(payload: dict[str, Any], batches: list[Any], *, fast: bool) -> list[Any]:
    h = Harness(payload if fast else {**payload, "fast_path": None})
    max_ts = None
    for batch in batches:
        h.send(*batch)
        top = max(ts for _, ts in batch)
        max_ts = top if max_ts is None else max(max_ts, top)
        h.watermark(max_ts - BOUND - 1)
    h.watermark(MAX_WATERMARK)
    assert h.op.num_late_records_dropped == 0
    return sorted(zip(h.out.records, h.out.timestamps, strict=True))


def reference_aligned(batches: list[Any], size: int, slide: int) -> list[Any]:
    windows: dict[tuple[str, int], list[int]] = defaultdict(list)
    for batch in batches:
        for (k, v), ts in batch:
            start = ts - ts % slide
            while start > ts - size:
                windows[(k, start)].append(v)
                start -= slide
    return sorted(((k, s, s + size, sorted(vs)), s + size - 1) for (k, s), vs in windows.items())


def reference_sessions(batches: list[Any], gap: int) -> list[Any]:
    per_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for batch in batches:
        for (k, v), ts in batch:
            per_key[k].append((ts, v))
    out = []
    for k, items in per_key.items():
        items.sort()
        start, end, values = None, None, []
        for ts, v in items:
            if end is not None and ts <= end:
                end = max(end, ts + gap)
                values.append(v)
            else:
                if start is not None:
                    out.append(((k, start, end, sorted(values)), end - 1))
                start, end, values = ts, ts + gap, [v]
        out.append(((k, start, end, sorted(values)), end - 1))
    return sorted(out)


@settings(max_examples=60, deadline=None)
@given(streams(), st.integers(1, 30))
def test_tumbling_windows_match_the_reference(batches, size):
    payload = window_payload(
        lambda ds: (
            ds.key_by(key)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(size)))
            .process(Summary())
        )
    )
    expected = reference_aligned(batches, size, size)
    assert run(payload, batches, fast=True) == expected
    assert run(payload, batches, fast=False) == expected


@settings(max_examples=60, deadline=None)
@given(streams(), st.integers(1, 10), st.integers(1, 4))
def test_sliding_windows_match_the_reference(batches, slide, factor):
    size = slide * factor
    payload = window_payload(
        lambda ds: (
            ds.key_by(key)
            .window(SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide)))
            .process(Summary())
        )
    )
    expected = reference_aligned(batches, size, slide)
    assert run(payload, batches, fast=True) == expected
    assert run(payload, batches, fast=False) == expected


@settings(max_examples=60, deadline=None)
@given(streams(), st.integers(1, 25))
def test_session_windows_match_the_reference(batches, gap):
    payload = window_payload(
        lambda ds: (
            ds.key_by(key)
            .window(EventTimeSessionWindows.with_gap(Time.milliseconds(gap)))
            .process(Summary())
        )
    )
    assert run(payload, batches, fast=False) == reference_sessions(batches, gap)

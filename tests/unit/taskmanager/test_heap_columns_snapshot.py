"""The hashmap backend's two-part capture of windows held as columns: the task thread
encodes the entries and leaves the column blocks to the checkpoint writer, which cuts
them by key group; what the writer makes is what a capture on the task thread makes,
and what the task does after the capture does not reach it."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from window_testing import Harness, window_payload

from weir.common.time import Time
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream.aggregate_functions import Sum
from weir.datastream.window import SlidingEventTimeWindows
from weir.taskmanager.checkpointing.keyed_state_encoding import (
    HeapColumnsSnapshot,
    KeyGroupsSnapshot,
    capture_heap_state,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.operators.window_state import CONTENTS
from weir.taskmanager.state.backend import with_columns_as_entries
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))


@functools.cache
def _payload() -> dict[str, Any]:
    assigner = SlidingEventTimeWindows.of(Time.milliseconds(100), Time.milliseconds(50))
    return window_payload(lambda ds: ds.key_by(lambda r: r[0]).window(assigner).aggregate(Sum(1)))


def _send(harness: Harness, seed: int, start: int) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.integers(-50, 3_000, 2_000)
    values = rng.random(2_000)
    stamps = np.sort(rng.integers(start, start + 120, 2_000))
    batch = ColumnBatch({"f0": keys, "f1": values}, SPEC)
    harness.op.process(batch, stamps.tolist())


def _entries(snapshot: KeyGroupsSnapshot) -> dict[str, Any]:
    return dict(with_columns_as_entries(decode_keyed_state(snapshot)).states)


def test_the_writer_makes_what_the_task_thread_makes():
    harness = Harness(_payload())
    _send(harness, 1, 0)
    harness.op.snapshot_state(1)
    backend = harness.backend
    # Entries beside the blocks, in key groups the blocks fill too.
    other = backend.get_raw_table("_weir_other")
    for key in range(0, 3_000, 7):
        other[key] = {"n": key}
    captured = capture_heap_state(backend)
    assert isinstance(captured, HeapColumnsSnapshot)
    assert not captured.columns.restored and captured.columns.put[CONTENTS]
    deferred = captured.encode()
    whole = encode_keyed_state(backend.snapshot(), backend.key_group_range)
    assert deferred.state_meta == whole.state_meta
    assert deferred.key_groups == whole.key_groups
    assert decode_keyed_state(deferred).columns[CONTENTS]  # blocks, not entries
    assert _entries(deferred) == _entries(whole)
    assert len(_entries(deferred)["_weir_other"]) > 100


def test_what_the_task_does_after_the_capture_does_not_reach_it():
    reference = Harness(_payload())
    _send(reference, 2, 0)
    harness = Harness(_payload())
    _send(harness, 2, 0)
    harness.op.snapshot_state(1)
    captured = capture_heap_state(harness.backend)
    assert isinstance(captured, HeapColumnsSnapshot)
    # The same windows grow, some fire, new ones open, before the writer gets to it.
    _send(harness, 3, 40)
    harness.watermark(99)
    _send(harness, 4, 100)
    backend = HashMapKeyedStateBackend(128, range(128))
    backend.restore([decode_keyed_state(captured.encode())])
    restored = Harness(_payload(), backend=backend)
    restored.watermark(10_000)
    reference.watermark(10_000)
    assert len(reference.out.records) > 1_000
    assert sorted(restored.out.records) == sorted(reference.out.records)


def test_a_backend_without_column_blocks_is_encoded_whole_on_the_task_thread():
    backend = HashMapKeyedStateBackend(128, range(128))
    backend.get_raw_table("_weir_other").update({k: k for k in range(50)})
    captured = capture_heap_state(backend)
    assert isinstance(captured, KeyGroupsSnapshot)
    assert captured == encode_keyed_state(backend.snapshot(), range(128))

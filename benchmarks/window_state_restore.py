"""Snapshot and restore of 10 M keys' window state: the built-in Count held as columns and
stored as Arrow column blocks per key group, against the same windows held by an
AggregateFunction called record by record and stored key by key.

The window operator is driven directly on a hashmap backend (no cluster): one open
10 s tumbling event-time window holds a count for each of ``--keys`` integer keys.

- columnar: the built-in ``Count`` fed batches of columns; its snapshot is the
  operator's ``snapshot_state``, the backend's ``snapshot`` and ``encode_keyed_state``
  (the bytes a checkpoint writes); its restore ``decode_keyed_state``, the backend's
  ``restore`` and the operator's ``open`` (the windows as arrays again);
- per record: the same counts in an operator whose AggregateFunction adds record by
  record (its windows filled by restoring the columnar snapshot, which is also timed,
  as "columnar -> per record"); snapshot and restore as above, key by key.

Both are measured in each round, rounds interleaved; the report gives medians and the
load average.

    python benchmarks/window_state_restore.py [--keys N] [--rounds R]
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cloudpickle
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from window_operator import Count as CountRecords
from window_operator import window_operator

from weir.common.time import Time
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.aggregate_functions import Count
from weir.datastream.window import TumblingEventTimeWindows
from weir.taskmanager.checkpointing.snapshot import (
    KeyGroupsSnapshot,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.operators.base import Output
from weir.taskmanager.operators.window import WindowOperator
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

MAX_PARALLELISM = 128
BATCH = 1 << 20
SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "int64"))


def _payload(function: Any) -> dict[str, Any]:
    env = StreamExecutionEnvironment()
    windowed = (
        env.from_collection([(1, 1)])
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(10)))
        .aggregate(function)
    )
    return cloudpickle.loads(cloudpickle.dumps(windowed._transformation.payload))  # type: ignore[no-any-return]


def _operator(payload: dict[str, Any], backend: HashMapKeyedStateBackend) -> WindowOperator:
    op = window_operator(payload, backend, max_parallelism=MAX_PARALLELISM)
    op.open(Output(collect=lambda records, timestamps: None, emit_watermark=lambda wm: None))
    return op


def _timed(action: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    result = action(*args)
    return time.perf_counter() - started, result


def _snapshot(op: WindowOperator, backend: HashMapKeyedStateBackend) -> KeyGroupsSnapshot:
    op.snapshot_state(1)
    return encode_keyed_state(backend.snapshot(), backend.key_group_range)


def _restore(payload: dict[str, Any], checkpoint: KeyGroupsSnapshot) -> WindowOperator:
    backend = HashMapKeyedStateBackend(MAX_PARALLELISM, range(MAX_PARALLELISM))
    backend.restore([decode_keyed_state(checkpoint)])
    return _operator(payload, backend)


def one_round(keys: int) -> dict[str, float]:
    columnar_payload, per_record_payload = _payload(Count()), _payload(CountRecords())
    backend = HashMapKeyedStateBackend(MAX_PARALLELISM, range(MAX_PARALLELISM))
    op = _operator(columnar_payload, backend)
    assert op.columnar
    rng = np.random.default_rng(7)
    for begin in range(0, keys, BATCH):  # every key once or more in window [0, 10 s)
        key_column = np.arange(begin, min(keys, begin + BATCH), dtype=np.int64)
        key_column = np.concatenate([key_column, rng.choice(key_column, len(key_column) // 4)])
        stamps = np.zeros(len(key_column), dtype=np.int64)
        op.process(ColumnBatch({"f0": key_column, "f1": key_column}, SPEC), stamps)
    figures: dict[str, float] = {}
    figures["columnar snapshot s"], columnar = _timed(_snapshot, op, backend)
    figures["columnar bytes"] = len(columnar.data)
    del op, backend
    figures["columnar restore s"], restored = _timed(_restore, columnar_payload, columnar)
    del restored
    figures["columnar -> per record restore s"], per_record = _timed(
        _restore, per_record_payload, columnar
    )
    assert not per_record.columnar
    figures["per record snapshot s"], keyed = _timed(_snapshot, per_record, per_record.backend)
    figures["per record bytes"] = len(keyed.data)
    del per_record
    figures["per record restore s"], restored = _timed(_restore, per_record_payload, keyed)
    del restored, keyed, columnar
    gc.collect()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = []
    for number in range(args.rounds):
        rounds.append(one_round(args.keys))
        each = ", ".join(f"{name} {value:.2f}" for name, value in rounds[-1].items())
        print(f"round {number + 1}: {each}", flush=True)
    print(f"{args.keys:,} keys in one open window, max parallelism {MAX_PARALLELISM}")
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        median = statistics.median(values)
        if name.endswith("bytes"):
            print(f"  {name[:-6]:<34} {median / 2**20:9.1f} MB")
        else:
            each = ", ".join(f"{v:.2f}" for v in values)
            print(f"  {name[:-2]:<34} {median:9.2f} s   ({each})")
    print(f"(cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}; medians of {args.rounds})")


if __name__ == "__main__":
    main()

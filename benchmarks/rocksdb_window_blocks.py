"""q2 with a million distinct keys: the built-in ``Count`` per key in 10 s tumbling
event-time windows on the rocksdb backend (windows in columnar blocks), beside the same
job on the hashmap backend and a bare numpy loop doing the same counts, in interleaved
rounds of one run; medians.

Event i has key ``i * 7919 % keys`` (every run of ``keys`` consecutive events holds each
key once) and event time ``i // events_per_ms`` ms: with the defaults, 10 M events per
window over 1 M keys. The source hands ColumnBatches of 65,536 events at p=1; the rate
is events over the time from the source's first poll to the sink's close (cluster
start-up not counted). Every run checks its results: one count per (window, key), the
counts adding up to the events.

    python benchmarks/rocksdb_window_blocks.py [--events 30000000] [--keys 1000000]
        [--rounds 3] [--only KIND ...] [--checkpoint-ms 1000]

A run named ``rocksdb@incremental``, ``rocksdb@full`` or ``hashmap@checkpoints`` (in
``--only``) checkpoints every ``--checkpoint-ms`` (1 s by default) into a temporary
directory, every checkpoint kept: the number completed and the bytes they hold are
reported (run 100 M events or more for them: 30 M last two or three seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import BID_TYPE, BidTime, StridedBidSource, source_to_sink_rate, write_sink_stats

from weir.common import Configuration, Time, Types, WatermarkStrategy
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream import (
    BatchSinkFunction,
    EmbeddedRocksDBStateBackend,
    ExternalizedCheckpointRetention,
    HashMapStateBackend,
    StreamExecutionEnvironment,
)
from weir.datastream.aggregate_functions import Count
from weir.datastream.window import TumblingEventTimeWindows

BATCH = 65_536
SIZE_MS = 10_000
_SPEC = ColumnSpec(("f0", "f1", "f2", "f3"), None, ("int64",) * 4)


class Events:
    """``make(start, stop, step)`` of StridedBidSource: the events as columns (key, 0, 0,
    event time)."""

    def __init__(self, keys: int, per_ms: int) -> None:
        self.keys = keys
        self.per_ms = per_ms

    def __call__(self, start: int, stop: int, step: int) -> ColumnBatch:
        i = np.arange(start, stop, step, dtype=np.int64)
        zeros = np.zeros(len(i), dtype=np.int64)
        columns = {"f0": i * 7919 % self.keys, "f1": zeros, "f2": zeros, "f3": i // self.per_ms}
        return ColumnBatch(columns, _SPEC)


class SummingSink(BatchSinkFunction):
    """Counts the results and adds them up; its figures as ``CountingBatchSink``'s."""

    def __init__(self, stats_dir: str) -> None:
        self.stats_dir = stats_dir

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.n = 0
        self.total = 0
        self.first = 0

    def invoke_batch(self, batch, context):
        if not self.n:
            self.first = time.perf_counter_ns()
            self.first_cpu = time.process_time_ns()
        self.n += len(batch)
        if isinstance(batch, ColumnBatch):
            self.total += int(sum(int(c.sum()) for c in batch.columns.values()))
        else:
            self.total += sum(batch)

    def close(self):
        write_sink_stats(self)
        path = pathlib.Path(self.stats_dir) / f"total-{self.index}.json"
        path.write_text(json.dumps({"total": self.total}))


def expected_results(n: int, keys: int, per_ms: int) -> int:
    """The number of (window, key) pairs among the events."""
    window_events = SIZE_MS * per_ms
    results = 0
    for start in range(0, n, window_events):
        results += min(keys, min(n, start + window_events) - start)
    return results


def run_job(kind: str, n: int, keys: int, per_ms: int, args: Any) -> dict[str, Any]:
    backend, _, checkpoints = kind.partition("@")
    with tempfile.TemporaryDirectory(prefix="weir-bench-blocks-") as stats_dir:
        configuration = Configuration()
        configuration.set_string("execution.checkpointing.num-retained", "100000")
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
        env.set_parallelism(1)
        if backend == "rocksdb":
            env.set_state_backend(EmbeddedRocksDBStateBackend(checkpoints == "incremental"))
        else:
            env.set_state_backend(HashMapStateBackend())
        if checkpoints:
            env.enable_checkpointing(args.checkpoint_ms)
            config = env.get_checkpoint_config()
            config.set_checkpoint_storage_dir(f"file://{stats_dir}/checkpoints")
            config.set_externalized_checkpoint_retention(
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
            )
        source = StridedBidSource(n, stats_dir, BATCH, Events(keys, per_ms))
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(BidTime())
        (
            env.from_source(source, strategy, "events", BID_TYPE)
            .key_by(lambda event: event[0])
            .window(TumblingEventTimeWindows.of(Time.milliseconds(SIZE_MS)))
            .aggregate(Count(), output_type=Types.LONG())
            .add_sink(SummingSink(stats_dir))
        )
        env.execute(f"bench-blocks-{backend}")
        rate, results = source_to_sink_rate(stats_dir, n)
        total = sum(
            json.loads(p.read_text())["total"] for p in pathlib.Path(stats_dir).glob("total-*")
        )
        out: dict[str, Any] = {"rate": rate, "results": results, "total": total}
        if checkpoints:
            chk = pathlib.Path(stats_dir) / "checkpoints"
            out["checkpoints"] = len(list(chk.glob("*/chk-*/_metadata")))
            out["checkpoint_bytes"] = sum(f.stat().st_size for f in chk.rglob("*") if f.is_file())
        return out


def bare_numpy(n: int, keys: int, per_ms: int) -> dict[str, Any]:
    """The same counts in a numpy loop over the same batches: per window one array of
    counts indexed by key (``np.add.at``, the fastest of the ways measured here), emitted
    once the event time passed its end."""
    make = Events(keys, per_ms)
    started = time.perf_counter()
    windows: dict[int, Any] = {}
    results = total = 0
    for s in range(0, n, BATCH):
        batch = make(s, min(n, s + BATCH), 1)
        key, ts = batch.columns["f0"], batch.columns["f3"]
        starts = ts - ts % SIZE_MS
        if starts[0] == starts[-1]:  # ascending: the whole batch in one window
            parts = [(int(starts[0]), key)]
        else:
            parts = [(w, key[starts == w]) for w in np.unique(starts).tolist()]
        for start, part in parts:
            held = windows.get(start)
            if held is None:
                held = windows[start] = np.zeros(keys, dtype=np.int64)
            np.add.at(held, part, 1)
        watermark = int(ts[-1]) - 1
        for start in [w for w in windows if w + SIZE_MS - 1 <= watermark]:
            done = windows.pop(start)
            fired = done[done > 0]
            results += len(fired)
            total += int(fired.sum())
    for done in windows.values():
        fired = done[done > 0]
        results += len(fired)
        total += int(fired.sum())
    return {"rate": n / (time.perf_counter() - started), "results": results, "total": total}


def uptime() -> str:
    return subprocess.run(["uptime"], check=True, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=30_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--events-per-ms", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--checkpoint-ms", type=int, default=1000)
    kinds = ["numpy", "hashmap", "rocksdb", "rocksdb@incremental", "rocksdb@full"]
    parser.add_argument("--only", choices=[*kinds, "hashmap@checkpoints"], action="append")
    args = parser.parse_args()
    n, keys, per_ms = args.events, args.keys, args.events_per_ms
    expected = expected_results(n, keys, per_ms)
    kinds = args.only or kinds[:3]
    rates: dict[str, list[float]] = {kind: [] for kind in kinds}
    print(f"uptime: {uptime()}")
    for round_ in range(args.rounds):
        for kind in kinds:
            got = (
                bare_numpy(n, keys, per_ms)
                if kind == "numpy"
                else run_job(kind, n, keys, per_ms, args)
            )
            if got["results"] != expected or got["total"] != n:
                msg = (
                    f"{kind}: {got['results']} results adding up to {got['total']}; expected "
                    f"{expected} adding up to {n}"
                )
                raise AssertionError(msg)
            rates[kind].append(got["rate"])
            extra = ""
            if "checkpoints" in got:
                extra = (
                    f"  {got['checkpoints']} checkpoints, {got['checkpoint_bytes']:,} bytes kept"
                )
            print(
                f"round {round_ + 1} {kind:20s} {got['rate']:>14,.0f} events/s{extra}", flush=True
            )
    print(f"uptime: {uptime()}")
    print(f"{n:,} events, {keys:,} distinct keys, {expected:,} results; medians:")
    for kind in kinds:
        print(f"  {kind:20s} {statistics.median(rates[kind]):>14,.0f} events/s")
    print(f"pid {os.getpid()}")


if __name__ == "__main__":
    main()

"""State backends side by side: per-record state cost through the public API, a keyed
running count at p=2 on the embedded MiniCluster, and checkpoint duration and bytes of
full and incremental rocksdb checkpoints after 1 % of the state changed.

    python benchmarks/state_backends.py [--records N] [--events N] [--state-mb MB]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import BidSource, CountingSink, CountPerAuction, cpu_rate, steady_rate

from weir.common import WatermarkStrategy
from weir.core.checkpoint import FileSystemCheckpointStorage
from weir.core.ids import JobId
from weir.datastream import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    ListStateDescriptor,
    MapStateDescriptor,
    StreamExecutionEnvironment,
    ValueStateDescriptor,
)
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_full_snapshot import RocksDBFullSnapshot
from weir.taskmanager.state.rocksdb_incremental import RocksDBNativeSnapshot


def _backend(kind: str, directory: str):
    if kind == "hashmap":
        return HashMapKeyedStateBackend(128, range(128))
    return RocksDBKeyedStateBackend(128, range(128), directory)


def per_record(kind: str, n: int) -> dict[str, float]:
    """CPU ns per record of each access, through RuntimeContext states (CPU time of the
    process, RocksDB's own threads included: wall-clock time on a shared machine
    measures the neighbours)."""
    directory = tempfile.mkdtemp(prefix="weir-bench-state-")
    backend = _backend(kind, os.path.join(directory, "db"))
    ctx = StreamingRuntimeContext(
        task_name="bench",
        task_name_with_subtasks="bench (1/1)",
        number_of_parallel_subtasks=1,
        max_number_of_parallel_subtasks=128,
        index_of_this_subtask=0,
        attempt_number=0,
        job_parameters={},
        keyed_state_backend=backend,
    )
    value = ctx.get_state(ValueStateDescriptor("v", None))
    entries = ctx.get_map_state(MapStateDescriptor("m", None, None))
    items = ctx.get_list_state(ListStateDescriptor("l", None))
    keys = [i % 10_000 for i in range(n)]
    out = {}
    start = time.process_time()
    for k in keys:
        backend.current_key = k
        value.update((value.value() or 0) + 1)
    out["ValueState read+update"] = (time.process_time() - start) / n * 1e9
    start = time.process_time()
    for i, k in enumerate(keys):
        backend.current_key = k
        entries.put(i & 63, i)
    out["MapState put"] = (time.process_time() - start) / n * 1e9
    start = time.process_time()
    for i, k in enumerate(keys):
        backend.current_key = k * 7 + i  # short lists: the cost of add, not of long values
        items.add(i)
    out["ListState add"] = (time.process_time() - start) / n * 1e9
    backend.dispose()
    shutil.rmtree(directory, ignore_errors=True)
    return out


def keyed_count(kind: str, n: int) -> tuple[float, float]:
    """``(events per second, events per CPU second of the TaskManagers)``."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as stats_dir:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.set_state_backend(
            HashMapStateBackend() if kind == "hashmap" else EmbeddedRocksDBStateBackend()
        )
        (
            env.from_source(BidSource(n), WatermarkStrategy.no_watermarks(), "bids")
            .key_by(lambda bid: bid[0])
            .map(CountPerAuction())
            .add_sink(CountingSink(stats_dir))
        )
        env.execute(f"bench-keyed-{kind}")
        return steady_rate(stats_dir, n), cpu_rate(stats_dir)


def checkpoints(state_mb: int, rounds: int) -> None:
    """Full (canonical) and incremental checkpoints of ``state_mb`` MB of ValueState (1 kB
    of incompressible bytes per key), then again after 1 % of the keys changed: the task
    thread's part, the writer thread's part, and the bytes each writes."""
    root = tempfile.mkdtemp(prefix="weir-bench-chk-")
    storage = FileSystemCheckpointStorage(f"file://{root}/checkpoints", JobId("b" * 32))
    backend = RocksDBKeyedStateBackend(128, range(128), f"{root}/db")
    state = backend.get_value_state("v")
    value_bytes = 1000
    keys = state_mb * 1024 * 1024 // value_bytes
    start = time.perf_counter()
    for i in range(keys):
        backend.current_key = i
        state.update(os.urandom(value_bytes))
    backend.flush()
    print(f"  {keys:,} keys written in {time.perf_counter() - start:.1f} s")
    rng = random.Random(7)
    uploads = []
    full_bytes = 0
    # Round 0 checkpoints the state as loaded; every later one after 1 % of the keys (at
    # random) changed. The SST files a checkpoint uploads include what compaction
    # rewrote since the last one, so several rounds are measured, not one.
    for n in range(rounds + 1):
        label = "initial" if n == 0 else f"round {n}, 1 % changed"
        if n:
            for i in rng.sample(range(keys), keys // 100):
                backend.current_key = i
                state.update(os.urandom(value_bytes))
        start = time.perf_counter()
        native = RocksDBNativeSnapshot.take(backend, n + 1)
        sync = time.perf_counter() - start
        handle = native.write(storage, storage.init_checkpoint(n + 1), "op")
        total_s = time.perf_counter() - start
        backend.notify_checkpoint_complete(n + 1)
        files = sum(f.handle.size for f in handle.shared)
        if n:
            uploads.append(handle.incremental_size)
        print(
            f"  incremental, {label:22s}: {total_s:6.2f} s (task thread {sync:.2f} s), "
            f"uploaded {handle.incremental_size / 1e6:8.1f} MB of {files / 1e6:.1f} MB "
            "of SST files"
        )
        if n in {0, rounds}:
            start = time.perf_counter()
            full = RocksDBFullSnapshot.take(backend, 1000 + n)
            sync = time.perf_counter() - start
            written = full.write(storage.init_checkpoint(1000 + n), "op", compress=False)
            total_s = time.perf_counter() - start
            full_bytes = written.handle.size
            print(
                f"  full,        {label:22s}: {total_s:6.2f} s (task thread {sync:.2f} s), "
                f"wrote    {full_bytes / 1e6:8.1f} MB"
            )
    if uploads:
        mean = statistics.mean(uploads)
        print(
            f"  incremental upload after 1 % changed, mean of {len(uploads)} rounds: "
            f"{mean / 1e6:.1f} MB = {mean / full_bytes:.1%} of a full checkpoint "
            f"(each round: {', '.join(f'{u / full_bytes:.1%}' for u in uploads)})"
        )
    backend.dispose()
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--state-mb", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5, help="checkpoints after 1 % changed")
    parser.add_argument("--skip", default="", help="comma-separated: access,count,checkpoints")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    if "access" not in skip:
        print("per-record state access (CPU ns/record):")
        for kind in ("hashmap", "rocksdb"):
            for name, ns in per_record(kind, args.records).items():
                print(f"  {kind:8s} {name:24s} {ns:8.0f}")
    if "count" not in skip:
        print(f"keyed running count, p=2, {args.events:,} events, {args.runs} runs each:")
        # Alternating runs, medians: on a shared machine one run says little.
        runs: dict[str, list[tuple[float, float]]] = {"hashmap": [], "rocksdb": []}
        for _ in range(args.runs):
            for kind, results in runs.items():
                results.append(keyed_count(kind, args.events))
        wall = {kind: statistics.median(r for r, _ in results) for kind, results in runs.items()}
        cpu = {kind: statistics.median(c for _, c in results) for kind, results in runs.items()}
        for kind in runs:
            print(
                f"  {kind:8s} {wall[kind]:>12,.0f} events/s  "
                f"{cpu[kind]:>12,.0f} events per TaskManager CPU second"
            )
        print(
            f"  rocksdb / hashmap: {wall['rocksdb'] / wall['hashmap']:.0%} (wall clock), "
            f"{cpu['rocksdb'] / cpu['hashmap']:.0%} (per CPU second)"
        )
    if "checkpoints" not in skip:
        print(f"checkpoints of {args.state_mb} MB of rocksdb state:")
        checkpoints(args.state_mb, args.rounds)


if __name__ == "__main__":
    main()

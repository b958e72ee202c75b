"""Many distinct keys on the rocksdb backend: a keyed running count over N distinct keys
at p=2 on the embedded MiniCluster, with the TaskManagers' resident memory as the job
ends (and at its peak), next to what the hashmap backend would hold for as many keys
(measured on a smaller count and scaled).

    python benchmarks/rocksdb_many_keys.py [--keys 20000000] [--sample 1000000]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import CountPerAuction

from weir.common import WatermarkStrategy
from weir.datastream import EmbeddedRocksDBStateBackend, StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

BATCH = 2048


class DistinctKeys:
    """A parallel bounded source of ``count`` records ``(key, 0)``, every key distinct."""

    def __init__(self, count: int) -> None:
        self.count = count

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context):
        index = context.get_index_of_this_subtask()
        parallelism = context.get_number_of_parallel_subtasks()
        return _Reader(self.count * index // parallelism, self.count * (index + 1) // parallelism)


class _Reader:
    def __init__(self, start: int, stop: int) -> None:
        self._next = start
        self._stop = stop

    def poll_batch(self, max_records: int):
        if self._next >= self._stop:
            return None
        stop = min(self._stop, self._next + min(max_records, BATCH))
        batch = [(i, 0) for i in range(self._next, stop)]
        self._next = stop
        return batch

    def close(self) -> None:
        """Nothing to release."""


class MemorySink(SinkFunction):
    """Counts records; when closed, writes its process's resident memory (now and peak)
    and when the first and last record arrived."""

    def __init__(self, stats_dir: str) -> None:
        self.stats_dir = stats_dir

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.n = 0
        self.first = 0

    def invoke(self, value, context):
        if not self.n:
            self.first = time.perf_counter_ns()
        self.n += 1

    def close(self):
        with open("/proc/self/status") as status:
            rss_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        stats = {
            "count": self.n,
            "first_ns": self.first,
            "last_ns": time.perf_counter_ns(),
            "rss_bytes": rss_kb * 1024,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }
        path = pathlib.Path(self.stats_dir) / f"sink-{self.index}.json"
        path.write_text(json.dumps(stats))


def rocksdb_run(keys: int) -> None:
    with tempfile.TemporaryDirectory(prefix="weir-bench-keys-") as stats_dir:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.set_state_backend(EmbeddedRocksDBStateBackend())
        (
            env.from_source(DistinctKeys(keys), WatermarkStrategy.no_watermarks(), "keys")
            .key_by(lambda record: record[0])
            .map(CountPerAuction())
            .add_sink(MemorySink(stats_dir))
        )
        started = time.perf_counter()
        env.execute(f"bench-{keys}-keys-rocksdb")
        elapsed = time.perf_counter() - started
        stats = [json.loads(p.read_text()) for p in pathlib.Path(stats_dir).glob("sink-*.json")]
    total = sum(s["count"] for s in stats)
    span_ns = max(s["last_ns"] for s in stats) - min(s["first_ns"] for s in stats)
    print(
        f"rocksdb, {keys:,} distinct keys at p=2: {total:,} records in {elapsed:.0f} s "
        f"({total / (span_ns / 1e9):,.0f} records/s)"
    )
    for s in sorted(stats, key=lambda s: s["rss_bytes"]):
        print(
            f"  TaskManager: RSS {s['rss_bytes'] / 2**20:,.0f} MiB at the end, "
            f"peak {s['peak_rss_bytes'] / 2**20:,.0f} MiB"
        )


def hashmap_estimate(keys: int, sample: int) -> None:
    """Python heap the hashmap backend takes for ``sample`` running counts, scaled."""
    backend = HashMapKeyedStateBackend(128, range(128))
    state = backend.get_value_state("count")
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for i in range(sample):
        backend.current_key = i
        state.update(i + 1)  # an int object per key, as the running count keeps
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    per_key = (after - before) / sample
    print(
        f"hashmap, measured on {sample:,} keys: {per_key:.0f} bytes per key of Python "
        f"heap; {keys:,} keys would take {per_key * keys / 2**30:.1f} GiB "
        f"({per_key * keys / 2 / 2**30:.1f} GiB per TaskManager at p=2)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=20_000_000)
    parser.add_argument("--sample", type=int, default=1_000_000)
    args = parser.parse_args()
    hashmap_estimate(args.keys, args.sample)
    rocksdb_run(args.keys)


if __name__ == "__main__":
    main()

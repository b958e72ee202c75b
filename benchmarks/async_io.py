"""Async I/O against its synchronous equivalent: a lookup that takes 10 ms per element,
as a map that sleeps (one at a time) and as an AsyncFunction that awaits (up to the
capacity at once), on the embedded MiniCluster at parallelism 1. At capacity 100 the
async job should approach 100 times the synchronous rate (10,000 elements/s).

    python benchmarks/async_io.py [--latency-ms 10] [--capacity 100] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import tempfile
import time

from weir.common import Time, Types, WatermarkStrategy
from weir.datastream import AsyncDataStream, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.functions import AsyncFunction, MapFunction, SinkFunction


class _NotesItsStart:
    """Writes when its first lookup began: a synchronous map hands its results on a batch
    at a time, so the span of the results alone would not show its rate."""

    def __init__(self, latency_s: float, path: str) -> None:
        self.latency_s = latency_s
        self.path = path

    def open(self, runtime_context: object) -> None:
        self.first_ns = 0

    def started(self) -> None:
        if not self.first_ns:
            self.first_ns = time.perf_counter_ns()

    def close(self) -> None:
        pathlib.Path(self.path).write_text(str(self.first_ns))


class SleepingLookup(_NotesItsStart, MapFunction):
    def map(self, value: int) -> int:
        self.started()
        time.sleep(self.latency_s)
        return value


class AwaitingLookup(_NotesItsStart, AsyncFunction):
    async def async_invoke(self, value: int) -> list[int]:
        self.started()
        await asyncio.sleep(self.latency_s)
        return [value]


class TimingSink(SinkFunction):
    """Counts results and notes when the last arrived: with the first lookup's start, the
    job's own rate, without the cluster's start-up."""

    def __init__(self, path: str) -> None:
        self.path = path

    def open(self, runtime_context: object) -> None:
        self.count = 0
        self.last_ns = 0

    def invoke(self, value: int, context: object) -> None:
        self.last_ns = time.perf_counter_ns()
        self.count += 1

    def close(self) -> None:
        stats = {"count": self.count, "last_ns": self.last_ns}
        pathlib.Path(self.path).write_text(json.dumps(stats))


def rate(kind: str, elements: int, latency_s: float, capacity: int) -> float:
    """Results per second from the first lookup's start to the last result (the
    TaskManager runs lookups and sink in one process, on one clock)."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-async-") as directory:
        path = os.path.join(directory, "sink.json")
        start_path = os.path.join(directory, "start")
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        numbers = env.from_source(
            NumberSequenceSource(0, elements - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        if kind == "sync":
            looked_up = numbers.map(SleepingLookup(latency_s, start_path), output_type=Types.LONG())
        else:
            wait = (
                AsyncDataStream.ordered_wait
                if kind == "ordered"
                else AsyncDataStream.unordered_wait
            )
            looked_up = wait(
                numbers,
                AwaitingLookup(latency_s, start_path),
                Time.seconds(60),
                capacity,
                Types.LONG(),
            )
        looked_up.add_sink(TimingSink(path))
        env.execute(f"async-io-{kind}")
        stats = json.loads(pathlib.Path(path).read_text())
        if stats["count"] != elements:
            msg = f"the sink saw {stats['count']} results, expected {elements}"
            raise AssertionError(msg)
        first_ns = int(pathlib.Path(start_path).read_text())
        return stats["count"] / ((stats["last_ns"] - first_ns) / 1e9)


def bare_asyncio_rate(elements: int, latency_s: float, capacity: int) -> float:
    """The same awaits on a bare event loop, ``capacity`` at a time: the ceiling this
    machine gives at this moment (on a loaded one, sleeps overshoot)."""

    async def run() -> float:
        slots = asyncio.Semaphore(capacity)

        async def one() -> None:
            async with slots:
                await asyncio.sleep(latency_s)

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(elements)))
        return elements / (time.perf_counter() - started)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--capacity", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=3.0, help="about how long each job runs")
    args = parser.parse_args()
    latency_s = args.latency_ms / 1000
    sync_elements = max(2, int(args.seconds / latency_s))
    async_elements = max(2, int(args.seconds * args.capacity / latency_s))
    sync = rate("sync", sync_elements, latency_s, args.capacity)
    print(f"synchronous map, {args.latency_ms:g} ms each: {sync:,.0f} elements/s")
    bare = bare_asyncio_rate(async_elements, latency_s, args.capacity)
    print(f"bare asyncio loop, {args.capacity} at a time: {bare:,.0f} elements/s")
    for kind in ("unordered", "ordered"):
        got = rate(kind, async_elements, latency_s, args.capacity)
        print(
            f"{kind}_wait, capacity {args.capacity}: {got:,.0f} elements/s "
            f"({got / sync:.1f}x the synchronous rate; ideal {args.capacity}x)"
        )


if __name__ == "__main__":
    main()

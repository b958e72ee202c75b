"""Nexmark q1 and q2 on Spark Structured Streaming, with native column expressions.

Run in a side environment with pyspark (``side_envs``); prints one JSON line::

    python spark_q.py --query q1 --events 20000000 --parallelism 1

The bids are made in the JVM: the ``rate-micro-batch`` source emits ``rowsPerBatch``
consecutive longs per micro-batch (whatever the wall clock says, so the engine runs as
fast as it can), and column expressions derive bid i from ``value`` = i. No Python runs
per record or per batch: the query is planned once and runs in whole-stage generated
code.

- q1 selects ``(auction, bidder, price * 0.908, date_time)``.
- q2 groups by ``window(date_time, "10 seconds")`` and auction and counts, with
  ``withWatermark("date_time", "0 seconds")`` (a monotonous watermark) in append mode, so
  each (window, auction) count is emitted once, when the watermark passes the window's
  end. Spark moves the watermark between micro-batches, so the source runs on past the
  ``events`` bids until the last window has been emitted; a filter above the watermark
  (on the event-time column, which the optimizer does not push below it) drops those
  later bids from the counts.

Both write to the ``noop`` sink, which consumes every row; the result count is the sum of
the progress reports' ``sink.numOutputRows``. ``local[p]`` runs p task slots, with p
source partitions and p shuffle partitions; the state store is Spark's default.

The rate is the steady state, from the query's progress reports: the bids of the data
micro-batches after the first ``--warmup`` fifth (start-up, code generation and JIT
warm-up) divided by the wall time from the start of the first measured batch to the start
of the batch after the last data batch (so the time between batches, planning and
committing offsets, counts). The batches that only flush q2's last windows are not timed.
The rate per CPU second divides by the JVM's CPU time over the same span (user + system
from /proc, sampled every 20 ms and interpolated at the batch boundaries).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import tempfile
import threading
import time
from datetime import datetime

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

SIZE_MS = 10_000
SAMPLE_S = 0.02
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def session(parallelism: int) -> SparkSession:
    spark = (
        SparkSession.builder.master(f"local[{parallelism}]")
        .appName("nexmark-peer")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(parallelism))
        .config("spark.sql.streaming.numRecentProgressUpdates", "10000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build_query(spark: SparkSession, query: str, events: int, parallelism: int, rows: int):
    source = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("numPartitions", parallelism)
        .load()
    )
    i = F.col("value")
    bids = source.select(
        (i * 7919 % 10000).alias("auction"),
        (i % 1000).alias("bidder"),
        (i * 31 % 1000).alias("price"),
        F.timestamp_millis(i).alias("date_time"),
    )
    if query == "q1":
        return bids.select(
            "auction", "bidder", (F.col("price") * 0.908).alias("price"), "date_time"
        )
    return (
        bids.withWatermark("date_time", "0 seconds")
        .where(F.col("date_time") < F.timestamp_millis(F.lit(events)))
        .groupBy(F.window("date_time", "10 seconds"), "auction")
        .count()
    )


class CpuSampler:
    """The JVM's CPU seconds (user + system), sampled against the wall clock."""

    def __init__(self, pid: int) -> None:
        self._stat = f"/proc/{pid}/stat"
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            with open(self._stat) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            self.cpus.append((int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
            self.walls.append(time.time())
            self._stop.wait(SAMPLE_S)

    def at(self, wall: float) -> float:
        """CPU seconds at wall-clock time ``wall``, interpolated between samples."""
        k = bisect.bisect_left(self.walls, wall)
        if k <= 0:
            return self.cpus[0]
        if k >= len(self.walls):
            return self.cpus[-1]
        w0, w1, c0, c1 = self.walls[k - 1], self.walls[k], self.cpus[k - 1], self.cpus[k]
        return c0 + (c1 - c0) * (wall - w0) / (w1 - w0)


def _seconds(iso: str) -> float:
    """A progress report's ISO 8601 UTC time as seconds since the epoch."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _done(query: str, progress: list[dict], data_batches: int, last_end_ms: int) -> bool:
    if not progress:
        return False
    if query == "q1":
        return progress[-1]["batchId"] >= data_batches
    watermark = progress[-1].get("eventTime", {}).get("watermark")
    return watermark is not None and _seconds(watermark) * 1000 >= last_end_ms


def run(query: str, events: int, parallelism: int, rows: int, warmup: float) -> dict:
    if events % rows:
        msg = f"--events ({events}) must be a multiple of --rows-per-batch ({rows})"
        raise SystemExit(msg)
    data_batches = events // rows
    measured_from = max(1, int(data_batches * warmup))
    if data_batches - measured_from < 2:
        msg = (
            f"{events} events make {data_batches} micro-batches of {rows} rows: too few to "
            "measure a steady state; give more events or fewer rows per batch"
        )
        raise SystemExit(msg)
    last_end_ms = -(-events // SIZE_MS) * SIZE_MS
    spark = session(parallelism)
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    with tempfile.TemporaryDirectory(prefix="weir-bench-spark-") as checkpoint:
        stream = build_query(spark, query, events, parallelism, rows)
        with CpuSampler(pid) as cpu:
            running = (
                stream.writeStream.format("noop")
                .outputMode("append")
                .option("checkpointLocation", checkpoint)
                .start()
            )
            progress: list[dict] = []
            while not _done(query, progress, data_batches, last_end_ms):
                if running.exception() is not None:
                    raise RuntimeError(str(running.exception()))
                time.sleep(0.1)
                progress = [json.loads(p.json) for p in running.recentProgress]
            running.stop()
    spark.stop()
    by_id = {p["batchId"]: p for p in progress}
    if sorted(by_id) != list(range(len(by_id))):
        msg = "progress reports were dropped; raise spark.sql.streaming.numRecentProgressUpdates"
        raise RuntimeError(msg)
    start = _seconds(by_id[measured_from]["timestamp"])
    end = _seconds(by_id[data_batches]["timestamp"])
    timed = events - measured_from * rows
    # q1's later batches are past the bids asked for; q2's emit their last windows.
    counted = [p for p in by_id.values() if query == "q2" or p["batchId"] < data_batches]
    return {
        "system": f"spark {pyspark.__version__}",
        "api": (
            "rate-micro-batch, column expressions, noop sink"
            if query == "q1"
            else "window() count with a 0 s watermark, append, noop sink"
        ),
        "query": query,
        "parallelism": parallelism,
        "events": events,
        "events_per_s": timed / (end - start),
        "events_per_cpu_s": timed / (cpu.at(end) - cpu.at(start)),
        "results": sum(p["sink"]["numOutputRows"] for p in counted),
        "events_timed": timed,
        "rows_per_batch": rows,
        "batches_timed": data_batches - measured_from,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", choices=("q1", "q2"), required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--rows-per-batch", type=int, default=1_000_000)
    parser.add_argument("--warmup", type=float, default=0.2)
    args = parser.parse_args()
    result = run(args.query, args.events, args.parallelism, args.rows_per_batch, args.warmup)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

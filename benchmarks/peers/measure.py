"""``measure_peers``: the numpy limit, Bytewax and Spark on q1 and q2, each run in its side
environment, with their result counts checked against the bare Python loops."""

from __future__ import annotations

import os
import pathlib
import statistics
import sys
from dataclasses import dataclass

from . import side_envs
from .side_envs import BYTEWAX, NUMPY, PYSPARK, SideEnv

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1]

# The slow peers get a share of the events, so that a run stays within minutes while each
# still covers many windows and batches past its warm-up: Bytewax's per-record q1 runs
# at a few million events/s, its count_window at tens of thousands, Spark's q2 (every bid
# a new (window, auction) key in its state store) at about a hundred thousand.
BYTEWAX_RECORDS_Q1_SHARE = 4
BYTEWAX_WINDOW_SHARE = 20
SPARK_WINDOW_SHARE = 4
# The numpy loop runs each query this many times in a row: one pass takes well under a
# second, short enough for a busy machine's scheduler to halve or double its rate.
NUMPY_PASSES = 5
# Spark's micro-batches: events / SPARK_BATCHES rows each, the first fifth not timed.
SPARK_BATCHES = 10


@dataclass(frozen=True, slots=True)
class PeerRun:
    """One measurement: ``script`` in ``env`` on ``events`` bids."""

    env: SideEnv
    script: str
    query: str
    events: int
    parallelism: int
    args: tuple[str, ...] = ()

    def command(self) -> list[str]:
        return [
            f"--query={self.query}",
            f"--events={self.events}",
            *([] if self.script == "numpy_limit.py" else [f"--parallelism={self.parallelism}"]),
            *self.args,
        ]


def plan(events: int, keyed_events: int, parallelisms: tuple[int, ...]) -> list[PeerRun]:
    """The runs, q1 on ``events`` bids and q2 on ``keyed_events`` (less for slow peers)."""
    passes = (f"--passes={NUMPY_PASSES}",)
    runs = [
        PeerRun(NUMPY, "numpy_limit.py", "q1", events, 1, passes),
        PeerRun(NUMPY, "numpy_limit.py", "q2", keyed_events, 1, passes),
    ]
    spark_q1 = events - events % SPARK_BATCHES
    spark_q2 = keyed_events // SPARK_WINDOW_SHARE
    spark_q2 -= spark_q2 % SPARK_BATCHES
    for p in parallelisms:
        runs += [
            PeerRun(BYTEWAX, "bytewax_q.py", "q1", events // BYTEWAX_RECORDS_Q1_SHARE, p),
            PeerRun(BYTEWAX, "bytewax_q.py", "q2", keyed_events // BYTEWAX_WINDOW_SHARE, p),
            PeerRun(BYTEWAX, "bytewax_q.py", "q1", events, p, ("--variant=numpy",)),
            PeerRun(BYTEWAX, "bytewax_q.py", "q2", keyed_events, p, ("--variant=numpy",)),
            PeerRun(
                PYSPARK,
                "spark_q.py",
                "q1",
                spark_q1,
                p,
                (f"--rows-per-batch={spark_q1 // SPARK_BATCHES}",),
            ),
            PeerRun(
                PYSPARK,
                "spark_q.py",
                "q2",
                spark_q2,
                p,
                (f"--rows-per-batch={spark_q2 // SPARK_BATCHES}",),
            ),
        ]
    return runs


def expected_results(query: str, events: int, cache: dict[int, int]) -> int:
    """q1: one result per bid; q2: the window results of nexmark.py's bare Python loop."""
    if query == "q1":
        return events
    if events not in cache:
        sys.path.insert(0, str(BENCHMARKS))
        from nexmark import bare_window_counts

        cache[events] = bare_window_counts("tumbling", events)[1]
    return cache[events]


def measure_peers(
    events: int,
    keyed_events: int,
    parallelisms: tuple[int, ...] = (1,),
    repeat: int = 1,
) -> list[dict]:
    """Runs every peer ``repeat`` times (the repetitions interleaved, so that a change of
    the machine's load falls on all of them) and returns one dict per system, query and
    parallelism: ``system``, ``api``, ``query``, ``parallelism``, ``events`` (bids in a
    run), ``events_per_s`` and ``events_per_cpu_s`` (medians), ``runs`` and ``cpu_runs``
    (every run's), ``results`` (checked: an AssertionError if a run's count differs from
    the bare loop's) and ``load_1m`` (the 1-minute load average before each run)."""
    runs = plan(events, keyed_events, parallelisms)
    done: dict[tuple[str, str, int], dict] = {}
    expected: dict[int, int] = {}
    for _ in range(repeat):
        for run in runs:
            load = os.getloadavg()[0]
            result = side_envs.run(run.env, run.script, run.command())
            want = expected_results(run.query, run.events, expected)
            if result["results"] != want:
                msg = (
                    f"{result['system']} {run.query} p={run.parallelism}: "
                    f"{result['results']} results, the bare loop gives {want}"
                )
                raise AssertionError(msg)
            row = done.setdefault(
                (result["system"], run.query, run.parallelism),
                {
                    "system": result["system"],
                    "api": result.get("api", "numpy arrays, one core"),
                    "query": run.query,
                    "parallelism": run.parallelism,
                    "events": run.events,
                    "results": want,
                    "runs": [],
                    "cpu_runs": [],
                    "load_1m": [],
                },
            )
            row["runs"].append(result["events_per_s"])
            row["cpu_runs"].append(result["events_per_cpu_s"])
            row["load_1m"].append(load)
    for row in done.values():
        row["events_per_s"] = statistics.median(row["runs"])
        row["events_per_cpu_s"] = statistics.median(row["cpu_runs"])
    return list(done.values())

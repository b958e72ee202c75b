"""What metrics cost a job: Nexmark q1 and the keyed count at p=2 on the embedded
MiniCluster with nothing reading the metrics ("quiet") against the same jobs while they
are watched ("watched"): the Prometheus reporter on the master and every TaskManager,
scraped every second, and the REST API asked every second for the job's vertices (what
an open dashboard does), which fetches every TaskManager's metrics.

    .venv/bin/python benchmarks/metrics_overhead.py [--events 4000000]
                                                    [--keyed-events 2000000] [--rounds 2]

Tasks count records and bytes per buffer whether or not anything reads them, so the
difference measured is what reading costs: the metric RPCs and the exposition served by
the TaskManager's process beside the task threads. Each setting runs in a process of its
own (one SparkContext each) and the rounds alternate, so load from elsewhere on the
machine falls on both; the medians are reported. Prometheus scrapes every 15 s by
default; once a second is a harsh case.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

PROMETHEUS = {
    "metrics.reporter.prom.factory.class": (
        "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
    ),
    "metrics.reporter.prom.port": "0",
}
WATCH_EVERY_S = 1.0


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def _watch(rest_url: str, stop: threading.Event, counts: dict[str, int]) -> None:
    """Every second: each running job's vertices through REST, and every TaskManager's
    Prometheus exposition, as a dashboard and a scraper would ask for them."""
    while not stop.wait(WATCH_EVERY_S):
        try:
            for job in json.loads(_get(f"{rest_url}/jobs/overview"))["jobs"]:
                if job["state"] == "RUNNING":
                    _get(f"{rest_url}/jobs/{job['jid']}")
                    counts["rest"] += 1
            for tm in json.loads(_get(f"{rest_url}/taskmanagers"))["taskmanagers"]:
                if tm.get("prometheusAddress"):
                    _get(f"http://{tm['prometheusAddress']}/metrics")
                    counts["scrapes"] += 1
        except OSError:
            continue  # a TaskManager between jobs; the next round asks again


def _cluster_rates(watched: bool, events: int, keyed_events: int) -> dict[str, float]:
    """In a child process: both jobs on a MiniCluster, watched or not."""
    # Imported here: only the child processes start clusters.
    from run_all import run_job

    from weir.client.mini_cluster import MiniCluster
    from weir.core.executor import register_executor

    config = {"resourcemanager.taskmanager.max": "2"}
    if watched:
        config |= {**PROMETHEUS, "rest.port": "0"}
    with MiniCluster(config) as cluster:
        register_executor(cluster.executor())
        stop = threading.Event()
        counts = {"rest": 0, "scrapes": 0}
        watcher = None
        if watched:
            watcher = threading.Thread(target=_watch, args=(cluster.rest_url, stop, counts))
            watcher.start()
        try:
            rates = {"q1": run_job("q1", events, 2), "keyed": run_job("keyed", keyed_events, 2)}
        finally:
            stop.set()
            if watcher is not None:
                watcher.join()
            register_executor(None)
    return {**rates, **counts}


def _in_child(watched: bool, events: int, keyed_events: int) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", "watched" if watched else "quiet"]
    argv += ["--events", str(events), "--keyed-events", str(keyed_events)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"the {'watched' if watched else 'quiet'} run failed:\n{result.stderr}"
        raise RuntimeError(msg)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--keyed-events", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=("quiet", "watched"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        rates = _cluster_rates(args.child == "watched", args.events, args.keyed_events)
        print(json.dumps(rates))
        return

    results: dict[bool, dict[str, list[float]]] = {
        watched: {"q1": [], "keyed": []} for watched in (False, True)
    }
    for round_ in range(args.rounds):
        for watched in (False, True):
            rates = _in_child(watched, args.events, args.keyed_events)
            results[watched]["q1"].append(rates["q1"])
            results[watched]["keyed"].append(rates["keyed"])
            asked = (
                f" ({rates['rest']:.0f} REST reads, {rates['scrapes']:.0f} scrapes)"
                if watched
                else ""
            )
            print(
                f"round {round_ + 1} {'watched' if watched else 'quiet  '}: q1 "
                f"{rates['q1']:>10,.0f} events/s, keyed count {rates['keyed']:>10,.0f} "
                f"events/s{asked}",
                flush=True,
            )
    median = {
        w: {k: statistics.median(v) for k, v in series.items()} for w, series in results.items()
    }
    quiet, watched = median[False], median[True]
    print("\nmedians                 quiet      watched   overhead")
    for key, label in (("q1", "q1 p=2"), ("keyed", "keyed count p=2")):
        overhead = (quiet[key] - watched[key]) / quiet[key] * 100
        print(f"{label:16s} {quiet[key]:>12,.0f} {watched[key]:>12,.0f}   {overhead:+.1f} %")
    print(
        f"\n(cores: {os.cpu_count()}; events: q1 {args.events:,}, keyed {args.keyed_events:,}; "
        f"{args.rounds} rounds; target: <= 3 % overhead)"
    )


if __name__ == "__main__":
    main()

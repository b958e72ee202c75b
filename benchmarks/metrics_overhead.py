"""What metrics cost a job: Nexmark q1 and the keyed count at p=2 on the embedded
MiniCluster with no reporter and no REST endpoint ("quiet"), with the Prometheus
reporter on the master and every TaskManager and the REST API up but nothing reading
them ("served"), and read as users read them ("watched"): Prometheus scraping the
master and every TaskManager every 15 s (its default scrape interval), and the
dashboard's job page open, which polls every ``web.refresh-interval`` (3 s, Flink's
default) the job, its checkpoints and exceptions, and each vertex's back pressure and
watermarks; the job and the back pressure ask every TaskManager for its metrics.

    .venv/bin/python benchmarks/metrics_overhead.py [--events 300000000]
        [--keyed-events 80000000] [--rounds 3] [--scrape-every 15] [--poll-every 3]
        [--modes quiet,served,watched]

``--scrape-every 1 --poll-every 1`` is the harsh case measured before (13.7 % on the
keyed count, on a loaded machine). The jobs are long enough (about a minute each on two
cores) for a scrape interval of 15 s to fall inside them several times; the whole run
takes about half an hour. ``--events 0`` leaves q1 out, ``--keyed-events 0`` the keyed
count; ``--modes quiet,watched`` compares only those two.

Tasks count records and bytes per buffer whether or not anything reads them, so the
difference measured is what reading costs: the metric RPCs and the exposition served by
the TaskManager's process beside the task threads. Each setting runs in a process of its
own (one SparkContext each) and the rounds alternate, so load from elsewhere on the
machine falls on all; the medians are reported, with each round's figures, so that the
noise shows. Beside each rate, the events per CPU second of the TaskManager processes
(the reads they serve included): a figure that the machine's other load moves much less
than the rate.
"""

from __future__ import annotations

import argparse
import json
import math
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


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def _dashboard(rest_url: str, every_s: float, stop: threading.Event, counts: dict[str, int]):
    """What the dashboard's job page asks for every refresh-interval, for each running
    job (weir/rest/web/dashboard.js, jobPage)."""
    while not stop.wait(every_s):
        try:
            for job in json.loads(_get(f"{rest_url}/jobs/overview"))["jobs"]:
                if job["state"] != "RUNNING":
                    continue
                jid = job["jid"]
                detail = json.loads(_get(f"{rest_url}/jobs/{jid}"))
                _get(f"{rest_url}/jobs/{jid}/checkpoints")
                _get(f"{rest_url}/jobs/{jid}/exceptions")
                for vertex in detail["vertices"]:
                    _get(f"{rest_url}/jobs/{jid}/vertices/{vertex['id']}/backpressure")
                    _get(f"{rest_url}/jobs/{jid}/vertices/{vertex['id']}/watermarks")
                counts["rest"] += 1
        except OSError:
            continue  # a job between its end and the overview; the next round asks again


def _prometheus(
    rest_url: str, master: str, every_s: float, stop: threading.Event, counts: dict[str, int]
):
    """Prometheus: every target (the master and each TaskManager) every scrape interval,
    the first scrape at once."""
    while True:
        try:
            targets = [master] + [
                tm["prometheusAddress"]
                for tm in json.loads(_get(f"{rest_url}/taskmanagers"))["taskmanagers"]
                if tm.get("prometheusAddress")
            ]
            for target in targets:
                _get(f"http://{target}/metrics")
                counts["scrapes"] += 1
        except OSError:
            pass  # a TaskManager between jobs; the next scrape asks again
        if stop.wait(every_s):
            return


MODES = ("quiet", "served", "watched")


def _cluster_rates(
    mode: str, events: int, keyed_events: int, scrape_every: float, poll_every: float
) -> dict[str, float]:
    """In a child process: both jobs on a MiniCluster; ``served``: the Prometheus
    endpoints and the REST API are up but nothing reads them; ``watched``: scraped and
    polled as ``_prometheus`` and ``_dashboard`` say."""
    # Imported here: only the child processes start clusters.
    from nexmark import run_job_with_cpu

    from weir.client.mini_cluster import MiniCluster
    from weir.core.executor import register_executor

    config = {"resourcemanager.taskmanager.max": "2"}
    if mode != "quiet":
        config |= {**PROMETHEUS, "rest.port": "0"}
    with MiniCluster(config) as cluster:
        register_executor(cluster.executor())
        stop = threading.Event()
        counts = {"rest": 0, "scrapes": 0}
        watchers = []
        if mode == "watched":
            rest = cluster.rest_url
            watchers = [
                threading.Thread(target=_dashboard, args=(rest, poll_every, stop, counts)),
                threading.Thread(
                    target=_prometheus,
                    args=(rest, cluster.prometheus_address, scrape_every, stop, counts),
                ),
            ]
            for watcher in watchers:
                watcher.start()
        try:
            nan = (math.nan, math.nan)  # a job given 0 events is not run
            q1, q1_cpu = run_job_with_cpu("q1", events, 2) if events else nan
            keyed, keyed_cpu = run_job_with_cpu("keyed", keyed_events, 2) if keyed_events else nan
            rates = {"q1": q1, "keyed": keyed, "q1_cpu": q1_cpu, "keyed_cpu": keyed_cpu}
        finally:
            stop.set()
            for watcher in watchers:
                watcher.join()
            register_executor(None)
    return {**rates, **counts}


def _in_child(
    mode: str, events: int, keyed_events: int, scrape_every: float, poll_every: float
) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", mode]
    argv += ["--events", str(events), "--keyed-events", str(keyed_events)]
    argv += ["--scrape-every", str(scrape_every), "--poll-every", str(poll_every)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"the {mode} run failed:\n{result.stderr}"
        raise RuntimeError(msg)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=300_000_000, help="q1's (0: not run)")
    parser.add_argument("--keyed-events", type=int, default=80_000_000, help="0: not run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES), help="quiet first, then others")
    parser.add_argument("--scrape-every", type=float, default=15.0, help="seconds (15)")
    parser.add_argument("--poll-every", type=float, default=3.0, help="seconds (3)")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    intervals = (args.scrape_every, args.poll_every)
    if args.child:
        rates = _cluster_rates(args.child, args.events, args.keyed_events, *intervals)
        print(json.dumps(rates))
        return

    modes = args.modes.split(",")
    if modes[0] != "quiet" or not set(modes) <= set(MODES):
        parser.error(f"--modes: quiet first, then any of {MODES[1:]}")
    series = ("q1", "keyed", "q1_cpu", "keyed_cpu")
    results: dict[str, dict[str, list[float]]] = {mode: {k: [] for k in series} for mode in modes}
    for round_ in range(args.rounds):
        for mode in modes:
            rates = _in_child(mode, args.events, args.keyed_events, *intervals)
            for key in series:
                results[mode][key].append(rates[key])
            asked = (
                f" ({rates['rest']:.0f} dashboard refreshes, {rates['scrapes']:.0f} scrapes)"
                if mode == "watched"
                else ""
            )
            shown = []
            if args.events:
                shown.append(
                    f"q1 {rates['q1']:>10,.0f} events/s "
                    f"({rates['q1_cpu']:,.0f} per TaskManager CPU second)"
                )
            if args.keyed_events:
                shown.append(
                    f"keyed count {rates['keyed']:>10,.0f} events/s ({rates['keyed_cpu']:,.0f})"
                )
            print(f"round {round_ + 1} {mode:7s}: {', '.join(shown)}{asked}", flush=True)
    median = {
        m: {k: statistics.median(v) for k, v in series.items()} for m, series in results.items()
    }
    quiet = median["quiet"]
    others = modes[1:]
    header = "".join(f"{m:>13s}" for m in modes)
    print(f"\nmedians            {header}   overhead ({', '.join(others)})")
    for key, label in (
        ("q1", "q1 p=2"),
        ("keyed", "keyed count p=2"),
        ("q1_cpu", "q1 per TM CPU s"),
        ("keyed_cpu", "keyed per TM CPU s"),
    ):
        if math.isnan(quiet[key]):
            continue  # the job was left out (0 events)
        values = "".join(f"{median[m][key]:>13,.0f}" for m in modes)
        overheads = ", ".join(
            f"{(quiet[key] - median[m][key]) / quiet[key] * 100:+.1f} %" for m in others
        )
        print(f"{label:18s} {values}   {overheads}")
    print(
        f"\n(cores: {os.cpu_count()}; events: q1 {args.events:,}, keyed {args.keyed_events:,}; "
        f"{args.rounds} rounds; Prometheus every {args.scrape_every:g} s, dashboard every "
        f"{args.poll_every:g} s; load average {os.getloadavg()[0]:.1f}; target: <= 3 % overhead)"
    )


if __name__ == "__main__":
    main()

"""Whose is a busy TaskManager's GIL while its metrics are read: the keyed count runs
unbounded at p=2 on the embedded MiniCluster, Prometheus scrapes the master and both
TaskManagers and the dashboard's job page polls as ``metrics_overhead.py`` does, and
py-spy samples (``--gil``: only the thread holding the GIL) one TaskManager. Each sample
is put down to the task threads, the data plane's I/O thread, the Prometheus
exposition, a ``GetMetrics`` call, or another thread; a read's share is the share of the
task threads' GIL time it takes.

    .venv/bin/pip install py-spy     # not among Weir's dependencies
    .venv/bin/python benchmarks/metrics_gil_share.py [--scrape-every 15] [--poll-every 3]
        [--seconds 45]

Unlike a rate, this share hardly moves with the machine's other load.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from metrics_overhead import PROMETHEUS, _dashboard, _get, _prometheus
from nexmark import BidSource, CountPerAuction

from weir.client.mini_cluster import MiniCluster
from weir.common import WatermarkStrategy
from weir.core.executor import register_executor
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction

_THREAD = re.compile(r"^thread \(\d+\): ")


class _Drop(SinkFunction):
    def invoke(self, value, context):
        pass


def _kind(stack: str) -> str:
    thread = _THREAD.sub("", stack.split(";", 1)[0])
    if "Task._run" in stack:
        return "task threads"
    if "prometheus_client" in stack:
        return "Prometheus exposition"
    if "GetMetrics" in stack or "encode_metrics" in stack:
        return "GetMetrics"
    if "network-io" in thread:
        return "data plane I/O"
    return "other threads"


def _running(rest: str) -> list[dict]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = json.loads(_get(f"{rest}/jobs/overview"))["jobs"]
        tms = json.loads(_get(f"{rest}/taskmanagers"))["taskmanagers"]
        if jobs and jobs[0]["state"] == "RUNNING" and len(tms) == 2:
            return tms
        time.sleep(0.2)  # polling interval; the condition decides
    msg = "the job did not reach RUNNING on two TaskManagers within 120 s"
    raise RuntimeError(msg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scrape-every", type=float, default=15.0)
    parser.add_argument("--poll-every", type=float, default=3.0)
    parser.add_argument("--seconds", type=int, default=45)
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or shutil.which(
        "py-spy", path=str(pathlib.Path(sys.executable).parent)
    )
    if py_spy is None:
        sys.exit("py-spy is not installed: pip install py-spy")
    config = {"resourcemanager.taskmanager.max": "2", **PROMETHEUS, "rest.port": "0"}
    with MiniCluster(config) as cluster, tempfile.TemporaryDirectory() as out_dir:
        register_executor(cluster.executor())
        try:
            env = StreamExecutionEnvironment.get_execution_environment()
            env.set_parallelism(2)
            (
                env.from_source(BidSource(10**12), WatermarkStrategy.no_watermarks(), "bids")
                .key_by(lambda bid: bid[0])
                .map(CountPerAuction())
                .add_sink(_Drop())
            )
            client = env.execute_async("metrics gil share")
            rest = cluster.rest_url
            tms = _running(rest)
            time.sleep(5)  # past the job's start
            pid = json.loads(_get(f"{rest}/taskmanagers/{tms[0]['id']}"))["pid"]
            stop = threading.Event()
            counts = {"rest": 0, "scrapes": 0}
            watchers = [
                threading.Thread(target=_dashboard, args=(rest, args.poll_every, stop, counts)),
                threading.Thread(
                    target=_prometheus,
                    args=(rest, cluster.prometheus_address, args.scrape_every, stop, counts),
                ),
            ]
            for watcher in watchers:
                watcher.start()
            raw = pathlib.Path(out_dir) / "samples.txt"
            sampling = ["--gil", "--threads", "-r", "200", "-d", str(args.seconds)]
            subprocess.run(
                [py_spy, "record", *sampling, "-f", "raw", "-o", str(raw), "--pid", str(pid)],
                check=True,
                capture_output=True,
            )
            stop.set()
            for watcher in watchers:
                watcher.join()
            client.cancel().result()
        finally:
            register_executor(None)
        shares: collections.Counter[str] = collections.Counter()
        for line in raw.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            shares[_kind(stack)] += int(n)
    total = sum(shares.values())
    print(
        f"{args.seconds} s of one TaskManager's GIL, {total:,} samples; Prometheus every "
        f"{args.scrape_every:g} s ({counts['scrapes']} scrapes of the master and both "
        f"TaskManagers), the dashboard's job page every {args.poll_every:g} s "
        f"({counts['rest']} refreshes)"
    )
    for kind in ("task threads", "data plane I/O", "Prometheus exposition", "GetMetrics"):
        print(f"  {kind:24s} {shares[kind]:7,d}  {shares[kind] / total * 100:6.2f} %")
    print(
        f"  {'other threads':24s} {shares['other threads']:7,d}  "
        f"{shares['other threads'] / total * 100:6.2f} %"
    )


if __name__ == "__main__":
    main()

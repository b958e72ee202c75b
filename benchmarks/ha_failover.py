"""Failover time under ZooKeeper high availability: two masters (local[2] Spark each) and a
real ZooKeeper server on 127.0.0.1; a checkpointed job runs, the leader is SIGKILLed, and
the standby's log gives, in seconds from the kill, when each step of the takeover ended:

* elected:    the standby wins the election (the dead leader's session expired),
* spark:      its ResourceManager runs, on a Spark application of its own,
* recovered:  its JobMaster has read the job's graph and latest checkpoint,
* slots:      the TaskManagers leased from the new application offer their slots,
* running:    every task of the job is RUNNING again, restored,
* checkpoint: the first checkpoint after the recovery completes.

    .venv/bin/python benchmarks/ha_failover.py [--runs 3] [--session-timeouts 2,4]

Needs Debian's zookeeper package (make setup installs it). Timestamps come from the
masters' logs (millisecond resolution), the kill's from this process's clock. The load
average of the machine is printed with each run: on a shared machine it moves the
figures more than anything the masters do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from ha_cluster import HaCluster, leader_and_standby, submit  # noqa: E402
from zookeeper_server import ZooKeeperServer  # noqa: E402

_STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?"
PHASES = {
    "elected": "is now the leader",
    "spark": "ResourceManager started at",
    "recovered": "recovering from checkpoint",
    "slots": r"gets \d+ slots",
    "running": r"every task of attempt \d+ is RUNNING",
    "checkpoint": r"checkpoint \d+ completed",
}
# A generous bound for each wait: a loaded machine takes minutes where an idle one
# takes seconds; the figures say which it was.
_WAIT_S = 300


def _first_after(text: str, pattern: str, after: float) -> float | None:
    for match in re.finditer(_STAMP + pattern, text, re.MULTILINE):
        stamp = dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if stamp >= after:
            return stamp
    return None


def _wait(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            msg = f"timed out after {_WAIT_S} s waiting for {what}"
            raise TimeoutError(msg)
        time.sleep(0.05)  # polling interval; the condition decides


def one_run(zookeeper: ZooKeeperServer, session_s: int, keep: Path | None) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="weir-ha-bench-"))
    cluster = HaCluster(
        root,
        zookeeper.address,
        **{"high-availability.zookeeper.client.session-timeout": f"{session_s} s"},
    )
    try:
        leader, standby = leader_and_standby(cluster)
        submit(cluster, 200_000)  # runs for minutes: still running when recovered
        _wait(lambda: "checkpoint 2 completed" in leader.text(), "two checkpoints")
        killed = time.time()
        leader.signal(signal.SIGKILL)
        _wait(
            lambda: _first_after(standby.text(), PHASES["checkpoint"], killed),
            "a checkpoint on the new leader",
        )
        text = standby.text()
        return {
            name: (_first_after(text, pattern, killed) or float("nan")) - killed
            for name, pattern in PHASES.items()
        }
    finally:
        cluster.stop()
        if keep is not None:
            shutil.copytree(root, keep / root.name, ignore=shutil.ignore_patterns("out", "chk"))
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--session-timeouts", default="2,4")
    parser.add_argument("--keep", type=Path, help="copy each run's conf and logs here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="weir-ha-zk-") as tmp:
        zookeeper = ZooKeeperServer(Path(tmp))
        zookeeper.start()
        try:
            for session_s in (int(s) for s in args.session_timeouts.split(",")):
                runs = []
                for _ in range(args.runs):
                    load = os.getloadavg()[0]
                    runs.append(one_run(zookeeper, session_s, args.keep))
                    figures = ", ".join(f"{k} {v:.1f}" for k, v in runs[-1].items())
                    print(f"  session {session_s} s, load {load:.1f}: {figures}", flush=True)
                summary = ", ".join(
                    f"{name} {statistics.median(r[name] for r in runs):.1f} s "
                    f"(max {max(r[name] for r in runs):.1f})"
                    for name in PHASES
                )
                print(f"session timeout {session_s} s, {args.runs} runs: {summary}", flush=True)
        finally:
            zookeeper.stop()


if __name__ == "__main__":
    main()

"""Failover time under ZooKeeper high availability: two masters (local[2] Spark each) and a
real ZooKeeper server on 127.0.0.1; a checkpointed job runs, the leader is SIGKILLed, and
the standby's log gives, from the kill:

* elected:   the standby wins the election (the dead leader's session expired),
* recovered: its JobMaster restores the job from the latest checkpoint,
* running:   the first checkpoint completes on the new leader (every task is running).

    .venv/bin/python benchmarks/ha_failover.py [--runs 2] [--session-timeouts 2,4]

Needs Debian's zookeeper package (make setup installs it). Timestamps come from the
masters' logs (millisecond resolution), the kill's from this process's clock.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from ha_cluster import HaCluster, leader_and_standby, submit  # noqa: E402
from zookeeper_server import ZooKeeperServer  # noqa: E402

_STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?"


def _first_after(text: str, pattern: str, after: float) -> float | None:
    for match in re.finditer(_STAMP + pattern, text, re.MULTILINE):
        stamp = dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if stamp >= after:
            return stamp
    return None


def _wait(condition, timeout_s: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            msg = "timed out"
            raise TimeoutError(msg)
        time.sleep(0.05)


def one_run(zookeeper: ZooKeeperServer, session_s: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="weir-ha-bench-") as tmp:
        cluster = HaCluster(Path(tmp), zookeeper.address)
        conf = cluster.conf_dir / "weir-conf.yaml"
        conf.write_text(
            conf.read_text().replace("session-timeout: 2 s", f"session-timeout: {session_s} s")
        )
        try:
            leader, standby = leader_and_standby(cluster)
            submit(cluster, 60_000)
            _wait(lambda: "checkpoint 2 completed" in leader.text(), 240)
            killed = time.time()
            leader.signal(signal.SIGKILL)
            _wait(lambda: "recovering from checkpoint" in standby.text(), 240)
            _wait(lambda: _first_after(standby.text(), "completed in", killed), 240)
            text = standby.text()
            figures = {
                "elected": _first_after(text, "is now the leader", killed),
                "recovered": _first_after(text, "recovering from checkpoint", killed),
                "running": _first_after(text, "completed in", killed),
            }
            return {name: (at or killed) - killed for name, at in figures.items()}
        finally:
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--session-timeouts", default="2,4")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="weir-ha-zk-") as tmp:
        zookeeper = ZooKeeperServer(Path(tmp))
        zookeeper.start()
        try:
            for session_s in (int(s) for s in args.session_timeouts.split(",")):
                runs = [one_run(zookeeper, session_s) for _ in range(args.runs)]
                summary = ", ".join(
                    f"{name} {statistics.median(r[name] for r in runs):.1f} s "
                    f"(max {max(r[name] for r in runs):.1f})"
                    for name in ("elected", "recovered", "running")
                )
                print(f"session timeout {session_s} s, {args.runs} runs: {summary}", flush=True)
        finally:
            zookeeper.stop()


if __name__ == "__main__":
    main()

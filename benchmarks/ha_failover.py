"""Failover time under ZooKeeper and under Kubernetes high availability, measured the same
way in one run: two masters (local[2] Spark each) and a real ZooKeeper server, or a real
Kubernetes API server (etcd and kube-apiserver), on 127.0.0.1; a checkpointed job runs,
the leader is SIGKILLed, and the standby's log gives, in seconds from the kill, when each
step of the takeover ended:

* elected:    the standby wins the election (the dead leader's ZooKeeper session expired,
              or the standby saw its Kubernetes lease unrenewed for the lease duration),
* spark:      its ResourceManager runs, on a Spark application of its own,
* recovered:  its JobMaster has read the job's graph and latest checkpoint,
* slots:      the TaskManagers leased from the new application offer their slots,
* running:    every task of the job is RUNNING again, restored,
* checkpoint: the first checkpoint after the recovery completes.

    .venv/bin/python benchmarks/ha_failover.py [--runs 3] [--timeouts 2,4]
                                                [--ha zookeeper,kubernetes]

``--timeouts`` are how long a dead leader keeps its leadership: the ZooKeeper session
timeout, and the Kubernetes lease duration (with Flink's proportions: the renew deadline
the same, the retry period a third of it). Needs Debian's zookeeper package (make setup
installs it) and the Kubernetes binaries (make kubernetes). Timestamps come from the
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
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from ha_cluster import HaCluster, leader_and_standby, submit  # noqa: E402
from kubernetes_api_server import KubeApiServer  # noqa: E402
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


def ha_settings(
    ha: str, timeout_s: int, zookeeper: ZooKeeperServer | None, api: KubeApiServer | None
) -> tuple[str, dict[str, str]]:
    """The ZooKeeper quorum and the keys of ``ha`` for a leadership that outlives its dead
    leader by ``timeout_s``."""
    if ha == "zookeeper":
        assert zookeeper is not None
        timeout = {"high-availability.zookeeper.client.session-timeout": f"{timeout_s} s"}
        return zookeeper.address, timeout
    assert api is not None
    prefix = "high-availability.kubernetes.leader-election"
    settings = api.ha_config(
        "bench",  # one_run names a cluster of its own
        "file:///unused",  # HaCluster sets its own
        **{
            f"{prefix}.lease-duration": f"{timeout_s * 1000} ms",
            f"{prefix}.renew-deadline": f"{timeout_s * 1000} ms",
            f"{prefix}.retry-period": f"{timeout_s * 1000 // 3} ms",
        },
    )
    del settings["high-availability.storageDir"]
    return "", settings


def one_run(quorum: str, settings: dict[str, str], keep: Path | None) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="weir-ha-bench-"))
    if "kubernetes.cluster-id" in settings:  # a ConfigMap of its own, as HaCluster's znode
        settings = {**settings, "kubernetes.cluster-id": f"bench-{uuid.uuid4().hex[:8]}"}
    cluster = HaCluster(root, quorum, **settings)
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
    parser.add_argument("--timeouts", "--session-timeouts", default="2,4")
    parser.add_argument("--ha", default="zookeeper,kubernetes")
    parser.add_argument("--keep", type=Path, help="copy each run's conf and logs here")
    args = parser.parse_args()
    kinds = args.ha.split(",")
    summaries = []
    with tempfile.TemporaryDirectory(prefix="weir-ha-bench-stores-") as tmp:
        zookeeper = ZooKeeperServer(Path(tmp) / "zk") if "zookeeper" in kinds else None
        api = KubeApiServer(Path(tmp) / "api") if "kubernetes" in kinds else None
        try:
            if zookeeper is not None:
                zookeeper.start()
            if api is not None:
                api.start()
            for timeout_s in (int(s) for s in args.timeouts.split(",")):
                for ha in kinds:
                    quorum, settings = ha_settings(ha, timeout_s, zookeeper, api)
                    runs = []
                    for _ in range(args.runs):
                        load = os.getloadavg()[0]
                        runs.append(one_run(quorum, settings, args.keep))
                        figures = ", ".join(f"{k} {v:.1f}" for k, v in runs[-1].items())
                        print(f"  {ha} {timeout_s} s, load {load:.1f}: {figures}", flush=True)
                    summary = ", ".join(
                        f"{name} {statistics.median(r[name] for r in runs):.1f} s "
                        f"(max {max(r[name] for r in runs):.1f})"
                        for name in PHASES
                    )
                    line = f"{ha}, {timeout_s} s, {args.runs} runs: {summary}"
                    summaries.append(line)
                    print(line, flush=True)
        finally:
            if api is not None:
                api.stop()
            if zookeeper is not None:
                zookeeper.stop()
    print("\n".join(["", "medians (max) in seconds from the kill:", *summaries]))


if __name__ == "__main__":
    main()
